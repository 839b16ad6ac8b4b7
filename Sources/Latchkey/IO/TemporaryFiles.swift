import LatchkeyCrypto
import LatchkeyFormat

/// Whether `name` is `prefix` followed by exactly 8 lowercase hexadecimal digits: the one form
/// the specs give temporary names (spec/FORMAT.md §2.2, §11.1, §11.5, §17.1; spec/BACKUP.md §8,
/// §9.3). Every clean-up of leftovers matches with this, so that it never removes a user's
/// file that merely begins like one (`login.keychain.index-old`, `backup.tar.tmp-notes`).
package func isTemporaryName<S: StringProtocol>(_ name: S, prefix: String) -> Bool {
    let bytes = name.utf8
    guard bytes.starts(with: prefix.utf8) else { return false }
    let suffix = bytes.dropFirst(prefix.utf8.count)
    return suffix.count == 8 && suffix.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
}

/// `prefix` followed by 8 random lowercase hexadecimal digits (`isTemporaryName`).
package func temporaryName(_ prefix: String) throws -> String {
    prefix + hexString(try Crypto.randomBytes(4))
}

/// The last component of a path (the whole path when it has no slash).
func lastPathComponent(_ path: String) -> String {
    path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? path
}

extension FileSystem {
    /// Creates a temporary file `prefix` + 8 random hex digits (O_CREAT | O_EXCL | O_NOFOLLOW,
    /// `mode`), registered with `InterruptCleanup` before it exists, and takes its flock, which
    /// the descriptor holds until it is closed: the lock is what tells
    /// `removeAbandonedTemporaryFiles` of another process that the file's writer is alive (a
    /// killed process holds no lock). Call `InterruptCleanup.unregister` with the token once
    /// the file is renamed or removed.
    package func createLockedTemporaryFile(prefix: String, mode: UInt32) throws -> (
        path: String, fd: Int32, token: InterruptCleanup.Token?
    ) {
        var attempts = 0
        while true {
            attempts += 1
            let path = try temporaryName(prefix)
            let token = InterruptCleanup.register(path, on: self)
            let fd: Int32
            do {
                fd = try openNoFollow(path, writable: true, create: true, mode: mode)
            } catch {
                InterruptCleanup.unregister(token)
                throw error
            }
            do {
                // A clean-up that took the lock between the create and ours has removed the
                // name: start again under another one.
                if try lock(fd, stillAt: path) { return (path, fd, token) }
            } catch {
                close(fd)
                try? remove(path)
                InterruptCleanup.unregister(token)
                throw error
            }
            close(fd)
            InterruptCleanup.unregister(token)
            if attempts >= 8 { throw IOFailure("open", path, EAGAIN) }
        }
    }

    /// Removes the regular files named `prefix` + 8 lowercase hex digits (`isTemporaryName`)
    /// whose flock it can take: temporary files of `createLockedTemporaryFile` whose writer
    /// died (a kill, a power cut). A live writer holds the lock, so its file stays. Best effort.
    package func removeAbandonedTemporaryFiles(prefix: String) {
        let directory = directoryOf(prefix)
        let base = lastPathComponent(prefix)
        for name in list(directory) where isTemporaryName(name, prefix: base) {
            let path = prefix.contains("/") ? (directory == "/" ? "/" : directory + "/") + name : name
            // Only a regular file is opened: opening a FIFO planted under such a name would block.
            guard (try? ownership(path: path))?.kind == .regular,
                let fd = try? openNoFollow(path, writable: false, create: false, mode: 0)
            else { continue }
            defer { close(fd) }
            guard (try? ownership(fd))?.kind == .regular, (try? tryLock(fd)) == true else { continue }
            // Still the file that was locked, not a live writer's made under the name since.
            if let here = try? identity(path: path), let ours = try? identity(fd), here == ours { try? remove(path) }
            unlock(fd)
        }
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
