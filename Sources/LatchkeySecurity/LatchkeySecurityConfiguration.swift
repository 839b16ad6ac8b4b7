import Foundation
import Latchkey
import LatchkeyCrypto

/// Which keychain the SecItem functions use, who is asking, and how the keychain is unlocked.
///
/// `shared` starts from the environment variables of the `latchkey` CLI (docs/CLI.md):
///
/// | property | environment | default |
/// |---|---|---|
/// | `keychainPath` | `LATCHKEY_KEYCHAIN` | `$XDG_DATA_HOME/latchkey/login.keychain` (`~/.local/share/…`) |
/// | `devicePath` | `LATCHKEY_DEVICE` | `$XDG_DATA_HOME/latchkey/device.secret` |
/// | `passcodeSource` | `LATCHKEY_PASSCODE` (the passcode itself) | `.none` |
/// | `caller` | `LATCHKEY_ENTITLEMENTS` (plist), `LATCHKEY_APP_ID` | application-identifier `latchkey.cli` |
/// | `explainsFirstFailure` | `LATCHKEY_SECURITY_QUIET` (set and not `0`: false) | true |
///
/// Every property can be set from Swift at any time (thread-safe); changing where the keychain
/// is, or how it is unlocked, closes the cached keychain so that the next call opens it again.
///
/// ```swift
/// let config = LatchkeySecurityConfiguration.shared
/// config.keychainPath = "/srv/app/app.keychain"
/// config.caller = CallerIdentity(applicationIdentifier: "TEAM.com.example.app",
///                                keychainAccessGroups: ["TEAM.shared"])
/// config.passcodeSource = .passcode(Array("1234".utf8))
/// ```
///
/// **The keychain.** It is opened on the first SecItem call and kept open (so `ck`/`cku` items
/// stay usable after `lock()`, as after a first unlock). A keychain with a passcode is unlocked
/// with `passcodeSource` when it gives one; otherwise it stays locked (dk/dku items only).
/// A keychain that does not exist yet is created — with the passcode of `passcodeSource`, or
/// without a passcode for `.noPasscode` — when `createsKeychainIfAbsent` is true (the default);
/// with `.none` (no passcode known) or `createsKeychainIfAbsent == false` the calls return
/// errSecNotAvailable (−25291), Apple's status for "no keychain available", and `lastError`
/// says how to create one (`latchkey init`).
///
/// **The agent.** When `latchkey agent` answers (LATCHKEY_AGENT_SOCK, or the per-user runtime
/// directory; spec/AGENT.md), the keychain is the agent's: its lock state is shared with every
/// process of the user, `lock()` locks it for all of them, `close()` forgets only this process's
/// handle, and a passcode given here unlocks the agent. When the agent stops, the next call fails
/// with errSecNotAvailable and the one after opens the file again, as after a reboot.
///
/// **When a call fails.** Apple's API returns only an OSStatus. The rest — what happened and
/// what to do — is in `lastError` (a `KeychainError`, from `import Latchkey`: `status`,
/// `message`, and a `description` such as `no keychain at … (errSecNotAvailable -25291)`).
/// Out of the box (no keychain, no passcode, no identity) every call would fail with the same
/// status, so the first failure that comes from the setup rather than from the call — the
/// keychain or device secret cannot be opened or created, the caller identity cannot be read
/// or has no access groups, or the keychain is locked and no passcode was given — also writes
/// one line to stderr naming what is missing and the environment variable or property that
/// fixes it, once per configuration (so once per process for `shared`). Results such as
/// errSecItemNotFound or errSecDuplicateItem, and malformed dictionaries, never write.
/// `explainsFirstFailure = false` or `LATCHKEY_SECURITY_QUIET=1` turns the line off.
///
/// **Scoping.** `use(_:)` makes a configuration the current one for the SecItem calls made
/// inside its closure (a task-local binding), so independent configurations — for example one
/// per test — can run side by side. Outside any `use`, `shared` is current.
public final class LatchkeySecurityConfiguration: @unchecked Sendable {
    /// Where a passcode comes from.
    public enum PasscodeSource: Sendable {
        /// No passcode is known: a keychain with a passcode stays locked, and an absent
        /// keychain is not created (errSecNotAvailable).
        case none
        /// This passcode unlocks the keychain, answers user-presence checks by default, and
        /// protects a keychain created here.
        case passcode([UInt8])
        /// The passcode is asked for when needed (nil: none available).
        case provider(@Sendable () -> [UInt8]?)
        /// Keychains without a passcode: an absent keychain is created without one (no akpu
        /// items, no user presence).
        case noPasscode
    }

    /// Answers a user-presence check: gets the operation prompt (kSecUseOperationPrompt), returns
    /// the passcode, or nil when the user cancels (errSecUserCanceled −128).
    public typealias AuthenticationHandler = @Sendable (_ prompt: String?) -> [UInt8]?

    /// The configuration made from the process environment at first use.
    public static let shared = LatchkeySecurityConfiguration(environment: ProcessInfo.processInfo.environment)

    @TaskLocal static var scoped: LatchkeySecurityConfiguration?

    /// The configuration SecItem calls use here: the innermost `use(_:)`, else `shared`.
    public static var current: LatchkeySecurityConfiguration { scoped ?? shared }

    private let mutex = NSRecursiveLock()
    private var _keychainPath: String
    private var _devicePath: String
    private var _caller: Result<CallerIdentity, KeychainError>
    private var _passcodeSource: PasscodeSource
    private var _authenticationHandler: AuthenticationHandler?
    private var _createsKeychainIfAbsent = true
    private var _kdfLogN: UInt8 = KDFParameters.defaultLogN
    private var _lastError: KeychainError?
    private var _explainsFirstFailure = true
    private var explained = false
    private var unlockedByCall = false
    private var cached: Keychain?

    /// A configuration from environment variables (docs/CLI.md); `shared` uses the process's.
    /// A malformed LATCHKEY_ENTITLEMENTS is not thrown here: every call then fails with its
    /// status (errSecParam, errSecIO) until `caller` is set.
    public init(environment env: [String: String]) {
        func value(_ name: String) -> String? {
            guard let v = env[name], !v.isEmpty else { return nil }
            return v
        }
        let resolved = KeychainEnvironment(env)
        _keychainPath = resolved.keychainPath
        _devicePath = resolved.devicePath
        _passcodeSource = value("LATCHKEY_PASSCODE").map { .passcode(Array($0.utf8)) } ?? .none
        _explainsFirstFailure = Self.explainsByDefault(env)
        do {
            _caller = .success(try resolved.caller())
        } catch let e as KeychainError {
            _caller = .failure(e)
        } catch {
            _caller = .failure(KeychainError(.param, "cannot read the caller identity", underlying: "\(error)"))
        }
    }

    /// A configuration for one keychain, caller and passcode source.
    public init(
        keychainPath: String, devicePath: String, caller: CallerIdentity,
        passcodeSource: PasscodeSource = .none,
        authenticationHandler: AuthenticationHandler? = nil
    ) {
        _keychainPath = keychainPath
        _devicePath = devicePath
        _caller = .success(caller)
        _passcodeSource = passcodeSource
        _authenticationHandler = authenticationHandler
        _explainsFirstFailure = Self.explainsByDefault(ProcessInfo.processInfo.environment)
    }

    /// `explainsFirstFailure` unless LATCHKEY_SECURITY_QUIET is set to something but `0`.
    private static func explainsByDefault(_ env: [String: String]) -> Bool {
        guard let quiet = env["LATCHKEY_SECURITY_QUIET"], !quiet.isEmpty else { return true }
        return quiet == "0"
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        mutex.lock()
        defer { mutex.unlock() }
        return try body()
    }

    // MARK: Settings

    /// The keychain file. Setting it closes the cached keychain.
    public var keychainPath: String {
        get { locked { _keychainPath } }
        set {
            locked {
                _keychainPath = newValue; cached = nil
            }
        }
    }

    /// The device secret file. Setting it closes the cached keychain.
    public var devicePath: String {
        get { locked { _devicePath } }
        set {
            locked {
                _devicePath = newValue; cached = nil
            }
        }
    }

    /// Who is calling: the access groups it may use. nil only when the environment's identity
    /// could not be read (see `callerError`); every call then fails with that error's status.
    /// Setting nil leaves a caller without any identity: every call then fails with
    /// errSecMissingEntitlement (−34018), as an app without entitlements does on iOS.
    public var caller: CallerIdentity? {
        get { locked { try? _caller.get() } }
        set {
            locked {
                _caller =
                    newValue.map { .success($0) }
                    ?? .success(CallerIdentity(applicationIdentifier: nil, keychainAccessGroups: []))
            }
        }
    }

    /// Why the environment's caller identity could not be read, if it could not.
    public var callerError: KeychainError? {
        locked {
            if case .failure(let e) = _caller { return e }
            return nil
        }
    }

    /// Where the passcode comes from. Setting it closes the cached keychain.
    public var passcodeSource: PasscodeSource {
        get { locked { _passcodeSource } }
        set {
            locked {
                _passcodeSource = newValue; cached = nil
            }
        }
    }

    /// Asked for the passcode when an item added with a user-presence access control is read
    /// with its data. nil (the default): the passcode of `passcodeSource` answers (so
    /// LATCHKEY_PASSCODE answers non-interactively); with no passcode there, such reads fail
    /// with errSecInteractionNotAllowed (−25308).
    public var authenticationHandler: AuthenticationHandler? {
        get { locked { _authenticationHandler } }
        set { locked { _authenticationHandler = newValue } }
    }

    /// Whether a missing keychain is created on first use (see the type's discussion).
    public var createsKeychainIfAbsent: Bool {
        get { locked { _createsKeychainIfAbsent } }
        set { locked { _createsKeychainIfAbsent = newValue } }
    }

    /// scrypt cost (log2 N) of a keychain created here.
    public var kdfLogN: UInt8 {
        get { locked { _kdfLogN } }
        set { locked { _kdfLogN = newValue } }
    }

    /// The error of the most recent failed SecItem call with this configuration: its status
    /// and a message that says what to do. Apple's API returns only the OSStatus; this keeps
    /// the rest. Not cleared by a call that succeeds.
    ///
    /// ```swift
    /// if SecItemAdd(query as CFDictionary, nil) != errSecSuccess,
    ///    let error = LatchkeySecurityConfiguration.current.lastError {
    ///     print(error)   // no keychain at /home/me/.local/share/latchkey/login.keychain; create it … (errSecNotAvailable -25291)
    /// }
    /// ```
    public var lastError: KeychainError? { locked { _lastError } }

    /// Whether the first failure that comes from the setup (no keychain, no device secret, no
    /// passcode for a locked keychain, no caller identity) writes one line to stderr that says
    /// what is missing and what fixes it (see the type's discussion). Default true; false when
    /// `LATCHKEY_SECURITY_QUIET` is set to anything but `0` (in the environment given to
    /// `init(environment:)`, else in the process's).
    public var explainsFirstFailure: Bool {
        get { locked { _explainsFirstFailure } }
        set { locked { _explainsFirstFailure = newValue } }
    }

    // MARK: The keychain

    /// The open keychain (opened, unlocked or created on first use, as the type's discussion
    /// says), with `caller` as its caller, so the typed API on it sees the same items as the
    /// SecItem functions (and finds by unique key through the index, which needs the caller's
    /// groups).
    /// - Throws: errSecNotAvailable (no keychain and none to be created), errSecAuthFailed
    ///   (wrong passcode), the error of an unreadable caller identity, and the errors of
    ///   `Keychain.open` / `Keychain.create`.
    public func keychain() throws -> Keychain {
        try locked {
            let caller = try _caller.get()
            return try openLocked().with(CallContext(caller: caller, authenticate: effectiveHandler()))
        }
    }

    /// Closes the cached keychain: the next call opens it again (and AfterFirstUnlock items
    /// need a new unlock).
    public func close() { locked { cached = nil } }

    /// Locks the open keychain: WhenUnlocked items become unusable (errSecInteractionNotAllowed);
    /// AfterFirstUnlock items stay usable until `close()`.
    public func lock() { locked { cached?.lock() } }

    /// Unlocks the keychain with a passcode (opening it first if needed).
    /// - Throws: errSecAuthFailed for a wrong passcode.
    public func unlock(passcode: [UInt8]) throws {
        try locked {
            unlockedByCall = true
            try openLocked().unlock(passcode: passcode)
        }
    }

    /// Runs `body` with this configuration current for every SecItem call inside it (on this
    /// task and the tasks it creates).
    public func use<T>(_ body: () throws -> T) rethrows -> T {
        try LatchkeySecurityConfiguration.$scoped.withValue(self) { try body() }
    }

    /// Async variant of `use(_:)`.
    public func use<T>(_ body: () async throws -> T) async rethrows -> T {
        try await LatchkeySecurityConfiguration.$scoped.withValue(self) { try await body() }
    }

    private func currentPasscode() -> [UInt8]? {
        switch _passcodeSource {
        case .none, .noPasscode: return nil
        case .passcode(let p): return p
        case .provider(let f): return f()
        }
    }

    private func openLocked() throws -> Keychain {
        if let kc = cached { return kc }
        let kc: Keychain
        if FileManager.default.fileExists(atPath: _keychainPath) {
            // `latchkey agent`, when one answers, serves the keychain with its unlocked keys.
            let environment = KeychainEnvironment(
                lookup: { _ in nil }, keychainPath: _keychainPath, devicePath: _devicePath)
            var passcode = currentPasscode()
            defer { if passcode != nil { Crypto.cleanse(&passcode!) } }
            // Open, then unlock: not open(passcode:), whose KDF thread beside the read saves a
            // one-shot command its wait but leaves this long-lived keychain's finds slower
            // (docs/RESULTS.md, "Figures behind the code").
            kc = try environment.open(passcode: nil).keychain
            if let passcode, kc.hasPasscode { try kc.unlockUnlessAgentIsUnlocked(passcode: passcode) }
        } else {
            let advice =
                "create it with 'latchkey init' (LATCHKEY_KEYCHAIN=\(_keychainPath)), or give a passcode (LATCHKEY_PASSCODE, LatchkeySecurityConfiguration.passcodeSource) so that it is created on first use"
            guard _createsKeychainIfAbsent else {
                throw KeychainError(.notAvailable, "no keychain at \(_keychainPath); \(advice)")
            }
            switch _passcodeSource {
            case .noPasscode:
                kc = try Keychain.create(path: _keychainPath, devicePath: _devicePath, passcode: nil, kdfLogN: _kdfLogN)
            case .none, .passcode, .provider:
                guard let p = currentPasscode(), !p.isEmpty else {
                    throw KeychainError(.notAvailable, "no keychain at \(_keychainPath); \(advice)")
                }
                kc = try Keychain.create(path: _keychainPath, devicePath: _devicePath, passcode: p, kdfLogN: _kdfLogN)
            }
        }
        cached = kc
        return kc
    }

    /// Runs one SecItem call on the open keychain with this configuration's caller and
    /// authentication handler; records a failure in `lastError`.
    func perform<T>(authenticationUI: SecAuthenticationUI = .allow, _ body: (Keychain) throws -> T) -> Result<
        T, SecFailure
    > {
        locked {
            let kc: Keychain
            do {
                let caller = try _caller.get()
                kc = try openLocked().with(
                    CallContext(
                        caller: caller,
                        authenticate: authenticationUI == .fail ? nil : effectiveHandler()))
            } catch {
                let failure = SecFailure.from(error)
                _lastError = failure.error
                explainOnce(
                    failure.error,
                    fix:
                        "the keychain, device secret, passcode and caller come from LATCHKEY_KEYCHAIN, LATCHKEY_DEVICE, LATCHKEY_PASSCODE and LATCHKEY_ENTITLEMENTS / LATCHKEY_APP_ID, or from LatchkeySecurityConfiguration.shared"
                )
                return .failure(failure)
            }
            do {
                let value = try body(kc)
                return .success(value)
            } catch {
                if cached?.agentStopped == true { cached = nil }  // as after a reboot: open again on the next call
                let failure = SecFailure.from(error)
                _lastError = failure.error
                switch failure.error.status {
                case .missingEntitlement:
                    explainOnce(failure.error, fix: "or set LatchkeySecurityConfiguration.shared.caller")
                case .interactionNotAllowed where isWithoutPasscode:
                    explainOnce(
                        KeychainError(
                            .interactionNotAllowed, "the keychain \(_keychainPath) is locked and no passcode was given"),
                        fix:
                            "set LATCHKEY_PASSCODE or LatchkeySecurityConfiguration.shared.passcodeSource, or run `latchkey agent` and `latchkey unlock` to unlock it for every process"
                    )
                default:
                    break
                }
                return .failure(failure)
            }
        }
    }

    /// Whether nothing here gives a passcode: no passcode source, no authentication handler, no
    /// `unlock(passcode:)` call.
    private var isWithoutPasscode: Bool {
        guard _authenticationHandler == nil, !unlockedByCall else { return false }
        if case .none = _passcodeSource { return true }
        return false
    }

    /// Writes the one stderr line of a setup failure (the type's discussion), once.
    private func explainOnce(_ error: KeychainError, fix: String) {
        guard _explainsFirstFailure, !explained else { return }
        explained = true
        let line =
            "LatchkeySecurity: \(error); \(fix). Said once; later failures give their OSStatus and LatchkeySecurityConfiguration.current.lastError (LATCHKEY_SECURITY_QUIET=1 silences this line).\n"
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// Records the failure of a call that did not reach the keychain (a malformed dictionary);
    /// returns the status the call answers.
    func record(_ error: Error) -> OSStatus {
        let failure = SecFailure.from(error)
        locked { _lastError = failure.error }
        return failure.error.osStatus
    }

    private func effectiveHandler() -> AuthenticationHandler? {
        if let h = _authenticationHandler { return h }
        switch _passcodeSource {
        case .none, .noPasscode: return nil
        case .passcode(let p): return { _ in p }
        case .provider(let f): return { _ in f() }
        }
    }
}
