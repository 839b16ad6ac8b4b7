import LatchkeyFormat

/// Finds the items a query matches in a keychain opened in this process, and decides how:
///
/// 1. a query that pins the unique key looks up each key it can match (spec/FORMAT.md §7.5);
/// 2. a query on an indexed attribute decrypts only the candidates of the attribute hash with
///    the fewest items (§7.6), when there are few enough of them;
/// 3. any other query tests the attribute cache (`AttributeIndex`) over every item of the
///    class, which decrypts each item once and keeps its attributes.
///
/// Every path gives the same items: the implicit filters (sync) and then the caller's access
/// decision (`AccessPolicy`) apply to every match whatever path found it. The store offers
/// the lookups (`slot(uniqueKey:)`, `withAttributeHashes`, `read`); the choice is made here.
final class QueryPlanner: @unchecked Sendable {
    let store: KeychainStore
    /// Decrypted attributes for queries on non-unique attributes (path 3).
    let index = AttributeIndex()
    /// Whether queries on indexed attributes use the attribute hashes (tests turn it off to
    /// compare with the path that reads every item).
    var useAttributeHashes = true
    /// Whether queries that pin the unique key take the unique-key path (tests turn it off to
    /// compare with the path that reads every item).
    var useUniqueKeyPath = true

    init(store: KeychainStore) {
        self.store = store
    }

    /// Forgets the decrypted attributes of the items of these classes (their keys were dropped),
    /// so that a locked class answers errSecInteractionNotAllowed again.
    func forget(protections: Set<ProtectionClass>) {
        index.drop(protections: protections)
    }

    /// One item a query matched: its UUID, where its record is, and its plaintext.
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
    func matches(_ query: Query, _ context: CallContext, limit: Int? = nil, attributesOnly: Bool = false) throws
        -> [Match]
    {
        let policy = try AccessPolicy(caller: context.caller)
        if useUniqueKeyPath, query.persistentRef == nil, !query.caseInsensitive,
            let found = try uniqueKeyMatches(query, policy: policy, limit: limit)
        {
            return found
        }
        try ItemRules.validateNames(query.attributes, query.itemClass)
        if let ref = query.persistentRef {
            guard ref.count == 20, let c = ItemClass(rawValue: String(decoding: ref.prefix(4), as: UTF8.self)),
                c == query.itemClass, let slot = try store.slot(id: ID16(ref.suffix(16))),
                store.itemClass(of: slot) == c
            else { return [] }
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
            let fold = QueryPlanner.foldsCase(name, q)
            return AttributeIndex.Predicate(
                name: name,
                absent: ItemSchema.defaultValue(name, q.itemClass)?.matches(want, caseInsensitive: fold) ?? false,
                test: { $0.matches(want, caseInsensitive: fold) })
        }
        let store = self.store
        var out = try index.select(
            store: store, classTag: store.classTag(q.itemClass), protection: q.protection,
            available: { store.isAvailable($0) }, predicates: predicates,
            decrypt: { try store.read($1, id: $0) }
        )
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
    private func attributeHashMatches(_ q: Query, policy: AccessPolicy, limit: Int?) throws -> [Match]? {
        guard useAttributeHashes, !q.caseInsensitive, q.attributes["pdmn"] == nil,
            store.canDecryptEveryItem(of: q.protection),
            let found = attributeCandidates(itemClass: q.itemClass, protection: q.protection, values: q.attributes)
        else {
            return nil
        }
        var out: [Match] = []
        for (id, slot) in found {
            let p = try store.read(slot, id: id)
            if QueryPlanner.filter(p, q) && policy.permits(p) { out.append(Match(id: id, slot: slot, plaintext: p)) }
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
    private func uniqueKeyMatches(_ query: Query, policy: AccessPolicy, limit: Int?) throws -> [Match]? {
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
                if QueryPlanner.filter(p, query, sync: sync) && policy.permits(p) {
                    out.append(Match(id: id, slot: slot, plaintext: p))
                }
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

    /// The live items of class `c` (and of protection class `protection`, when given) that may
    /// match `values`, in file order: the candidates of the indexed attribute among `values`
    /// with the fewest entries (two binary searches in the index each). Nil when none of
    /// `values` is indexed for the class, when there are more candidates than `candidateLimit`
    /// allows (the caller then takes the path that reads every item once and keeps its
    /// attributes), or when the index and the log both fail (the next call reports it).
    private func attributeCandidates(
        itemClass c: ItemClass, protection: ProtectionClass?,
        values: [String: AttributeValue]
    ) -> [(ID16, ItemSlot)]? {
        let indexed = AttributeHashRecord.indexedAttributes(for: c).filter { values[$0] != nil }
        guard !indexed.isEmpty else { return nil }
        return store.withAttributeHashes { hashes in
            let wanted = indexed.compactMap { hashes.hash(itemClass: c, name: $0, value: values[$0]) }
            let tag = hashes.classTag(c)
            let limit = QueryPlanner.candidateLimit(items: hashes.itemCount)
            var best: (hash: UInt64, count: Int)?
            for h in wanted {
                let n = try hashes.count(h)
                if best == nil || n < best!.count { best = (h, n) }
            }
            guard let best, best.count <= limit else { return nil }
            let ids = try hashes.candidates(best.hash)
            guard ids.count <= limit else { return nil }
            var out: [(ID16, ItemSlot)] = []
            for id in ids {
                guard let s = try hashes.slot(id), s.classTag == tag else { continue }
                if let protection, s.protection != protection { continue }
                out.append((id, s))
            }
            return out.sorted { $0.1.offset < $1.1.offset }
        }
    }

    /// Up to this many candidates a query decrypts them one by one; with more, reading every
    /// item once into the attribute cache (AttributeIndex) serves this and later queries better.
    static func candidateLimit(items: Int) -> Int { max(1024, items / 8) }
}
