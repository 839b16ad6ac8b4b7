#if canImport(Glibc)
    import Glibc
#endif
import Latchkey
import LatchkeyCrypto
import LatchkeyFormat

/// What the provider knows of one item of a collection without asking the keychain.
struct IndexedItem {
    var label: String
    var metadata: ItemMetadata
    var created: UInt64
    var modified: UInt64
}

/// The items of one collection, indexed by attribute (spec/SECRET-SERVICE.md §3).
///
/// The keychain indexes only a few fixed attributes of a `genp` item, none of which can hold a
/// Secret Service item's free-form attributes, so a search by attribute would otherwise decrypt
/// every item of the collection. The index is built by one pass over the collection while it
/// is unlocked (the attributes, never the secrets) and kept up to date by this provider's own
/// writes; another writer's change (the CLI, a sync, a restore) is seen through the keychain's
/// `info()` (file, size and record count) and makes the next search read the collection again.
///
/// When the keychain locks, the labels and attribute values are dropped: what stays is each
/// item's id and keyed hashes of its attribute pairs, which the keychain also keeps in each
/// item's index record (readable while locked), so a search while locked, even right after the
/// provider started, answers with the matching items as locked, as gnome-keyring answers from
/// the hashed attributes it keeps.
final class CollectionIndex {
    let name: String
    var label: String
    var created: UInt64
    var modified: UInt64

    /// The items by id; `nil` values while locked (only the ids and hashes are kept).
    private(set) var items: [String: IndexedItem?] = [:]
    /// Each attribute pair's hash, and the ids of the items that have it.
    private var byPair: [PairHash: Set<String>] = [:]
    private var pairsOf: [String: [PairHash]] = [:]
    /// Whether `items` holds every item of the collection as the keychain had it at `token`.
    private(set) var complete = false
    /// The keychain's state when the index was last known to match it.
    var token: KeychainToken?

    init(name: String, label: String, created: UInt64, modified: UInt64) {
        self.name = name
        self.label = label
        self.created = created
        self.modified = modified
    }

    struct PairHash: Hashable {
        var a: UInt64
        var b: UInt64
    }

    /// The key of the pair hashes: the keychain's Secret Service index key (spec/SECRET-SERVICE.md
    /// §3), set once when the provider starts, before any hash is made.
    nonisolated(unsafe) static var hashKey = SecretKey(copying: [UInt8](repeating: 0, count: 32))

    static func pairHash(_ name: String, _ value: String) -> PairHash {
        var len = UInt32(name.utf8.count).bigEndian
        let lenBytes = withUnsafeBytes(of: &len) { Array($0) }
        let mac = Crypto.hmacSHA256(key: hashKey, parts: [lenBytes, Array(name.utf8), Array(value.utf8)])
        func word(_ at: Int) -> UInt64 { mac[at..<at + 8].reduce(0) { $0 << 8 | UInt64($1) } }
        return PairHash(a: word(0), b: word(8))
    }

    /// The hashes of every pair of `attributes`, sorted (an index record's order).
    static func pairHashes(_ attributes: [String: String]) -> [PairHash] {
        attributes.map { pairHash($0.key, $0.value) }.sorted { ($0.a, $0.b) < ($1.a, $1.b) }
    }

    /// Replaces the whole index with `all`, read from the keychain at `token`.
    func rebuild(_ all: [String: IndexedItem], token: KeychainToken?) {
        items = [:]
        byPair = [:]
        pairsOf = [:]
        for (id, item) in all { put(id, item) }
        complete = true
        self.token = token
    }

    func put(_ id: String, _ item: IndexedItem) {
        remove(id)
        items[id] = item
        let hashes = CollectionIndex.pairHashes(item.metadata.attributes)
        pairsOf[id] = hashes
        for h in hashes { byPair[h, default: []].insert(id) }
    }

    /// An item known only by its id and pair hashes (read from its index record while locked).
    func putHashes(_ id: String, _ hashes: [PairHash]) {
        remove(id)
        items[id] = .some(nil)
        pairsOf[id] = hashes
        for h in hashes { byPair[h, default: []].insert(id) }
    }

    /// The pair hashes of an item, as its index record holds them.
    func hashes(of id: String) -> [PairHash] { pairsOf[id] ?? [] }

    func remove(_ id: String) {
        guard items.removeValue(forKey: id) != nil else { return }
        for h in pairsOf.removeValue(forKey: id) ?? [] {
            byPair[h]?.remove(id)
            if byPair[h]?.isEmpty == true { byPair[h] = nil }
        }
    }

    /// Drops every label and attribute value, keeping ids and hashes (the keychain locked).
    func forgetPlaintext() {
        for id in items.keys { items[id] = .some(nil) }
        complete = false
    }

    /// Whether the labels and attributes are known (the index was built while unlocked and
    /// not dropped since).
    var hasPlaintext: Bool { complete }

    /// The ids of the items whose attributes include every pair of `query`. While the
    /// plaintext is known the answer is exact; from the hashes alone (locked) it is exact but
    /// for a collision of 128-bit keyed hashes.
    func search(_ query: [String: String]) -> [String] {
        guard !query.isEmpty else { return items.keys.sorted() }
        var sets: [Set<String>] = []
        for (n, v) in query {
            guard let s = byPair[CollectionIndex.pairHash(n, v)] else { return [] }
            sets.append(s)
        }
        sets.sort { $0.count < $1.count }
        var result = sets[0]
        for s in sets.dropFirst() { result.formIntersection(s) }
        return result.filter { id in
            guard let known = items[id], let item = known else { return true }
            return query.allSatisfy { item.metadata.attributes[$0.key] == $0.value }
        }.sorted()
    }
}

/// The keychain file as stat(2) sees it: another writer's change alters it (an append grows the
/// file; compaction and a passcode change rename a new file into place), at the cost of a stat,
/// where the keychain's `info()` counts every item.
struct KeychainToken: Equatable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modified: Int
    var modifiedNanoseconds: Int

    init?(path: String) {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        size = Int64(st.st_size)
        modified = st.st_mtim.tv_sec
        modifiedNanoseconds = st.st_mtim.tv_nsec
    }
}
