import Foundation
import LatchkeyFormat

/// Decrypted attributes of the items this keychain has read, so that queries on attributes
/// that are not the unique key (one service among many) need not decrypt every item again.
/// Apple keeps SHA-1 columns on disk for the same purpose (reference §9.2); this keeps nothing
/// on disk.
///
/// Entries are tagged with the record's sequence number (an update or a compaction makes them
/// stale) and are used only while the item's class key is available: `lock()` drops the
/// WhenUnlocked entries, so a locked class still answers errSecInteractionNotAllowed. Secret
/// data is never cached.
final class AttributeCache: @unchecked Sendable {
    struct Entry {
        var sequence: UInt64
        var protection: ProtectionClass
        var plaintext: ItemPlaintext   // data always empty
    }

    private let lock = NSLock()
    private var entries: [ID16: Entry] = [:]

    func remember(_ id: ID16, sequence: UInt64, protection: ProtectionClass, _ p: ItemPlaintext) {
        var copy = p
        copy.data = []
        lock.lock(); defer { lock.unlock() }
        entries[id] = Entry(sequence: sequence, protection: protection, plaintext: copy)
    }

    /// Runs `body` with the cache locked (one lock for a whole scan).
    func withEntries<T>(_ body: ([ID16: Entry]) throws -> T) rethrows -> T {
        lock.lock(); defer { lock.unlock() }
        return try body(entries)
    }

    func drop(protections: Set<ProtectionClass>) {
        lock.lock(); defer { lock.unlock() }
        entries = entries.filter { !protections.contains($0.value.protection) }
    }
}
