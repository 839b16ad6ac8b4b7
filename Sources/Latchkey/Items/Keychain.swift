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
    /// The open file; for a keychain served by the agent, a copy opened in this process only
    /// when package-internal code needs the engine itself (see `AgentSession.localStore`).
    var store: KeychainStore { local ?? remote!.localStore() }
    private let local: KeychainStore?
    /// Set when `latchkey agent` serves this keychain (Agent/): the public operations below
    /// forward to it.
    let remote: AgentSession?
    /// Who is calling. nil: a trusted tool that sees every access group and gives new items
    /// no default group. The CLI and LatchkeySecurity always set one. Which items a caller
    /// reaches is decided by `AccessPolicy`, on every path.
    public var caller: CallerIdentity?
    /// Asked for the passcode when an item that needs user presence is read with its data.
    /// Returns nil when the user cancels.
    public var authenticationHandler: (@Sendable (_ prompt: String?) -> [UInt8]?)?
    /// Decrypted attributes for queries on non-unique attributes (see AttributeIndex).
    let index = AttributeIndex()
    /// Attributes the keychain sets itself and callers cannot.
    static let keychainOwned: Set<String> = ["cdat", "mdat", "pdmn"]

    init(store: KeychainStore) {
        local = store
        remote = nil
    }

    init(remote: AgentSession) {
        local = nil
        self.remote = remote
    }

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
            throw Keychain.alreadyExists(path: path, devicePath: devicePath, fs: fs)
        }
        let device = try Device.loadOrCreate(path: devicePath, fs: fs).device
        return Keychain(store: try KeychainStore.create(path: path, device: device, passcode: passcode, logN: kdfLogN))
    }

    /// `init` on a path that holds a keychain: nothing is changed, and nothing suggests
    /// removing it (it may hold the only copy of its items). When its device secret is missing
    /// too, the message says which one it needs (`Device.missingSecret`).
    static func alreadyExists(path: String, devicePath: String, fs: FileSystem) -> KeychainError {
        let existing = KeychainStore.existing(fs: fs, path: path)
        guard existing.status == .duplicateKeychain, (try? fs.ownership(path: devicePath)) == nil else { return existing }
        let missing = Device.missingSecret(path: devicePath, keychainPath: path, fs: fs)
        return KeychainError(.duplicateKeychain, "a keychain already exists at \(path); nothing was changed. " + missing.message)
    }

    /// Opens a keychain, locked (dk/dku available; without a passcode, all but akpu).
    /// - Throws: errSecDecode (damaged, rolled back, newer version), errSecAuthFailed (another
    ///   device's keychain), errSecIO (missing or unsafe device secret).
    public static func open(path: String, devicePath: String, acceptRollback: Bool = false) throws -> Keychain {
        try open(path: path, devicePath: devicePath, acceptRollback: acceptRollback, fs: PosixFileSystem.shared)
    }

    package static func open(path: String, devicePath: String, acceptRollback: Bool = false, fs: FileSystem) throws -> Keychain {
        let device = try Device.load(path: devicePath, fs: fs, keychainPath: path)
        return Keychain(store: try KeychainStore.open(path: path, device: device, acceptRollback: acceptRollback))
    }

    /// Opens and unlocks with the passcode: `open` then `unlock`, with the KDF run on a thread
    /// of its own while the file is read (a keychain without a passcode ignores it).
    /// - Throws: as `open`; errSecAuthFailed for a wrong passcode (nothing stays open).
    public static func open(path: String, devicePath: String, acceptRollback: Bool = false, unlockingWith passcode: [UInt8]) throws -> Keychain {
        let device = try Device.load(path: devicePath, fs: PosixFileSystem.shared, keychainPath: path)
        return Keychain(store: try KeychainStore.open(path: path, device: device, acceptRollback: acceptRollback,
                                                      unlockingWith: passcode))
    }

    /// What cutting a damaged keychain back to its last intact transaction would drop
    /// (`latchkey verify --repair`, spec/FORMAT.md §10.4), without changing anything; nil when
    /// there is no damage to cut off. With the passcode, the plan names the items it drops.
    /// - Throws: errSecDecode when the damage is in the header, or in a record type that needs
    ///   a newer Latchkey; errSecIO.
    public static func repairPlan(path: String, devicePath: String, passcode: [UInt8]? = nil) throws -> RepairPlan? {
        try repairPlan(path: path, devicePath: devicePath, passcode: passcode, fs: PosixFileSystem.shared)
    }

    package static func repairPlan(path: String, devicePath: String, passcode: [UInt8]? = nil, fs: FileSystem) throws -> RepairPlan? {
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
    public func unlock(passcode: [UInt8]) throws {
        if let remote { return try remote.unlock(self, passcode: passcode) }
        try store.unlock(passcode: passcode)
    }

    /// Drops the WhenUnlocked keys (and the attributes of their items this keychain had read);
    /// AfterFirstUnlock keys stay until the keychain is closed.
    public func lock() {
        if let remote { try? remote.lock(self); return }
        store.lock()
        index.drop(protections: [.whenUnlocked, .whenUnlockedThisDeviceOnly, .whenPasscodeSetThisDeviceOnly])
    }

    public var hasPasscode: Bool { remote?.hasPasscode ?? store.hasPasscode }
    public func isAvailable(_ pc: ProtectionClass) -> Bool { remote?.isAvailable(self, pc) ?? store.isAvailable(pc) }
    /// Bytes of an incomplete tail cut off when the keychain was opened (by the agent: 0 here).
    public var recoveredTailBytes: UInt64 { remote == nil ? store.recoveredTailBytes : 0 }

    // MARK: Items

    static func now() -> Double { Date().timeIntervalSinceReferenceDate }

    /// Refuses, before anything is sent or written, an item whose given attributes and data are
    /// already over the size limit of spec §6.4 (the engine checks the final item again).
    static func checkSize(_ p: ItemPlaintext) throws {
        let size = p.encodedSize
        if size > FormatConstants.maxItemPlaintextSize {
            throw KeychainError.tooLarge(size: size, limit: FormatConstants.maxItemPlaintextSize)
        }
    }

    /// Checks that every attribute exists in the class (errSecNoSuchAttr, −25303).
    static func validateNames(_ attributes: [String: AttributeValue], _ c: ItemClass) throws {
        for name in attributes.keys where ItemSchema.kind(name, in: c) == nil {
            throw KeychainError(.noSuchAttr, "'\(name)' is not an attribute of class \(c.rawValue)")
        }
    }

    /// The access decision for the current caller (AccessPolicy).
    /// - Throws: errSecMissingEntitlement for a caller without any group.
    func accessPolicy() throws -> AccessPolicy { try AccessPolicy(caller: caller) }

    /// A group in new values (add, update) that the caller may not use (errSecNoAccessForItem).
    func checkWritableGroup(_ attributes: [String: AttributeValue], _ policy: AccessPolicy) throws {
        if let agrp = attributes["agrp"], !policy.permits(group: agrp) { throw policy.refusal(group: agrp) }
    }

    /// Adds an item. `cdat`/`mdat` are set by the keychain; `pdmn` comes from `protection`
    /// (default: ak, certificates dk); `agrp` defaults to the caller's first group; `sync` to 0.
    /// - Throws: errSecNoSuchAttr (unknown attribute), errSecNoAccessForItem (foreign group),
    ///   errSecMissingEntitlement (caller without groups), errSecDuplicateItem,
    ///   errSecInteractionNotAllowed (class locked), errSecNotAvailable (akpu without passcode,
    ///   or user presence on a keychain without passcode).
    @discardableResult
    public func add(_ itemClass: ItemClass, attributes: [String: AttributeValue], data: [UInt8],
                    protection: ProtectionClass? = nil, requiresUserPresence: Bool = false) throws -> Item {
        try add(contentsOf: [NewItem(itemClass, attributes: attributes, data: data, protection: protection,
                                     requiresUserPresence: requiresUserPresence)]).first!
    }

    /// Adds every item in one transaction (one write, one fsync): all or none.
    /// - Throws: as `add`; errSecDuplicateItem if any unique key exists or repeats in the batch.
    @discardableResult
    public func add(contentsOf items: [NewItem]) throws -> [Item] {
        guard !items.isEmpty else { return [] }
        for given in items {
            try Keychain.checkSize(ItemPlaintext(itemClass: given.itemClass, attributes: given.attributes, data: given.data))
        }
        if let remote { return try remote.add(self, items) }
        let policy = try accessPolicy()
        let t = Keychain.now()
        var mutations: [Mutation] = []
        var added: [Item] = []
        mutations.reserveCapacity(items.count)
        for given in items {
            try Keychain.validateNames(given.attributes, given.itemClass)
            let item = try Keychain.derivingAttributes(given)   // certificates and keys: Keychain+Certificates.swift
            try checkWritableGroup(item.attributes, policy)
            var attrs = item.attributes.filter { !Keychain.keychainOwned.contains($0.key) }
            if attrs["agrp"] == nil, let g = policy.defaultGroup { attrs["agrp"] = .string(g) }
            if attrs["sync"] == nil { attrs["sync"] = .integer(0) }
            attrs["cdat"] = .date(t)
            attrs["mdat"] = .date(t)
            let pc = item.protection ?? ItemSchema.defaultProtection(for: item.itemClass)
            if item.requiresUserPresence && !store.hasPasscode {
                throw KeychainError(.notAvailable, "user presence needs a keychain with a passcode; set one with 'latchkey passwd'")
            }
            let id = try ID16.random()
            let plaintext = ItemPlaintext(itemClass: item.itemClass, attributes: attrs, data: item.data)
            let flags = item.requiresUserPresence ? ItemPutPayload.userPresenceFlag : 0
            mutations.append(.put(id: id, plaintext: plaintext, protection: pc, flags: flags))
            added.append(makeItem(plaintext, protection: pc, id: id, flags: flags))
        }
        try store.withWriteLock { try store.commit(mutations) }
        return added
    }

    func makeItem(_ p: ItemPlaintext, protection: ProtectionClass, id: ID16, flags: UInt8 = 0) -> Item {
        var attrs = p.attributes
        let pdmn = AttributeValue.string(protection.code)
        if attrs["pdmn"] != pdmn { attrs["pdmn"] = pdmn }   // attribute-index rows carry it: no copy
        return Item(itemClass: p.itemClass, attributes: attrs, data: p.data, protection: protection,
                    persistentRef: p.itemClass.code + id.bytes,
                    requiresUserPresence: flags & ItemPutPayload.userPresenceFlag != 0)
    }

    /// Items matching `query`, at most `limit` (nil: all).
    /// - Parameters:
    ///   - includeData: false returns items with empty `data` and never asks for user presence.
    ///   - prompt: shown by the authentication handler for user-presence items.
    /// - Throws: errSecInteractionNotAllowed when a candidate's class is locked (the whole call
    ///   fails, as on iOS); errSecMissingEntitlement; errSecDecode for a damaged item;
    ///   errSecUserCanceled / errSecAuthFailed from user presence.
    public func find(_ query: Query, limit: Int? = nil, includeData: Bool = true, prompt: String? = nil) throws -> [Item] {
        if let remote { return try remote.find(self, query, limit: limit, includeData: includeData, prompt: prompt) }
        try store.refresh()
        var out: [Item] = []
        for m in try matches(query, limit: limit, attributesOnly: !includeData) {
            let p = m.plaintext
            var item = makeItem(p, protection: m.slot.protection, id: m.id, flags: m.slot.flags)
            if !includeData {
                item.data = []
            } else if item.requiresUserPresence {
                try authenticate(prompt: prompt)
            }
            out.append(item)
        }
        return out
    }

    /// Asks the authentication handler for the passcode and checks it (user presence).
    func authenticate(prompt: String?) throws {
        guard let handler = authenticationHandler else {
            throw KeychainError(.interactionNotAllowed, "this item needs user presence (the passcode), and no authentication handler is set")
        }
        guard var passcode = handler(prompt) else {
            throw KeychainError(.userCanceled, "authentication was cancelled")
        }
        defer { Crypto.cleanse(&passcode) }
        try store.checkPasscode(passcode)
    }

    struct Match {
        var id: ID16
        var slot: ItemSlot
        var plaintext: ItemPlaintext
        /// The plaintext came from the attribute cache and has no data (only with
        /// `matches(attributesOnly: true)`).
        var cached = false
    }

    /// The matching items with their slots, after the implicit filters (sync) and then the
    /// caller's access decision (AccessPolicy), which every match passes whatever path found
    /// it. Uses the unique-key index when the query pins the unique key (the caller's few
    /// groups and the sync values are enumerated).
    ///
    /// With `attributesOnly`, matches served from the attribute cache carry no data (`cached`);
    /// otherwise every match holds the full plaintext, data included.
    func matches(_ query: Query, limit: Int? = nil, attributesOnly: Bool = false) throws -> [Match] {
        let policy = try accessPolicy()
        try Keychain.validateNames(query.attributes, query.itemClass)
        if let ref = query.persistentRef {
            guard ref.count == 20, let c = ItemClass(rawValue: String(decoding: ref.prefix(4), as: UTF8.self)),
                  c == query.itemClass, let slot = store.slot(id: ID16(ref.suffix(16))),
                  store.itemClass(of: slot) == c else { return [] }
            let p = try store.read(slot)
            // A reference (class and UUID, both readable in the file) names an item; it gives
            // no right to it.
            guard policy.permits(p) else { return [] }
            return [Match(id: ID16(ref.suffix(16)), slot: slot, plaintext: p)]
        }
        var q = query
        // A group the caller may not use finds nothing; no need to look.
        if let agrp = q.attributes["agrp"], !policy.permits(group: agrp) { return [] }
        switch q.synchronizable {
        case .notSynchronizable: if q.attributes["sync"] == nil { q.attributes["sync"] = .integer(0) }
        case .synchronizable: q.attributes["sync"] = .integer(1)
        case .any: q.attributes["sync"] = nil
        }
        if let l = limit, l <= 0 { return [] }

        if !q.caseInsensitive, let keys = uniqueKeyCandidates(q, groups: policy.groups) {
            var out: [Match] = []
            for key in keys {
                guard let (id, slot) = store.slot(uniqueKey: key) else { continue }
                if let pc = q.protection, slot.protection != pc { continue }
                let p = try store.read(slot)
                if Keychain.filter(p, q) && policy.permits(p) { out.append(Match(id: id, slot: slot, plaintext: p)) }
                if let l = limit, out.count >= l { break }
            }
            return out
        }
        // Every item of the class: the attribute index answers from the attributes it has
        // decrypted before (and decrypts the others once); file order.
        let predicates: [AttributeIndex.Predicate] = q.attributes.map { name, want in
            let fold = Keychain.foldsCase(name, q)
            return AttributeIndex.Predicate(
                name: name,
                absent: Keychain.defaultValue(name, q.itemClass)?.matches(want, caseInsensitive: fold) ?? false,
                test: { $0.matches(want, caseInsensitive: fold) })
        }
        let store = self.store
        var out = try index.select(store: store, classTag: store.classTag(q.itemClass), protection: q.protection,
                                   available: { store.isAvailable($0) }, predicates: predicates,
                                   decrypt: { try store.read($0) })
            .filter { policy.permits($0.2) }
            .map { Match(id: $0.0, slot: $0.1, plaintext: $0.2, cached: true) }
        if let l = limit, out.count > l { out.removeSubrange(l...) }
        if !attributesOnly {
            for i in out.indices where out[i].cached {
                out[i].plaintext = try store.read(out[i].slot)
                out[i].cached = false
            }
        }
        return out
    }

    /// Every unique key the query can match, when it names all of the class's unique-key
    /// attributes except possibly `agrp` (then: each of the caller's groups) — else nil.
    func uniqueKeyCandidates(_ q: Query, groups: [String]?) -> [UniqueKey]? {
        var agrps: [AttributeValue?] = [q.attributes["agrp"]]
        if q.attributes["agrp"] == nil {
            guard let groups, groups.count <= 16 else { return nil }
            agrps = groups.map { .string($0) }
        }
        let syncs: [AttributeValue?] = q.attributes["sync"] != nil ? [q.attributes["sync"]] : [.integer(0), .integer(1)]
        for (name, _) in UniqueKey.attributes(for: q.itemClass) where name != "agrp" && name != "sync" {
            if q.attributes[name] == nil { return nil }
        }
        var out: [UniqueKey] = []
        for a in agrps {
            for s in syncs {
                var attrs = q.attributes
                attrs["agrp"] = a
                attrs["sync"] = s
                out.append(UniqueKey(itemClass: q.itemClass, attributes: attrs))
            }
        }
        return out
    }

    static func filter(_ p: ItemPlaintext, _ q: Query) -> Bool {
        for (name, want) in q.attributes {
            let have = p.attributes[name] ?? Keychain.defaultValue(name, p.itemClass)
            guard let have, have.matches(want, caseInsensitive: foldsCase(name, q)) else { return false }
        }
        return true
    }

    /// Whether the query compares attribute `name` ignoring case: every string attribute of a
    /// case-insensitive query except `agrp`, which names an access group and is compared byte
    /// for byte, as access control is (AccessPolicy).
    static func foldsCase(_ name: String, _ q: Query) -> Bool { q.caseInsensitive && name != "agrp" }

    /// Unique-key attributes that are absent take their default (reference §2.2).
    static func defaultValue(_ name: String, _ c: ItemClass) -> AttributeValue? {
        guard let kind = UniqueKey.attributes(for: c).first(where: { $0.name == name })?.kind else { return nil }
        switch kind {
        case .bytes: return .data([])
        case .integer: return .integer(0)
        case .date: return .date(0)
        }
    }

    /// Updates every match in one transaction (all or nothing). `mdat` moves, `cdat` stays;
    /// a new `protection` re-encrypts the items under that class.
    /// - Returns: the number of items changed.
    /// - Throws: errSecItemNotFound when nothing matches; errSecDuplicateItem when the change
    ///   would give two items the same unique key (then nothing changes); errSecNoSuchAttr;
    ///   errSecNoAccessForItem for a new group the caller may not use.
    @discardableResult
    public func update(_ query: Query, attributes: [String: AttributeValue], data: [UInt8]? = nil,
                       protection: ProtectionClass? = nil) throws -> Int {
        if let data { try Keychain.checkSize(ItemPlaintext(itemClass: query.itemClass, attributes: attributes, data: data)) }
        if let remote { return try remote.update(self, query, attributes: attributes, data: data, protection: protection) }
        try Keychain.validateNames(attributes, query.itemClass)
        try checkWritableGroup(attributes, try accessPolicy())
        let changes = attributes.filter { !Keychain.keychainOwned.contains($0.key) }
        return try store.withWriteLock {
            let found = try matches(query)
            guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no item matches the query") }
            let t = Keychain.now()
            let mutations: [Mutation] = try found.map { m in
                var p = m.plaintext
                p.attributes.merge(changes) { $1 }
                p.attributes["mdat"] = .date(t)
                if let d = data { p.data = d }
                try Keychain.rederivingAttributes(&p)   // certificates: Keychain+Certificates.swift
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
        if let remote { return try remote.delete(self, query) }
        return try store.withWriteLock {
            let found = try matches(query)
            guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no item matches the query") }
            try store.commit(found.map { .delete($0.id) })
            return found.count
        }
    }

    /// Changes, sets (`old` nil) or removes (`new` nil) the passcode. The classes whose
    /// wrapping changes get new class keys and the file is rewritten (spec/FORMAT.md §11.6), so
    /// an old copy of the file with the old passcode opens nothing added or changed afterwards.
    /// Removing the passcode deletes the WhenPasscodeSetThisDeviceOnly items, as iOS does.
    /// - Returns: the number of items deleted by removing the passcode (0 otherwise).
    /// - Throws: errSecAuthFailed (wrong current passcode), errSecParam (empty new passcode, a
    ///   current passcode given to a keychain without one, nothing to remove), errSecIO.
    @discardableResult
    public func changePasscode(old: [UInt8]?, new: [UInt8]?, kdfLogN: UInt8 = KDFParameters.defaultLogN) throws -> Int {
        if let remote { return try remote.changePasscode(self, old: old, new: new, kdfLogN: kdfLogN) }
        return try store.changePasscode(old: old, new: new, logN: kdfLogN)
    }

    /// Rewrites the file to its live records, atomically.
    @discardableResult
    public func compact() throws -> (before: UInt64, after: UInt64) {
        if let remote { return try remote.compact(self) }
        return try store.compact()
    }
}
