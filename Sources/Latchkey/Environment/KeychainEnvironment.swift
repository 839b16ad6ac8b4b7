#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// Where a keychain, its device secret and its caller come from, as the environment of the
/// `latchkey` CLI describes them (docs/CLI.md), and how such a keychain is opened: through the
/// agent when one answers, else from the file, then unlocked. The CLI (with its options laid
/// over the variables) and LatchkeySecurity (`LatchkeySecurityConfiguration(environment:)`)
/// both resolve and open here, so they find the same keychain for the same environment.
package struct KeychainEnvironment: Sendable {
    /// LATCHKEY_KEYCHAIN, else `<data directory>/login.keychain`.
    package var keychainPath: String
    /// LATCHKEY_DEVICE, else `<data directory>/device.secret`.
    package var devicePath: String
    /// LATCHKEY_APP_ID, else `latchkey.cli`: the application-identifier of a caller without an
    /// entitlements file, or whose file names none.
    package var applicationIdentifier: String
    /// LATCHKEY_ENTITLEMENTS: an Entitlements.plist giving the caller's groups.
    package var entitlementsPath: String?

    /// The default application-identifier.
    package static let defaultApplicationIdentifier = "latchkey.cli"

    /// Resolves from `lookup` (a variable's value; empty counts as unset), with each given
    /// value taking precedence over its variable.
    package init(
        lookup: (String) -> String?, keychainPath: String? = nil, devicePath: String? = nil,
        applicationIdentifier: String? = nil, entitlementsPath: String? = nil
    ) {
        func value(_ name: String) -> String? {
            guard let v = lookup(name), !v.isEmpty else { return nil }
            return v
        }
        // The data directory (and the home directory under it) only when a default is needed.
        self.keychainPath =
            keychainPath ?? value("LATCHKEY_KEYCHAIN") ?? KeychainEnvironment.dataDirectory(value) + "/login.keychain"
        self.devicePath =
            devicePath ?? value("LATCHKEY_DEVICE") ?? KeychainEnvironment.dataDirectory(value) + "/device.secret"
        self.applicationIdentifier =
            applicationIdentifier ?? value("LATCHKEY_APP_ID") ?? KeychainEnvironment.defaultApplicationIdentifier
        self.entitlementsPath = entitlementsPath ?? value("LATCHKEY_ENTITLEMENTS")
    }

    /// From a dictionary of variables.
    package init(_ environment: [String: String]) {
        self.init(lookup: { environment[$0] })
    }

    /// From this process's variables (getenv: no copy of the whole environment).
    package static func process(
        keychainPath: String? = nil, devicePath: String? = nil,
        applicationIdentifier: String? = nil, entitlementsPath: String? = nil
    ) -> KeychainEnvironment {
        KeychainEnvironment(
            lookup: { getenv($0).map { String(cString: $0) } }, keychainPath: keychainPath,
            devicePath: devicePath, applicationIdentifier: applicationIdentifier,
            entitlementsPath: entitlementsPath)
    }

    /// `$XDG_DATA_HOME/latchkey`, or `~/.local/share/latchkey` (XDG Base Directory: a relative
    /// XDG_DATA_HOME is ignored).
    static func dataDirectory(_ value: (String) -> String?) -> String {
        if let xdg = value("XDG_DATA_HOME"), xdg.hasPrefix("/") { return xdg + "/latchkey" }
        return (value("HOME") ?? FileManager.default.homeDirectoryForCurrentUser.path) + "/.local/share/latchkey"
    }

    /// The caller: the entitlements file's identity (its application-identifier, else
    /// `applicationIdentifier`), or `applicationIdentifier` alone.
    /// - Parameter read: reads the entitlements file (the CLI checks what it reads).
    /// - Throws: errSecIO (unreadable file), errSecParam (not an entitlements property list).
    package func caller(read: (String) throws -> [UInt8] = KeychainEnvironment.readFile) throws -> CallerIdentity {
        guard let path = entitlementsPath else { return CallerIdentity(applicationIdentifier: applicationIdentifier) }
        return try CallerIdentity(
            entitlementsPlist: Data(try read(path)), fallbackApplicationIdentifier: applicationIdentifier)
    }

    package static func readFile(_ path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw KeychainError(.io, "cannot read the entitlements file \(path) (LATCHKEY_ENTITLEMENTS)")
        }
        return [UInt8](data)
    }

    /// Opens the keychain: through `latchkey agent` when one answers and `useAgent`, else the
    /// file (with `passcode`, the KDF runs beside the reading of the file); then, for a keychain
    /// with a passcode, unlocks with `passcode` unless the agent holds its keys already.
    /// - Parameters:
    ///   - unusable: told why an agent the user asked for (LATCHKEY_AGENT_SOCK) cannot be used;
    ///     the file is opened instead. nil: that error is thrown.
    ///   - deferAgentOpen: without a passcode, a keychain the agent serves is opened by its
    ///     first operation, which then throws what opening throws (one request fewer for a
    ///     command that makes one).
    /// - Returns: the keychain, and whether `passcode` was used to unlock it.
    /// - Throws: the errors of `Keychain.open` and `unlock`.
    package func open(
        passcode: [UInt8]?, useAgent: Bool = true, acceptRollback: Bool = false,
        unusable: ((KeychainError) -> Void)? = nil, deferAgentOpen: Bool = false
    ) throws -> (keychain: Keychain, unlocked: Bool) {
        if useAgent, !acceptRollback,
            let served = try Keychain.openThroughAgent(
                path: keychainPath, devicePath: devicePath, unusable: unusable,
                asking: !(deferAgentOpen && passcode == nil))
        {
            if let passcode, served.hasPasscode {
                try served.unlockUnlessAgentIsUnlocked(passcode: passcode)
                return (served, true)
            }
            return (served, false)
        }
        if let passcode {
            let kc = try Keychain.open(
                path: keychainPath, devicePath: devicePath, acceptRollback: acceptRollback,
                unlockingWith: passcode)
            return (kc, kc.hasPasscode)
        }
        return (try Keychain.open(path: keychainPath, devicePath: devicePath, acceptRollback: acceptRollback), false)
    }
}
