import Latchkey
import LatchkeyCrypto
import LatchkeyFormat

/// One item of a verified backup as `latchkey backup-list` shows it: where it stands and its
/// attributes, never its data.
public struct BackupListedItem: Sendable {
    /// The item UUID, which a restore keeps.
    public var uuid: [UInt8]
    public var protection: ProtectionClass
    /// Reading the item's data needs user presence (record flag bit 0).
    public var requiresUserPresence: Bool
    /// The item's class and attributes (`cdat` and `mdat` included), its data left empty; nil
    /// when the item cannot be decrypted here.
    public var attributes: ItemPlaintext?
    /// Why `attributes` is nil: `thisDeviceOnlyFromAnotherDevice`, a ThisDeviceOnly item (aku,
    /// cku, dku) of a backup made on another device, whose class key needs that device's
    /// secret (spec/BACKUP.md §4.3).
    public var unreadable: RestoreSkipReason?
}

extension VerifiedBackup {
    /// Reads the archive once more and calls `body` for each item in archive order, with the
    /// same checks as `verify` (each item's tag, every entry's SHA-256 against the first pass,
    /// the manifest at the end). Memory holds one items entry at a time.
    /// - Throws: errSecDecode when the archive changed since it was verified (then `body` may
    ///   have seen some items, each authenticated under this backup's keys); what `body` throws.
    public func forEachItem(
        progress: ((_ done: Int64, _ total: Int64) -> Void)? = nil,
        _ body: (BackupListedItem) throws -> Void
    ) throws {
        try reread(
            progress: progress, changed: "\(source.name) changed while it was being read; its listing is incomplete",
            item: { item in
                var attributes = item.plaintext
                attributes?.data = []
                try body(
                    BackupListedItem(
                        uuid: item.record.uuid, protection: item.record.protectionClass,
                        requiresUserPresence: item.record.flags & ItemPutPayload.userPresenceFlag != 0,
                        attributes: attributes,
                        unreadable: attributes == nil ? .thisDeviceOnlyFromAnotherDevice : nil))
            })
    }
}
