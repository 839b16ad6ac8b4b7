#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
import ArgumentParser
import Latchkey
import LatchkeyFormat

/// `latchkey dump`: the attributes of every item the caller can reach, never the secrets.
struct DumpCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "List the attributes of every item the caller can reach; never the secrets.",
        discussion: """
            Shows the items of every class in the caller's access groups (--entitlements, \
            --app-id), synchronizable or not, ordered by class and creation date. The table \
            shows NAME (account; for keys the application tag), SERVICE (service; for internet \
            passwords protocol://server:port/path; for keys type, size and key class; for \
            certificates the serial number), LABEL, GROUP (access group), PDMN (protection \
            class) and MODIFIED (UTC). --json prints every attribute with Apple's 4-character \
            keys instead (see docs/CLI.md, "JSON output"). When the keychain is locked, items \
            of the locked protection classes cannot be read: they are left out and stderr says \
            how many; give the passcode to see them.

            Example:
              latchkey dump
              latchkey dump --entitlements MailApp.entitlements --json
              latchkey dump --jsonl > items.jsonl
            """
    )

    @Flag(help: "Print a JSON array of items (Apple's 4-character keys plus class; no v_Data).")
    var json = false

    @Flag(
        help: ArgumentHelp(
            "Print JSON Lines: each item as one object on one line (as find --jsonl prints it; no v_Data).",
            discussion:
                "'latchkey import' reads it back as is; the imported items have empty secrets. For the secrets too: find --limit all --return all --jsonl, or a backup."
        ))
    var jsonl = false

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func validate() throws {
        guard CommandLineForms.validating else { return }
        if json && jsonl { throw ValidationError("--json and --jsonl are two output forms; give one") }
    }

    func run() throws {
        try DumpCommand.execute(json: json, jsonl: jsonl, global: global.settings)
    }

    /// What a `dump` does, whichever parser read its arguments (see Commands/FastParser.swift).
    /// The output is written as the items are read: memory holds one item at a time and a
    /// sort key per item (Keychain.walkItems), never the list.
    static func execute(json: Bool, jsonl: Bool = false, global: GlobalSettings) throws {
        let keychain = try global.open(unlock: .whenNeeded)
        var shown = 0
        do {
            shown = try global.retryingUnlocked(keychain) {
                try DumpCommand.write(keychain, protections: nil, json: json, jsonl: jsonl)
            }
        } catch let error as KeychainError where error.status == .interactionNotAllowed {
            // Locked: list what the available classes hold, and say what is left out.
            let (available, locked, count) = try DumpCommand.lockedClasses(keychain)
            Output.note(
                "the keychain is locked: \(count) item(s) protected \(locked.map(\.code).joined(separator: ", ")) (counted across every access group) are not shown; give the passcode (LATCHKEY_PASSCODE or --passcode-file) to see them"
            )
            shown = try DumpCommand.write(keychain, protections: available, json: json, jsonl: jsonl)
        }
        if !json, !jsonl, shown == 0 {
            Output.note("no items that this caller can reach in \(global.keychainPath)")
        }
    }

    /// Writes the items the caller can see (only of `protections` when given) as a table or a
    /// JSON array, as they are read, in class then creation order; returns how many. Nothing
    /// is written before the first pass has read every item, so a locked class fails the call
    /// with nothing on stdout. A table is sized in the first pass and printed in the second.
    /// The protection classes open now, those closed that hold items, and how many items
    /// those hold (across every class and access group: counted without keys): what a listing
    /// of a locked keychain leaves out.
    static func lockedClasses(_ keychain: Keychain) throws -> (
        available: [ProtectionClass], locked: [ProtectionClass], count: Int
    ) {
        let available = ProtectionClass.allCases.filter { keychain.isAvailable($0) }
        let byProtection = try keychain.info().itemsByProtection
        let locked = ProtectionClass.allCases.filter {
            !available.contains($0) && byProtection[$0.code, default: 0] > 0
        }
        return (available, locked, locked.reduce(0) { $0 + byProtection[$1.code, default: 0] })
    }

    static func write(_ keychain: Keychain, protections: [ProtectionClass]?, json: Bool, jsonl: Bool = false) throws
        -> Int
    {
        var count = 0
        var out = StdoutBuffer()
        if jsonl {
            try keychain.walkItems(
                protections: protections, survey: { _ in },
                emit: { item in
                    out.append(ItemJSON.line(item, includeData: false))
                    count += 1
                })
            out.flush()
            return count
        }
        if json {
            var stream = ItemJSON.Stream(includeData: false, asArray: true)
            try keychain.walkItems(
                protections: protections, survey: { _ in },
                emit: { item in
                    stream.append(item)
                    count += 1
                    if stream.buffered >= 1 << 16 { Output.data(stream.take()) }
                })
            Output.data(stream.finish())
            return count
        }
        let header = ["CLASS", "NAME", "SERVICE", "LABEL", "GROUP", "PDMN", "MODIFIED"]
        var sizing = Table.Sizing(header)
        var widths: [Int] = []
        try keychain.walkItems(
            protections: protections,
            survey: { item in
                sizing.measure(DumpCommand.row(item).map(TerminalText.quoted))
            },
            emit: { item in
                if count == 0 {
                    widths = sizing.widths(fitting: Terminal.columns(STDOUT_FILENO))
                    out.append(Array((Style.stdout.bold(Table.line(header, sizing.headerCounts, widths)) + "\n").utf8))
                }
                let cells = DumpCommand.row(item).map(TerminalText.quoted)
                out.append(Array((Table.line(cells, cells.map(Table.length), widths) + "\n").utf8))
                count += 1
            })
        out.flush()
        return count
    }

    static func date(_ item: Item, _ code: String) -> Double {
        if case .date(let t)? = item.attributes[code] { return t }
        return 0
    }

    /// The table of `items` (also `delete`'s list of matches): class, name, service, label,
    /// group, protection class, modification date; never a secret.
    static func table(_ items: [Item]) -> Table {
        var table = Table(["CLASS", "NAME", "SERVICE", "LABEL", "GROUP", "PDMN", "MODIFIED"])
        for item in items { table.append(DumpCommand.row(item)) }
        return table
    }

    /// The table row of an item.
    static func row(_ item: Item) -> [String] {
        row(item.itemClass, item.attributes, item.protection)
    }

    /// The table row of an item given by its class, attributes and protection class (a
    /// backup's item, `backup-list`).
    static func row(_ itemClass: ItemClass, _ a: [String: AttributeValue], _ protection: ProtectionClass) -> [String] {
        func text(_ code: String) -> String { a[code].map(DumpCommand.text) ?? "" }
        var name = text("acct")
        var service = text("svce")
        switch itemClass {
        case .genericPassword:
            break
        case .internetPassword:
            var url = text("srvr")
            if let ptcl = a["ptcl"] {
                url = TextEditing.trimming(DumpCommand.text(ptcl), newlines: false) + "://" + url
            }
            if case .integer(let port)? = a["port"], port != 0 { url += ":\(port)" }
            // A path as git's credential helper gives it ("org/repo.git") has no leading slash.
            let path = text("path")
            service = url + (path.isEmpty || path.hasPrefix("/") ? path : "/" + path)
        case .key:
            name = text("atag")
            let type: String
            if case .integer(let code)? = a["type"] {
                type =
                    AttributeOption.keyTypes.first { $0.value == code && $0.key != "ecsecprimerandom" }?.key
                    ?? "type \(code)"
            } else {
                type = ""
            }
            let keyClass: String
            if case .integer(let code)? = a["kcls"] {
                keyClass = AttributeOption.keyClasses.first { $0.value == code }?.key ?? "class \(code)"
            } else {
                keyClass = ""
            }
            service = [type, text("bsiz"), keyClass].filter { !$0.isEmpty }.joined(separator: " ")
        case .certificate:
            name = ""
            service = a["slnr"].map { "serial " + DumpCommand.text($0) } ?? ""
        }
        let modified =
            a["mdat"].flatMap { value -> String? in
                guard case .date(let t) = value else { return nil }
                return minutes(ISODate.format(t))
            } ?? ""
        let group = text("agrp") + (a["sync"] == .integer(1) ? " (sync)" : "")
        return [itemClass.rawValue, name, service, text("labl"), group, protection.code, modified]
    }

    /// `2026-01-31T12:34:56.789Z` → `2026-01-31 12:34`: the first 16 characters, T as a space.
    /// (Foundation's replacingOccurrences is a visible part of a large dump's time; ISO dates
    /// are ASCII, anything else takes the general path.)
    static func minutes(_ iso: String) -> String {
        let head = iso.utf8.prefix(16)
        guard head.allSatisfy({ $0 < 0x80 }) else {
            return TextEditing.replacing("T", with: " ", in: String(iso.prefix(16)))
        }
        return String(decoding: head.map { $0 == UInt8(ascii: "T") ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
    }

    /// A value for people: strings as they are, numbers in decimal, data as UTF-8 when it is
    /// printable text, else hex.
    static func text(_ value: AttributeValue) -> String {
        switch value {
        case .string(let s): return s
        case .integer(let i): return String(i)
        case .date(let t): return ISODate.format(t)
        case .data(let d):
            if let s = String(validating: d, as: UTF8.self), !s.isEmpty,
                s.unicodeScalars.allSatisfy({ !$0.properties.generalCategory.isControl })
            {
                return s
            }
            return Hex.encode(d)
        }
    }
}

private extension Unicode.GeneralCategory {
    var isControl: Bool { self == .control || self == .format || self == .unassigned }
}
