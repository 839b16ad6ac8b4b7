import LatchkeyFormat

/// The operations that meet every item of the keychain: the walk behind `export` and `list`,
/// and the bulk import (ItemImporter).
extension Keychain {
    /// Every live item the caller may see, attributes only (never the data), in two passes:
    /// `survey` meets each item in no set order (UUID order when the keychain has an index;
    /// to size a table, say), then `emit` meets each again in class order (genp, inet, cert,
    /// keys) and creation order (`cdat`; file order among equal dates). Between the passes
    /// memory holds about 100 bytes per item (its slot and sort key; the live items are listed
    /// from the index's pages, never held in a table) and at most about 8 MiB of items
    /// (`LocalBackend.walkBudget`); beyond that each item is decrypted again in the second pass
    /// instead of being kept. A keychain served by the agent answers with its item lists (one
    /// reply per class holds them all).
    /// - Parameter protections: only items of these classes (nil: all; then an item whose
    ///   class is locked fails the call with errSecInteractionNotAllowed before `emit` runs).
    /// - Throws: errSecInteractionNotAllowed; errSecMissingEntitlement; errSecDecode for a
    ///   damaged item; what `survey` or `emit` throw.
    package func walkItems(protections: [ProtectionClass]?, survey: (Item) throws -> Void, emit: (Item) throws -> Void)
        throws
    {
        try openBackend().walkItems(protections: protections, context, survey: survey, emit: emit)
    }

    /// Runs `body` with an importer (see `ItemImporter`); when `body` returns, the import is
    /// committed. When `body` or the commit throws, nothing of it lands on a keychain this
    /// process opened; through the agent, the batches before the failing one stay.
    /// The keychain's write lock is held for the whole call when this process opened it.
    /// - Throws: errSecMissingEntitlement for a caller without groups; what `body` throws;
    ///   errSecIO from the commit.
    package func importItems<T>(_ body: (ItemImporter) throws -> T) throws -> T {
        try openBackend().importItems(context, body)
    }
}
