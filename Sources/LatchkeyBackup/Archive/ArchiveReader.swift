import CArchive
#if canImport(Glibc)
import Glibc
#endif

/// Reads a tar stream (plain, gzip or zstd; pax, ustar or GNU tar headers) from a file
/// descriptor through libarchive. It never extracts anything: entries are handed over as
/// headers and bytes, and the backup reader decides what they may be.
final class ArchiveReader {
    /// What a tar header says about an entry.
    struct Header {
        /// nil when libarchive could not decode the name.
        var name: String?
        var size: Int64
        var fileType: UInt32
        var isHardLink: Bool
        var isSymlink: Bool
        var sizeKnown: Bool
    }

    private let archive: OpaquePointer

    init(fd: Int32) throws {
        guard let a = archive_read_new() else { throw ArchiveError("libarchive could not start a reader") }
        archive = a
        archive_read_support_filter_gzip(a)
        archive_read_support_filter_zstd(a)
        archive_read_support_format_tar(a)
        guard archive_read_open_fd(a, fd, 64 << 10) == ARCHIVE_OK else {
            throw ArchiveError("not a tar archive (\(ArchiveWriter.errorText(a)))", damaged: true)
        }
    }

    deinit {
        archive_read_close(archive)
        archive_read_free(archive)
    }

    /// The next entry's header, or nil at the end of the archive.
    func next() throws -> Header? {
        var entry: OpaquePointer?
        let r = archive_read_next_header(archive, &entry)
        if r == ARCHIVE_EOF { return nil }
        guard r == ARCHIVE_OK, let e = entry else {
            throw ArchiveError(ArchiveWriter.errorText(archive), damaged: true)
        }
        let name = archive_entry_pathname(e).map { String(cString: $0) }
        return Header(name: name, size: archive_entry_size(e), fileType: UInt32(archive_entry_filetype(e)) & ArchiveFileType.mask,
                      isHardLink: archive_entry_hardlink(e) != nil, isSymlink: archive_entry_symlink(e) != nil,
                      sizeKnown: archive_entry_size_is_set(e) != 0)
    }

    /// Reads the current entry's data, exactly `count` bytes (its size, already checked
    /// against the format's limits).
    func readData(count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var done = 0
        try out.withUnsafeMutableBytes { buf in
            while done < count {
                let n = archive_read_data(archive, buf.baseAddress! + done, count - done)
                if n < 0 { throw ArchiveError(ArchiveWriter.errorText(archive), damaged: true) }
                if n == 0 { break }
                done += n
            }
        }
        guard done == count else { throw ArchiveError("the archive ends inside an entry (truncated)", damaged: true) }
        return out
    }
}
