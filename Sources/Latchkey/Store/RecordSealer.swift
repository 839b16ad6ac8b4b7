#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
import LatchkeyCrypto
import LatchkeyFormat

/// The one place where records are made: it seals each item (a fresh item key, AES key wrap,
/// AES-GCM), computes its attribute hashes and makes its hash record, frames the records (their
/// MACs) and writes them. Both writers use it (`Mode`):
///
/// - **streaming** (KeychainStore+Streaming.swift): the records are written in batches of about
///   1 MiB, on a worker thread while the transaction's thread parses, checks and indexes the
///   next items (on two cores a bulk import runs both halves at once), and the sealer keeps the
///   transaction's attribute-hash table;
/// - **batched** (`WriteTransaction.commit`): every job is held until `finish`, which seals
///   them on the caller's thread and writes the whole transaction with one write and one
///   fsync; the hashes are handed back (`sealedHashes`) for the store to apply once durable.
///
/// Everything that decides what the records are is decided by the transaction before a job is
/// submitted: the record's offset and sequence number (the sealed size follows from the
/// plaintext size, the hash record's from the attributes the item has), its unique-key hash
/// and class tag. So the item
/// table is complete and checked as each item is submitted, the records are exactly those a
/// single thread writes, in the same order, and a duplicate or a locked class fails on the
/// item that has it. The worker checks that each record lands where the transaction placed
/// it, and fails the transaction if not.
///
/// Jobs go to the worker in batches of `jobsPerBatch` jobs or `bytesPerBatch` bytes, at most
/// `maxQueued` batches or `maxQueuedBytes` waiting, so memory holds a few thousand small items
/// or a few MiB of large ones, whatever the transaction's size. A failure on the worker (an
/// I/O error) is kept and thrown, as it is, by the next `submit` or by `finish`; the worker
/// then takes no more jobs. `abandon` stops the worker and waits for it before the caller
/// cuts the file back, so no write can land after the cut. A transaction that never fills a
/// batch, or one where no thread can be started, runs every job on the caller's thread.
///
/// Threads: the writer state (`attributes`, `offset`, `sequence`, `pending`, `batch`) belongs to the worker
/// from the first hand-off until `finish` or `abandon` has waited for it to end, and to the
/// caller before and after; the queue and the flags are guarded by `condition`.
final class RecordSealer: @unchecked Sendable {
    enum Job {
        /// An item put and its attribute-hash record; `at` and `size` are where the put record
        /// was placed and its framed size.
        case put(
            uuid: [UInt8], plaintext: ItemPlaintext, protection: ProtectionClass, flags: UInt8, classKey: SecretKey,
            classTag: [UInt8], uniqueKeyHash: [UInt8], at: UInt64, size: Int, hashCount: Int)
        case delete(uuid: [UInt8])
        /// A history record (spec §7.7), its payload made by the writer.
        case history(payload: [UInt8])
    }

    enum Mode {
        case streaming
        /// A transaction of `bytes` bytes (its layout's), written at once by `finish`.
        case batched(bytes: Int)
    }

    private let mode: Mode
    private let fs: FileSystem
    private let fd: Int32
    private let keys: FileKeys
    private let fileUUID: [UInt8]

    // The writer state (see the type's comment for which thread owns it).
    /// The attribute hashes of the live items as the jobs so far have left them (spec §7.6):
    /// the worker computes each item's hashes for its hash record, and so keeps the table.
    /// Streaming only; a batched sealer leaves it empty and lists the hashes in `sealedHashes`.
    private(set) var attributes: AttributeHashTable
    /// Batched only: the hashes of each put (nil for a delete), in the order of the jobs.
    private(set) var sealedHashes: [(id: ID16, hashes: [UInt64]?)] = []
    /// A write of this transaction's records was attempted: the file may have to be cut back.
    private(set) var hasWritten = false
    private var offset: UInt64
    private var sequence: UInt64
    /// The newest record, not yet framed: whether it closes the transaction is known only
    /// when the next one arrives or `finish` is called.
    private var pending: (type: RecordType, payload: [UInt8])?
    private var batch: [UInt8] = []
    static let batchSize = 1 << 20

    // Guarded by `condition`.
    private let condition = Condition()
    private var queue: [(jobs: [Job], bytes: Int)] = []
    /// The plaintext bytes of the batches in `queue`.
    private var queuedBytes = 0
    private var closed = false
    private var cancelled = false
    private var running = false
    /// Batches handed to the worker and not yet run.
    private var unfinished = 0
    private var failure: (any Error)?

    // The caller's.
    private var outgoing: [Job] = []
    private var outgoingBytes = 0
    private var started = false
    /// A batch goes to the worker at this many jobs or at `bytesPerBatch` of plaintext,
    /// whichever comes first; the caller waits while `maxQueued` batches or `maxQueuedBytes`
    /// wait for the worker. So a few large items are never all held at once.
    static let jobsPerBatch = 256
    static let bytesPerBatch = 1 << 20
    static let maxQueued = 8
    static let maxQueuedBytes = 4 << 20

    /// A sealer that appends after `offset`, the records numbered from `sequence` + 1;
    /// `attributes` is the table a streaming sealer keeps up to date.
    init(
        _ mode: Mode, fs: FileSystem, fd: Int32, keys: FileKeys, fileUUID: [UInt8],
        attributes: AttributeHashTable = AttributeHashTable(),
        offset: UInt64, sequence: UInt64
    ) {
        self.mode = mode
        self.attributes = attributes
        self.fs = fs
        self.fd = fd
        self.keys = keys
        self.fileUUID = fileUUID
        self.offset = offset
        self.sequence = sequence
        if case .streaming = mode { outgoing.reserveCapacity(RecordSealer.jobsPerBatch) }
    }

    /// Queues a job. - Throws: the worker's failure, once it has failed.
    func submit(_ job: Job) throws {
        outgoing.append(job)
        switch job {
        case .put(_, _, _, _, _, _, _, _, let size, _): outgoingBytes += size
        case .delete: outgoingBytes += 16
        case .history(let payload): outgoingBytes += payload.count
        }
        guard case .streaming = mode else { return }
        if outgoing.count >= RecordSealer.jobsPerBatch || outgoingBytes >= RecordSealer.bytesPerBatch { try handOff() }
    }

    private func handOff() throws {
        guard !outgoing.isEmpty else { return }
        if !started {
            started = true
            reserveBatch()
            condition.lock()
            running = true
            condition.unlock()
            if !DetachedThread.start({ [self] in work() }) {
                condition.lock()
                running = false
                condition.unlock()
            }
        }
        condition.lock()
        if !running && failure == nil {
            // No thread: the caller does the work.
            condition.unlock()
            let jobs = outgoing
            outgoing.removeAll(keepingCapacity: true)
            outgoingBytes = 0
            try run(jobs)
            return
        }
        defer { condition.unlock() }
        while !queue.isEmpty && (queue.count >= RecordSealer.maxQueued || queuedBytes >= RecordSealer.maxQueuedBytes)
            && failure == nil
        {
            condition.wait(seconds: 1)
        }
        if let failure { throw failure }
        queue.append((outgoing, outgoingBytes))
        queuedBytes += outgoingBytes
        unfinished += 1
        condition.broadcast()
        outgoing = []
        outgoingBytes = 0
        outgoing.reserveCapacity(RecordSealer.jobsPerBatch)
    }

    private func reserveBatch() {
        switch mode {
        case .streaming:
            if batch.capacity < RecordSealer.batchSize { batch.reserveCapacity(RecordSealer.batchSize + (64 << 10)) }
        case .batched(let bytes):
            batch.reserveCapacity(bytes)
        }
    }

    /// Waits until the jobs submitted so far have been run, their records framed and every
    /// full batch written (the newest record and the last partial batch wait for more), as
    /// they are at once without a worker. - Throws: the worker's failure.
    func settle() throws {
        try handOff()
        condition.lock()
        defer { condition.unlock() }
        while unfinished > 0 && failure == nil { condition.wait(seconds: 1) }
        if let failure { throw failure }
    }

    /// Runs every job submitted, frames the last record as the closing one and makes the
    /// whole transaction durable with one fsync.
    /// - Throws: the worker's failure; errSecIO.
    func finish() throws {
        if !started {
            // A short transaction: no thread.
            started = true
            reserveBatch()
            let jobs = outgoing
            outgoing = []
            outgoingBytes = 0
            try run(jobs)
        } else {
            try handOff()
            try stopWorker(cancel: false)
        }
        guard let p = pending else { return }
        pending = nil
        try frame(p, continues: false)
        try flush()
        try io({ try fs.sync(fd) }, "write to the keychain")
    }

    /// Stops the worker without running the jobs still queued, and waits for it to end; the
    /// caller then cuts the file back.
    func abandon() {
        try? stopWorker(cancel: true)
        outgoing = []
        outgoingBytes = 0
        pending = nil
        batch = []
    }

    private func stopWorker(cancel: Bool) throws {
        condition.lock()
        defer { condition.unlock() }
        if cancel { cancelled = true } else { closed = true }
        condition.broadcast()
        while running { condition.wait(seconds: 1) }
        if let failure { throw failure }
    }

    private func work() {
        while true {
            condition.lock()
            while queue.isEmpty && !closed && !cancelled { condition.wait(seconds: 1) }
            if cancelled || queue.isEmpty {
                running = false
                condition.broadcast()
                condition.unlock()
                return
            }
            let (jobs, bytes) = queue.removeFirst()
            queuedBytes -= bytes
            condition.broadcast()
            condition.unlock()
            do {
                try run(jobs)
                condition.lock()
                unfinished -= 1
                condition.broadcast()
                condition.unlock()
            } catch {
                condition.lock()
                failure = error
                queue = []
                queuedBytes = 0
                running = false
                condition.broadcast()
                condition.unlock()
                return
            }
        }
    }

    /// The size of an item key (AES-256) and of its wrapped form.
    static let itemKeySize = 32
    static let wrappedKeySize = 40

    private func run(_ jobs: [Job]) throws {
        // A fresh key for each put, all drawn at once and wrapped under their class keys a run
        // at a time (`Crypto.aesKeyWrap(kek:many:)`): wrapped one at a time, each key costs 24
        // separate AES calls, a large share of sealing a small item. The keys are used in the
        // order the puts come, and every copy is zeroed.
        var puts = 0
        for job in jobs { if case .put = job { puts += 1 } }
        var itemKeys = puts > 0 ? try Crypto.randomBytes(puts * RecordSealer.itemKeySize) : []
        defer { Crypto.cleanse(&itemKeys) }
        let wrappedKeys = try wrapItemKeys(itemKeys, jobs)
        var put = 0
        for job in jobs {
            switch job {
            case let .put(uuid, plaintext, protection, flags, classKey, classTag, uniqueKeyHash, at, size, hashCount):
                let sealed: ItemPutPayload
                var itemKey = Array(itemKeys[put * RecordSealer.itemKeySize..<(put + 1) * RecordSealer.itemKeySize])
                defer { Crypto.cleanse(&itemKey) }
                let wrapped = Array(
                    wrappedKeys[put * RecordSealer.wrappedKeySize..<(put + 1) * RecordSealer.wrappedKeySize])
                put += 1
                do {
                    sealed = try ItemPutPayload.seal(
                        plaintext, uuid: uuid, protectionClass: protection, flags: flags, keys: keys,
                        classKey: classKey, fileUUID: fileUUID, itemKey: itemKey, wrappedItemKey: wrapped,
                        classTag: classTag, uniqueKeyHash: uniqueKeyHash)
                } catch let e as FormatError {
                    throw KeychainError.fromFormat("the item", e)
                }
                let payload = sealed.encode()
                let lands = offset + UInt64(pending.map { RecordSealer.recordSize($0.payload) } ?? 0)
                let hashes = keys.attributeHashes(for: plaintext)
                guard lands == at, RecordSealer.recordSize(payload) == size, hashes.count == hashCount else {
                    throw KeychainError(
                        .internal,
                        "a sealed item record is not where or the size the transaction placed it (at byte \(lands), \(RecordSealer.recordSize(payload)) bytes, \(hashes.count) attribute hashes; placed at \(at), \(size) bytes, \(hashCount) hashes); nothing was written, and the keychain is as it was"
                    )
                }
                try append(.itemPut, payload)
                // Right after its put, in the same transaction (spec §7.6); the table learns the
                // hashes as a reader's scan would from that record.
                let record = AttributeHashRecord(
                    uuid: uuid, binding: Array(payload[AttributeHashRecord.bindingRange]), hashes: hashes)
                try append(.attributeHashes, record.encode())
                if case .streaming = mode {
                    attributes.setHashes(ID16(uuid), hashes)
                } else {
                    sealedHashes.append((ID16(uuid), hashes))
                }
            case .delete(let uuid):
                if case .streaming = mode {
                    attributes.remove(ID16(uuid))
                } else {
                    sealedHashes.append((ID16(uuid), nil))
                }
                try append(.itemDelete, ItemDeletePayload(uuid: uuid).encode())
            case .history(let payload):
                try append(.history, payload)
            }
        }
    }

    /// The item keys of the puts among `jobs` (`itemKeySize` bytes each, in order), each wrapped
    /// under its put's class key; consecutive puts under one class key are wrapped together.
    /// - Throws: errSecInternal when OpenSSL fails.
    private func wrapItemKeys(_ itemKeys: [UInt8], _ jobs: [Job]) throws -> [UInt8] {
        let count = itemKeys.count / RecordSealer.itemKeySize
        var wrapped = [UInt8](repeating: 0, count: count * RecordSealer.wrappedKeySize)
        var run: (key: SecretKey, first: Int, count: Int)?
        func wrapRun() throws {
            guard let r = run else { return }
            let ok = itemKeys.withUnsafeBytes { k in
                wrapped.withUnsafeMutableBytes { w in
                    Crypto.aesKeyWrap(
                        kek: r.key,
                        many: UnsafeRawBufferPointer(
                            rebasing: k[
                                r.first * RecordSealer.itemKeySize..<(r.first + r.count) * RecordSealer.itemKeySize]),
                        each: RecordSealer.itemKeySize, count: r.count,
                        into: UnsafeMutableRawBufferPointer(
                            rebasing: w[
                                r.first * RecordSealer.wrappedKeySize..<(r.first + r.count)
                                    * RecordSealer.wrappedKeySize]))
                }
            }
            guard ok else {
                throw KeychainError(
                    .internal,
                    "wrapping item keys failed inside OpenSSL; nothing was written, and the keychain is as it was")
            }
            run = nil
        }
        var put = 0
        for case let .put(_, _, _, _, classKey, _, _, _, _, _) in jobs {
            if let r = run, r.key !== classKey || r.count == Crypto.keyUnwrapBatch { try wrapRun() }
            if let r = run { run = (r.key, r.first, r.count + 1) } else { run = (classKey, put, 1) }
            put += 1
        }
        try wrapRun()
        return wrapped
    }

    static func recordSize(_ payload: [UInt8]) -> Int { recordSize(payloadSize: payload.count) }

    static func recordSize(payloadSize: Int) -> Int {
        FormatConstants.frameHeaderSize + payloadSize + FormatConstants.frameTagSize
    }

    private func append(_ type: RecordType, _ payload: [UInt8]) throws {
        if let p = pending { try frame(p, continues: true) }
        pending = (type, payload)
    }

    private func frame(_ record: (type: RecordType, payload: [UInt8]), continues: Bool) throws {
        sequence += 1
        // Framed in place at the end of the batch (the bytes `RecordFrame.encode` gives).
        let header = FrameHeader(
            payloadLength: UInt32(record.payload.count), type: record.type.rawValue,
            flags: continues ? FrameHeader.continuesFlag : 0, sequence: sequence)
        let start = batch.count
        batch.append(contentsOf: header.encode())
        batch.append(contentsOf: record.payload)
        let tag = RecordFrame.tag(macKey: keys.recordMAC, offset: offset, headerAndPayload: batch[start...])
        batch.append(contentsOf: tag)
        offset += UInt64(batch.count - start)
        if case .streaming = mode, batch.count >= RecordSealer.batchSize { try flush() }
    }

    private func flush() throws {
        guard !batch.isEmpty else { return }
        let at = offset - UInt64(batch.count)
        hasWritten = true
        try io({ try fs.write(fd, offset: at, batch) }, "write to the keychain")
        batch.removeAll(keepingCapacity: true)
    }
}
