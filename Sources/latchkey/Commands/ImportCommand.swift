import ArgumentParser
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import Latchkey
import LatchkeyCrypto
import LatchkeyFormat

/// `latchkey import`: adds the items of a JSON-lines file, or the entries of another password
/// manager's export (`--from`), in one streaming transaction.
struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Add the items of a JSON-lines file or another manager's export in one transaction: all or none.",
        discussion: """
            One JSON object a line: "class" (genp, inet, cert or keys), Apple's 4-character \
            attribute keys ("acct", "svce", "labl", "agrp", …), the secret in base64 under \
            "v_Data" (absent: empty), and optionally the protection class under "pdmn" (ak, ck, \
            dk, aku, cku, dku, akpu; default ak, certificates dk). Data-valued attributes \
            (klbl, subj, …) are base64, dates ISO 8601; "cdat" and "mdat" are ignored, as the \
            keychain sets them. Blank lines are skipped. This is the form `find --return all` \
            prints, one object a line. The input is read as it streams, a line at a time, and \
            every item goes into one transaction that closes only after the last line: a bad \
            line fails with errSecParam (exit 2) naming its number, a unique key that is \
            already in the keychain or repeats an earlier line with errSecDuplicateItem \
            (exit 3), and then nothing is imported; an import that is killed or crashes \
            leaves the keychain as it was. Through the agent the items go in transactions of \
            1,000, and a failure says how many landed and from which line to go on. Prints \
            the count on stdout; a progress count on stderr when it is a terminal.

            --from reads another manager's export into the same transaction: pass (a \
            password store, each entry decrypted by 'pass show'), keepassxc (its CSV or XML \
            export), bitwarden (its unencrypted JSON export), or csv (any CSV with a header, \
            its columns chosen by --map). A login with a URL becomes an internet password \
            laid out as 'latchkey credential' stores git's, any other a generic password whose \
            service is the entry's folder/title; notes become the comment. Prints a line per \
            entry (imported, would import, or skipped, with why and what of it was not \
            imported: TOTP, custom fields, attachments), never a secret, then the counts. \
            --skip-existing skips an entry already in the keychain or repeated in the export \
            instead of failing. The whole mapping: docs/CLI.md.

            Example:
              echo '{"class":"genp","acct":"alice","v_Data":"aHVudGVyMg=="}' > items.jsonl
              latchkey import items.jsonl
              latchkey find --limit all --return all | jq -c '.[]' \\
                | latchkey import --keychain copy.keychain -
              latchkey import --from pass --dry-run
              keepassxc-cli export --format xml db.kdbx > db.xml
              latchkey import --from keepassxc db.xml && shred -u db.xml
              latchkey import --from csv --map secret=Password,account=User,url=URL x.csv
            """
    )

    /// What `--from` names.
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case jsonl, pass, keepassxc, bitwarden, csv
    }

    @Argument(
        help: ArgumentHelp(
            "The JSON-lines file or export, or - for stdin; for --from pass the store (default: $PASSWORD_STORE_DIR, ~/.password-store).",
            valueName: "file|-"), completion: .file())
    var file: String?

    @Option(help: "What FILE is.")
    var from: Format = .jsonl

    @Option(
        help: ArgumentHelp(
            "With --from csv: which column fills what, as TARGET=COLUMN pairs (secret, account, service, label, url, server, comment, description, ignore).",
            valueName: "pairs"))
    var map: [String] = []

    @Flag(
        name: .customLong("skip-existing"),
        help: "Skip an item already in the keychain, or repeating an earlier one, instead of failing.")
    var skipExisting = false

    @Flag(name: .customLong("no-notes"), help: "With --from: leave entries' notes out (they are reported).")
    var noNotes = false

    @Flag(name: .customLong("dry-run"), help: "Check every line or entry and print the report; import nothing.")
    var dryRun = false

    @Flag(help: "Print the result as JSON: {\"imported\": N, \"dryRun\": bool, \"keychain\": path, ...}.")
    var json = false

    @OptionGroup(title: "Global options") var global: GlobalOptions

    /// Keys of a line that are not attributes.
    static let nonAttributes: Set<String> = ["class", "v_Data", "pdmn", "cdat", "mdat"]

    func validate() throws {
        guard CommandLineForms.validating else { return }
        if from == .csv, map.isEmpty {
            throw ValidationError("--from csv needs --map, e.g. --map secret=Password,account=Username,url=URL")
        }
        if from != .csv, !map.isEmpty { throw ValidationError("--map goes with --from csv") }
        if from == .jsonl, noNotes { throw ValidationError("--no-notes goes with --from (JSON lines have no notes)") }
        if from == .pass, file == "-" {
            throw ValidationError("--from pass reads a password store's directory, not stdin")
        }
        if from != .pass, file == nil {
            throw ValidationError("Missing expected argument '<file|->': the file to import, or - for stdin")
        }
    }

    /// What the command reads: JSON lines, or another manager's entries.
    enum Input {
        case lines(LineReader)
        case entries(any ImportSource)
    }

    func run() throws {
        // Large tables grow during an import: their old copies must not stay resident.
        ProcessMemory.returnLargeBlocksToTheSystem()
        let pairs = from == .csv ? try MappedCSVSource.parse(map) : []
        // Open (and so check the keychain and caller) before reading a possibly large input. A
        // dry run of an export checks its entries against the keychain when there is one.
        let keychain: Keychain?
        if !dryRun {
            keychain = try global.open(unlock: .whenNeeded)
        } else if from != .jsonl || skipExisting, access(global.keychainPath, F_OK) == 0 {
            keychain = try global.open(unlock: .whenNeeded)
        } else {
            keychain = nil
        }
        if let keychain { try unlockUpFront(keychain) }
        if file == "-" {
            try Terminal.requireStdin(
                "import reads the items from stdin (-), but stdin is closed; pipe them in or give a FILE",
                command: "import")
        }
        let input = try openInput(pairs)
        let total: Int? = if case .entries(let source) = input { source.total } else { nil }
        let progress = Progress("import", total: total)
        defer { progress.finish() }
        var run = ImportRun(
            file: file ?? PassSource.storeDirectory(nil),
            policy: try keychain.map { try AccessPolicy(caller: $0.caller) },
            unit: from == .jsonl ? "line" : "entry")
        var report = ImportReport()
        var skipped = 0
        var lockedNoted = false

        // An item is handed on unless --skip-existing finds its unique key in the keychain
        // (false then). Without a transaction (--dry-run) the keychain, if any, is asked.
        func dryAdd(_ item: NewItem) throws -> Bool {
            guard let keychain else { return true }
            do {
                guard try keychain.containsItem(withUniqueKeyOf: item) else { return true }
            } catch let error as KeychainError where error.status == .interactionNotAllowed {
                if !lockedNoted {
                    lockedNoted = true
                    Output.note(
                        "the keychain is locked, so entries are not checked against the items in it; give the passcode to check them"
                    )
                }
                return true
            }
            if skipExisting { return false }
            throw KeychainError(.duplicateItem, "an item with the same unique key is already in the keychain")
        }

        // One pass: each line or entry is parsed, checked and handed on before the next is
        // read, so memory holds one of them and the import's index, never the items.
        func eachItem(_ add: (NewItem) throws -> Bool) throws {
            switch input {
            case .lines(let reader):
                while let line = try reader.next() {
                    let number = reader.lineNumber
                    guard
                        line.contains(where: {
                            $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") && $0 != UInt8(ascii: "\r")
                        })
                    else { continue }
                    run.line = number
                    let item = try ImportCommand.newItem(line, line: number)
                    if try run.check(item, skipRepeats: skipExisting, name: { _ in nil }) != nil || !(try add(item)) {
                        run.skipped()
                        skipped += 1
                    } else {
                        run.accepted()
                    }
                    progress.update(completed: run.count)
                }
            case .entries(let source):
                var number = 0
                while let entry = try source.next() {
                    number += 1
                    run.line = number
                    run.name = entry.name
                    defer { progress.update(completed: number) }
                    guard let item = entry.item else {
                        report.skip(entry, reason: entry.skipReason ?? "not imported")
                        continue
                    }
                    if let first = try run.check(item, skipRepeats: skipExisting, name: report.name) {
                        run.skipped()
                        let earlier = report.name(first).map { " (\(TerminalText.quoted($0)))" } ?? ""
                        report.skip(entry, reason: "the same unique key as entry \(first)\(earlier)")
                    } else if try add(item) {
                        run.accepted()
                        report.add(entry, dryRun: dryRun)
                    } else {
                        run.skipped()
                        report.skip(entry, reason: "already in the keychain")
                    }
                }
            }
        }

        if let keychain, !dryRun {
            var importer: ItemImporter?
            do {
                try keychain.importItems { i in
                    importer = i
                    try eachItem { item in
                        if skipExisting { return try i.addUnlessPresent(item) }
                        try i.add(item)
                        return true
                    }
                    run.forgetKeys()
                    progress.restart(
                        "import: closing the transaction of \(Progress.grouped(run.count)) items", total: nil,
                        counting: false)
                }
            } catch let error as KeychainError {
                throw run.explain(
                    error, landed: importer?.landed ?? 0, atomic: importer?.isAtomic ?? true, keychain: keychain)
            }
        } else {
            do {
                try eachItem(dryAdd)
            } catch let error as KeychainError {
                throw run.explain(error, landed: 0, atomic: true, keychain: keychain)
            }
        }
        progress.finish()
        let path = global.keychainPath
        if case .entries = input {
            try printReport(report, imported: run.count)
            return
        }
        let skippedText = skipExisting ? ", \(skipped) skipped (already in the keychain or repeated)" : ""
        if json {
            try Output.json(
                encoding: Summary(
                    imported: dryRun ? 0 : run.count, checked: run.count, dryRun: dryRun, keychain: path,
                    skipped: skipExisting ? skipped : nil))
        } else if dryRun {
            Output.line("\(run.count) item(s) checked\(skippedText); nothing imported (--dry-run)")
        } else {
            Output.line("imported \(run.count) item(s) into \(path)\(skippedText)")
        }
    }

    /// The reader of `file` for `--from`.
    func openInput(_ pairs: [(target: String, column: String)]) throws -> Input {
        let keepNotes = !noNotes
        switch from {
        case .jsonl:
            return .lines(try LineReader(path: file ?? "-", what: "import file"))
        case .pass:
            return .entries(try PassSource(directory: PassSource.storeDirectory(file), keepNotes: keepNotes))
        case .bitwarden:
            return .entries(try BitwardenSource(path: file ?? "-", keepNotes: keepNotes))
        case .keepassxc:
            let stream = try ByteStream(path: file ?? "-", what: "KeePassXC export")
            // The XML export begins with "<" (after a byte order mark or space), the CSV
            // export with its header's quote.
            var first = try stream.peek()
            while let b = first, b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 {
                _ = try stream.next()
                first = try stream.peek()
            }
            if first == UInt8(ascii: "<") || first == 0xEF && (file ?? "").lowercased().hasSuffix(".xml") {
                return .entries(KeePassXMLSource(XMLReader(stream), keepNotes: keepNotes))
            }
            return .entries(try KeePassCSVSource(CSVReader(stream), keepNotes: keepNotes))
        case .csv:
            let stream = try ByteStream(path: file ?? "-", what: "CSV file")
            return .entries(try MappedCSVSource(CSVReader(stream), map: pairs, keepNotes: keepNotes))
        }
    }

    /// The report of an import from another manager: a line per entry, then the counts.
    func printReport(_ report: ImportReport, imported: Int) throws {
        let path = global.keychainPath
        let entries = report.lines.count
        if json {
            try Output.json(
                encoding: Summary(
                    imported: dryRun ? 0 : imported, checked: imported, dryRun: dryRun, keychain: path,
                    skipped: report.skipped, entries: report.lines))
            return
        }
        var out = StdoutBuffer()
        for line in report.lines { out.append(Array((report.text(line) + "\n").utf8)) }
        let counts = "\(report.skipped) of \(entries) entr\(entries == 1 ? "y" : "ies")"
        out.append(
            Array(
                (dryRun
                    ? "would import \(imported) item(s), skip \(counts); nothing imported (--dry-run)\n"
                    : "imported \(imported) item(s) into \(path), skipped \(counts)\n").utf8))
        out.flush()
    }

    /// The input is read once, as it streams, so a class found locked half-way cannot be
    /// retried after a prompt: when the passcode would be asked for at all, ask before.
    func unlockUpFront(_ keychain: Keychain) throws {
        let needed: [ProtectionClass] = [
            .whenUnlocked, .afterFirstUnlock, .always,
            .whenUnlockedThisDeviceOnly, .afterFirstUnlockThisDeviceOnly, .alwaysThisDeviceOnly
        ]
        guard keychain.hasPasscode, file != "-", Terminal.stdinIsTerminal, try global.givenPasscode() == nil,
            !needed.allSatisfy(keychain.isAvailable)
        else { return }
        guard let passcode = try Terminal.readSecret(prompt: "Passcode for \(global.keychainPath): ") else { return }
        try keychain.unlock(passcode: passcode)
    }

    /// What `--json` prints (`skipped` with --skip-existing or --from, `entries` with --from).
    struct Summary: Encodable {
        var imported: Int
        var checked: Int
        var dryRun: Bool
        var keychain: String
        var skipped: Int?
        var entries: [ImportReport.Line]?
    }

    static func bad(_ line: Int, _ what: String) -> KeychainError {
        KeychainError(.param, "line \(line): \(what)")
    }

    /// The item of one line. - Throws: errSecParam naming the line.
    static func newItem(_ bytes: [UInt8], line: Int) throws -> NewItem {
        // The common form without building a JSON value first; every other line (and every
        // bad one) takes the general path.
        if let item = ImportLine.item(bytes) { return item }
        return try parsedItem(bytes, line: line)
    }

    /// The item of one line through the general JSON parser. - Throws: errSecParam naming the line.
    static func parsedItem(_ bytes: [UInt8], line: Int) throws -> NewItem {
        let object: JSONValue
        do {
            object = try JSONValue.parse(bytes)
        } catch {
            throw bad(line, "not valid JSON; each line must be one JSON object")
        }
        guard case .object(let dict) = object else { throw bad(line, "not a JSON object") }
        guard case .string(let className)? = dict["class"] else {
            throw bad(line, "no \"class\"; give \"class\": \"genp\" (or inet, cert, keys)")
        }
        guard let itemClass = ItemClass(rawValue: className) else {
            throw bad(line, "class '\(className)' cannot be imported; use genp, inet, cert or keys")
        }
        var data: [UInt8] = []
        if let value = dict["v_Data"] {
            guard case .string(let text) = value, let decoded = Data(base64Encoded: text) else {
                throw bad(line, "\"v_Data\" must be the secret in base64")
            }
            data = [UInt8](decoded)
        }
        var protection: ProtectionClass?
        if let value = dict["pdmn"] {
            guard case .string(let text) = value, let pc = ProtectionClass(code: text) else {
                throw bad(line, "\"pdmn\" must be one of ak, ck, dk, aku, cku, dku, akpu")
            }
            protection = pc
        }
        var attributes: [String: AttributeValue] = [:]
        for (key, value) in dict where !nonAttributes.contains(key) {
            guard let kind = ItemSchema.kind(key, in: itemClass), kind != .access else {
                throw bad(line, "\"\(key)\" is not an attribute of class \(itemClass.rawValue)")
            }
            let input = try inputValue(value, kind: kind, key: key, line: line)
            do {
                attributes[key] = try input.coerced(to: kind, code: key)
            } catch let error as KeychainError {
                throw bad(line, error.message)
            }
        }
        if itemClass == .certificate {
            do {
                _ = try CertificateInfo(der: data)
            } catch {
                throw bad(line, "\"v_Data\" of a certificate must be one DER X.509 certificate in base64")
            }
        }
        return NewItem(itemClass, attributes: attributes, data: data, protection: protection)
    }

    /// A JSON value as the library takes it: data-valued attributes from base64, dates from
    /// ISO 8601, whole numbers and booleans as numbers.
    static func inputValue(_ value: JSONValue, kind: ItemSchema.Kind, key: String, line: Int) throws -> InputValue {
        if case .string(let text) = value {
            switch kind {
            case .data:
                guard let d = Data(base64Encoded: text) else {
                    throw bad(line, "\"\(key)\" holds data: give it in base64")
                }
                return .data([UInt8](d))
            case .date:
                guard let t = ISODate.parse(text) else {
                    throw bad(line, "\"\(key)\" is a date: give it as ISO 8601, e.g. 2026-01-31T12:00:00Z")
                }
                return .date(t)
            default:
                return .string(text)
            }
        }
        if case .bool(let b) = value { return .bool(b) }
        if case .number(let d) = value {
            guard d == d.rounded(), let i = Int64(exactly: d) else {
                throw bad(line, "\"\(key)\" must be a whole number")
            }
            return .integer(i)
        }
        throw bad(line, "\"\(key)\" must be a string, a number or true/false")
    }

    /// The unique key an item will have, as far as it can be told before adding: the access
    /// group is compared only when the line gives one (nil → not compared across defaults).
    static func uniqueKey(_ item: NewItem) -> UniqueKey? {
        var attributes = item.attributes
        switch item.itemClass {
        case .certificate:
            guard let info = try? CertificateInfo(der: item.data) else { return nil }
            attributes.merge(Keychain.certificateAttributes(info)) { $1 }
        case .key:
            // As the keychain does: a key not declared symmetric gets the attributes of its data.
            let symmetric = attributes["kcls"] == .integer(2) || attributes["kcls"] == .string("2")
            if !symmetric, let info = try? KeyInfo(data: item.data) {
                for (name, value) in Keychain.keyAttributes(info) where attributes[name] == nil {
                    attributes[name] = value
                }
            }
        case .genericPassword, .internetPassword:
            break
        }
        // A line without a group stands for the default group (a name no caller can give);
        // the dictionary is read as it is, not copied to add it.
        return UniqueKey(itemClass: item.itemClass) { name in
            attributes[name] ?? (name == "agrp" ? .string("\u{0}default") : nil)
        }
    }
}
