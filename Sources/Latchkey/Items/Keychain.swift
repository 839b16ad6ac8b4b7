import LatchkeyFormat

/// An open keychain: the typed Swift API. A facade over where the keys live — this process
/// (`LocalBackend`) or `latchkey agent` (`AgentBackend`) — with the same results either way.
///
/// ```swift
/// let kc = try Keychain.open(path: "login.keychain", devicePath: "device.secret")
/// try kc.unlock(passcode: Array("1234".utf8))
/// try kc.add(.genericPassword, attributes: ["acct": .string("alice"), "svce": .string("mail")],
///            data: Array("s3cret".utf8))
/// let items = try kc.find(Query(.genericPassword, ["acct": .string("alice")]))
/// ```
public final class Keychain: @unchecked Sendable {
    /// The backend, shared with every view made by `with(_:)`, so that `close()` closes them all.
    private let holder: BackendHolder
    /// The backend; nil once `close()` was called.
    package var backend: (any KeychainBackend)? { holder.current }
    private let defaults = Lock()
    private var defaultCaller: CallerIdentity?
    private var defaultHandler: (@Sendable (_ prompt: String?) -> [UInt8]?)?

    /// Who calls this keychain's operations, unless a call passes its own `CallContext`. nil: a
    /// trusted tool that sees every access group and gives new items no default group. The CLI
    /// and LatchkeySecurity always give one. Which items a caller reaches is decided by
    /// `AccessPolicy`, on every path. Set it once, before use.
    public var caller: CallerIdentity? {
        get { defaults.lock(); defer { defaults.unlock() }; return defaultCaller }
        set { defaults.lock(); defaultCaller = newValue; defaults.unlock() }
    }
    /// Asked for the passcode when an item that needs user presence is read with its data.
    /// Returns nil when the user cancels.
    public var authenticationHandler: (@Sendable (_ prompt: String?) -> [UInt8]?)? {
        get { defaults.lock(); defer { defaults.unlock() }; return defaultHandler }
        set { defaults.lock(); defaultHandler = newValue; defaults.unlock() }
    }
    /// The context of a call that gives none: `caller` and `authenticationHandler`.
    public var context: CallContext {
        defaults.lock(); defer { defaults.unlock() }
        return CallContext(caller: defaultCaller, authenticate: defaultHandler)
    }
    package init(backend: any KeychainBackend) {
        self.holder = BackendHolder(backend)
    }

    private init(holder: BackendHolder) {
        self.holder = holder
    }

    /// Closes the keychain: the file is closed and every class key is zeroed and dropped (for
    /// a keychain served by the agent, only this handle is released; the agent keeps its keys).
    /// Every later call on this keychain, and on the views `with(_:)` made of it, fails with
    /// errSecNotAvailable. A call already running on another thread finishes first. Closing
    /// twice does nothing. Releasing the last reference closes it too.
    public func close() {
        holder.close()
    }

    /// The same open keychain, with `context` as the caller and authentication callback of every
    /// call made through the returned value (this one keeps its own): for code that serves
    /// several callers from one keychain without setting `caller` between calls.
    public func with(_ context: CallContext) -> Keychain {
        let view = Keychain(holder: holder)
        view.defaultCaller = context.caller
        view.defaultHandler = context.authenticate
        return view
    }

    /// The backend of an open keychain, for every operation.
    /// - Throws: errSecNotAvailable once `close()` was called.
    package func openBackend() throws -> any KeychainBackend {
        guard let backend = holder.current else { throw Keychain.closed }
        return backend
    }

    /// What every operation of a closed keychain throws.
    static var closed: KeychainError {
        KeychainError(.notAvailable, "this keychain was closed (Keychain.close()); open it again to use it")
    }

    /// Creates a keychain (and the device secret, when absent).
    /// - Parameters:
    ///   - path: where the keychain file is created (no file may exist there).
    ///   - devicePath: the device secret that binds the keychain to this machine, kept outside
    ///     the keychain's directory where possible; created (0600) when absent.
    ///   - kdfLogN: log2 of scrypt's N for the passcode (default 17).
    ///   - passcode: nil for a keychain without a passcode (then no akpu items).
    /// - Throws: `KeychainError` errSecDuplicateKeychain, errSecIO.
    public static func create(
        path: String, devicePath: String, passcode: [UInt8]?, kdfLogN: UInt8 = KDFParameters.defaultLogN
    ) throws -> Keychain {
        try create(path: path, devicePath: devicePath, passcode: passcode, kdfLogN: kdfLogN, fs: PosixFileSystem.shared)
    }

    package static func create(
        path: String, devicePath: String, passcode: [UInt8]?, kdfLogN: UInt8 = KDFParameters.defaultLogN,
        fs: FileSystem
    ) throws -> Keychain {
        if try io({ try fs.identity(path: path) }, "check the keychain path") != nil {
            throw Keychain.alreadyExists(path: path, devicePath: devicePath, fs: fs)
        }
        let device = try Device.loadOrCreate(path: devicePath, fs: fs).device
        return Keychain(
            backend: LocalBackend(
                store: try KeychainStore.create(path: path, device: device, passcode: passcode, logN: kdfLogN)))
    }

    /// `init` on a path that holds a keychain: nothing is changed, and nothing suggests
    /// removing it (it may hold the only copy of its items). When its device secret is missing
    /// too, the message says which one it needs (`Device.missingSecret`).
    static func alreadyExists(path: String, devicePath: String, fs: FileSystem) -> KeychainError {
        let existing = KeychainStore.existing(fs: fs, path: path)
        guard existing.status == .duplicateKeychain, (try? fs.ownership(path: devicePath)) == nil else {
            return existing
        }
        let missing = Device.missingSecret(path: devicePath, keychainPath: path, fs: fs)
        return KeychainError(
            .duplicateKeychain, "a keychain already exists at \(path); nothing was changed. " + missing.message)
    }

    /// Opens a keychain, locked (dk/dku available; without a passcode, all but akpu).
    /// - Throws: errSecDecode (damaged, rolled back, newer version), errSecAuthFailed (another
    ///   device's keychain), errSecIO (missing or unsafe device secret).
    public static func open(path: String, devicePath: String, acceptRollback: Bool = false) throws -> Keychain {
        try open(path: path, devicePath: devicePath, acceptRollback: acceptRollback, fs: PosixFileSystem.shared)
    }

    package static func open(path: String, devicePath: String, acceptRollback: Bool = false, fs: FileSystem) throws
        -> Keychain
    {
        Keychain(
            backend: try LocalBackend.open(path: path, devicePath: devicePath, acceptRollback: acceptRollback, fs: fs))
    }

    /// Opens and unlocks with the passcode: `open` then `unlock`, with the KDF run on a thread
    /// of its own while the file is read (a keychain without a passcode ignores it).
    /// - Throws: as `open`; errSecAuthFailed for a wrong passcode (nothing stays open).
    public static func open(
        path: String, devicePath: String, acceptRollback: Bool = false, unlockingWith passcode: [UInt8]
    ) throws -> Keychain {
        let device = try Device.load(path: devicePath, fs: PosixFileSystem.shared, keychainPath: path)
        return Keychain(
            backend: LocalBackend(
                store: try KeychainStore.open(
                    path: path, device: device, acceptRollback: acceptRollback,
                    unlockingWith: passcode)))
    }

    /// What cutting a damaged keychain back to its last intact transaction would drop
    /// (`latchkey verify --repair`, spec/FORMAT.md §10.4), without changing anything; nil when
    /// there is no damage to cut off. With the passcode, the plan names the items it drops.
    /// - Throws: errSecDecode when the damage is in the header, or in a record type that needs
    ///   a newer Latchkey; errSecIO.
    public static func repairPlan(path: String, devicePath: String, passcode: [UInt8]? = nil) throws -> RepairPlan? {
        try repairPlan(path: path, devicePath: devicePath, passcode: passcode, fs: PosixFileSystem.shared)
    }

    package static func repairPlan(path: String, devicePath: String, passcode: [UInt8]? = nil, fs: FileSystem) throws
        -> RepairPlan?
    {
        try KeychainStore.repairPlan(path: path, device: try Device.load(path: devicePath, fs: fs), passcode: passcode)
    }

    /// Carries out a plan from `repairPlan`: truncates the file at `plan.cutAt` and adopts the
    /// result as this device's newest copy. Everything the plan lists as dropped is gone.
    /// - Throws: errSecDecode when the file changed since the plan was made; errSecIO.
    public static func repair(_ plan: RepairPlan, devicePath: String) throws {
        try repair(plan, devicePath: devicePath, fs: PosixFileSystem.shared)
    }

    package static func repair(_ plan: RepairPlan, devicePath: String, fs: FileSystem) throws {
        try KeychainStore.repair(plan, device: try Device.load(path: devicePath, fs: fs))
    }

    /// Unlocks with the passcode. - Throws: errSecAuthFailed for a wrong passcode.
    public func unlock(passcode: [UInt8]) throws { try openBackend().unlock(passcode: passcode) }

    /// Drops the WhenUnlocked keys (and the attributes of their items this keychain had read);
    /// AfterFirstUnlock keys stay until the keychain is closed.
    public func lock() { try? backend?.lock() }

    public var hasPasscode: Bool { backend?.hasPasscode ?? false }
    public func isAvailable(_ pc: ProtectionClass) -> Bool { backend?.isAvailable(pc) ?? false }
    /// Bytes of an incomplete tail cut off when the keychain was opened (by the agent: 0 here).
    public var recoveredTailBytes: UInt64 { backend?.recoveredTailBytes ?? 0 }

    // MARK: Items

    /// Adds an item. `cdat`/`mdat` are set by the keychain; `pdmn` comes from `protection`
    /// (default: ak, certificates dk); `agrp` defaults to the caller's first group; `sync` to 0.
    /// - Throws: errSecNoSuchAttr (unknown attribute), errSecNoAccessForItem (foreign group),
    ///   errSecMissingEntitlement (caller without groups), errSecDuplicateItem,
    ///   errSecInteractionNotAllowed (class locked), errSecNotAvailable (akpu without passcode,
    ///   or user presence on a keychain without passcode).
    @discardableResult
    public func add(
        _ itemClass: ItemClass, attributes: [String: AttributeValue], data: [UInt8],
        protection: ProtectionClass? = nil, requiresUserPresence: Bool = false
    ) throws -> Item {
        try add(contentsOf: [
            NewItem(
                itemClass, attributes: attributes, data: data, protection: protection,
                requiresUserPresence: requiresUserPresence)
        ]).first!
    }

    /// Adds every item in one transaction (one write, one fsync): all or none.
    /// - Throws: as `add`; errSecDuplicateItem if any unique key exists or repeats in the batch.
    @discardableResult
    public func add(contentsOf items: [NewItem]) throws -> [Item] { try add(contentsOf: items, context: context) }

    @discardableResult
    package func add(contentsOf items: [NewItem], context: CallContext) throws -> [Item] {
        guard !items.isEmpty else { return [] }
        return try openBackend().add(items, context)
    }

    /// Items matching `query`, at most `limit` (nil: all).
    /// - Parameters:
    ///   - query: the class and the attributes that must match.
    ///   - limit: the most items returned; nil for all.
    ///   - includeData: false returns items with empty `data` and never asks for user presence.
    ///   - prompt: shown by the authentication handler for user-presence items.
    /// - Throws: errSecInteractionNotAllowed when a candidate's class is locked (the whole call
    ///   fails, as on iOS); errSecMissingEntitlement; errSecDecode for a damaged item;
    ///   errSecUserCanceled / errSecAuthFailed from user presence.
    public func find(_ query: Query, limit: Int? = nil, includeData: Bool = true, prompt: String? = nil) throws
        -> [Item]
    {
        try openBackend().find(query, limit: limit, includeData: includeData, prompt: prompt, context)
    }

    package func find(
        _ query: Query, limit: Int? = nil, includeData: Bool = true, prompt: String? = nil,
        context: CallContext
    ) throws -> [Item] {
        try openBackend().find(query, limit: limit, includeData: includeData, prompt: prompt, context)
    }

    /// Updates every match in one transaction (all or nothing). `mdat` moves, `cdat` stays;
    /// a new `protection` re-encrypts the items under that class.
    /// - Returns: the number of items changed.
    /// - Throws: errSecItemNotFound when nothing matches; errSecDuplicateItem when the change
    ///   would give two items the same unique key (then nothing changes); errSecNoSuchAttr;
    ///   errSecNoAccessForItem for a new group the caller may not use.
    @discardableResult
    public func update(
        _ query: Query, attributes: [String: AttributeValue], data: [UInt8]? = nil,
        protection: ProtectionClass? = nil
    ) throws -> Int {
        try update(query, attributes: attributes, data: data, protection: protection, context: context)
    }

    @discardableResult
    package func update(
        _ query: Query, attributes: [String: AttributeValue], data: [UInt8]? = nil,
        protection: ProtectionClass? = nil, context: CallContext
    ) throws -> Int {
        try openBackend().update(query, attributes: attributes, data: data, protection: protection, context)
    }

    /// Deletes every match in one transaction.
    /// - Returns: the number deleted. - Throws: errSecItemNotFound when nothing matches.
    @discardableResult
    public func delete(_ query: Query) throws -> Int { try openBackend().delete(query, context) }

    @discardableResult
    package func delete(_ query: Query, context: CallContext) throws -> Int { try openBackend().delete(query, context) }

    /// Changes, sets (`old` nil) or removes (`new` nil) the passcode. The classes whose
    /// wrapping changes get new class keys and the file is rewritten (spec/FORMAT.md §11.6), so
    /// an old copy of the file with the old passcode opens nothing added or changed afterwards.
    /// Removing the passcode deletes the WhenPasscodeSetThisDeviceOnly items, as iOS does.
    /// - Returns: the number of items deleted by removing the passcode (0 otherwise).
    /// - Throws: errSecAuthFailed (wrong current passcode), errSecParam (empty new passcode, a
    ///   current passcode given to a keychain without one, nothing to remove), errSecIO.
    @discardableResult
    public func changePasscode(old: [UInt8]?, new: [UInt8]?, kdfLogN: UInt8 = KDFParameters.defaultLogN) throws -> Int {
        try openBackend().changePasscode(old: old, new: new, kdfLogN: kdfLogN)
    }

    /// Rewrites the file to its live records, atomically. The earlier versions of changed and
    /// deleted items that are not expired are kept (spec/FORMAT.md §7.7).
    @discardableResult
    public func compact() throws -> (before: UInt64, after: UInt64) { try compact(dropHistory: false) }

    /// Rewrites the file to its live records; `dropHistory`: every earlier version of every
    /// item leaves the file (spec/FORMAT.md §7.7), whatever its bound.
    @discardableResult
    package func compact(dropHistory: Bool) throws -> (before: UInt64, after: UInt64) {
        try openBackend().compact(dropHistory: dropHistory)
    }

    /// Checks every byte of the file and decrypts every item it can.
    public func verify() -> VerifyReport {
        guard let backend else {
            var report = VerifyReport()
            report.problems = [Keychain.closed.message]
            return report
        }
        return backend.verify()
    }

    /// Format version, counts, sizes and device binding. Counts per class need no class key
    /// (the class tag is keyed by the device).
    public func info() throws -> KeychainInfo { try openBackend().info() }
}

/// The backend of a keychain and its views, dropped by `close()`: every later call finds
/// none and throws `Keychain.closed`.
private final class BackendHolder: @unchecked Sendable {
    private let mutex = Lock()
    private var backend: (any KeychainBackend)?

    init(_ backend: any KeychainBackend) { self.backend = backend }

    var current: (any KeychainBackend)? {
        mutex.lock(); defer { mutex.unlock() }
        return backend
    }

    func close() {
        mutex.lock()
        let old = backend
        backend = nil
        mutex.unlock()
        old?.close()
    }
}
