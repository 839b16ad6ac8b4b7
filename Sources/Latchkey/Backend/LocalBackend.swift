import LatchkeyCrypto
import LatchkeyFormat

/// A keychain whose file this process opened: the store (Store/), the attribute cache for
/// queries on non-unique attributes (AttributeIndex) and the query planning over them.
package final class LocalBackend: KeychainBackend, @unchecked Sendable {
    package let store: KeychainStore
    /// Decrypted attributes for queries on non-unique attributes (see AttributeIndex).
    let index = AttributeIndex()
    /// Whether queries on indexed attributes use the attribute hashes (tests turn it off to
    /// compare with the path that reads every item).
    var useAttributeHashes = true
    /// Whether queries that pin the unique key take the unique-key path (tests turn it off to
    /// compare with the path that reads every item).
    var useUniqueKeyPath = true

    package init(store: KeychainStore) {
        self.store = store
    }

    package var hasPasscode: Bool { store.hasPasscode }
    package var recoveredTailBytes: UInt64 { store.recoveredTailBytes }
    package var isServedByAgent: Bool { false }
    package var agentStopped: Bool { false }
    package func agentState() throws -> AgentKeychainState? { nil }
    package func streamingStore() throws -> KeychainStore { store }

    package func unlock(passcode: [UInt8]) throws {
        try store.unlock(passcode: passcode)
    }

    /// Drops the WhenUnlocked keys and the attributes of their items this keychain had read.
    package func lock() {
        store.lock()
        index.drop(protections: [.whenUnlocked, .whenUnlockedThisDeviceOnly, .whenPasscodeSetThisDeviceOnly])
    }

    package func isAvailable(_ pc: ProtectionClass) -> Bool { store.isAvailable(pc) }

    /// Forgets every decrypted attribute and key and closes the file.
    package func close() {
        index.drop(protections: Set(ProtectionClass.allCases))
        store.close()
    }

    // MARK: Items

    package func add(_ items: [NewItem], _ context: CallContext) throws -> [Item] {
        guard !items.isEmpty else { return [] }
        let policy = try AccessPolicy(caller: context.caller)
        let t = Keychain.now()
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
    /// fresh UUID. Shared by `add` and the streaming import (LocalBackend+Streaming.swift).
    func prepared(_ given: NewItem, policy: AccessPolicy, time t: Double) throws
        -> (id: ID16, plaintext: ItemPlaintext, protection: ProtectionClass, flags: UInt8) {
        try Keychain.validateNames(given.attributes, given.itemClass)
        let item = try Keychain.derivingAttributes(given)   // certificates and keys: Keychain+Certificates.swift
        try LocalBackend.checkWritableGroup(item.attributes, policy)
        // Made at its final size: agrp, sync, cdat and mdat are added below (growing the table
        // rehashed every key, 4% of an import's time).
        var attrs = [String: AttributeValue](minimumCapacity: item.attributes.count + 4)
        for (name, value) in item.attributes where !Keychain.keychainOwned.contains(name) { attrs[name] = value }
        if attrs["agrp"] == nil, let g = policy.defaultGroup { attrs["agrp"] = .string(g) }
        if attrs["sync"] == nil { attrs["sync"] = .integer(0) }
        attrs["cdat"] = .date(t)
        attrs["mdat"] = .date(t)
        let pc = item.protection ?? ItemSchema.defaultProtection(for: item.itemClass)
        if item.requiresUserPresence && !store.hasPasscode {
            throw KeychainError(.notAvailable, "user presence needs a keychain with a passcode, and this keychain has none", remedy: .setPasscode)
        }
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
        if p.attributes["pdmn"] != pdmn { p.attributes["pdmn"] = pdmn }   // attribute-index rows carry it: no copy
        // Class code ‖ UUID (big-endian halves), made at its size in one allocation.
        var ref = [UInt8]()
        ref.reserveCapacity(20)
        ref.append(contentsOf: p.itemClass.rawValue.utf8)
        withUnsafeBytes(of: id.high.bigEndian) { ref.append(contentsOf: $0) }
        withUnsafeBytes(of: id.low.bigEndian) { ref.append(contentsOf: $0) }
        return Item(itemClass: p.itemClass, attributes: p.attributes, data: p.data, protection: protection,
                    persistentRef: ref,
                    requiresUserPresence: flags & ItemPutPayload.userPresenceFlag != 0)
    }

    package func find(_ query: Query, limit: Int?, includeData: Bool, prompt: String?, _ context: CallContext) throws -> [Item] {
        try store.refresh()
        var found = try matches(query, context, limit: limit, attributesOnly: !includeData)
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
    func matches(_ query: Query, _ context: CallContext, limit: Int? = nil, attributesOnly: Bool = false) throws -> [Match] {
        let policy = try AccessPolicy(caller: context.caller)
        if useUniqueKeyPath, query.persistentRef == nil, !query.caseInsensitive, let found = try uniqueKeyMatches(query, policy: policy, limit: limit) {
            return found
        }
        try Keychain.validateNames(query.attributes, query.itemClass)
        if let ref = query.persistentRef {
            guard ref.count == 20, let c = ItemClass(rawValue: String(decoding: ref.prefix(4), as: UTF8.self)),
                  c == query.itemClass, let slot = try store.slot(id: ID16(ref.suffix(16))),
                  store.itemClass(of: slot) == c else { return [] }
            let p = try store.read(slot, id: ID16(ref.suffix(16)))
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
        if let found = try attributeHashMatches(q, policy: policy, limit: limit) { return found }
        // Every item of the class: the attribute index answers from the attributes it has
        // decrypted before (and decrypts the others once); file order.
        let predicates: [AttributeIndex.Predicate] = q.attributes.map { name, want in
            let fold = LocalBackend.foldsCase(name, q)
            return AttributeIndex.Predicate(
                name: name,
                absent: ItemSchema.defaultValue(name, q.itemClass)?.matches(want, caseInsensitive: fold) ?? false,
                test: { $0.matches(want, caseInsensitive: fold) })
        }
        let store = self.store
        var out = try index.select(store: store, classTag: store.classTag(q.itemClass), protection: q.protection,
                                   available: { store.isAvailable($0) }, predicates: predicates,
                                   decrypt: { try store.read($1, id: $0) })
            .filter { policy.permits($0.2) }
            .map { Match(id: $0.0, slot: $0.1, plaintext: $0.2, cached: true) }
        if let l = limit, out.count > l { out.removeSubrange(l...) }
        if !attributesOnly {
            for i in out.indices where out[i].cached {
                out[i].plaintext = try store.read(out[i].slot, id: out[i].id)
                out[i].cached = false
            }
        }
        return out
    }

    /// The matches of a query on an indexed attribute (spec/FORMAT.md §7.6), found by
    /// decrypting only the items whose attribute hash is the query value's and the unhashed
    /// ones, in file order: the same items as the path that reads every item, which is taken
    /// instead (nil) for a case-insensitive query, a query on no indexed attribute, a class
    /// that may hold items that cannot be decrypted now (that path then fails as before), or
    /// too many candidates.
    func attributeHashMatches(_ q: Query, policy: AccessPolicy, limit: Int?) throws -> [Match]? {
        guard useAttributeHashes, !q.caseInsensitive, q.attributes["pdmn"] == nil,
              store.canDecryptEveryItem(of: q.protection),
              let found = store.attributeCandidates(itemClass: q.itemClass, protection: q.protection, values: q.attributes) else {
            return nil
        }
        var out: [Match] = []
        for (id, slot) in found {
            let p = try store.read(slot, id: id)
            if LocalBackend.filter(p, q) && policy.permits(p) { out.append(Match(id: id, slot: slot, plaintext: p)) }
            if let l = limit, out.count >= l { break }
        }
        return out
    }

    /// The matches of a query that pins the unique key — it names every attribute of the
    /// class's unique key except possibly `agrp` (then: each of the caller's groups, at most 16)
    /// and `sync` (then: the values the sync filter allows) — found by hashing each key the
    /// query can match and looking it up (the answer of spec §7.5's index). Nil for any other
    /// query, and for a query naming an attribute its class lacks (the general path of
    /// `matches` then throws errSecNoSuchAttr as for every query).
    ///
    /// The common query (find by class, account and service) takes this path on every call, so
    /// it reads the query in one pass and makes no copy of it: the implicit `sync` filter is
    /// applied beside the query's attributes (`filter(_:_:sync:)`), never written into them.
    func uniqueKeyMatches(_ query: Query, policy: AccessPolicy, limit: Int?) throws -> [Match]? {
        let c = query.itemClass
        let keyAttributes = UniqueKey.attributes(for: c)
        var agrpAt = -1, syncAt = -1
        for (i, a) in keyAttributes.enumerated() {
            if a.name == "agrp" { agrpAt = i } else if a.name == "sync" { syncAt = i }
        }
        // The query's value of each unique-key attribute, by position; every other name checked.
        var given = [AttributeValue?](repeating: nil, count: keyAttributes.count)
        for (name, value) in query.attributes {
            if let i = keyAttributes.firstIndex(where: { $0.name == name }) {
                given[i] = value
            } else if ItemSchema.kind(name, in: c) == nil {
                return nil
            }
        }
        for i in given.indices where i != agrpAt && i != syncAt && given[i] == nil { return nil }
        let groups: [AttributeValue?]
        if let agrp = given[agrpAt] {
            // A group the caller may not use finds nothing; no need to look.
            guard policy.permits(group: agrp) else { return [] }
            groups = [agrp]
        } else {
            guard let callerGroups = policy.groups, callerGroups.count <= 16 else { return nil }
            groups = callerGroups.map { .string($0) }
        }
        // The implicit sync filter (reference §5.11): nil matches any value.
        let sync: AttributeValue?
        switch query.synchronizable {
        case .notSynchronizable: sync = given[syncAt] ?? .integer(0)
        case .synchronizable: sync = .integer(1)
        case .any: sync = nil
        }
        if let l = limit, l <= 0 { return [] }
        let syncs: [AttributeValue] = sync.map { [$0] } ?? [.integer(0), .integer(1)]
        var out: [Match] = []
        for agrp in groups {
            for s in syncs {
                let key = UniqueKey(itemClass: c, at: { $0 == agrpAt ? agrp : $0 == syncAt ? s : given[$0] })
                guard let (id, slot) = try store.slot(uniqueKey: key) else { continue }
                if let pc = query.protection, slot.protection != pc { continue }
                let p = try store.read(slot, id: id)
                if LocalBackend.filter(p, query, sync: sync) && policy.permits(p) { out.append(Match(id: id, slot: slot, plaintext: p)) }
                if let l = limit, out.count >= l { return out }
            }
        }
        return out
    }

    /// `filter(p, q)` for the query `q` with its `sync` attribute replaced by `sync` (nil: none).
    static func filter(_ p: ItemPlaintext, _ q: Query, sync: AttributeValue?) -> Bool {
        for (name, want) in q.attributes where name != "sync" {
            let have = p.attributes[name] ?? ItemSchema.defaultValue(name, p.itemClass)
            guard let have, have.matches(want, caseInsensitive: foldsCase(name, q)) else { return false }
        }
        if let sync {
            guard (p.attributes["sync"] ?? .integer(0)).matches(sync, caseInsensitive: false) else { return false }
        }
        return true
    }

    static func filter(_ p: ItemPlaintext, _ q: Query) -> Bool {
        for (name, want) in q.attributes {
            let have = p.attributes[name] ?? ItemSchema.defaultValue(name, p.itemClass)
            guard let have, have.matches(want, caseInsensitive: foldsCase(name, q)) else { return false }
        }
        return true
    }

    /// Whether the query compares attribute `name` ignoring case: every string attribute of a
    /// case-insensitive query except `agrp`, which names an access group and is compared byte
    /// for byte, as access control is (AccessPolicy).
    static func foldsCase(_ name: String, _ q: Query) -> Bool { q.caseInsensitive && name != "agrp" }

    package func update(_ query: Query, attributes: [String: AttributeValue], data: [UInt8]?, protection: ProtectionClass?,
                        _ context: CallContext) throws -> Int {
        try Keychain.validateNames(attributes, query.itemClass)
        try LocalBackend.checkWritableGroup(attributes, try AccessPolicy(caller: context.caller))
        let changes = attributes.filter { !Keychain.keychainOwned.contains($0.key) }
        return try store.write { tx in
            let found = try matches(query, context)
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
            try tx.commit(mutations)
            return found.count
        }
    }

    package func delete(_ query: Query, _ context: CallContext) throws -> Int {
        try store.write { tx in
            let found = try matches(query, context)
            guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no item matches the query") }
            try tx.commit(found.map { .delete($0.id) })
            return found.count
        }
    }

    // MARK: The keychain

    package func changePasscode(old: [UInt8]?, new: [UInt8]?, kdfLogN: UInt8) throws -> Int {
        try store.changePasscode(old: old, new: new, logN: kdfLogN)
    }

    package func compact() throws -> (before: UInt64, after: UInt64) { try store.compact() }

    package func verify() -> VerifyReport { store.verify() }

    package func info() throws -> KeychainInfo {
        try store.refresh()
        // Counted by the snapshot's one pass over the index's pages (and the changes since),
        // not from a table of every item: at 1,000,000 items that table took 160 MiB.
        let live = try store.liveItemSnapshot()
        var byClass: [String: Int] = [:]
        for (tag, n) in live.countsByClassTag { byClass[store.itemClass(tag: tag)?.rawValue ?? "unknown", default: 0] += n }
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
