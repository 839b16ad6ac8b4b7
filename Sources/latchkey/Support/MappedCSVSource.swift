import Latchkey
import LatchkeyCrypto

/// `import --from csv FILE --map 'secret=Password,account=Username,…'`: any CSV (RFC 4180)
/// whose first record names its columns. `--map` says which column fills what:
///
/// - `secret` (required): the item's data;
/// - `account`, `label`, `comment` (or `notes`), `description`: those attributes;
/// - `service`: the service of a generic password (default: the label);
/// - `url`: a URL; a row whose URL has a host becomes an internet password laid out as
///   `latchkey credential` lays out git's (server, protocol, port, path);
/// - `server`: the server of an internet password (when the row has no URL);
/// - `ignore`: a column known and not wanted (may repeat).
///
/// A column is named as the header names it (case and surrounding spaces aside). A column
/// with a value that no target names is reported as not imported, entry by entry.
final class MappedCSVSource: ImportSource {
    static let targets = [
        "secret", "account", "service", "label", "comment", "notes", "description", "url", "server", "ignore"
    ]

    private let reader: CSVReader
    private let keepNotes: Bool
    private var header: [String] = []
    /// target → column index.
    private var map: [String: Int] = [:]
    private var mapped: Set<Int> = []
    private var number = 0
    var total: Int? { nil }

    /// The pairs of a `--map` value. - Throws: a usage error for a malformed one.
    static func parse(_ specs: [String]) throws -> [(target: String, column: String)] {
        var pairs: [(String, String)] = []
        for spec in specs {
            for part in spec.split(separator: ",", omittingEmptySubsequences: true) {
                let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard pieces.count == 2 else {
                    throw UsageError(
                        "--map takes TARGET=COLUMN pairs separated by commas ('\(part)' has no '=')", command: "import")
                }
                let target = pieces[0].trimmingSpace.lowercased()
                let column = String(pieces[1]).trimmingSpace
                guard targets.contains(target) else {
                    throw UsageError(
                        "--map: '\(target)' is not a target; use \(targets.joined(separator: ", "))", command: "import")
                }
                guard !column.isEmpty else { throw UsageError("--map: \(target)= names no column", command: "import") }
                let canonical = target == "notes" ? "comment" : target
                if canonical != "ignore", pairs.contains(where: { $0.0 == canonical }) {
                    throw UsageError("--map names \(target) twice", command: "import")
                }
                pairs.append((canonical, column))
            }
        }
        guard pairs.contains(where: { $0.0 == "secret" }) else {
            throw UsageError("--map must name the column of the secret: secret=COLUMN", command: "import")
        }
        return pairs
    }

    init(_ reader: CSVReader, map pairs: [(target: String, column: String)], keepNotes: Bool) throws {
        self.reader = reader
        self.keepNotes = keepNotes
        guard let fields = try reader.next() else {
            throw KeychainError(.param, "the \(reader.stream.named) is empty: it has no header line")
        }
        header = fields.map { String(decoding: $0, as: UTF8.self) }
        for (target, column) in pairs {
            let matches = header.indices.filter { header[$0].trimmingSpace.lowercased() == column.lowercased() }
            guard matches.count == 1 else {
                let why = matches.isEmpty ? "has no column" : "has \(matches.count) columns"
                throw UsageError(
                    "--map: the header of the \(reader.stream.named) \(why) named '\(column)'; its columns are \(header.map { TerminalText.quoted($0) }.joined(separator: ", "))",
                    command: "import")
            }
            if target != "ignore" { map[target] = matches[0] }
            mapped.insert(matches[0])
        }
    }

    func next() throws -> ImportEntry? {
        guard var fields = try reader.next() else { return nil }
        defer { for i in fields.indices { Crypto.cleanse(&fields[i]) } }
        number += 1
        let line = reader.recordLine
        guard fields.count == header.count else {
            throw KeychainError(
                .param,
                "entry \(number) (line \(line)) of the \(reader.stream.named) has \(fields.count) fields, and the header \(header.count)"
            )
        }
        func text(_ target: String) throws -> String? {
            guard let i = map[target] else { return nil }
            guard let s = String(validating: fields[i], as: UTF8.self) else {
                throw KeychainError(
                    .param,
                    "entry \(number) (line \(line)) of the \(reader.stream.named): its \(target) column is not UTF-8 text"
                )
            }
            return s.isEmpty ? nil : s
        }
        let label = try text("label"), service = try text("service"), account = try text("account")
        let name = label ?? service ?? account ?? "entry \(number)"
        var leftOut: [String] = []
        for i in header.indices where !mapped.contains(i) && !fields[i].isEmpty {
            leftOut.append("column " + ImportEntry.quote(header[i]))
        }
        let secret = fields[map["secret"]!]
        guard !secret.isEmpty else { return .skipped(name, "no secret", leftOut: leftOut) }

        var attributes: [String: AttributeValue] = [:]
        var itemClass = ItemClass.genericPassword
        var user: String?
        if let url = try text("url") {
            if let parsed = ImportURL(url.trimmingSpace) {
                itemClass = .internetPassword
                var credential = parsed.credential
                user = credential.username
                credential.username = nil
                attributes = credential.attributes
                if parsed.hadPassword { leftOut.append("the password inside the URL") }
            } else {
                leftOut.append("URL (not scheme://host/... nor host/...)")
            }
        }
        if itemClass == .genericPassword, let server = try text("server") {
            itemClass = .internetPassword
            attributes["srvr"] = .string(server)
        }
        if itemClass == .genericPassword {
            if let svce = service ?? label { attributes["svce"] = .string(svce) }
        } else if service != nil {
            leftOut.append("service (an internet password has none)")
        }
        if let label { attributes["labl"] = .string(label) }
        if let acct = account ?? user { attributes["acct"] = .string(acct) }
        if let description = try text("description") { attributes["desc"] = .string(description) }
        if let comment = try text("comment") {
            if keepNotes {
                attributes["icmt"] = .string(comment)
            } else {
                leftOut.append("notes (--no-notes)")
            }
        }
        return ImportEntry(name: name, item: NewItem(itemClass, attributes: attributes, data: secret), leftOut: leftOut)
    }
}
