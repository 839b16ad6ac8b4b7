import LatchkeyFormat

/// Queries on the indexed attributes (spec/FORMAT.md §7.6) without decrypting every item:
/// the candidates are the items whose bound hash record holds the hash of the query's value,
/// plus every unhashed item; the caller decrypts each candidate and matches it as any query.
extension KeychainStore {
    /// The live items of class `c` (and of protection class `protection`, when given) that may
    /// match `values`, in file order: planned on the indexed attribute among `values` with the
    /// fewest entries (two binary searches in the index each). Nil when none of `values` is
    /// indexed for the class, when there are more candidates than `candidateLimit` allows
    /// (the caller then takes the path that reads every item once and keeps its attributes),
    /// or when the index and the log both fail (the next call reports it).
    func attributeCandidates(itemClass c: ItemClass, protection: ProtectionClass?,
                             values: [String: AttributeValue]) -> [(ID16, ItemSlot)]? {
        let indexed = AttributeHashRecord.indexedAttributes(for: c).filter { values[$0] != nil }
        guard !indexed.isEmpty else { return nil }
        return withStoreLock {
            let hashes = indexed.compactMap { keys.attributeHash(itemClass: c, name: $0, value: values[$0]) }
            let tag = classTag(c)
            do {
                return try withIndexFallback { () throws -> [(ID16, ItemSlot)]? in
                    let limit = KeychainStore.candidateLimit(items: log.items.count)
                    var best: (hash: UInt64, count: Int)?
                    for h in hashes {
                        let n = try log.attributes.count(h)
                        if best == nil || n < best!.count { best = (h, n) }
                    }
                    guard let best, best.count <= limit else { return nil }
                    let ids = try log.attributes.candidates(best.hash)
                    guard ids.count <= limit else { return nil }
                    var out: [(ID16, ItemSlot)] = []
                    for id in ids {
                        guard let s = try log.items.slot(id), s.classTag == tag else { continue }
                        if let protection, s.protection != protection { continue }
                        out.append((id, s))
                    }
                    return out.sorted { $0.1.offset < $1.1.offset }
                }
            } catch {
                needsReopen = true
                return nil
            }
        }
    }

    /// For `verify`: the problem of an item whose put is hashed (spec §7.6) with other hashes
    /// than its plaintext's. Only the device can write such a record (a writer's bug, or someone
    /// holding the device secret); queries on the attributes concerned may then miss the item.
    static func attributeHashMismatch(_ id: ID16) -> String {
        "the attribute-hash record of the item \(hexString(id.bytes)) does not match its attributes (written wrongly, or by someone holding the device secret), so a find by account, service, server or label may miss it; updating the item writes new hashes"
    }

    /// Up to this many candidates a query decrypts them one by one; with more, reading every
    /// item once into the attribute cache (AttributeIndex) serves this and later queries better.
    static func candidateLimit(items: Int) -> Int { max(1024, items / 8) }

    /// Whether every item of the protection class (or of every class the keybag holds, when
    /// nil) can be decrypted now.
    func canDecryptEveryItem(of protection: ProtectionClass?) -> Bool {
        withStoreLock {
            let classes = protection.map { [$0] } ?? ProtectionClass.allCases.filter { log.keybag.entry(for: $0) != nil }
            return classes.allSatisfy { isAvailable($0) }
        }
    }
}
