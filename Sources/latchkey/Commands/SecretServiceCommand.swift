import ArgumentParser
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif
import Latchkey

/// `latchkey secret-service`: runs the Secret Service provider, `latchkey-secret-service`
/// (a program of its own: it links libsystemd's sd-bus, which this static executable cannot).
struct SecretServiceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secret-service",
        abstract: "Serve org.freedesktop.secrets (the Secret Service API) from the agent's keychain.",
        discussion: """
            Linux programs keep secrets through the Secret Service on the session bus \
            (libsecret: secret-tool, git-credential-libsecret, python keyring, browsers). This \
            runs latchkey-secret-service, installed beside latchkey, which answers them from \
            the keychain 'latchkey agent' holds: 'latchkey lock' locks every client out, \
            'latchkey unlock' lets them in, and a client's Unlock asks for the passcode through \
            --pinentry (or LATCHKEY_PINENTRY), else on this terminal, else fails saying to run \
            'latchkey unlock'. Items are kept as described in spec/SECRET-SERVICE.md: each \
            collection is an access group. It refuses to start when another program (such as \
            gnome-keyring-daemon) owns the name; --replace takes it from one that allows it. \
            'make install' installs a systemd user unit and a D-Bus activation file.

            Example:
              latchkey agent --daemon && latchkey unlock
              latchkey secret-service --pinentry /usr/bin/pinentry-curses
              systemctl --user enable --now latchkey-secret-service
            """)

    @Option(help: ArgumentHelp("Ask for the passcode with this pinentry program.", valueName: "program"))
    var pinentry: String?
    @Flag(help: "Take the name from another provider that allows replacement.") var replace = false
    @OptionGroup(title: "Global options") var global: GlobalOptions

    func run() throws {
        let program = try Self.provider()
        var args = [program, "--keychain", global.keychainPath, "--device", global.devicePath]
        if let pinentry { args += ["--pinentry", pinentry] }
        if replace { args.append("--replace") }
        var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        execv(program, &argv)
        throw KeychainError(
            .io,
            "cannot run \(program): \(String(cString: strerror(errno))); reinstall Latchkey ('make install' puts latchkey-secret-service beside latchkey)"
        )
    }

    /// latchkey-secret-service beside this executable, else on PATH.
    static func provider() throws -> String {
        let me =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let beside =
            me.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
            + "/latchkey-secret-service"
        if access(beside, X_OK) == 0 { return beside }
        for dir in (getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin").split(separator: ":") {
            let p = String(dir) + "/latchkey-secret-service"
            if access(p, X_OK) == 0 { return p }
        }
        throw KeychainError(
            .io,
            "latchkey-secret-service is not installed beside \(me) or on PATH; install it with 'make install' (or build it: 'swift build --product latchkey-secret-service')"
        )
    }
}
