import Latchkey
import LatchkeyCrypto

/// One entry of another password manager's export (`import --from`), converted to the item
/// the JSON-lines import would add, or skipped with the reason; and what of it was left out.
/// Every source (`PassSource`, `KeePassCSVSource`, `KeePassXMLSource`, `BitwardenSource`,
/// `MappedCSVSource`) makes these, and `ImportCommand` feeds their items into the one
/// transaction the JSON-lines import uses.
struct ImportEntry {
    /// How the report names it: the folder path and title ("Web/GitHub"); never a secret.
    var name: String
    /// The item to add; nil when the entry is skipped.
    var item: NewItem?
    /// Why the entry is skipped (when `item` is nil).
    var skipReason: String?
    /// What of the entry is not imported ("TOTP", "field \"PIN\"", "attachment \"id.pem\"").
    var leftOut: [String] = []

    /// A field or file name in a report, always in double quotes (escaped as
    /// `TerminalText.quoted` escapes).
    static func quote(_ s: String) -> String {
        let q = TerminalText.quoted(s)
        return q.hasPrefix("\"") ? q : "\"" + q + "\""
    }

    static func skipped(_ name: String, _ reason: String, leftOut: [String] = []) -> ImportEntry {
        ImportEntry(name: name, item: nil, skipReason: reason, leftOut: leftOut)
    }

    /// What a login of any manager has, before it becomes an item.
    struct Login {
        /// Folder path and title, "/"-separated ("Web/GitHub"); empty when it has neither.
        var name: String
        var account: String?
        var password: [UInt8]
        var url: String?
        var notes: String?
        var leftOut: [String] = []
    }

    /// The mapping every source shares (docs/CLI.md, "import --from"): a login whose URL has a
    /// host becomes an internet password laid out as `latchkey credential` lays out git's
    /// (server, protocol code, port, path; the URL's user as account when the entry has
    /// none), any other a generic password whose service is the entry's name; the name is
    /// the label, the account the account, the notes the comment (icmt) unless `notes` is
    /// false, the password the data. No password: skipped.
    static func login(_ login: Login, notes keepNotes: Bool) -> ImportEntry {
        var login = login
        let displayName = login.name.isEmpty ? "(no title)" : login.name
        guard !login.password.isEmpty else {
            return .skipped(displayName, "no password", leftOut: login.leftOut)
        }
        var attributes: [String: AttributeValue] = [:]
        var itemClass = ItemClass.genericPassword
        var account = login.account.flatMap { $0.isEmpty ? nil : $0 }
        if let url = login.url?.trimmingSpace, !url.isEmpty {
            if let parsed = ImportURL(url) {
                itemClass = .internetPassword
                if account == nil { account = parsed.credential.username }
                var credential = parsed.credential
                credential.username = nil
                attributes = credential.attributes
                if parsed.hadPassword { login.leftOut.append("the password inside the URL") }
            } else {
                login.leftOut.append("URL (not scheme://host/... nor host/...)")
            }
        }
        if itemClass == .genericPassword, !login.name.isEmpty { attributes["svce"] = .string(login.name) }
        if !login.name.isEmpty { attributes["labl"] = .string(login.name) }
        if let account { attributes["acct"] = .string(account) }
        if let notes = login.notes, !notes.isEmpty {
            if keepNotes {
                attributes["icmt"] = .string(notes)
            } else {
                login.leftOut.append("notes (--no-notes)")
            }
        }
        let item = NewItem(itemClass, attributes: attributes, data: login.password)
        Crypto.cleanse(&login.password)
        return ImportEntry(name: displayName, item: item, leftOut: login.leftOut)
    }

    /// A secure note (Bitwarden): its text is the secret of a generic password named after it.
    static func note(name: String, text: String, leftOut: [String]) -> ImportEntry {
        let displayName = name.isEmpty ? "(no title)" : name
        guard !text.isEmpty else { return .skipped(displayName, "an empty note", leftOut: leftOut) }
        var attributes: [String: AttributeValue] = [:]
        if !name.isEmpty {
            attributes["svce"] = .string(name)
            attributes["labl"] = .string(name)
        }
        return ImportEntry(
            name: displayName, item: NewItem(.genericPassword, attributes: attributes, data: Array(text.utf8)),
            leftOut: leftOut)
    }

    /// "genp, account A" / "inet https://example.com/login, account A": what the report says
    /// the entry became (attribute values, never the secret; a service only when it is not the
    /// entry's name).
    var summary: String {
        guard let item else { return "" }
        func text(_ key: String) -> String? {
            switch item.attributes[key] {
            case .string(let s)?: return s
            case .integer(let i)?: return String(i)
            default: return nil
            }
        }
        var parts: [String] = []
        if item.itemClass == .internetPassword {
            var server = text("srvr") ?? ""
            if let ptcl = text("ptcl") {
                let scheme = GitCredential.protocolCodes.first { $0.value == ptcl }?.key ?? ptcl.trimmingSpace
                server = scheme + "://" + server
            }
            if let port = text("port") { server += ":\(port)" }
            if let path = text("path") { server += "/" + path }
            parts.append("inet " + TerminalText.quoted(server))
        } else {
            parts.append("genp")
            if let service = text("svce"), service != name { parts.append("service " + TerminalText.quoted(service)) }
        }
        if let account = text("acct") { parts.append("account " + TerminalText.quoted(account)) }
        return parts.joined(separator: ", ")
    }
}

/// A source of entries: one manager's export, read as it streams.
protocol ImportSource: AnyObject {
    /// The next entry; nil after the last.
    /// - Throws: errSecParam naming the entry or line for a malformed export; errSecIO.
    func next() throws -> ImportEntry?
    /// How many entries there are, when known before they are read (for the progress bar).
    var total: Int? { get }
}

/// A login's URL split as git splits a remote for its credential helper (protocol, host and
/// port, path), so that an imported login is the internet password `latchkey credential`
/// stores and finds: `scheme://[user[:password]@]host[:port][/path][?query][#fragment]`, or
/// `host[:port][/path]` without a scheme (then no protocol). The query and fragment are not
/// kept; a password inside the URL never is (it is reported).
struct ImportURL {
    var credential: GitCredential
    var hadPassword = false

    init?(_ text: String) {
        var rest = Substring(text)
        var scheme: String?
        if let colon = rest.firstIndex(of: ":"), rest[colon...].hasPrefix("://") {
            let s = rest[..<colon]
            guard let first = s.first, first.isASCII, first.isLetter,
                s.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) })
            else { return nil }
            scheme = s.lowercased()
            rest = rest[rest.index(colon, offsetBy: 3)...]
        }
        guard !rest.contains(where: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }) else { return nil }
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        var path: Substring = ""
        if authorityEnd < rest.endIndex, rest[authorityEnd] == "/" {
            let after = rest[rest.index(after: authorityEnd)...]
            path = after[..<(after.firstIndex(where: { $0 == "?" || $0 == "#" }) ?? after.endIndex)]
        }
        var user: String?
        if let at = authority.lastIndex(of: "@") {
            let info = authority[..<at]
            authority = authority[authority.index(after: at)...]
            if let colon = info.firstIndex(of: ":") {
                hadPassword = true
                user = String(info[..<colon])
            } else {
                user = String(info)
            }
            user = user.map(ImportURL.percentDecoded).flatMap { $0.isEmpty ? nil : $0 }
        }
        guard let (host, port) = try? GitCredential.split(host: String(authority)), let host else { return nil }
        if scheme == nil {
            // Without a scheme only what reads as a host name: "example.com", "localhost".
            guard host.contains(".") || host == "localhost" || host.hasPrefix("["),
                host.allSatisfy({ $0.isLetter || $0.isNumber || "-._[]:".contains($0) })
            else { return nil }
        }
        credential = GitCredential(
            protocolName: scheme, host: host, port: port, path: path.isEmpty ? nil : String(path), username: user)
    }

    /// `%XX` sequences decoded (a malformed one kept as it is).
    static func percentDecoded(_ s: String) -> String {
        guard s.contains("%") else { return s }
        var out: [UInt8] = []
        let bytes = Array(s.utf8)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "%"), i + 2 < bytes.count,
                let v = UInt8(String(decoding: bytes[i + 1...i + 2], as: UTF8.self), radix: 16)
            {
                out.append(v)
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(validating: out, as: UTF8.self) ?? s
    }
}

extension GitCredential {
    init(protocolName: String?, host: String?, port: Int?, path: String?, username: String?) {
        self.protocolName = protocolName
        self.host = host
        self.port = port
        self.path = path
        self.username = username
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces, tabs, CRs and LFs.
    var trimmingSpace: String {
        let space: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }
        guard let first = firstIndex(where: { !space($0) }), let last = lastIndex(where: { !space($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}

/// What `import --from` prints: a line per entry once the transaction closed (or at once with
/// `--dry-run`), then a summary. It keeps each entry's name and outcome, never a secret.
struct ImportReport {
    enum Outcome: String, Encodable {
        case imported
        case wouldImport = "would import"
        case skipped
    }

    struct Line: Encodable {
        var name: String
        var status: Outcome
        /// What the entry became ("genp, service S, account A"); empty for a skipped one.
        var item: String?
        var reason: String?
        var notImported: [String]?
    }

    private(set) var lines: [Line] = []
    private(set) var skipped = 0

    mutating func add(_ entry: ImportEntry, dryRun: Bool) {
        lines.append(
            Line(
                name: entry.name, status: dryRun ? .wouldImport : .imported, item: entry.summary, reason: nil,
                notImported: entry.leftOut.isEmpty ? nil : entry.leftOut))
    }

    mutating func skip(_ entry: ImportEntry, reason: String) {
        skipped += 1
        lines.append(
            Line(
                name: entry.name, status: .skipped, item: nil, reason: reason,
                notImported: entry.leftOut.isEmpty ? nil : entry.leftOut))
    }

    /// The name of entry `number` (1-based), for messages.
    func name(_ number: Int) -> String? {
        number >= 1 && number <= lines.count ? lines[number - 1].name : nil
    }

    /// The report's text lines.
    func text(_ line: Line) -> String {
        let name = TerminalText.quoted(line.name)
        var out: String
        switch line.status {
        case .skipped: out = "skipped \(name): \(line.reason ?? "")"
        case .imported, .wouldImport: out = "\(line.status.rawValue) \(name) as \(line.item ?? "")"
        }
        if let left = line.notImported { out += "; not imported: " + left.joined(separator: ", ") }
        return TerminalText.sanitized(out)
    }
}
