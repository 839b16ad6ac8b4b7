import ArgumentParser
import Latchkey
import LatchkeyCrypto

/// `latchkey credential get|store|erase`: git's credential-helper protocol, over internet
/// passwords laid out as Apple's keychain (and git-credential-osxkeychain) lays them out, so
/// that `git config credential.helper latchkey` works without D-Bus.
struct CredentialCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "credential",
        abstract: "A git credential helper: get, store and erase git's credentials as internet passwords.",
        discussion: """
            Set it up with: git config --global credential.helper latchkey (git runs \
            'git-credential-latchkey', installed beside latchkey), or credential.helper \
            '!latchkey credential'. git writes the credential's attributes on stdin (protocol, \
            host, path, username, password); 'get' prints username= and password= lines for the \
            first match and nothing when there is none (git then asks the user), 'store' adds or \
            updates, 'erase' deletes the matches (only those holding the password git names, \
            when it names one).

            Each credential is an internet password (class inet): the host is its server \
            (srvr), a port in the host its port, the protocol its protocol as Apple codes it \
            (htps for https; any other name as given), the path its path, the username its \
            account, the password its data; docs/CLI.md has the whole mapping. A query \
            without a port finds only credentials without one. A locked keychain answers \
            'get' with nothing and a note on stderr. With --synchronizable, 'store' makes the \
            credential follow you to your other machines ('latchkey sync').

            Example:
              git config --global credential.helper latchkey
              printf 'protocol=https\\nhost=example.com\\n\\n' | latchkey credential get
            """)

    @Argument(help: ArgumentHelp("get, store or erase (git's names for the three operations).", valueName: "operation"))
    var operation: String

    @Flag(help: "Store new credentials as synchronizable (kSecAttrSynchronizable).") var synchronizable = false

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func validate() throws {
        guard CommandLineForms.validating else { return }
        guard ["get", "store", "erase"].contains(operation) else {
            throw ValidationError("the operation is get, store or erase (git's credential-helper protocol)")
        }
    }

    func run() throws {
        var input = try InputFile.standardInput(what: "credential", zeroing: true)
        defer { Crypto.cleanse(&input) }
        let request = try GitCredential(parsing: input)
        guard request.host != nil else { return }  // Nothing to match on: as if nothing matched.
        let keychain = try global.settings.open(unlock: .whenNeeded, deferAgentOpen: true)
        switch operation {
        case "get":
            do {
                guard let found = try request.find(in: keychain).first else { return }
                var out = Array("username=".utf8) + Array((found.account ?? "").utf8) + [0x0A]
                out += Array("password=".utf8) + found.item.data + [0x0A]
                defer { Crypto.cleanse(&out) }
                Output.data(out)
            } catch let e as KeychainError where e.status == .interactionNotAllowed {
                Output.note("the keychain is locked; run 'latchkey unlock' (git asks for the password meanwhile)")
            }
        case "store":
            try request.store(in: keychain, synchronizable: synchronizable)
        default:
            try request.erase(in: keychain)
        }
    }
}

/// A credential as git's helper protocol gives it: `key=value` lines, to a blank line or the
/// end; keys the helper does not use (wwwauth[], capability[], password_expiry_utc …) ignored.
struct GitCredential {
    var protocolName: String?
    var host: String?
    var port: Int?
    var path: String?
    var username: String?
    var password: [UInt8]?

    init(parsing input: [UInt8]) throws {
        for line in input.split(separator: 0x0A, omittingEmptySubsequences: false) {
            var line = Array(line)
            if line.last == 0x0D { line.removeLast() }
            if line.isEmpty { break }
            guard let eq = line.firstIndex(of: UInt8(ascii: "=")) else {
                throw KeychainError(.param, "a line of the credential has no '=' (git writes key=value lines)")
            }
            let key = String(decoding: line[..<eq], as: UTF8.self)
            let value = Array(line[(eq + 1)...])
            guard !value.contains(0) else { throw KeychainError(.param, "a credential value holds a NUL byte") }
            let text = String(decoding: value, as: UTF8.self)
            switch key {
            case "protocol": protocolName = text
            case "host": (host, port) = try Self.split(host: text)
            case "path": path = text.isEmpty ? nil : text
            case "username": username = text
            case "password": password = value
            default: break
            }
        }
    }

    /// `host`, `host:port`, `[v6]`, `[v6]:port`.
    static func split(host text: String) throws -> (String?, Int?) {
        var name = Substring(text)
        var portText: Substring?
        if name.hasPrefix("["), let close = name.firstIndex(of: "]") {
            let rest = name[name.index(after: close)...]
            if rest.hasPrefix(":") {
                portText = rest.dropFirst()
            } else if !rest.isEmpty {
                throw KeychainError(.param, "the credential's host is not host[:port]")
            }
            name = name[...close]
        } else if let colon = name.lastIndex(of: ":") {
            portText = name[name.index(after: colon)...]
            name = name[..<colon]
        }
        var port: Int?
        if let portText {
            guard let p = Int(portText), p > 0, p < 65_536 else {
                throw KeychainError(.param, "the credential's port is not a number from 1 to 65535")
            }
            port = p
        }
        return (name.isEmpty ? nil : String(name), port)
    }

    /// Apple's codes for the protocols git names (kSecAttrProtocol…); any other as given.
    static let protocolCodes = [
        "https": "htps", "http": "http", "ftp": "ftp ", "ftps": "ftps", "ssh": "ssh ", "smtp": "smtp",
        "imap": "imap", "pop3": "pop3", "ldap": "ldap"
    ]

    var protocolCode: String? { protocolName.map { Self.protocolCodes[$0] ?? $0 } }

    /// The attributes that name this credential (those git gave).
    var attributes: [String: AttributeValue] {
        var a: [String: AttributeValue] = [:]
        if let host { a["srvr"] = .string(host) }
        if let protocolCode { a["ptcl"] = .string(protocolCode) }
        if let port { a["port"] = .integer(Int64(port)) }
        if let path { a["path"] = .string(path) }
        if let username { a["acct"] = .string(username) }
        return a
    }

    /// The matching internet passwords, with their data: exact port (none matches none), any
    /// path unless one is given, and (when git names one) only those holding `password`.
    func find(in keychain: Keychain, matchingPassword: Bool = false) throws -> [(item: Item, account: String?)] {
        let q = Query(.internetPassword, attributes, synchronizable: .any)
        let found = try keychain.find(q, includeData: true)
        return found.filter { item in
            let itemPort: Int64? = if case .integer(let p)? = item.attributes["port"], p != 0 { p } else { nil }
            guard itemPort == port.map(Int64.init) else { return false }
            if matchingPassword, let password, !Crypto.constantTimeEqual(item.data, password) { return false }
            return true
        }.map { item in
            if case .string(let a)? = item.attributes["acct"] { return (item, a) }
            return (item, nil)
        }
    }

    func store(in keychain: Keychain, synchronizable: Bool) throws {
        guard let password, username != nil else { return }  // git stores only a whole credential.
        guard !password.contains(0x0A) else {
            throw KeychainError(.param, "the password holds a line feed, which git's protocol cannot carry back")
        }
        if let existing = try find(in: keychain).first(where: { $0.account == username }) {
            var q = Query(.internetPassword, attributes, synchronizable: .any)
            q.persistentRef = existing.item.persistentRef
            try keychain.update(q, attributes: [:], data: password)
            return
        }
        var a = attributes
        a["labl"] = .string("git: \(protocolName ?? "?")://\(host ?? "")")
        if synchronizable { a["sync"] = .integer(1) }
        _ = try keychain.add(.internetPassword, attributes: a, data: password)
    }

    func erase(in keychain: Keychain) throws {
        for match in try find(in: keychain, matchingPassword: true) {
            var q = Query(.internetPassword, [:], synchronizable: .any)
            q.persistentRef = match.item.persistentRef
            // Gone since it was found (another erase): nothing left to do. Any other failure
            // (locked, no access, I/O) is reported: git would otherwise keep offering a
            // credential the user believes erased.
            do {
                try keychain.delete(q)
            } catch let e as KeychainError where e.status == .itemNotFound {}
        }
    }
}
