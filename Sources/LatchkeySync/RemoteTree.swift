#if canImport(Glibc)
    import Glibc
#endif
import LatchkeyFormat

/// The files of a fetched remote (spec/SYNC.md §2), read defensively: only regular files
/// (never through a symlink a hostile remote could plant), each at most `maxFileSize`, and
/// only the names the layout allows.
package struct RemoteTree {
    package let root: String
    package static let maxFileSize = 64 << 20

    package init(root: String) { self.root = root }

    package static func deviceDirectory(_ device: SyncID) -> String { "devices/" + hexString(device) }
    package static func statementPath(_ author: SyncID, epoch: UInt32) -> String {
        deviceDirectory(author) + "/circle/" + TreeFiles.padded(UInt64(epoch), 8)
    }
    package static func envelopePath(_ author: SyncID, epoch: UInt32) -> String {
        deviceDirectory(author) + "/keys/" + TreeFiles.padded(UInt64(epoch), 8)
    }
    package static func applicationPath(_ device: SyncID) -> String { deviceDirectory(device) + "/application" }
    package static func segmentPath(_ device: SyncID, _ number: UInt64) -> String {
        deviceDirectory(device) + "/seg/" + TreeFiles.padded(number, 12)
    }
    package static func basePath(_ device: SyncID, chunk: UInt32) -> String {
        deviceDirectory(device) + "/base/" + TreeFiles.padded(UInt64(chunk), 8)
    }
    package static func acknowledgementPath(_ device: SyncID) -> String { deviceDirectory(device) + "/ack" }

    /// The devices that have a directory.
    package func devices() -> [SyncID] {
        list("devices").compactMap { name in
            // Exactly the form writers use (lower-case hex), so that no machine is listed twice.
            guard name.count == 32, let id = bytesFromHex(name), id.count == 16, hexString(id) == name else {
                return nil
            }
            return id
        }
    }

    /// The numbered files in `devices/<device>/<kind>`, by number.
    package func numbered(_ device: SyncID, _ kind: String) -> [UInt64: String] {
        let dir = Self.deviceDirectory(device) + "/" + kind
        var out: [UInt64: String] = [:]
        // Exactly the zero-padded names writers use: `1` and `000000000001` are not two files.
        let width = kind == "seg" ? 12 : 8
        for name in list(dir) where name.utf8.count == width && name.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            if let n = UInt64(name), n > 0 { out[n] = dir + "/" + name }
        }
        return out
    }

    /// The bytes of a regular file, or nil when it is absent, not a regular file, or too big.
    package func contents(_ path: String) -> [UInt8]? { read(path, upTo: nil) }

    /// The first `count` bytes of a regular file (fewer when it is shorter); nil as `contents`.
    package func prefix(_ path: String, count: Int) -> [UInt8]? { read(path, upTo: count) }

    /// A regular file opened without following a link: all of it (at most `maxFileSize`), or
    /// its first `upTo` bytes.
    private func read(_ path: String, upTo: Int?) -> [UInt8]? {
        let fd = open(root + "/" + path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        if upTo == nil, st.st_size > Self.maxFileSize { return nil }
        let want = upTo.map { min($0, Int(st.st_size)) } ?? Int(st.st_size)
        var out = [UInt8](repeating: 0, count: want)
        var done = 0
        while done < want {
            let n = out.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return upTo == nil ? nil : Array(out[0..<done]) }
            done += n
        }
        return out
    }

    private func list(_ path: String) -> [String] {
        var st = stat()
        guard lstat(root + "/" + path, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else { return [] }
        return TreeFiles.list(root + "/" + path)
    }
}
