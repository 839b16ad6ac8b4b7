import LatchkeyCrypto
import LatchkeyFormat

/// A keychain whose file this process opened: the store (Store/) and the planner that finds
/// the items a query matches in it (Query/).
package final class LocalBackend: StreamingBackend, @unchecked Sendable {
    /// The open file (Store/): what `StreamingBackend` hands to backup and restore.
    package let store: KeychainStore
    /// Finds the matches of every query, with its attribute cache (Query/).
    let planner: QueryPlanner
    typealias Match = QueryPlanner.Match

    package init(store: KeychainStore) {
        self.store = store
        self.planner = QueryPlanner(store: store)
    }

    /// Opens the keychain file, locked (`Keychain.open`; the agent opens its keychains so).
    package static func open(
        path: String, devicePath: String, acceptRollback: Bool = false,
        fs: FileSystem = PosixFileSystem.shared
    ) throws -> LocalBackend {
        let device = try Device.load(path: devicePath, fs: fs, keychainPath: path)
        return LocalBackend(store: try KeychainStore.open(path: path, device: device, acceptRollback: acceptRollback))
    }

    package var hasPasscode: Bool { store.hasPasscode }
    package var recoveredTailBytes: UInt64 { store.recoveredTailBytes }

    package func unlock(passcode: [UInt8]) throws {
        try store.unlock(passcode: passcode)
    }

    /// Drops the WhenUnlocked keys and the attributes of their items this keychain had read.
    package func lock() {
        store.lock()
        planner.forget(protections: [.whenUnlocked, .whenUnlockedThisDeviceOnly, .whenPasscodeSetThisDeviceOnly])
    }

    package func isAvailable(_ pc: ProtectionClass) -> Bool { store.isAvailable(pc) }

    /// Forgets every decrypted attribute and key and closes the file.
    package func close() {
        planner.forget(protections: Set(ProtectionClass.allCases))
        store.close()
    }

    // MARK: Items

    package func add(_ items: [NewItem], _ context: CallContext) throws -> [Item] {
        guard !items.isEmpty else { return [] }
        for given in items { try ItemRules.checkSize(given.itemClass, attributes: given.attributes, data: given.data) }
        let policy = try AccessPolicy(caller: context.caller)
        let t = ItemRules.now()
        var mutations: [Mutation] = []
        var added: [Item] = []
        mutations.reserveCapacity(items.count)
        for given in items {
            let p = try prepared(given, policy: policy, time: t)
            mutations.append(.put(id: p.id, plaintext: p.plaintext, protection: p.protection, flags: p.flags))
            added.append(makeItem(p.plaintext, protection: p.protection, id: p.id, flags: p.flags))
        }
        try store.write { try $0.commit(mutations) }
        return added
    }

    /// A new item as `add` stores it: attributes checked and derived, the caller's group
    /// checked (and given when absent), `sync` defaulted, `cdat` and `mdat` set to `time`, a
    /// fresh UUID. Shared by `add` and the streaming import (`ItemImporter`).
    func prepared(_ given: NewItem, policy: AccessPolicy, time t: Double) throws
        -> (id: ID16, plaintext: ItemPlaintext, protection: ProtectionClass, flags: UInt8)
    {
        try ItemRules.validateNames(given.attributes, given.itemClass)
        let item = try DerivedAttributes.derivingAttributes(given)
        try LocalBackend.checkWritableGroup(item.attributes, policy)
        // Made at its final size: agrp, sync, cdat and mdat are added below, and growing the
        // table would rehash every key.
        var attrs = [String: AttributeValue](minimumCapacity: item.attributes.count + 4)
        for (name, value) in item.attributes where !ItemRules.keychainOwned.contains(name) { attrs[name] = value }
        if attrs["agrp"] == nil, let g = policy.defaultGroup { attrs["agrp"] = .string(g) }
        if attrs["sync"] == nil { attrs["sync"] = .integer(0) }
        attrs["cdat"] = .date(t)
        attrs["mdat"] = .date(t)
        let pc = item.protection ?? ItemSchema.defaultProtection(for: item.itemClass)
        if item.requiresUserPresence && !store.hasPasscode {
            throw KeychainError(
                .notAvailable, "user presence needs a keychain with a passcode, and this keychain has none",
                remedy: .setPasscode)
        }
        try ItemRules.checkSynchronizable(attrs, protection: pc, userPresence: item.requiresUserPresence)
        let plaintext = ItemPlaintext(itemClass: item.itemClass, attributes: attrs, data: item.data)
        let flags = item.requiresUserPresence ? ItemPutPayload.userPresenceFlag : 0
        return (try ID16.random(), plaintext, pc, flags)
    }

    /// A group in new values (add, update) that the caller may not use (errSecNoAccessForItem).
    static func checkWritableGroup(_ attributes: [String: AttributeValue], _ policy: AccessPolicy) throws {
        if let agrp = attributes["agrp"], !policy.permits(group: agrp) { throw policy.refusal(group: agrp) }
    }

    /// The item of a plaintext; when the caller gives up its last reference to `p` (as `find`
    /// does), its attribute dictionary becomes the item's without a copy.
    func makeItem(_ p: consuming ItemPlaintext, protection: ProtectionClass, id: ID16, flags: UInt8 = 0) -> Item {
        let pdmn = AttributeValue.string(protection.code)
        if p.attributes["pdmn"] != pdmn { p.attributes["pdmn"] = pdmn }  // attribute-index rows carry it: no copy
        // Class code ‖ UUID (big-endian halves), made at its size in one allocation.
        var ref = [UInt8]()
        ref.reserveCapacity(20)
        ref.append(contentsOf: p.itemClass.rawValue.utf8)
        withUnsafeBytes(of: id.high.bigEndian) { ref.append(contentsOf: $0) }
        withUnsafeBytes(of: id.low.bigEndian) { ref.append(contentsOf: $0) }
        return Item(
            itemClass: p.itemClass, attributes: p.attributes, data: p.data, protection: protection,
            persistentRef: ref,
            requiresUserPresence: flags & ItemPutPayload.userPresenceFlag != 0)
    }

    package func find(_ query: Query, limit: Int?, includeData: Bool, prompt: String?, _ context: CallContext) throws
        -> [Item]
    {
        try store.refresh()
        var found = try planner.matches(query, context, limit: limit, attributesOnly: !includeData)
        var out: [Item] = []
        out.reserveCapacity(found.count)
        for i in found.indices {
            let (id, slot) = (found[i].id, found[i].slot)
            // Moved out of the array, so that makeItem owns the only reference to it.
            var plaintext = ItemPlaintext(itemClass: found[i].plaintext.itemClass, attributes: [:], data: [])
            swap(&plaintext, &found[i].plaintext)
            var item = makeItem(plaintext, protection: slot.protection, id: id, flags: slot.flags)
            if !includeData {
                item.data = []
            } else if item.requiresUserPresence {
                try authenticate(context, prompt: prompt)
            }
            out.append(item)
        }
        return out
    }

    /// Asks the call's authentication callback for the passcode and checks it (user presence).
    func authenticate(_ context: CallContext, prompt: String?) throws {
        guard let handler = context.authenticate else {
            throw KeychainError(
                .interactionNotAllowed,
                "this item needs user presence (the passcode), and no authentication handler is set")
        }
        guard var passcode = handler(prompt) else {
            throw KeychainError(.userCanceled, "authentication was cancelled")
        }
        defer { Crypto.cleanse(&passcode) }
        try store.checkPasscode(passcode)
    }

    package func update(
        _ query: Query, attributes: [String: AttributeValue], data: [UInt8]?, protection: ProtectionClass?,
        _ context: CallContext
    ) throws -> Int {
        if let data { try ItemRules.checkSize(query.itemClass, attributes: attributes, data: data) }
        try ItemRules.validateNames(attributes, query.itemClass)
        try LocalBackend.checkWritableGroup(attributes, try AccessPolicy(caller: context.caller))
        let changes = attributes.filter { !ItemRules.keychainOwned.contains($0.key) }
        return try store.write { tx in
            let found = try planner.matches(query, context)
            guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no item matches the query") }
            let t = ItemRules.now()
            let mutations: [Mutation] = try found.map { m in
                var p = m.plaintext
                p.attributes.merge(changes) { $1 }
                p.attributes["mdat"] = .date(t)
                if let d = data { p.data = d }
                try DerivedAttributes.rederivingAttributes(&p)
                let pc = protection ?? m.slot.protection
                try ItemRules.checkSynchronizable(
                    p.attributes, protection: pc, userPresence: m.slot.flags & ItemPutPayload.userPresenceFlag != 0)
                return .put(id: m.id, plaintext: p, protection: pc, flags: m.slot.flags)
            }
            try tx.commit(mutations)
            return found.count
        }
    }

    package func delete(_ query: Query, _ context: CallContext) throws -> Int {
        try store.write { tx in
            let found = try planner.matches(query, context)
            guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no item matches the query") }
            try tx.commit(found.map { .delete($0.id) })
            return found.count
        }
    }

    // MARK: The keychain

    package func changePasscode(old: [UInt8]?, new: [UInt8]?, kdfLogN: UInt8) throws -> Int {
        try store.changePasscode(old: old, new: new, logN: kdfLogN)
    }

    package func compact(dropHistory: Bool) throws -> (before: UInt64, after: UInt64) {
        try store.compact(dropHistory: dropHistory)
    }

    package func verify() -> VerifyReport { store.verify() }

    package func info() throws -> KeychainInfo {
        try store.refresh()
        // Counted by the snapshot's one pass over the index's pages (and the changes since),
        // not from a table of every item, whose memory grows with the keychain.
        let live = try store.liveItemSnapshot()
        var byClass: [String: Int] = [:]
        for (tag, n) in live.countsByClassTag {
            byClass[store.itemClass(tag: tag)?.rawValue ?? "unknown", default: 0] += n
        }
        let byProtection = Dictionary(uniqueKeysWithValues: live.countsByProtection.map { ($0.key.code, $0.value) })
        let kdf = store.kdf
        return KeychainInfo(
            path: store.path,
            formatVersion: "\(store.header.major).\(store.header.minor)",
            fileUUID: hexString(store.fileUUID),
            deviceUUID: store.device.uuidHex,
            hasPasscode: kdf.kind == .scrypt,
            kdf: kdf.kind == .scrypt ? "scrypt N=2^\(kdf.logN) r=\(kdf.r) p=\(kdf.p)" : "none",
            fileSize: store.fileSize,
            records: store.recordCount,
            liveItems: live.count,
            itemsByClass: byClass,
            itemsByProtection: byProtection,
            unlockedClasses: ProtectionClass.allCases.filter { store.isAvailable($0) }.map(\.code))
    }
}
