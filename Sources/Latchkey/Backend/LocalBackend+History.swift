import LatchkeyFormat

extension LocalBackend {
    /// Seconds between 1970 and 2001 (Unix time and the reference date of `cdat` and `mdat`).
    static let unixToReference = 978_307_200.0

    package func history(_ query: Query, _ context: CallContext) throws -> ItemHistory {
        // One state of the file for the whole listing: the versions are found, then read again.
        try store.withStoreLock { try history(query, context, holdingStoreLock: ()) }
    }

    private func history(_ query: Query, _ context: CallContext, holdingStoreLock: Void) throws -> ItemHistory {
        try store.refresh()
        let policy = try AccessPolicy(caller: context.caller)
        let wantedUUID = query.persistentRef.map { Array($0.suffix(16)) }
        func matches(_ p: ItemPlaintext, _ pc: ProtectionClass, _ uuid: [UInt8]) -> Bool {
            (query.protection == nil || query.protection == pc) && (wantedUUID == nil || wantedUUID == uuid)
                && query.matches(p)
        }
        // Two passes over the versions, so that memory follows the matches, not the history:
        // the first decrypts each version of the class to learn which items the query names
        // (keeping nothing else), the second reads those items' versions again.
        let refs = try store.liveHistoryRefs()
        var locked = 0
        var named = Set<[UInt8]>()
        for ref in refs {
            guard let v = try store.version(ref, itemClass: query.itemClass) else { continue }
            guard let p = v.plaintext else {
                locked += 1
                continue
            }
            if policy.permits(p) && matches(p, v.protection, v.uuid) { named.insert(v.uuid) }
        }
        // The current versions: of the live items the query matches, and of the items named
        // by an earlier version that are still live (renamed since, say).
        var current: [[UInt8]: Item] = [:]
        // A query that may touch a locked item fails as a whole (as `find` does); the history
        // then lists what it can read, and the locked versions are counted.
        let live: [Match]
        do {
            live = try planner.matches(query, context, attributesOnly: true)
        } catch let e as KeychainError where e.status == .interactionNotAllowed {
            live = []
        }
        for m in live {
            named.insert(m.id.bytes)
            current[m.id.bytes] = makeItem(m.plaintext, protection: m.slot.protection, id: m.id, flags: m.slot.flags)
        }
        for uuid in named where current[uuid] == nil {
            guard let stored = try store.liveItem(uuid: uuid), store.isAvailable(stored.protection) else { continue }
            let p = try store.read(stored)
            guard policy.permits(p) else { continue }
            current[uuid] = makeItem(p, protection: stored.protection, id: ID16(uuid), flags: stored.flags)
        }
        var out: [ItemVersion] = []
        for (uuid, item) in current {
            var shown = item
            shown.data = []
            let mdat: Double
            if case .date(let d)? = item.attributes["mdat"] {
                mdat = d + LocalBackend.unixToReference
            } else {
                mdat = 0
            }
            out.append(ItemVersion(item: shown, kind: .current, date: mdat, sequence: 0, itemIsLive: true))
        }
        var isLive: [[UInt8]: Bool] = [:]
        var visible: [StoredVersion] = []
        for ref in refs where named.contains(ref.bound.uuid) {
            if let v = try store.version(ref, itemClass: query.itemClass), let p = v.plaintext, policy.permits(p) {
                visible.append(v)
            }
        }
        for v in visible.reversed() {
            let live = try isLive[v.uuid] ?? (current[v.uuid] != nil || store.liveItem(uuid: v.uuid) != nil)
            isLive[v.uuid] = live
            var item = makeItem(v.plaintext!, protection: v.protection, id: ID16(v.uuid), flags: v.flags)
            item.data = []
            out.append(
                ItemVersion(
                    item: item, kind: v.kind == .deleted ? .deleted : .replaced, date: Double(v.supersededAt),
                    sequence: v.sequence, itemIsLive: live))
        }
        // Newest first per item; the items by their newest version.
        var newest: [[UInt8]: Double] = [:]
        for v in out { newest[v.uuid] = max(newest[v.uuid] ?? 0, v.date) }
        out.sort { a, b in
            if a.uuid != b.uuid {
                let (x, y) = (newest[a.uuid]!, newest[b.uuid]!)
                return x != y ? x > y : a.uuid.lexicographicallyPrecedes(b.uuid)
            }
            if (a.kind == .current) != (b.kind == .current) { return a.kind == .current }
            return a.sequence > b.sequence
        }
        return ItemHistory(versions: out, locked: locked)
    }

    package func restoreVersion(uuid: [UInt8], sequence: UInt64, _ context: CallContext) throws -> (
        item: Item, asNew: Bool
    ) {
        let policy = try AccessPolicy(caller: context.caller)
        return try store.write { tx in
            guard let v = try store.version(sequence: sequence, uuid: uuid, refreshing: false) else {
                throw KeychainError(
                    .itemNotFound,
                    "that version is no longer in the history (it expired, or the keychain was compacted since it was listed); list the history again"
                )
            }
            guard var p = v.plaintext else { throw KeychainError.locked(v.protection) }
            guard policy.permits(p) else {
                throw KeychainError(.itemNotFound, "that version is no longer in the history; list the history again")
            }
            if v.flags & ItemPutPayload.userPresenceFlag != 0 && !store.hasPasscode {
                throw KeychainError(
                    .notAvailable,
                    "that version needs user presence (the passcode), and this keychain has no passcode now",
                    remedy: .setPasscode)
            }
            p.attributes["pdmn"] = nil
            p.attributes["mdat"] = .date(ItemRules.now())
            let current = try store.liveItem(uuid: uuid)
            // An update replaces the item as it is now: the caller must be allowed its group now
            // too (a version of group A does not open an item moved to group B since).
            if let current {
                let now = try store.read(current)
                guard policy.permits(now) else {
                    throw KeychainError(
                        .noAccessForItem,
                        "the item is now in an access group this caller may not use, so it cannot be restored here")
                }
            }
            let live = current != nil
            let id = live ? ID16(uuid) : try ID16.random()
            do {
                try tx.commit([.put(id: id, plaintext: p, protection: v.protection, flags: v.flags)])
            } catch let e as KeychainError where e.status == .duplicateItem {
                throw KeychainError(
                    .duplicateItem,
                    "another item holds that version's unique key now (same class, account, service and group); delete or rename it first, then restore"
                )
            }
            var item = makeItem(p, protection: v.protection, id: id, flags: v.flags)
            item.data = []
            return (item, !live)
        }
    }
}

extension Query {
    /// Whether an item's plaintext (the item now, or one of its versions) has this query's
    /// class, attributes and synchronizable filter, compared as `find` compares them; the
    /// protection class and persistent reference are the caller's to check.
    package func matches(_ p: ItemPlaintext) -> Bool {
        let sync: AttributeValue?
        switch synchronizable {
        case .notSynchronizable: sync = attributes["sync"] ?? .integer(0)
        case .synchronizable: sync = .integer(1)
        case .any: sync = nil
        }
        return p.itemClass == itemClass && QueryPlanner.filter(p, self, sync: sync)
    }
}
