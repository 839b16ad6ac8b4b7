import Foundation
import LatchkeyCrypto
import LatchkeyFormat

/// An open keychain: the typed Swift API over the storage engine.
///
/// ```swift
/// let kc = try Keychain.open(path: "login.keychain", devicePath: "device.secret")
/// try kc.unlock(passcode: Array("1234".utf8))
/// try kc.add(.genericPassword, attributes: ["acct": .string("alice"), "svce": .string("mail")],
///            data: Array("s3cret".utf8))
/// let items = try kc.find(Query(.genericPassword, ["acct": .string("alice")]))
/// ```
public final class Keychain: @unchecked Sendable {
    let store: KeychainStore
    /// Attributes the keychain sets itself and callers cannot.
    static let keychainOwned: Set<String> = ["cdat", "mdat", "pdmn"]

    init(store: KeychainStore) { self.store = store }

    /// Creates a keychain (and the device secret, when absent).
    /// - Parameters:
    ///   - passcode: nil for a keychain without a passcode (then no akpu items).
    /// - Throws: `KeychainError` errSecDuplicateKeychain, errSecIO.
    public static func create(path: String, devicePath: String, passcode: [UInt8]?, kdfLogN: UInt8 = KDFParameters.defaultLogN) throws -> Keychain {
        try create(path: path, devicePath: devicePath, passcode: passcode, kdfLogN: kdfLogN, fs: PosixFileSystem.shared)
    }

    package static func create(path: String, devicePath: String, passcode: [UInt8]?, kdfLogN: UInt8 = KDFParameters.defaultLogN,
                               fs: FileSystem) throws -> Keychain {
        if try io({ try fs.identity(path: path) }, "check the keychain path") != nil {
            throw KeychainError(.duplicateKeychain, "a keychain already exists at \(path); pick another path or delete it first")
        }
        let device = try Device.loadOrCreate(path: devicePath, fs: fs).device
        return Keychain(store: try KeychainStore.create(path: path, device: device, passcode: passcode, logN: kdfLogN))
    }

    /// Opens a keychain, locked (dk/dku available; without a passcode, all but akpu).
    /// - Throws: errSecDecode (damaged, rolled back, newer version), errSecAuthFailed (another
    ///   device's keychain), errSecIO (missing or unsafe device secret).
    public static func open(path: String, devicePath: String, acceptRollback: Bool = false) throws -> Keychain {
        try open(path: path, devicePath: devicePath, acceptRollback: acceptRollback, fs: PosixFileSystem.shared)
    }

    package static func open(path: String, devicePath: String, acceptRollback: Bool = false, fs: FileSystem) throws -> Keychain {
        let device = try Device.load(path: devicePath, fs: fs)
        return Keychain(store: try KeychainStore.open(path: path, device: device, acceptRollback: acceptRollback))
    }

    /// Unlocks with the passcode. - Throws: errSecAuthFailed for a wrong passcode.
    public func unlock(passcode: [UInt8]) throws { try store.unlock(passcode: passcode) }

    /// Drops the WhenUnlocked keys; AfterFirstUnlock keys stay until the keychain is closed.
    public func lock() { store.lock() }

    public var hasPasscode: Bool { store.hasPasscode }
    public func isAvailable(_ pc: ProtectionClass) -> Bool { store.isAvailable(pc) }
    /// Bytes of an incomplete tail cut off when the keychain was opened.
    public var recoveredTailBytes: UInt64 { store.recoveredTailBytes }

    // MARK: Items

    static func now() -> Double { Date().timeIntervalSinceReferenceDate }

    /// Adds an item. `cdat`/`mdat` are set by the keychain; `pdmn` comes from `protection`.
    /// - Throws: errSecDuplicateItem when the unique key exists; errSecInteractionNotAllowed when
    ///   the class is locked; errSecNotAvailable for akpu without a passcode.
    @discardableResult
    public func add(_ itemClass: ItemClass, attributes: [String: AttributeValue], data: [UInt8],
                    protection: ProtectionClass = .whenUnlocked, requiresUserPresence: Bool = false) throws -> Item {
        var attrs = attributes.filter { !Keychain.keychainOwned.contains($0.key) }
        let t = Keychain.now()
        attrs["cdat"] = .date(t)
        attrs["mdat"] = .date(t)
        let id = try ID16.random()
        let plaintext = ItemPlaintext(itemClass: itemClass, attributes: attrs, data: data)
        try store.withWriteLock {
            try store.commit([.put(id: id, plaintext: plaintext, protection: protection,
                                   flags: requiresUserPresence ? ItemPutPayload.userPresenceFlag : 0)])
        }
        return makeItem(plaintext, protection: protection, id: id)
    }

    func makeItem(_ p: ItemPlaintext, protection: ProtectionClass, id: ID16) -> Item {
        var attrs = p.attributes
        attrs["pdmn"] = .string(protection.code)
        return Item(itemClass: p.itemClass, attributes: attrs, data: p.data, protection: protection,
                    persistentRef: p.itemClass.code + id.bytes)
    }

    /// Items matching `query`, at most `limit` (nil: all).
    /// - Throws: errSecInteractionNotAllowed when a candidate's class is locked (the whole call
    ///   fails, as on iOS); errSecDecode for a damaged item.
    public func find(_ query: Query, limit: Int? = nil) throws -> [Item] {
        try store.refresh()
        return try matches(query, limit: limit).map { makeItem($0.plaintext, protection: $0.slot.protection, id: $0.id) }
    }

    struct Match {
        var id: ID16
        var slot: ItemSlot
        var plaintext: ItemPlaintext
    }

    /// The matching items with their slots. Uses the unique-key index when the query names
    /// every attribute of the class's unique key.
    func matches(_ query: Query, limit: Int? = nil) throws -> [Match] {
        if !query.caseInsensitive, let key = exactUniqueKey(query) {
            guard let (id, slot) = store.slot(uniqueKey: key) else { return [] }
            if let pc = query.protection, slot.protection != pc { return [] }
            let p = try store.read(slot)
            return Keychain.filter(p, query) ? [Match(id: id, slot: slot, plaintext: p)] : []
        }
        let tag = store.classTag(query.itemClass)
        var out: [Match] = []
        for (id, slot) in store.slots().sorted(by: { $0.1.offset < $1.1.offset }) where slot.classTag == tag {
            if let pc = query.protection, slot.protection != pc { continue }
            let p = try store.read(slot)
            if Keychain.filter(p, query) {
                out.append(Match(id: id, slot: slot, plaintext: p))
                if let l = limit, out.count >= l { break }
            }
        }
        return out
    }

    func exactUniqueKey(_ q: Query) -> UniqueKey? {
        let names = UniqueKey.attributes(for: q.itemClass).map(\.name)
        guard names.allSatisfy({ q.attributes[$0] != nil || $0 == "sync" }) else { return nil }
        return UniqueKey(itemClass: q.itemClass, attributes: q.attributes)
    }

    static func filter(_ p: ItemPlaintext, _ q: Query) -> Bool {
        for (name, want) in q.attributes {
            let have = p.attributes[name] ?? Keychain.defaultValue(name, p.itemClass)
            guard let have, have.matches(want, caseInsensitive: q.caseInsensitive) else { return false }
        }
        return true
    }

    /// Unique-key attributes that are absent take their default (reference §2.2).
    static func defaultValue(_ name: String, _ c: ItemClass) -> AttributeValue? {
        guard let kind = UniqueKey.attributes(for: c).first(where: { $0.name == name })?.kind else { return nil }
        switch kind {
        case .bytes: return .data([])
        case .integer: return .integer(0)
        case .date: return .date(0)
        }
    }

    /// Updates every match in one transaction (all or nothing). `mdat` moves, `cdat` stays.
    /// - Returns: the number of items changed.
    /// - Throws: errSecItemNotFound when nothing matches; errSecDuplicateItem when the change
    ///   would give two items the same unique key (then nothing changes).
    @discardableResult
    public func update(_ query: Query, attributes: [String: AttributeValue], data: [UInt8]? = nil,
                       protection: ProtectionClass? = nil) throws -> Int {
        let changes = attributes.filter { !Keychain.keychainOwned.contains($0.key) }
        return try store.withWriteLock {
            let found = try matches(query)
            guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no item matches the query") }
            let t = Keychain.now()
            let mutations: [Mutation] = found.map { m in
                var p = m.plaintext
                p.attributes.merge(changes) { $1 }
                p.attributes["mdat"] = .date(t)
                if let d = data { p.data = d }
                return .put(id: m.id, plaintext: p, protection: protection ?? m.slot.protection, flags: m.slot.flags)
            }
            try store.commit(mutations)
            return found.count
        }
    }

    /// Deletes every match in one transaction.
    /// - Returns: the number deleted. - Throws: errSecItemNotFound when nothing matches.
    @discardableResult
    public func delete(_ query: Query) throws -> Int {
        try store.withWriteLock {
            let found = try matches(query)
            guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no item matches the query") }
            try store.commit(found.map { .delete($0.id) })
            return found.count
        }
    }

    /// Changes (or sets) the passcode by appending a keybag record.
    public func changePasscode(old: [UInt8]?, new: [UInt8], kdfLogN: UInt8 = KDFParameters.defaultLogN) throws {
        try store.changePasscode(old: old, new: new, logN: kdfLogN)
    }

    /// Rewrites the file to its live records, atomically.
    @discardableResult
    public func compact() throws -> (before: UInt64, after: UInt64) { try store.compact() }
}
