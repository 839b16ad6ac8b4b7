import LatchkeyFormat

/// Adds items one at a time for a bulk import, without holding them: each item is checked and
/// sealed as `add` would do it, then handed on at once.
///
/// On a keychain this process opened, every item goes into one streaming transaction
/// (KeychainStore+Streaming.swift): memory holds one batch of records and the item index, the
/// import lands whole or not at all, and a crash or kill leaves an unclosed group of records
/// that every reader ignores and the next writer cuts off. Through the agent, which takes
/// whole batches, items are sent in transactions of `agentBatchSize`: `landed` then says how
/// many are already in the keychain when a later one fails.
package final class ItemImporter {
    private let backend: any KeychainBackend
    private let context: CallContext
    private let local: LocalBackend?
    private let transaction: StreamingTransaction?
    private let policy: AccessPolicy
    private let time: Double
    private var batch: [NewItem] = []
    /// Items accepted so far (in the open transaction, or sent or queued for the agent).
    package private(set) var accepted = 0
    /// Items already durable in the keychain: 0 until the transaction closes, on a keychain
    /// this process opened; through the agent, the items of the batches committed so far.
    package private(set) var landed = 0
    /// Items the agent receives per transaction.
    package static let agentBatchSize = 1_000
    /// The import is one transaction: when it fails, nothing has landed.
    package var isAtomic: Bool { transaction != nil }

    init(
        backend: any KeychainBackend, context: CallContext, local: LocalBackend?, transaction: StreamingTransaction?,
        policy: AccessPolicy, time: Double
    ) {
        self.backend = backend
        self.context = context
        self.local = local
        self.transaction = transaction
        self.policy = policy
        self.time = time
    }

    /// Adds one item.
    /// - Throws: as `Keychain.add`: errSecParam (over the size limit), errSecNoSuchAttr,
    ///   errSecNoAccessForItem, errSecDuplicateItem (its unique key is in the keychain or was
    ///   added earlier in this import), class-key errors, errSecIO.
    package func add(_ item: NewItem) throws {
        try ItemRules.checkSize(item.itemClass, attributes: item.attributes, data: item.data)
        if let transaction, let local {
            let p = try local.prepared(item, policy: policy, time: time)
            try transaction.put(
                uuid: p.id.bytes, plaintext: p.plaintext, protection: p.protection, flags: p.flags, isNew: true)
        } else {
            batch.append(item)
            if batch.count >= ItemImporter.agentBatchSize { try flush() }
        }
        accepted += 1
    }

    /// Adds one item unless an item with its unique key is in the keychain already (an item
    /// added earlier in this import counts on a keychain this process opened; through the
    /// agent only what earlier batches landed does, so the caller checks its own items).
    /// - Returns: false when such an item was there and nothing was added.
    /// - Throws: as `add`.
    package func addUnlessPresent(_ item: NewItem) throws -> Bool {
        if let transaction, let local {
            try ItemRules.checkSize(item.itemClass, attributes: item.attributes, data: item.data)
            let p = try local.prepared(item, policy: policy, time: time)
            let key = UniqueKey(itemClass: p.plaintext.itemClass, attributes: p.plaintext.attributes)
            guard try transaction.conflicts(uuid: p.id.bytes, uniqueKey: key).isEmpty else { return false }
            try transaction.put(
                uuid: p.id.bytes, plaintext: p.plaintext, protection: p.protection, flags: p.flags, isNew: true)
            accepted += 1
            return true
        }
        let query = try ItemRules.uniqueKeyQuery(of: item, context)
        guard try backend.find(query, limit: 1, includeData: false, prompt: nil, context).isEmpty else { return false }
        try add(item)
        return true
    }

    /// Sends the queued items to the agent in one transaction.
    func flush() throws {
        guard !batch.isEmpty else { return }
        _ = try backend.add(batch, context)
        landed += batch.count
        batch.removeAll(keepingCapacity: true)
    }

    /// After the streaming transaction closed.
    func closed() { landed = accepted }
}

extension LocalBackend {
    /// One streaming transaction for the whole import.
    package func importItems<T>(_ context: CallContext, _ body: (ItemImporter) throws -> T) throws -> T {
        let policy = try AccessPolicy(caller: context.caller)
        let t = ItemRules.now()
        var importer: ItemImporter?
        let result = try store.withStreamingTransaction { tx in
            let i = ItemImporter(backend: self, context: context, local: self, transaction: tx, policy: policy, time: t)
            importer = i
            return try body(i)
        }
        importer?.closed()
        return result
    }
}

extension AgentBackend {
    /// Batches of `ItemImporter.agentBatchSize` items, each one transaction in the agent.
    func importItems<T>(_ context: CallContext, _ body: (ItemImporter) throws -> T) throws -> T {
        let importer = ItemImporter(
            backend: self, context: context, local: nil, transaction: nil,
            policy: try AccessPolicy(caller: context.caller), time: ItemRules.now())
        let result = try body(importer)
        try importer.flush()
        return result
    }
}
