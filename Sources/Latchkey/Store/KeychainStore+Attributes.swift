import LatchkeyFormat

/// The lookups behind queries on the indexed attributes (spec/FORMAT.md §7.6), without
/// decrypting every item: the items whose bound hash record holds the hash of a value, plus
/// every unhashed item. Which attribute to look up, and whether to, is the planner's decision
/// (Query/QueryPlanner.swift).
extension KeychainStore {
    /// The attribute hashes of the live items, as one consistent view: only inside
    /// `withAttributeHashes`, under the store lock, which is why nothing else can make one.
    /// (It is not `~Copyable`: Swift 6.3's optimizer crashes specializing the generic closure
    /// that borrows one, in release builds.)
    struct AttributeHashView {
        fileprivate let store: KeychainStore

        /// The number of live items.
        var itemCount: Int { store.log.items.count }

        /// The keyed hash of `value` for attribute `name` (nil: not a value the index hashes).
        func hash(itemClass c: ItemClass, name: String, value: AttributeValue?) -> UInt64? {
            store.keys.attributeHash(itemClass: c, name: name, value: value)
        }

        func classTag(_ c: ItemClass) -> UInt32 { store.classTag(c) }

        /// How many items hold `hash`, the unhashed ones included.
        func count(_ hash: UInt64) throws -> Int { try store.log.attributes.count(hash) }

        /// The items that hold `hash`, and the unhashed ones.
        func candidates(_ hash: UInt64) throws -> Set<ID16> { try store.log.attributes.candidates(hash) }

        func slot(_ id: ID16) throws -> ItemSlot? { try store.log.items.slot(id) }
    }

    /// Runs `body` with the attribute hashes of the live items, under the store lock. Nil when
    /// `body` says so, or when the index and the log both fail (the next call reports it).
    func withAttributeHashes<T>(_ body: (AttributeHashView) throws -> T?) -> T? {
        withStoreLock {
            do {
                return try withIndexFallback { () throws -> T? in try body(AttributeHashView(store: self)) }
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

    /// Whether every item of the protection class (or of every class the keybag holds, when
    /// nil) can be decrypted now.
    func canDecryptEveryItem(of protection: ProtectionClass?) -> Bool {
        withStoreLock {
            let classes =
                protection.map { [$0] } ?? ProtectionClass.allCases.filter { log.keybag.entry(for: $0) != nil }
            return classes.allSatisfy { isAvailable($0) }
        }
    }
}
