import Latchkey
import LatchkeyCrypto
import LatchkeyDBus
import LatchkeyFormat

/// The keychain side: collections, aliases and items as keychain items (spec/SECRET-SERVICE.md §2).
extension SecretServiceProvider {
    /// The collection and alias records (protection class Always: readable while locked),
    /// and a `login` collection with the `default` alias when there is none.
    func loadCollections() throws {
        try loadIndexKey()
        let records = try keychain.find(
            Query(
                .genericPassword, ["svce": .string(Mapping.collectionService)], protection: .always,
                synchronizable: .any),
            includeData: false)
        for r in records {
            guard case .string(let name)? = r.attributes["acct"], Mapping.isValidName(name),
                r.attributes["agrp"] == .string(Mapping.group(name))
            else { continue }
            var label = ""
            if case .string(let l)? = r.attributes["labl"] { label = l }
            collections[name] = CollectionIndex(
                name: name, label: label, created: Mapping.unixTime(r.attributes["cdat"]),
                modified: Mapping.unixTime(r.attributes["mdat"]))
        }
        let aliasRecords = try keychain.find(
            Query(
                .genericPassword, ["svce": .string(Mapping.aliasService), "agrp": .string(Mapping.aliasGroup)],
                protection: .always, synchronizable: .any),
            includeData: false)
        for r in aliasRecords {
            guard case .string(let alias)? = r.attributes["acct"], Mapping.isValidName(alias),
                case .data(let target)? = r.attributes["gena"],
                let name = String(validating: target, as: UTF8.self), collections[name] != nil
            else { continue }
            aliases[alias] = name
        }
        if collections.isEmpty {
            _ = try createCollection(name: "login", label: "Login")
        }
        for (name, records) in try readIndexRecords() {
            for (id, hashes) in records { collections[name]?.putHashes(id, hashes) }
        }
        if aliases["default"] == nil, collections["login"] != nil {
            try setAlias("default", to: "login")
        }
    }

    /// The key of the pair hashes, made (32 random bytes) the first time.
    func loadIndexKey() throws {
        let query = Query(
            .genericPassword,
            ["svce": .string(Mapping.indexKeyService), "agrp": .string(Mapping.aliasGroup), "acct": .string("")],
            protection: .always, synchronizable: .any)
        var bytes: [UInt8]
        if let found = try keychain.find(query, limit: 1, includeData: true).first, found.data.count == 32 {
            bytes = found.data
        } else {
            _ = try? keychain.delete(query)
            bytes = try Crypto.randomBytes(32)
            try keychain.add(
                .genericPassword,
                attributes: [
                    "svce": .string(Mapping.indexKeyService), "agrp": .string(Mapping.aliasGroup), "acct": .string("")
                ], data: bytes, protection: .always)
        }
        CollectionIndex.hashKey = SecretKey(consuming: &bytes)
    }

    /// Every index record (protection class Always: readable while locked), by collection and id.
    func readIndexRecords() throws -> [String: [String: [CollectionIndex.PairHash]]] {
        var out: [String: [String: [CollectionIndex.PairHash]]] = [:]
        let found = try keychain.find(
            Query(.genericPassword, ["svce": .string(Mapping.indexService)], protection: .always, synchronizable: .any),
            includeData: false)
        for r in found {
            guard case .string(let group)? = r.attributes["agrp"], group.hasPrefix(Mapping.groupPrefix),
                case .string(let id)? = r.attributes["acct"], Self.isValidID(id),
                case .data(let g)? = r.attributes["gena"], let hashes = IndexRecord.decode(g)
            else { continue }
            out[String(group.dropFirst(Mapping.groupPrefix.count)), default: [:]][id] = hashes
        }
        return out
    }

    /// The index record of an item: a `genp` of protection class Always beside it.
    static func indexRecord(_ collection: String, _ id: String, _ attributes: [String: String]) -> NewItem {
        NewItem(
            .genericPassword,
            attributes: [
                "svce": .string(Mapping.indexService), "agrp": .string(Mapping.group(collection)), "acct": .string(id),
                "gena": .data(IndexRecord.encode(CollectionIndex.pairHashes(attributes)))
            ], data: [], protection: .always)
    }

    static func indexRecordQuery(_ collection: String, _ id: String) -> Query {
        Query(
            .genericPassword,
            [
                "svce": .string(Mapping.indexService), "agrp": .string(Mapping.group(collection)),
                "acct": .string(id)
            ], protection: .always, synchronizable: .any)
    }

    /// Makes the index records agree with the items read (`all`): adds the missing ones (an
    /// item written by another program, or synced in), rewrites a wrong one, removes the
    /// records of items that are gone (a crash between an item's delete and its record's).
    func reconcileIndexRecords(_ all: [String: [String: IndexedItem]]) throws {
        let stored = try readIndexRecords()
        var missing: [NewItem] = []
        for (name, items) in all {
            for (id, item) in items {
                let want = CollectionIndex.pairHashes(item.metadata.attributes)
                guard stored[name]?[id] != want else { continue }
                if stored[name]?[id] != nil { _ = try? keychain.delete(Self.indexRecordQuery(name, id)) }
                missing.append(Self.indexRecord(name, id, item.metadata.attributes))
            }
        }
        for (name, records) in stored {
            for id in records.keys where all[name]?[id] == nil {
                _ = try? keychain.delete(Self.indexRecordQuery(name, id))
            }
        }
        for chunk in stride(from: 0, to: missing.count, by: 1000) {
            try keychain.add(contentsOf: Array(missing[chunk..<min(chunk + 1000, missing.count)]))
        }
    }

    /// Adds a collection's record. - Returns: the collection.
    func createCollection(name: String, label: String) throws -> CollectionIndex {
        let record = try keychain.add(
            .genericPassword,
            attributes: [
                "svce": .string(Mapping.collectionService), "acct": .string(name),
                "agrp": .string(Mapping.group(name)), "labl": .string(label)
            ],
            data: [], protection: .always)
        let c = CollectionIndex(
            name: name, label: label, created: Mapping.unixTime(record.attributes["cdat"]),
            modified: Mapping.unixTime(record.attributes["mdat"]))
        c.rebuild([:], token: nil)
        collections[name] = c
        return c
    }

    /// Points `alias` at `collection` (nil: removes it), in its record.
    func setAlias(_ alias: String, to collection: String?) throws {
        let query = Query(
            .genericPassword,
            ["svce": .string(Mapping.aliasService), "agrp": .string(Mapping.aliasGroup), "acct": .string(alias)],
            protection: .always, synchronizable: .any)
        _ = try? keychain.delete(query)
        aliases[alias] = nil
        guard let collection else { return }
        try keychain.add(
            .genericPassword,
            attributes: [
                "svce": .string(Mapping.aliasService), "agrp": .string(Mapping.aliasGroup),
                "acct": .string(alias), "gena": .data(Array(collection.utf8))
            ],
            data: [], protection: .always)
        aliases[alias] = collection
    }

    /// Whether the keychain's WhenUnlocked class is open in the agent (one request), and the
    /// file's state (a stat).
    func keychainState() throws -> (unlocked: Bool, token: KeychainToken?) {
        (keychain.isAvailable(.whenUnlocked), KeychainToken(path: keychainPath))
    }

    /// Brings every collection's index up to date with the keychain: read again when another
    /// writer changed the keychain since; the plaintext dropped when it is locked.
    /// - Returns: whether the keychain is unlocked.
    @discardableResult
    func refresh() throws -> Bool {
        let (unlocked, token) = try keychainState()
        guard unlocked else {
            for c in collections.values where c.hasPlaintext { c.forgetPlaintext() }
            return false
        }
        if let token, collections.values.allSatisfy({ $0.hasPlaintext && $0.token == token }) { return true }
        var all: [String: [String: IndexedItem]] = [:]
        let found = try keychain.find(
            Query(.genericPassword, ["svce": .string(Mapping.itemService)], synchronizable: .any), includeData: false)
        for item in found {
            guard case .string(let group)? = item.attributes["agrp"], group.hasPrefix(Mapping.groupPrefix),
                case .string(let id)? = item.attributes["acct"]
            else { continue }
            let name = String(group.dropFirst(Mapping.groupPrefix.count))
            guard collections[name] != nil, Self.isValidID(id) else { continue }
            all[name, default: [:]][id] = Self.indexed(item)
        }
        try reconcileIndexRecords(all)
        let after = (try? keychainState().token) ?? token
        for (name, c) in collections { c.rebuild(all[name] ?? [:], token: after) }
        return true
    }

    /// After a write of this provider: the indexes match the keychain again if they did before.
    func wrote(from before: KeychainToken?) {
        guard let after = try? keychainState().token else { return }
        for c in collections.values where c.hasPlaintext && c.token == before { c.token = after }
    }

    static func isValidID(_ id: String) -> Bool { Mapping.isValidName(id) }

    static func indexed(_ item: Item) -> IndexedItem {
        var label = ""
        if case .string(let l)? = item.attributes["labl"] { label = l }
        var metadata = ItemMetadata(attributes: [:], contentType: Mapping.defaultContentType)
        switch item.attributes["gena"] {
        case .data(let g)?: if let m = ItemMetadata(decoding: g) { metadata = m }
        // What `latchkey dump` then `import` leaves of the data: its base64 as a string
        // (spec/SECRET-SERVICE.md §2.2).
        case .string(let text)?: if let g = Base64.decode(text), let m = ItemMetadata(decoding: g) { metadata = m }
        default: break
        }
        return IndexedItem(
            label: label, metadata: metadata, created: Mapping.unixTime(item.attributes["cdat"]),
            modified: Mapping.unixTime(item.attributes["mdat"]))
    }

    static func itemQuery(_ collection: String, _ id: String) -> Query {
        Query(
            .genericPassword,
            [
                "svce": .string(Mapping.itemService), "agrp": .string(Mapping.group(collection)),
                "acct": .string(id)
            ], synchronizable: .any)
    }

    /// The keychain item of `id`, with its secret when `data`.
    func storedItem(_ collection: String, _ id: String, data: Bool) throws -> Item {
        guard let item = try keychain.find(Self.itemQuery(collection, id), limit: 1, includeData: data).first else {
            throw DBusError(SecretError.noSuchObject, "no such item: \(Self.itemPath(collection, id))")
        }
        return item
    }

    /// A new random item id: 16 hex digits.
    static func newID() throws -> String {
        try Crypto.randomBytes(8).map { b in
            let h = "0123456789abcdef".utf8
            return String(
                decoding: [
                    h[h.index(h.startIndex, offsetBy: Int(b >> 4))], h[h.index(h.startIndex, offsetBy: Int(b & 15))]
                ], as: UTF8.self)
        }.joined()
    }

    /// Throws IsLocked unless the keychain is unlocked (refreshing the indexes).
    func requireUnlocked(_ what: String) throws {
        guard try refresh() else {
            throw DBusError(
                SecretError.isLocked,
                "\(what): the keychain is locked; unlock it with 'latchkey unlock' or through the client's Unlock prompt"
            )
        }
    }
}
