import LatchkeyFormat

extension AgentBackend {
    /// The agent answers with item lists: one request per class (and protection class).
    func walkItems(
        protections: [ProtectionClass]?, _ context: CallContext,
        survey: (Item) throws -> Void, emit: (Item) throws -> Void
    ) throws {
        for c in ItemClass.allCases {
            var found: [Item] = []
            for pc in protections.map({ $0.map(Optional.some) }) ?? [nil] {
                found += try find(
                    Query(c, protection: pc, synchronizable: .any), limit: nil, includeData: false, prompt: nil, context
                )
            }
            let order = found.indices.sorted {
                (LocalBackend.creation(found[$0]), $0) < (LocalBackend.creation(found[$1]), $1)
            }
            for i in order { try survey(found[i]) }
            for i in order { try emit(found[i]) }
        }
    }
}

extension LocalBackend {
    /// `Keychain.walkItems` on the file opened here.
    package func walkItems(
        protections: [ProtectionClass]?, _ context: CallContext,
        survey: (Item) throws -> Void, emit: (Item) throws -> Void
    ) throws {
        let policy = try AccessPolicy(caller: context.caller)
        try store.refresh()
        try store.withStoreLock {
            // The live items one at a time (from the index's pages when there is one), not a
            // table of all of them: memory stays flat however many items the keychain holds.
            let live = try store.liveItemSnapshot()
            let wanted = protections.map(Set.init)
            let classRank = Dictionary(
                uniqueKeysWithValues: ItemClass.allCases.enumerated().map { (store.classTag($1), UInt8($0)) })
            // The items listed, and for each (class rank, position in `listed`, position in
            // `held`, cdat, file offset): about 100 bytes an item listed.
            var listed: [(id: ID16, slot: ItemSlot)] = []
            var keys: [(rank: UInt8, at: Int32, n: Int32, created: Double, offset: UInt64)] = []
            // The items of the first pass while they fit in `LocalBackend.walkBudget`: then the
            // second pass needs no second decryption. Past the budget they are dropped, and
            // every item is read again.
            var held: [Item] = []
            var heldBytes = 0
            var holding = true
            func item(_ id: ID16, _ slot: ItemSlot) throws -> Item? {
                var p = try store.read(slot, id: id)
                guard policy.permits(p) else { return nil }
                p.data = []
                return makeItem(p, protection: slot.protection, id: id, flags: slot.flags)
            }
            try live.forEach { stored in
                let slot = stored.slot
                if let wanted, !wanted.contains(slot.protection) { return }
                guard let rank = classRank[slot.classTag] else { return }
                guard store.isAvailable(slot.protection) else { throw KeychainError.locked(slot.protection) }
                let id = ID16(stored.uuid)
                guard let it = try item(id, slot) else { return }
                try survey(it)
                keys.append((rank, Int32(listed.count), Int32(keys.count), LocalBackend.creation(it), slot.offset))
                listed.append((id, slot))
                if holding {
                    heldBytes += LocalBackend.approximateSize(it)
                    if heldBytes <= LocalBackend.walkBudget {
                        held.append(it)
                    } else {
                        holding = false
                        held = []
                    }
                }
            }
            keys.sort { ($0.rank, $0.created, $0.offset) < ($1.rank, $1.created, $1.offset) }
            for k in keys {
                if holding {
                    try emit(held[Int(k.n)])
                } else if let it = try item(listed[Int(k.at)].id, listed[Int(k.at)].slot) {
                    try emit(it)
                }
            }
        }
    }

    /// How many bytes of items `walkItems` keeps between its passes to spare decrypting them
    /// again: a keychain of up to some tens of thousands of ordinary items is read once.
    static let walkBudget = 8 << 20

    /// Roughly what an item costs in memory: its attribute values and a fixed cost each.
    static func approximateSize(_ item: Item) -> Int {
        var n = 256
        for (_, value) in item.attributes {
            switch value {
            case .string(let s): n += 64 + s.utf8.count
            case .data(let d): n += 64 + d.count
            case .integer, .date: n += 48
            }
        }
        return n
    }

    static func creation(_ item: Item) -> Double {
        if case .date(let t)? = item.attributes["cdat"] { return t }
        return 0
    }
}
