#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
import Latchkey
import LatchkeyCrypto

/// `import --from pass [DIR]`: the entries of a password store (passwordstore.org), each
/// decrypted by `pass show -- NAME` (run without a shell, stdin /dev/null, the secret read
/// from its stdout pipe only; gpg and its pinentry ask for a key's passphrase as they do for
/// `pass show`). The first line is the password; `user:`, `username:` and `login:` lines give
/// the account and a `url:` line the URL (the first of each, the key in any case), as pass
/// users write them and pass-import reads them; an `otpauth://` line (pass-otp) is a TOTP
/// seed, which is not imported; every other line is the notes. Entries come in the order of
/// their names, directory by directory; `.git` and `.extensions` are not entries, and a
/// symbolic link is reported and not followed.
final class PassSource: ImportSource {
    enum Found {
        case entry(String)
        case skip(String, String)
    }

    let directory: String
    let keepNotes: Bool
    private let found: [Found]
    private var index = 0
    private let environment: [String]
    var total: Int? { found.count }

    /// The store: `directory`, else PASSWORD_STORE_DIR, else ~/.password-store.
    static func storeDirectory(_ given: String?) -> String {
        if let given { return given }
        if let dir = GlobalOptions.environment("PASSWORD_STORE_DIR"), !dir.isEmpty { return dir }
        return (GlobalOptions.environment("HOME") ?? "") + "/.password-store"
    }

    init(directory: String, keepNotes: Bool) throws {
        self.directory = directory
        self.keepNotes = keepNotes
        var info = stat()
        guard stat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            let reason =
                errno == 0 || info.st_mode & S_IFMT != S_IFDIR ? "not a directory" : String(cString: strerror(errno))
            throw KeychainError(
                .param,
                "the password store \(directory) cannot be read: \(reason); give its directory, or set PASSWORD_STORE_DIR"
            )
        }
        var list: [Found] = []
        try PassSource.walk(directory, prefix: "", depth: 0, into: &list)
        found = list
        // pass reads the store named here; no passcode or password of latchkey's reaches it.
        let secrets = ["LATCHKEY_PASSCODE", "LATCHKEY_NEW_PASSCODE", "LATCHKEY_BACKUP_PASSWORD", "PASSWORD_STORE_DIR"]
        var env: [String] = []
        var p = environ
        while let entry = p.pointee {
            let text = String(cString: entry)
            let name = text.split(separator: "=", maxSplits: 1).first.map(String.init) ?? text
            if !secrets.contains(name) { env.append(text) }
            p += 1
        }
        env.append("PASSWORD_STORE_DIR=" + directory)
        environment = env
    }

    /// The `.gpg` files under `path`, as pass names (relative, without `.gpg`), sorted.
    private static func walk(_ path: String, prefix: String, depth: Int, into list: inout [Found]) throws {
        guard depth < 64 else {
            list.append(.skip(prefix, "directories nested more than 64 deep"))
            return
        }
        guard let dir = opendir(path) else {
            throw KeychainError(
                .io,
                "cannot read the directory \(path) of the password store: \(String(cString: strerror(errno))); check its permissions"
            )
        }
        var names: [[UInt8]] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                Array(raw.prefix(while: { $0 != 0 }))
            }
            if name == Array(".".utf8) || name == Array("..".utf8) || name == Array(".git".utf8)
                || name == Array(".extensions".utf8)
            {
                continue
            }
            names.append(name)
        }
        closedir(dir)
        names.sort { $0.lexicographicallyPrecedes($1) }
        let gpg = Array(".gpg".utf8)
        for bytes in names {
            let full = path + "/" + String(decoding: bytes, as: UTF8.self)
            var info = stat()
            guard lstat(full, &info) == 0 else { continue }
            let type = info.st_mode & S_IFMT
            guard let name = String(validating: bytes, as: UTF8.self) else {
                if type == S_IFDIR || bytes.count > 4 && Array(bytes.suffix(4)) == gpg {
                    list.append(.skip(prefix + String(decoding: bytes, as: UTF8.self), "its name is not UTF-8"))
                }
                continue
            }
            if type == S_IFDIR {
                try walk(full, prefix: prefix + name + "/", depth: depth + 1, into: &list)
            } else if name.hasSuffix(".gpg"), name.count > 4 {
                let entry = prefix + String(name.dropLast(4))
                if type == S_IFREG {
                    list.append(.entry(entry))
                } else if type == S_IFLNK {
                    list.append(.skip(entry, "a symbolic link, which is not followed"))
                }
            }
        }
    }

    func next() throws -> ImportEntry? {
        guard index < found.count else { return nil }
        index += 1
        switch found[index - 1] {
        case .skip(let name, let reason):
            return .skipped(name, reason)
        case .entry(let name):
            var output: [UInt8] = []
            defer { Crypto.cleanse(&output) }
            let status: Int32?
            do {
                status = try SecretCommand.run(
                    arguments: ["pass", "show", "--", name], environment: environment, output: &output)
            } catch let error as KeychainError where error.message.hasPrefix("cannot run pass:") {
                throw KeychainError(
                    error.status, error.message + "; install pass (Debian: apt install pass) or put it on PATH")
            }
            guard status == 0 else {
                let how = status.map { "exited with status \($0)" } ?? "was killed by a signal"
                throw KeychainError(
                    .io,
                    "entry \(index) (\(TerminalText.quoted(name))): 'pass show' \(how) (its output is never shown; gpg says why above, or run pass show on the entry)"
                )
            }
            return PassSource.entry(name: name, output: output, keepNotes: keepNotes)
        }
    }

    /// The entry of what `pass show NAME` printed.
    static func entry(name: String, output: [UInt8], keepNotes: Bool) -> ImportEntry {
        var lines = output.split(separator: 0x0A, omittingEmptySubsequences: false).map { line in
            line.last == 0x0D ? line.dropLast() : line
        }
        while lines.count > 1, lines.last?.isEmpty == true { lines.removeLast() }
        var login = ImportEntry.Login(name: name, password: Array(lines.first ?? []))
        var notes: [String] = []
        var notesAreText = true
        for line in lines.dropFirst() {
            guard let text = String(validating: line, as: UTF8.self) else {
                notesAreText = false
                continue
            }
            if text.trimmingSpace.lowercased().hasPrefix("otpauth://") {
                login.leftOut.append("TOTP (an otpauth:// line)")
                continue
            }
            if let colon = text.firstIndex(of: ":") {
                let key = text[..<colon].trimmingSpace.lowercased()
                let value = String(text[text.index(after: colon)...]).trimmingSpace
                if ["user", "username", "login"].contains(key), login.account == nil, !value.isEmpty {
                    login.account = value
                    continue
                }
                if key == "url", login.url == nil, !value.isEmpty {
                    login.url = value
                    continue
                }
            }
            notes.append(text)
        }
        while notes.first?.trimmingSpace.isEmpty == true { notes.removeFirst() }
        if !notesAreText { login.leftOut.append("notes (not UTF-8 text)") }
        login.notes = notesAreText && !notes.isEmpty ? notes.joined(separator: "\n") : nil
        var entry = ImportEntry.login(login, notes: keepNotes)
        Crypto.cleanse(&login.password)
        if entry.item == nil, entry.skipReason == "no password" {
            entry.skipReason = "its first line (the password) is empty"
        }
        return entry
    }
}
