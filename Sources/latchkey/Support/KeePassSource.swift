import Latchkey
import LatchkeyCrypto

/// The KeePass field names that hold a TOTP seed or its settings: KeePassXC's `otp`, the
/// `TOTP Seed`/`TOTP Settings` of KeePassXC before 2.6 and of the KeeOtp plugin, KeePass 2.47's
/// `TimeOtp-…`/`HmacOtp-…`.
enum KeePassFields {
    static let standard: Set<String> = ["Title", "UserName", "Password", "URL", "Notes"]

    static func isOTP(_ key: String) -> Bool {
        key == "otp" || key == "TOTP Seed" || key == "TOTP Settings" || key.hasPrefix("TimeOtp-")
            || key.hasPrefix("HmacOtp-")
    }

    /// The folder path of an entry: its groups without the root group ("Passwords" in
    /// KeePassXC, "Root" in KeePass), which every entry is in.
    static func name(groups: [String], title: String) -> String {
        (groups.dropFirst() + [title]).filter { !$0.isEmpty }.joined(separator: "/")
    }
}

/// `import --from keepassxc FILE.csv`: KeePassXC's CSV export (`keepassxc-cli export --format
/// csv`, or the application's File > Export > CSV): a header, then one record per entry with
/// its group path, title, user name, password, URL, notes, TOTP, icon and two dates. The icon
/// and dates are not imported (the keychain dates items itself). The CSV export carries no
/// custom fields, attachments or history: what the XML export reports, this one cannot see.
/// Entries of the group "Recycle Bin" right under the root are skipped (the CSV does not mark
/// the recycle bin otherwise; the XML export does).
final class KeePassCSVSource: ImportSource {
    private let reader: CSVReader
    private let keepNotes: Bool
    private var columns: [String: Int] = [:]
    private var header: [String] = []
    private var number = 0
    var total: Int? { nil }

    static let required = ["Group", "Title", "Username", "Password", "URL", "Notes"]
    /// Columns of the export that are not imported, by design (docs/CLI.md).
    static let unimported: Set<String> = ["Icon", "Last Modified", "Created"]

    init(_ reader: CSVReader, keepNotes: Bool) throws {
        self.reader = reader
        self.keepNotes = keepNotes
        guard let fields = try reader.next() else {
            throw KeychainError(.param, "the \(reader.stream.named) is empty: it has no header line")
        }
        for (i, field) in fields.enumerated() {
            let name = String(decoding: field, as: UTF8.self)
            header.append(name)
            if columns[name] == nil { columns[name] = i }
        }
        let missing = KeePassCSVSource.required.filter { columns[$0] == nil }
        guard missing.isEmpty else {
            throw KeychainError(
                .param,
                "line \(reader.recordLine) of the \(reader.stream.named) is not KeePassXC's CSV header (it lacks \(missing.joined(separator: ", "))); export with 'keepassxc-cli export --format csv', or read another CSV with --from csv --map"
            )
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
        func text(_ column: String) throws -> String {
            guard let i = columns[column] else { return "" }
            guard let s = String(validating: fields[i], as: UTF8.self) else {
                throw KeychainError(
                    .param,
                    "entry \(number) (line \(line)) of the \(reader.stream.named): its \(column) is not UTF-8 text")
            }
            return s
        }
        let groups = try text("Group").split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        let name = KeePassFields.name(groups: groups, title: try text("Title"))
        var leftOut: [String] = []
        if !(try text("TOTP")).isEmpty { leftOut.append("TOTP") }
        for (i, column) in header.enumerated()
        where KeePassCSVSource.required.firstIndex(of: column) == nil && column != "TOTP"
            && !KeePassCSVSource.unimported.contains(column) && !fields[i].isEmpty
        {
            leftOut.append("column " + ImportEntry.quote(column))
        }
        if groups.count > 1, groups[1] == "Recycle Bin" {
            return .skipped(name, "in the recycle bin", leftOut: leftOut)
        }
        let login = ImportEntry.Login(
            name: name, account: try text("Username"), password: fields[columns["Password"]!], url: try text("URL"),
            notes: try text("Notes"), leftOut: leftOut)
        return .login(login, notes: keepNotes)
    }
}

/// `import --from keepassxc FILE.xml`: KeePass's XML (`keepassxc-cli export --format xml`,
/// KeePassXC's or KeePass 2's XML export), read as it streams (`XMLReader`). Each entry
/// (`<Entry>` in a `<Group>`; not those in an entry's `<History>`, which are old versions and
/// reported) gives a login from its Title, UserName, Password, URL and Notes; its group path
/// is its folder. What is not imported is reported by name, never by value: TOTP fields,
/// other custom fields, attachments, tags and history. Entries in the recycle bin (the group
/// `<RecycleBinUUID>` names) are skipped. A value marked `Protected="True"` is encrypted with
/// the database's inner stream key: that is a database's inner XML, not an export, and is
/// refused.
final class KeePassXMLSource: ImportSource {
    private let reader: XMLReader
    private let keepNotes: Bool
    private var recycleBin: String?
    /// The open groups, outermost first: name and UUID (base64).
    private var groups: [(name: String, uuid: String)] = []
    private var number = 0
    private var started = false
    var total: Int? { nil }

    init(_ reader: XMLReader, keepNotes: Bool) {
        self.reader = reader
        self.keepNotes = keepNotes
    }

    private func bad(_ what: String, line: Int? = nil) -> KeychainError {
        reader.bad(what, line: line)
    }

    /// The text of the element whose start was just read, to its end; an element inside is
    /// refused.
    private func text(_ element: String) throws -> [UInt8] {
        reader.keepText = true
        defer { reader.keepText = false }
        var out: [UInt8] = []
        while let event = try reader.next() {
            switch event {
            case .text(let bytes):
                out += bytes
                guard out.count <= XMLReader.maximumText else { throw bad("a <\(element)> longer than 16 MiB") }
            case .end: return out
            case .start(let name, _): throw bad("an element <\(name)> inside <\(element)>")
            }
        }
        throw bad("the file ends inside <\(element)>")
    }

    private func string(_ element: String) throws -> String {
        let bytes = try text(element)
        guard let s = String(validating: bytes, as: UTF8.self) else {
            throw bad("the text of <\(element)> is not UTF-8")
        }
        return s
    }

    func next() throws -> ImportEntry? {
        while let event = try reader.next() {
            guard case .start(let name, _) = event else {
                if case .end("Group") = event { groups.removeLast() }
                continue
            }
            let parent = reader.path.dropLast().last
            if !started {
                started = true
                guard name == "KeePassFile" else {
                    throw bad("this is not KeePass XML (its root element is <\(name)>, not <KeePassFile>)")
                }
                continue
            }
            switch (parent, name) {
            case ("KeePassFile", "Meta"), ("KeePassFile", "Root"):
                continue
            case ("Meta", "RecycleBinUUID"):
                recycleBin = try string(name).trimmingSpace
            case ("Root", "Group"), ("Group", "Group"):
                groups.append(("", ""))
            case ("Group", "Name"):
                groups[groups.count - 1].name = try string(name)
            case ("Group", "UUID"):
                groups[groups.count - 1].uuid = try string(name).trimmingSpace
            case ("Group", "Entry"):
                number += 1
                return try entry()
            default:
                try reader.skipElement()
            }
        }
        return nil
    }

    /// The entry whose `<Entry>` was just read.
    private func entry() throws -> ImportEntry {
        let line = reader.stream.line
        var fields: [String: [UInt8]] = [:]
        defer { for key in fields.keys { Crypto.cleanse(&fields[key]!) } }
        var leftOut: [String] = []
        var attachments: [String] = []
        var history = 0
        while let event = try reader.next() {
            guard case .start(let name, _) = event else {
                if case .end("Entry") = event { break }
                continue
            }
            switch name {
            case "String":
                var key: String?
                var value: [UInt8] = []
                defer { Crypto.cleanse(&value) }
                while let inner = try reader.next() {
                    guard case .start(let part, let attributes) = inner else {
                        if case .end("String") = inner { break }
                        continue
                    }
                    if part == "Key" {
                        key = try string(part)
                    } else if part == "Value" {
                        if attributes["Protected"]?.lowercased() == "true" {
                            throw bad(
                                "entry \(number) holds a value encrypted with the database's inner key (Protected=\"True\"): this is not an export; export with 'keepassxc-cli export --format xml'"
                            )
                        }
                        value = try text(part)
                    } else {
                        try reader.skipElement()
                    }
                }
                guard let key else { throw bad("a <String> of entry \(number) without a <Key>") }
                guard fields[key] == nil else { throw bad("entry \(number) has the field \(key) twice") }
                fields[key] = value
            case "Binary":
                var key = "?"
                while let inner = try reader.next() {
                    guard case .start(let part, _) = inner else {
                        if case .end("Binary") = inner { break }
                        continue
                    }
                    if part == "Key" { key = try string(part) } else { try reader.skipElement() }
                }
                attachments.append(key)
            case "History":
                while let inner = try reader.next() {
                    if case .start("Entry", _) = inner {
                        history += 1
                        try reader.skipElement()
                    } else if case .start = inner {
                        try reader.skipElement()
                    } else if case .end("History") = inner {
                        break
                    }
                }
            case "Tags":
                if !(try string(name)).trimmingSpace.isEmpty { leftOut.append("tags") }
            default:
                try reader.skipElement()
            }
        }
        func field(_ key: String) throws -> String {
            guard let bytes = fields[key] else { return "" }
            guard let s = String(validating: bytes, as: UTF8.self) else {
                throw bad("the \(key) of entry \(number) is not UTF-8 text", line: line)
            }
            return s
        }
        let title = try field("Title")
        let entryName = KeePassFields.name(groups: groups.map(\.name), title: title)
        if fields.keys.contains(where: KeePassFields.isOTP) { leftOut.append("TOTP") }
        for key in fields.keys.sorted()
        where !KeePassFields.standard.contains(key) && !KeePassFields.isOTP(key) && fields[key]?.isEmpty == false {
            leftOut.append("field " + ImportEntry.quote(key))
        }
        leftOut += attachments.map { "attachment " + ImportEntry.quote($0) }
        if history > 0 { leftOut.append("\(history) older version(s) (history)") }
        if let bin = recycleBin, !bin.isEmpty, bin != "AAAAAAAAAAAAAAAAAAAAAA==",
            groups.contains(where: { $0.uuid == bin })
        {
            return .skipped(entryName, "in the recycle bin", leftOut: leftOut)
        }
        let login = ImportEntry.Login(
            name: entryName, account: try field("UserName"), password: fields["Password"] ?? [], url: try field("URL"),
            notes: try field("Notes"), leftOut: leftOut)
        return .login(login, notes: keepNotes)
    }
}
