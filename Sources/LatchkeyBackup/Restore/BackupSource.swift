#if canImport(Glibc)
    import Glibc
#endif
import Latchkey

/// The backup archive a restore reads, twice: once to verify every byte, once to write. A
/// file is read in place; a stream (stdin) is first copied, as it arrives, into an anonymous
/// temporary file (`O_TMPFILE`, mode 0600, never linked into a directory), which holds the
/// archive's bytes exactly as they came: ciphertext only (spec/BACKUP.md §9.1).
public final class BackupSource: @unchecked Sendable {
    let fd: Int32
    /// What to call the source in messages.
    public let name: String

    private init(fd: Int32, name: String) {
        self.fd = fd
        self.name = name
    }

    deinit { close(fd) }

    /// Opens a backup file.
    /// - Throws: errSecIO when it cannot be opened.
    public static func file(_ path: String) throws -> BackupSource {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            throw KeychainError(.io, "cannot open the backup \(path): \(String(cString: strerror(e)))")
        }
        var st = stat()
        if fstat(fd, &st) == 0, (st.st_mode & S_IFMT) != S_IFREG {
            // A FIFO or a device cannot be read twice: copy it like a stream.
            defer { close(fd) }
            return try spooling(fd: fd, name: path)
        }
        return BackupSource(fd: fd, name: path)
    }

    /// Copies a stream (standard input: `fd` 0) into an anonymous temporary file in
    /// `$TMPDIR` (or /tmp), so that it can be read twice.
    /// - Throws: errSecIO when the copy fails (e.g. the disk is full).
    public static func spooling(fd input: Int32, name: String = "standard input") throws -> BackupSource {
        let dir = Self.temporaryDirectory()
        var spool = open(dir, Self.oTmpFile | O_RDWR | O_CLOEXEC, 0o600)
        if spool < 0 {
            // No O_TMPFILE on this file system: create, then unlink at once.
            var template = Array((dir + "/latchkey-restore-XXXXXX").utf8CString)
            spool = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
            guard spool >= 0 else {
                let e = errno
                throw KeychainError(
                    .io, "cannot create a temporary file in \(dir) to hold the backup: \(String(cString: strerror(e)))")
            }
            template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
            fchmod(spool, 0o600)
        }
        let source = BackupSource(fd: spool, name: name)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            if n < 0 {
                let e = errno
                throw KeychainError(.io, "cannot read the backup from \(name): \(String(cString: strerror(e)))")
            }
            if n == 0 { break }
            var done = 0
            while done < n {
                let w = buffer.withUnsafeBytes { write(spool, $0.baseAddress! + done, n - done) }
                if w < 0, errno == EINTR { continue }
                guard w > 0 else {
                    let e = errno
                    throw KeychainError(
                        .io, "cannot hold the backup in a temporary file in \(dir): \(String(cString: strerror(e)))")
                }
                done += w
            }
        }
        return source
    }

    /// The size of the archive in bytes.
    var size: Int64 {
        var st = stat()
        return fstat(fd, &st) == 0 ? Int64(st.st_size) : 0
    }

    /// The read position of the current pass (for progress).
    var position: Int64 { Int64(lseek(fd, 0, SEEK_CUR)) }

    /// A descriptor positioned at the start, for one pass; the caller closes it.
    func rewound() throws -> Int32 {
        guard lseek(fd, 0, SEEK_SET) == 0 else {
            let e = errno
            throw KeychainError(.io, "cannot read the backup \(name) again: \(String(cString: strerror(e)))")
        }
        return fd
    }

    static func temporaryDirectory() -> String {
        if let t = getenv("TMPDIR").map({ String(cString: $0) }), t.hasPrefix("/") { return t }
        return "/tmp"
    }

    /// O_TMPFILE (__O_TMPFILE | O_DIRECTORY) on Linux.
    static let oTmpFile: Int32 = 0o20000000 | O_DIRECTORY
}
