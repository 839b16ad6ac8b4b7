#if canImport(Glibc)
    import Glibc
#endif
import CArchive
import LatchkeyFormat

/// How the tar stream is compressed (`--compress`).
public enum BackupCompression: String, Sendable, CaseIterable {
    /// Plain pax tar. The default: the entries are ciphertext, which does not compress.
    case none
    case gzip
    case zstd
}

/// Where a backup's entries go: the tar writer of a real backup, or the fixture generator's.
package protocol BackupEntrySink: AnyObject {
    /// Writes one regular-file entry, whole (its size is known: `bytes.count`).
    func writeEntry(name: String, bytes: [UInt8]) throws
}

/// A pax tar stream written through libarchive to a file descriptor (spec/BACKUP.md §2).
/// Each entry is a regular file, mode 0600, owner 0:0, its modification time the backup's
/// creation time. No libarchive type leaves this file.
final class ArchiveWriter: BackupEntrySink {
    private let archive: OpaquePointer
    private let mtime: Int
    private var closed = false

    /// - Throws: `ArchiveError` when libarchive cannot start the stream on `fd`; nothing is
    ///   left to free then (the archive is made and, on failure, freed in `start`, before this
    ///   object exists, so `deinit` never sees it).
    init(fd: Int32, compression: BackupCompression, mtime: UInt64) throws {
        archive = try ArchiveWriter.start(fd: fd, compression: compression)
        self.mtime = Int(mtime)
    }

    private static func start(fd: Int32, compression: BackupCompression) throws -> OpaquePointer {
        guard let a = archive_write_new() else { throw ArchiveError("libarchive could not start an archive") }
        var ok = archive_write_set_format_pax_restricted(a)
        if ok == ARCHIVE_OK {
            switch compression {
            case .none: ok = archive_write_add_filter_none(a)
            case .gzip: ok = archive_write_add_filter_gzip(a)
            case .zstd: ok = archive_write_add_filter_zstd(a)
            }
        }
        // ARCHIVE_WARN from a filter means libarchive runs the external program instead.
        if ok == ARCHIVE_OK || ok == ARCHIVE_WARN {
            // No zero padding after the end of the stream: after a compressed stream it would
            // read as a damaged second frame.
            ok = archive_write_set_bytes_in_last_block(a, 1)
        }
        if ok == ARCHIVE_OK { ok = archive_write_open_fd(a, fd) }
        guard ok == ARCHIVE_OK else {
            let message = errorText(a)
            archive_write_free(a)
            throw ArchiveError(
                "could not start the \(compression.rawValue == "none" ? "" : compression.rawValue + " ")tar stream: \(message)"
            )
        }
        return a
    }

    deinit {
        if !closed { archive_write_close(archive) }
        archive_write_free(archive)
    }

    func writeEntry(name: String, bytes: [UInt8]) throws {
        guard let entry = archive_entry_new() else { throw ArchiveError("libarchive could not make an entry") }
        defer { archive_entry_free(entry) }
        archive_entry_set_pathname(entry, name)
        archive_entry_set_size(entry, la_int64_t(bytes.count))
        archive_entry_set_filetype(entry, UInt32(ArchiveFileType.regular))
        archive_entry_set_perm(entry, 0o600)
        archive_entry_set_mtime(entry, time_t(mtime), 0)
        archive_entry_set_uid(entry, 0)
        archive_entry_set_gid(entry, 0)
        guard archive_write_header(archive, entry) == ARCHIVE_OK else {
            throw ArchiveError(
                "could not write the entry \(name): \(ArchiveWriter.errorText(archive))", errno: archive_errno(archive))
        }
        var done = 0
        while done < bytes.count {
            let n = bytes[done...].withUnsafeBytes { archive_write_data(archive, $0.baseAddress, $0.count) }
            guard n > 0 else {
                throw ArchiveError(
                    "could not write the entry \(name): \(ArchiveWriter.errorText(archive))",
                    errno: archive_errno(archive))
            }
            done += n
        }
    }

    /// Writes the end-of-archive blocks and flushes the compressor.
    func finish() throws {
        closed = true
        guard archive_write_close(archive) == ARCHIVE_OK else {
            throw ArchiveError(
                "could not finish the archive: \(ArchiveWriter.errorText(archive))", errno: archive_errno(archive))
        }
    }

    /// libarchive's message, with the text of its errno when it has one ("Write error" alone
    /// would not say that the disk is full).
    static func errorText(_ a: OpaquePointer) -> String {
        var text = archive_error_string(a).map { String(cString: $0) } ?? "libarchive reported no detail"
        let e = archive_errno(a)
        if e > 0, let s = strerror(e) {
            let reason = String(cString: s)
            if !text.contains(reason) { text += ": " + reason }
        }
        return text
    }
}

/// File types of a tar entry as libarchive reports them (AE_IFMT bits).
enum ArchiveFileType {
    static let mask: UInt32 = 0o170000
    static let regular: UInt32 = 0o100000
    static let directory: UInt32 = 0o040000
    static let symlink: UInt32 = 0o120000
}

/// A failure inside libarchive: its error text, for the message.
struct ArchiveError: Error, CustomStringConvertible {
    var description: String
    /// libarchive found the stream damaged or cut short (as opposed to an I/O failure).
    var damaged: Bool
    /// The stream does not begin with a ustar header: not a backup at all (spec/BACKUP.md §2.1).
    var notAnArchive: Bool
    /// The errno of a failed write (0 when there is none), for the safe next step.
    var errno: Int32

    init(_ text: String, damaged: Bool = false, notAnArchive: Bool = false, errno: Int32 = 0) {
        description = text
        self.damaged = damaged || notAnArchive
        self.notAnArchive = notAnArchive
        self.errno = errno
    }
}
