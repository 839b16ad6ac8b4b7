/// Proof that this process holds the exclusive `flock` of the open keychain file, the lock
/// every writer takes (spec/FORMAT.md §10.1). What may only run under it (cutting off a torn
/// tail, writing an index, removing the temporary files of index writes) takes one as an
/// argument, and only `KeychainStore.lockExclusively` makes one, for the length of its body.
struct ExclusiveLock {
    fileprivate init() {}
}

extension KeychainStore {
    /// Takes the exclusive lock of the open file, runs `body` with its proof, then releases it.
    ///
    /// With `followingThePath`, the lock is kept only once the path still names the open file:
    /// when a compaction elsewhere has renamed a new file into place, that file is opened and
    /// locked instead, and its directory is synced before the first append (§11.4).
    /// - Throws: errSecIO; what `body` throws.
    func lockExclusively<T>(followingThePath: Bool, _ body: (ExclusiveLock) throws -> T) throws -> T {
        if followingThePath {
            while try !io({ try fs.lock(fd, stillAt: path) }, "lock the keychain") {
                try reopen()
                directoryUnsynced = true
            }
        } else {
            try io({ try fs.lock(fd) }, "lock the keychain")
        }
        defer { fs.unlock(fd) }
        return try body(ExclusiveLock())
    }
}
