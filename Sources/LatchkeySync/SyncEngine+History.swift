import Latchkey
import LatchkeyCrypto
import LatchkeyFormat

/// One version of a synced item, as `history` lists it.
package struct HistoryEntry: Sendable {
    package var syncID: SyncID
    package var version: ItemVersion
    /// The item as that version had it (nil for a delete, or while its class is locked here).
    package var plaintext: ItemPlaintext?
    /// The machine that wrote it.
    package var machine: String
    /// Whether it is the item's current state.
    package var current: Bool
}

extension SyncEngine {
    /// Every version of the synced items whose id is in `ids` (all when nil) that the applied
    /// segments hold (spec/SYNC.md §8.6), newest first per item. The losing side of every
    /// conflict is among them: nothing a machine synced is lost.
    package func history(_ ids: Set<SyncID>? = nil) throws -> [HistoryEntry] {
        try locked {
            let state = try load()
            let tree = RemoteTree(root: transport(state.remote).directory)
            let circle = try Circle.verify(tree, circle: state.circle, pinned: state.chain)
            keyCache = [:]
            baseCache = [:]
            var names: [SyncID: String] = [:]
            for s in circle.statements { for m in s.members { names[m.device] = m.name } }
            var out: [HistoryEntry] = []
            var chains = state.applied
            chains[state.device] = AppliedChain(number: state.own.number, hash: state.own.hash)
            for (device, applied) in chains where applied.number > 0 {
                for n in 1...applied.number {
                    guard let seg = try? verifiedSegment(device, n, tree, circle, outbox: state.outbox) else {
                        continue
                    }
                    let keys = try? keys(epoch: seg.epoch, circle: circle, tree: tree)
                    // An entry a base did not keep (§7.5) has no sealed bytes: it left the history.
                    for i in seg.entries.indices
                    where !seg.entries[i].sealed.isEmpty && (ids?.contains(seg.entries[i].syncID) ?? true) {
                        let id = seg.entries[i].syncID
                        var v = ItemVersion(
                            hlc: seg.entries[i].hlc, device: device, number: n, index: UInt32(i),
                            kind: seg.entries[i].kind,
                            protection: seg.entries[i].protection)
                        var p: ItemPlaintext?
                        if let keys, let opened = try? open(seg, i, keys) {
                            v = opened.0
                            p = opened.1
                        }
                        let item = state.items[id]
                        let current =
                            item.map {
                                $0.isLive
                                    ? $0.winner?.hlc == v.hlc && $0.winner?.device == v.device
                                    : $0.deleted?.hlc == v.hlc && $0.deleted?.device == v.device
                            } ?? false
                        out.append(
                            HistoryEntry(
                                syncID: id, version: v, plaintext: p,
                                machine: names[device] ?? hexString(device.prefix(4)),
                                current: current))
                    }
                }
            }
            // Access groups hold here as everywhere: an item's versions are listed only when the
            // caller may use the group of one of its versions it can read (a delete carries none).
            let policy = try AccessPolicy(caller: keychain.caller)
            var permitted = Set<SyncID>()
            for e in out where e.plaintext.map({ policy.permits(group: $0.attributes["agrp"]) }) ?? false {
                permitted.insert(e.syncID)
            }
            return out.filter { e in
                permitted.contains(e.syncID)
                    && (e.plaintext.map { policy.permits(group: $0.attributes["agrp"]) } ?? true)
            }.sorted {
                $0.syncID != $1.syncID ? $0.syncID.lexicographicallyPrecedes($1.syncID) : $0.version.beats($1.version)
            }
        }
    }

    /// Puts an earlier version back (§8.6): as an update of the item when it is live here, as
    /// a new item when it was deleted (a deleted item's id never comes back). The next sync
    /// sends it.
    /// - Returns: whether it was added as a new item.
    @discardableResult
    package func restore(_ entry: HistoryEntry) throws -> Bool {
        guard let p = entry.plaintext else {
            throw KeychainError(.param, "that version is a delete, or its class is locked here; nothing to restore")
        }
        let state = try locked { try load() }
        var attributes = p.attributes
        for k in ["cdat", "mdat", "pdmn"] { attributes[k] = nil }
        let pc = ProtectionClass(rawValue: entry.version.protection) ?? .whenUnlocked
        if let item = state.items[entry.syncID], item.isLive, try store.liveItem(uuid: entry.syncID) != nil {
            let ref = Array(p.itemClass.rawValue.utf8) + entry.syncID
            _ = try keychain.update(
                Query(p.itemClass, synchronizable: .any, persistentRef: ref), attributes: attributes, data: p.data,
                protection: pc)
            return false
        }
        _ = try keychain.add(p.itemClass, attributes: attributes, data: p.data, protection: pc)
        return true
    }
}
