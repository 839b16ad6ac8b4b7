import Latchkey
import LatchkeyCrypto
import LatchkeyFormat

/// What `import` keeps while the lines stream past: the line being read, how many items were
/// accepted, a digest of each accepted item's unique key with its line number (to name both
/// lines of a repeat), and the lines of the last items still in flight to the agent. It never
/// keeps an item; at a million lines it holds about 32 MB.
struct ImportRun {
    /// SHA-256 of a unique key's canonical encoding, cut to 128 bits.
    struct KeyDigest: Hashable {
        var high: UInt64
        var low: UInt64

        init(_ key: UniqueKey) {
            let d = Crypto.sha256(key.encoded)
            var h: UInt64 = 0, l: UInt64 = 0
            for i in 0..<8 { h = h << 8 | UInt64(d[i]); l = l << 8 | UInt64(d[8 + i]) }
            high = h
            low = l
        }
    }

    /// The digests of the unique keys accepted so far, each with its line: open addressing
    /// over the digest's own bits, which SHA-256 already spreads evenly, so a lookup hashes
    /// nothing more (a Swift dictionary's SipHash of each digest, and its growth, were a tenth
    /// of an import's main thread). An entry keeps 96 bits of the digest and the line in
    /// 16 bytes; the table doubles at three quarters full.
    struct SeenKeys {
        private struct Entry {
            var high: UInt64
            var low: UInt32
            /// 0: an empty slot (lines count from 1).
            var line: Int32
        }

        private var slots: [Entry] = []
        private var count = 0

        /// The line that has this digest, or nil.
        func line(of digest: KeyDigest) -> Int? {
            guard !slots.isEmpty else { return nil }
            let mask = slots.count - 1
            var i = Int(truncatingIfNeeded: digest.high) & mask
            let low = UInt32(truncatingIfNeeded: digest.low >> 32)
            while slots[i].line != 0 {
                if slots[i].high == digest.high && slots[i].low == low { return Int(slots[i].line) }
                i = (i + 1) & mask
            }
            return nil
        }

        /// Records a digest that is not in the table yet.
        mutating func insert(_ digest: KeyDigest, line: Int) {
            if (count + 1) * 4 > slots.count * 3 { grow() }
            place(
                Entry(
                    high: digest.high, low: UInt32(truncatingIfNeeded: digest.low >> 32),
                    line: max(1, Int32(clamping: line))),
                index: Int(truncatingIfNeeded: digest.high))
            count += 1
        }

        private mutating func place(_ e: Entry, index: Int) {
            let mask = slots.count - 1
            var i = index & mask
            while slots[i].line != 0 { i = (i + 1) & mask }
            slots[i] = e
        }

        private mutating func grow() {
            let old = slots
            slots = [Entry](repeating: Entry(high: 0, low: 0, line: 0), count: max(1024, old.count * 2))
            // A slot's index comes from the high half, which an entry keeps whole.
            for e in old where e.line != 0 { place(e, index: Int(truncatingIfNeeded: e.high)) }
        }
    }

    let file: String
    /// The caller's access policy (nil for --dry-run, which opens no keychain).
    let policy: AccessPolicy?
    /// What the input counts: "line" (JSON lines) or "entry" (another manager's export).
    let unit: String
    /// The line (or entry) being handled (0 before the first).
    var line = 0
    /// The name of the entry being handled, for messages (`--from`).
    var name: String?
    /// Items accepted so far.
    private(set) var count = 0
    /// Whether the current line's item is being handed to the keychain (an error then is
    /// about that line).
    private(set) var inItem = false
    private var current: NewItem?
    /// The unique-key digest of the current line's item (nil: it has none that can be told).
    private var currentDigest: KeyDigest?
    private var seen = SeenKeys()
    /// Lines of the last accepted items, oldest first: item `count - recent.count` is the first.
    private var recent: [Int] = []

    init(file: String, policy: AccessPolicy?, unit: String = "line") {
        self.file = file
        self.policy = policy
        self.unit = unit
    }

    /// "line 12", or "entry 12 (Web/GitHub)".
    private func position(_ number: Int, _ name: String?) -> String {
        "\(unit) \(number)" + (name.map { " (\(TerminalText.quoted($0)))" } ?? "")
    }

    /// The line or entry being handled, as messages name it.
    var here: String { position(line, name) }

    /// Checks what can be told before the keychain sees the item: a group the caller may not
    /// use, and a unique key an earlier line already has.
    /// - Parameters:
    ///   - skipRepeats: a repeated unique key is not an error (--skip-existing).
    ///   - name: the name of an earlier entry, for the message.
    /// - Returns: the earlier line with the same unique key when `skipRepeats` (the item is
    ///   then not to be added); nil when the item may be added.
    /// - Throws: errSecNoAccessForItem, errSecDuplicateItem, each naming the line.
    mutating func check(_ item: NewItem, skipRepeats: Bool = false, name: (Int) -> String? = { _ in nil }) throws
        -> Int?
    {
        current = item
        if let policy, let agrp = item.attributes["agrp"], !policy.permits(group: agrp) {
            throw KeychainError(
                .noAccessForItem,
                "\(here): the caller may not use access group \(DumpCommand.text(agrp)); its groups are \((policy.groups ?? []).joined(separator: ", "))"
            )
        }
        currentDigest = ImportCommand.uniqueKey(item).map(KeyDigest.init)
        if let digest = currentDigest, let first = seen.line(of: digest) {
            if skipRepeats { return first }
            throw KeychainError(
                .duplicateItem,
                "\(here) has the same unique key as \(position(first, name(first)))"
                    + (unit == "entry" ? " (--skip-existing keeps the first)" : ""))
        }
        inItem = true
        return nil
    }

    /// The item of the current line (passed to `check`) was not added (--skip-existing).
    mutating func skipped() { inItem = false }

    /// The item of the current line (passed to `check`) was accepted.
    mutating func accepted() {
        inItem = false
        count += 1
        if let digest = currentDigest { seen.insert(digest, line: line) }
        recent.append(line)
        if recent.count > 2 * ItemImporter.agentBatchSize { recent.removeFirst(ItemImporter.agentBatchSize) }
    }

    /// After the last line: the digests are needed no more (the keychain checks every unique
    /// key itself), so their memory is free for closing the transaction.
    mutating func forgetKeys() { seen = SeenKeys() }

    /// The error to show for a failed import: which line, how many items landed (none, but
    /// through the agent), and how to go on.
    func explain(_ error: KeychainError, landed: Int, atomic: Bool, keychain: Keychain?) -> KeychainError {
        var message = error.message
        let prefix = unit + " "
        if !atomic, inItem, !message.hasPrefix(prefix) {
            // Through the agent, the keychain's errors come for a whole transaction.
            message =
                "\(unit == "entry" ? "entries" : "lines") \(firstLineNotLanded(landed))-\(line) (one transaction through the agent): "
                + message
        } else if error.status == .duplicateItem, inItem, let item = current {
            message =
                ImportRun.inKeychain(item, keychain)
                ? "\(here): an item with the same unique key is already in the keychain"
                : "\(here) has the same unique key as an earlier \(unit)"
            if unit == "entry" { message += " (--skip-existing skips it)" }
        } else if inItem, !message.hasPrefix(prefix) {
            message = "\(here): " + message
        }
        if landed == 0 {
            message += "; nothing was imported"
        } else {
            let firstLeft = firstLineNotLanded(landed)
            let resume =
                unit == "entry"
                ? "run the same import again with --skip-existing"
                : file == "-"
                    ? "feed the input again from line \(firstLeft) on"
                    : "run 'tail -n +\(firstLeft) \(file) | latchkey import -'"
            message +=
                "; the \(landed) item(s) before \(unit) \(firstLeft) were imported already (through the agent, \(ItemImporter.agentBatchSize) items a transaction), the rest not: fix the problem, then \(resume)"
        }
        return KeychainError(error.status, message, underlying: error.underlying, remedy: error.remedy)
    }

    /// The line of the first item that did not land, `landed` items having landed.
    private func firstLineNotLanded(_ landed: Int) -> Int {
        let firstRecent = count - recent.count
        if landed >= firstRecent, landed - firstRecent < recent.count { return recent[landed - firstRecent] }
        return line
    }

    /// Whether a password item with the unique key of `item` is in the keychain (found by its
    /// whole unique key, through the index).
    static func inKeychain(_ item: NewItem, _ keychain: Keychain?) -> Bool {
        guard let keychain, item.itemClass == .genericPassword || item.itemClass == .internetPassword else {
            return false
        }
        var attributes: [String: AttributeValue] = [:]
        for (name, kind) in UniqueKey.attributes(for: item.itemClass) where name != "sync" {
            attributes[name] =
                item.attributes[name]
                ?? {
                    switch kind {
                    case .bytes: return .data([])
                    case .integer: return .integer(0)
                    case .date: return .date(0)
                    }
                }()
        }
        if item.attributes["agrp"] == nil, let group = keychain.caller?.defaultAccessGroup {
            attributes["agrp"] = .string(group)
        }
        let sync: SyncFilter = item.attributes["sync"] == .integer(1) ? .synchronizable : .notSynchronizable
        let found = try? keychain.find(
            Query(item.itemClass, attributes, synchronizable: sync), limit: 1, includeData: false)
        return found?.isEmpty == false
    }
}
