import CArchive
#if canImport(Glibc)
    import Glibc
#endif

/// Reads a backup's tar stream (plain, gzip or zstd) from a file descriptor through libarchive,
/// and holds it to the tar subset of spec/BACKUP.md §2.1. It never extracts anything: entries
/// are handed over as headers and bytes, and the backup reader decides what they may be.
///
/// Two libarchive readers share the work. The first only decompresses (the raw format, with
/// the gzip and zstd filters); every decompressed byte then passes through `TarSubset`, which
/// checks the blocks itself, before it reaches the second, libarchive's tar reader, which
/// reads the entries. So libarchive stays the tar reader, and the rules it is lenient about
/// (extension headers, the end-of-archive marker, padding, bytes after the stream) are
/// enforced on exactly the bytes it reads. The entries both find are compared.
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
        /// The modification time its header gives (the tar subset check's reading).
        var mtime: Int64 = 0
    }

    private static let chunkSize = 64 << 10

    /// Decompresses (raw format: the whole stream as one entry).
    private let decompressor: OpaquePointer
    /// Reads the tar entries from what `supply` hands it.
    private let archive: OpaquePointer
    private let chunk: UnsafeMutableRawPointer
    /// Decompressed bytes in `chunk` not yet checked and handed on: [chunkStart..chunkEnd).
    private var chunkStart = 0
    private var chunkEnd = 0
    /// Size of the (possibly compressed) source, to find bytes after a compressed stream.
    private let streamSize: Int64
    private var subset = TarSubset()
    private var failure: ArchiveError?
    private var decompressedEnd = false
    private var headersRead = 0
    private var tarOpen = false

    init(fd: Int32) throws {
        var st = stat()
        streamSize = fstat(fd, &st) == 0 ? Int64(st.st_size) : -1
        // An empty file is no archive at all (libarchive calls it a damaged stream).
        if streamSize == 0 { throw ArchiveError("it is empty", notAnArchive: true) }
        chunk = UnsafeMutableRawPointer.allocate(byteCount: ArchiveReader.chunkSize, alignment: 16)
        guard let d = archive_read_new() else {
            chunk.deallocate()
            throw ArchiveError("libarchive could not start a reader")
        }
        decompressor = d
        archive_read_support_filter_gzip(d)
        archive_read_support_filter_zstd(d)
        archive_read_support_format_raw(d)
        guard let a = archive_read_new() else {
            archive_read_free(d)
            chunk.deallocate()
            throw ArchiveError("libarchive could not start a reader")
        }
        archive = a
        archive_read_support_format_tar(a)

        guard archive_read_open_fd(d, fd, 64 << 10) == ARCHIVE_OK else {
            throw ArchiveError("its compressed stream is damaged (\(ArchiveWriter.errorText(d)))", damaged: true)
        }
        var entry: OpaquePointer?
        let r = archive_read_next_header(d, &entry)
        if r == ARCHIVE_EOF {
            decompressedEnd = true
        } else if r != ARCHIVE_OK {
            throw ArchiveError("its compressed stream is damaged (\(ArchiveWriter.errorText(d)))", damaged: true)
        }
        let opened = archive_read_open(
            a, Unmanaged.passUnretained(self).toOpaque(), nil,
            { _, context, buffer in
                Unmanaged<ArchiveReader>.fromOpaque(context!).takeUnretainedValue().supply(buffer!)
            }, nil)
        guard opened == ARCHIVE_OK else {
            if let failure { throw failure }
            if subset.position == 0 { throw ArchiveError("it is empty", notAnArchive: true) }
            // §2.1 (a): no complete first block, so no ustar header to identify it by.
            if subset.position < Int64(TarSubset.block) {
                throw ArchiveError(
                    "it is \(subset.position) bytes long, shorter than the 512-byte block that a tar archive begins with",
                    notAnArchive: true)
            }
            throw ArchiveError("it is not a tar archive (\(ArchiveWriter.errorText(a)))", notAnArchive: true)
        }
        tarOpen = true
    }

    deinit {
        if tarOpen { archive_read_close(archive) }
        archive_read_free(archive)
        archive_read_close(decompressor)
        archive_read_free(decompressor)
        chunk.deallocate()
    }

    /// The tar reader's read callback: the next decompressed bytes, checked by `TarSubset`, up
    /// to the next boundary of the tar structure.
    private func supply(_ buffer: UnsafeMutablePointer<UnsafeRawPointer?>) -> la_ssize_t {
        if failure != nil { return -1 }
        guard let piece = next(limit: subset.bytesToBoundary) else { return -1 }
        buffer.pointee = UnsafeRawPointer(piece.baseAddress)
        return la_ssize_t(piece.count)
    }

    /// At most `limit` further bytes of the decompressed stream, checked by `TarSubset`; empty
    /// at its end, nil after a failure (kept in `failure`).
    private func next(limit: Int) -> UnsafeRawBufferPointer? {
        if chunkStart == chunkEnd {
            if decompressedEnd { return UnsafeRawBufferPointer(start: chunk, count: 0) }
            let n = archive_read_data(decompressor, chunk, ArchiveReader.chunkSize)
            if n < 0 {
                failure = ArchiveError(
                    "its \(compression) stream is damaged (\(ArchiveWriter.errorText(decompressor)))", damaged: true)
                return nil
            }
            chunkStart = 0
            chunkEnd = n
            if n == 0 {
                decompressedEnd = true
                return UnsafeRawBufferPointer(start: chunk, count: 0)
            }
        }
        let piece = UnsafeRawBufferPointer(start: chunk + chunkStart, count: min(limit, chunkEnd - chunkStart))
        do {
            try subset.consume(piece)
        } catch {
            failure = ArchiveReader.archiveError(error)
            return nil
        }
        chunkStart += piece.count
        return piece
    }

    private var compression: String {
        archive_filter_count(decompressor) > 1 ? String(cString: archive_filter_name(decompressor, 0)) : "tar"
    }

    private static func archiveError(_ error: Error) -> ArchiveError {
        switch error as? TarSubset.Problem {
        case .notUstar(let why): return ArchiveError(why, notAnArchive: true)
        case .damaged(let why): return ArchiveError(why, damaged: true)
        case nil: return ArchiveError(String(describing: error), damaged: true)
        }
    }

    /// The next entry's header, or nil at the end of the archive.
    func next() throws -> Header? {
        var entry: OpaquePointer?
        let r = archive_read_next_header(archive, &entry)
        if let failure { throw failure }
        if r == ARCHIVE_EOF { return nil }
        guard r == ARCHIVE_OK, let e = entry else {
            if decompressedEnd { try finishSubset() }
            throw ArchiveError(ArchiveWriter.errorText(archive), damaged: true)
        }
        let name = archive_entry_pathname(e).map { String(cString: $0) }
        var header = Header(
            name: name, size: archive_entry_size(e), fileType: UInt32(archive_entry_filetype(e)) & ArchiveFileType.mask,
            isHardLink: archive_entry_hardlink(e) != nil, isSymlink: archive_entry_symlink(e) != nil,
            sizeKnown: archive_entry_size_is_set(e) != 0)
        // libarchive and the subset check read the same blocks: they must find the same entry.
        guard headersRead < subset.entries.count, subset.entries[headersRead].name == name,
            subset.entries[headersRead].size == header.size
        else {
            throw ArchiveError(
                "libarchive and the tar subset check disagree about entry \(headersRead + 1) (\(name ?? "unnamed"))",
                damaged: true)
        }
        header.mtime = subset.entries[headersRead].mtime
        headersRead += 1
        return header
    }

    /// Reads the current entry's data, exactly `count` bytes (its size, already checked
    /// against the format's limits).
    func readData(count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var done = 0
        try out.withUnsafeMutableBytes { buf in
            while done < count {
                let n = archive_read_data(archive, buf.baseAddress! + done, count - done)
                if let failure { throw failure }
                if n < 0 { throw ArchiveError(ArchiveWriter.errorText(archive), damaged: true) }
                if n == 0 { break }
                done += n
            }
        }
        guard done == count else { throw ArchiveError("the archive ends inside an entry (truncated)", damaged: true) }
        return out
    }

    /// Called once `next()` has returned nil: reads the rest of the stream through the subset
    /// check (only zero blocks may follow the last entry, two at least), then checks that the
    /// decompressor used every byte of the file (nothing may follow a gzip or zstd stream).
    func finish() throws {
        while true {
            guard let piece = next(limit: Int.max) else { throw failure! }
            if piece.isEmpty { break }
        }
        try finishSubset()
        let used = archive_filter_bytes(decompressor, -1)
        if streamSize >= 0, used < streamSize {
            throw ArchiveError("\(streamSize - used) bytes follow the end of its \(compression) stream", damaged: true)
        }
    }

    private func finishSubset() throws {
        do {
            try subset.finish()
        } catch {
            throw ArchiveReader.archiveError(error)
        }
    }
}
