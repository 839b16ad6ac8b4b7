import CLatchkeyCrypto

/// System calls that Swift cannot make itself (here because CLatchkeyCrypto is the package's
/// one C target; they have nothing to do with cryptography).
package enum SystemCalls {
    /// renameat2(2) with RENAME_NOREPLACE, made through syscall(2): Swift's Glibc module does
    /// not declare renameat2, and a statically linked program cannot look it up with dlsym.
    /// - Returns: 0, or the errno of the failure (EINVAL or ENOSYS: the file system or the
    ///   kernel cannot refuse a replacing rename).
    package static func renameNoReplace(_ from: String, _ to: String) -> Int32 {
        lk_rename_noreplace(from, to)
    }
}
