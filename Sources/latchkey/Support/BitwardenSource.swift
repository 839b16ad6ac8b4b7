import Latchkey
import LatchkeyCrypto

/// `import --from bitwarden FILE.json`: Bitwarden's unencrypted JSON export (Bitwarden's
/// help, "Export vault data", .json): `{"encrypted": false, "folders": [{"id", "name"}],
/// "items": [...]}`, each item with `type` (1 login, 2 secure note, 3 card, 4 identity,
/// 5 SSH key), `name`, `notes`, `folderId`, `fields`, and for a login `login.username`,
/// `login.password`, `login.uris[].uri`, `login.totp`. An organization's export has
/// `collections` and `collectionIds` in place of folders.
///
/// A login becomes the item every source makes of a login (its first URI as the URL); a
/// secure note a generic password whose secret is the note. Cards, identities and SSH keys
/// are skipped, with the reason; custom fields, TOTP, further URIs, passkeys, attachments and
/// password history are reported as not imported. An encrypted export is refused.
///
/// The file is one JSON document whose folders may follow its items, so it is read whole
/// (at most 256 MiB; the buffers it passed through are zeroed), not streamed.
final class BitwardenSource: ImportSource {
    private let items: [JSONValue]
    private var folders: [String: String] = [:]
    private var index = 0
    private let keepNotes: Bool
    private let named: String
    var total: Int? { items.count }
    static let maximumSize = 256 << 20

    init(path: String, keepNotes: Bool) throws {
        self.keepNotes = keepNotes
        named = path == "-" ? "Bitwarden export (stdin)" : "Bitwarden export \(path)"
        var bytes =
            path == "-"
            ? try InputFile.standardInput(what: "Bitwarden export", zeroing: true)
            : try InputFile.secret(path, what: "Bitwarden export")
        defer { Crypto.cleanse(&bytes) }
        guard bytes.count <= BitwardenSource.maximumSize else {
            throw KeychainError(.param, "the \(named) is larger than 256 MiB")
        }
        let document: JSONValue
        do {
            document = try JSONParser.parse(bytes)
        } catch let error as JSONParser.Invalid {
            let line = 1 + bytes[..<min(error.offset, bytes.count)].reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
            throw KeychainError(.param, "line \(line) of the \(named): not valid JSON; nothing was read")
        }
        guard case .object(let top) = document else {
            throw KeychainError(.param, "the \(named) is not a Bitwarden export (not a JSON object)")
        }
        if top["encrypted"] == .bool(true) || top["passwordProtected"] == .bool(true) {
            throw KeychainError(
                .param,
                "the \(named) is encrypted; export the vault again as unencrypted JSON (File > Export vault > .json), import it, then delete it"
            )
        }
        guard case .array(let items)? = top["items"] else {
            throw KeychainError(.param, "the \(named) has no \"items\" array: it is not a Bitwarden JSON export")
        }
        self.items = items
        for key in ["folders", "collections"] {
            guard case .array(let list)? = top[key] else { continue }
            for case .object(let folder) in list {
                if case .string(let id)? = folder["id"], case .string(let name)? = folder["name"] { folders[id] = name }
            }
        }
    }

    func next() throws -> ImportEntry? {
        guard index < items.count else { return nil }
        index += 1
        guard case .object(let item) = items[index - 1] else {
            throw KeychainError(.param, "item \(index) of the \(named) is not a JSON object")
        }
        func string(_ value: JSONValue?) -> String? {
            if case .string(let s)? = value { return s }
            return nil
        }
        var folder = string(item["folderId"]).flatMap { folders[$0] }
        var leftOut: [String] = []
        if folder == nil, case .array(let ids)? = item["collectionIds"] {
            let names = ids.compactMap { string($0).flatMap { folders[$0] } }
            folder = names.first
            if names.count > 1 { leftOut.append("\(names.count - 1) more collection(s)") }
        }
        let title = string(item["name"]) ?? ""
        let name = [folder, title].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: "/")
        if case .array(let fields)? = item["fields"] {
            for case .object(let field) in fields {
                leftOut.append("field " + ImportEntry.quote(string(field["name"]) ?? "?"))
            }
        }
        if case .array(let list)? = item["attachments"], !list.isEmpty {
            leftOut.append("\(list.count) attachment(s)")
        }
        if case .array(let list)? = item["passwordHistory"], !list.isEmpty {
            leftOut.append("\(list.count) older password(s) (history)")
        }
        if let deleted = item["deletedDate"], deleted != .null {
            return .skipped(name, "in the trash", leftOut: leftOut)
        }
        let type: Int? = if case .number(let n)? = item["type"] { Int(exactly: n) } else { nil }
        let notes = string(item["notes"])
        switch type {
        case 1:
            guard case .object(let login)? = item["login"] else {
                throw KeychainError(.param, "item \(index) of the \(named) is a login without \"login\"")
            }
            var url: String?
            if case .array(let uris)? = login["uris"] {
                let list = uris.compactMap { value -> String? in
                    guard case .object(let uri) = value else { return nil }
                    return string(uri["uri"]).flatMap { $0.isEmpty ? nil : $0 }
                }
                url = list.first
                if list.count > 1 { leftOut.append("\(list.count - 1) more URI(s)") }
            }
            if let totp = string(login["totp"]), !totp.isEmpty { leftOut.append("TOTP") }
            if case .array(let keys)? = login["fido2Credentials"], !keys.isEmpty { leftOut.append("passkey") }
            return .login(
                ImportEntry.Login(
                    name: name, account: string(login["username"]),
                    password: Array((string(login["password"]) ?? "").utf8),
                    url: url, notes: notes, leftOut: leftOut),
                notes: keepNotes)
        case 2:
            return .note(name: name, text: notes ?? "", leftOut: leftOut)
        case 3:
            return .skipped(name, "a card (latchkey imports logins and secure notes)", leftOut: leftOut)
        case 4:
            return .skipped(name, "an identity (latchkey imports logins and secure notes)", leftOut: leftOut)
        case 5:
            return .skipped(
                name,
                "an SSH key (latchkey imports logins and secure notes; add keys with 'latchkey add --class keys')",
                leftOut: leftOut)
        default:
            return .skipped(name, "an item of unknown type \(type.map(String.init) ?? "?")", leftOut: leftOut)
        }
    }
}
