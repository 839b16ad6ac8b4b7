import Foundation

/// The built `latchkey` binary: next to the test bundle in the scratch path in use
/// (`.build*/debug/`), or else the newest `.build*/debug/latchkey` under the package root.
enum CLIBinary {
    static let url: URL? = locate()

    static func locate() -> URL? {
        let fm = FileManager.default
        var directories: [URL] = []
        // On Linux the test bundle is an executable: /proc/self/exe sits in .build*/<triple>/debug.
        directories.append(URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent())
        directories.append(Bundle.main.bundleURL)
        directories.append(Bundle.main.bundleURL.deletingLastPathComponent())
        // On macOS the .xctest bundle sits in .build*/debug.
        directories += Bundle.allBundles.map { $0.bundleURL.deletingLastPathComponent() }
        if let arg0 = CommandLine.arguments.first {
            directories.append(URL(fileURLWithPath: arg0).resolvingSymlinksInPath().deletingLastPathComponent())
        }
        for dir in directories {
            let candidate = dir.appendingPathComponent("latchkey")
            if fm.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        // Fallback: the package root is three levels above this file.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let scratch = (try? fm.contentsOfDirectory(atPath: root.path))?.filter { $0.hasPrefix(".build") } ?? []
        let found = scratch.map { root.appendingPathComponent($0).appendingPathComponent("debug/latchkey") }
            .filter { fm.isExecutableFile(atPath: $0.path) }
        func modified(_ url: URL) -> Date {
            ((try? fm.attributesOfItem(atPath: url.path))?[.modificationDate] as? Date) ?? .distantPast
        }
        return found.max { modified($0) < modified($1) }
    }
}

/// What one run of the binary produced.
struct CLIResult {
    var status: Int32
    var stdout: [UInt8]
    var stderr: String

    var out: String { String(decoding: stdout, as: UTF8.self) }

    /// stdout parsed as JSON.
    func json() throws -> Any { try JSONSerialization.jsonObject(with: Data(stdout)) }
}

/// A temporary directory holding one keychain and device secret, with LATCHKEY_* variables
/// pointing at them, no terminal (stdin is a file), and a passcode in LATCHKEY_PASSCODE.
final class CLISandbox {
    static let passcode = "correct horse"
    /// scrypt cost for the tests' keychains: 2^10 keeps each unlock to a millisecond or so.
    static let kdfLogN = "10"

    let directory: URL
    var environment: [String: String]

    var keychainPath: String { directory.appendingPathComponent("login.keychain").path }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        environment = [
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            "HOME": directory.path,
            "XDG_DATA_HOME": directory.appendingPathComponent("xdg").path,
            "LATCHKEY_KEYCHAIN": directory.appendingPathComponent("login.keychain").path,
            "LATCHKEY_DEVICE": directory.appendingPathComponent("device.secret").path,
            "LATCHKEY_PASSCODE": CLISandbox.passcode,
            // The agent's default location, in the sandbox: a test never reaches an agent that
            // the user (or another test run) keeps at /tmp/latchkey-<uid>/.
            "XDG_RUNTIME_DIR": directory.appendingPathComponent("run").path
        ]
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("run"), withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        // Under `make test-asan` / `make test-tsan` the binary is instrumented too: it gets the
        // same sanitizer options (suppression files) as the test process.
        for name in ["ASAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS", "UBSAN_OPTIONS"] {
            if let value = ProcessInfo.processInfo.environment[name] { environment[name] = value }
        }
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// Runs `latchkey args…` with `stdin` as its standard input. `env` adds variables; a nil
    /// value removes one. With `closeStdin` the binary starts with no fd 0 at all (`<&-`).
    @discardableResult
    func run(_ args: [String], stdin: [UInt8] = [], env: [String: String?] = [:], closeStdin: Bool = false) throws
        -> CLIResult
    {
        let binary = try CLISandbox.binary()
        if closeStdin {
            return try run(
                executable: URL(fileURLWithPath: "/bin/sh"), ["-c", "exec \"$0\" \"$@\" <&-", binary.path] + args,
                env: env)
        }
        return try run(executable: binary, args, stdin: stdin, env: env)
    }

    static func binary() throws -> URL {
        guard let binary = CLIBinary.url else {
            throw CLITestError(
                "the latchkey binary was not found; build with 'swift build --scratch-path .build-cli --build-tests'")
        }
        return binary
    }

    /// Runs `latchkey args…` with stdout and stderr on a pseudo-terminal, through script(1);
    /// nil when script(1) is not installed. Both streams come back in `stdout`.
    func runOnTerminal(_ args: [String], env: [String: String?] = [:]) throws -> CLIResult? {
        guard
            let script = ["/usr/bin/script", "/bin/script"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else { return nil }
        let quoted = ([try CLISandbox.binary().path] + args).map {
            "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'"
        }
        return try run(
            executable: URL(fileURLWithPath: script),
            ["-qec", quoted.joined(separator: " ") + " </dev/null", "/dev/null"], env: env)
    }

    /// Runs `/bin/sh -c script` with `$0` set to the latchkey binary, in the sandbox
    /// directory: for what a test needs a shell for (pipes, FIFOs, `/dev/stdin`).
    func runShell(_ script: String, stdin: [UInt8] = [], env: [String: String?] = [:]) throws -> CLIResult {
        try run(
            executable: URL(fileURLWithPath: "/bin/sh"), ["-c", script, try CLISandbox.binary().path], stdin: stdin,
            env: env)
    }

    /// Runs `latchkey args…` with arguments and environment values given as bytes, which need
    /// not be UTF-8 (Foundation's Process takes Strings only): each passes through the shell
    /// as `printf` octal escapes.
    func runBytes(_ args: [[UInt8]], env: [String: [UInt8]] = [:], stdin: [UInt8] = []) throws -> CLIResult {
        func literal(_ bytes: [UInt8]) -> String {
            "\"$(printf '" + bytes.map { "\\" + String($0, radix: 8) }.joined() + "')\""
        }
        let exports = env.sorted { $0.key < $1.key }.map { "export \($0.key)=\(literal($0.value)); " }.joined()
        return try runShell(exports + "exec \"$0\" " + args.map(literal).joined(separator: " "), stdin: stdin)
    }

    /// Runs `latchkey args…` with stdin, stdout and stderr on one pseudo-terminal, through
    /// script(1), which types `input` on it; nil when script(1) is not installed. What the
    /// terminal showed (the echo of `input` too) comes back in `stdout`.
    func runOnTerminal(_ args: [String], input: [UInt8], env: [String: String?] = [:]) throws -> CLIResult? {
        guard
            let script = ["/usr/bin/script", "/bin/script"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else { return nil }
        let quoted = ([try CLISandbox.binary().path] + args).map {
            "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'"
        }
        return try run(
            executable: URL(fileURLWithPath: script), ["-qec", quoted.joined(separator: " "), "/dev/null"],
            stdin: input, env: env)
    }

    /// Writes an Entitlements.plist (XML) and returns its path.
    func entitlements(_ name: String, applicationIdentifier: String, groups: [String]) throws -> String {
        let array = groups.map { "<string>\($0)</string>" }.joined()
        let plist = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict>
              <key>application-identifier</key><string>\(applicationIdentifier)</string>
              <key>keychain-access-groups</key><array>\(array)</array>
            </dict></plist>
            """
        return try writeFile(name, Array(plist.utf8))
    }

    func run(executable: URL, _ args: [String], stdin: [UInt8] = [], env: [String: String?]) throws -> CLIResult {
        let id = UUID().uuidString
        let inURL = directory.appendingPathComponent("stdin-\(id)")
        let outURL = directory.appendingPathComponent("stdout-\(id)")
        let errURL = directory.appendingPathComponent("stderr-\(id)")
        try Data(stdin).write(to: inURL)
        try Data().write(to: outURL)
        try Data().write(to: errURL)
        defer { for url in [inURL, outURL, errURL] { try? FileManager.default.removeItem(at: url) } }

        var environment = self.environment
        for (name, value) in env { environment[name] = value }

        let process = Process()
        process.executableURL = executable
        process.arguments = args
        process.environment = environment
        process.currentDirectoryURL = directory
        let input = try FileHandle(forReadingFrom: inURL)
        let output = try FileHandle(forWritingTo: outURL)
        let error = try FileHandle(forWritingTo: errURL)
        process.standardInput = input
        process.standardOutput = output
        process.standardError = error
        try process.run()
        process.waitUntilExit()
        try? input.close()
        try? output.close()
        try? error.close()
        return CLIResult(
            status: process.terminationStatus,
            stdout: [UInt8](try Data(contentsOf: outURL)),
            stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
    }

    /// `init` with the sandbox passcode (or none) at the tests' scrypt cost.
    func initKeychain(noPasscode: Bool = false) throws {
        let result =
            noPasscode
            ? try run(["init", "--no-passcode"], env: ["LATCHKEY_PASSCODE": nil])
            : try run(["init", "--kdf-log-n", CLISandbox.kdfLogN])
        guard result.status == 0 else { throw CLITestError("init failed (\(result.status)): \(result.stderr)") }
    }

    /// `add --account A --service S [extra]` with `data` on stdin; throws unless it succeeds.
    func add(
        account: String, service: String = "mail", data: [UInt8], _ extra: [String] = [], env: [String: String?] = [:]
    ) throws {
        let result = try run(["add", "--account", account, "--service", service] + extra, stdin: data, env: env)
        guard result.status == 0 else { throw CLITestError("add failed (\(result.status)): \(result.stderr)") }
    }

    /// A file of the package's fixtures/ directory.
    static func fixture(_ relative: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("fixtures").appendingPathComponent(relative).path
    }

    func writeFile(_ name: String, _ bytes: [UInt8]) throws -> String {
        let url = directory.appendingPathComponent(name)
        try Data(bytes).write(to: url)
        return url.path
    }
}

struct CLITestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension CLISandbox {
    /// A keychain with a passcode and one item (account "a", secret "s3cret"), no passcode in
    /// the environment and no agent: each test gives the passcode its own way.
    static func oneItemWithoutPasscodeInEnvironment() throws -> CLISandbox {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "a", data: Array("s3cret".utf8))
        sandbox.environment["LATCHKEY_PASSCODE"] = nil
        sandbox.environment["LATCHKEY_AGENT_SOCK"] = "none"
        return sandbox
    }
}
