/// The checks that keep other local users away from the device secret and the device state,
/// as ssh's StrictModes keeps them away from `~/.ssh` (spec/SECURITY.md, "another local user").
///
/// Whoever can replace the device secret, or write in its `.state` directory, can make this
/// user's commands overwrite a file of their choosing (a state file planted as a symlink) and
/// can reset the passcode attempt counter and the rollback memory (by deleting or replacing a
/// state file). So:
///
/// - the device secret is a regular file (never a symlink), owned by this user, with no group
///   or world permission bit (it is a secret: readable counts too);
/// - the `.state` directory is a directory (never a symlink) owned by this user and not
///   writable by group or others; each state file is a regular file owned by this user and not
///   writable by group or others;
/// - every directory from the one holding the device secret up to `/` (symlinks resolved
///   first, as ssh's `safe_path` does) belongs to this user or root and is not writable by
///   group or others, unless sticky (`/tmp`): whoever can write in any of them can rename the
///   path below it and put their own in its place. A sticky directory lets others create
///   names but not rename or remove ours; a name they made first fails the owner check.
///
/// Every file of the device is opened with O_NOFOLLOW, and the checks of a file are made on
/// the open descriptor (fstat), so a file swapped after the check is not the one used.
enum PrivateFiles {
    /// Checks every directory from the one holding `path` up to `/`.
    /// - Throws: errSecIO that names the directory and says what to fix.
    static func checkDirectories(above path: String, what: String, fs: FileSystem) throws {
        var dir = try io({ try fs.resolvedPath(directoryOf(path)) }, "check the directories above \(what) \(path)")
        let me = fs.userID
        while true {
            guard let o = try io({ try fs.ownership(path: dir) }, "check the directory \(dir)") else {
                throw KeychainError(
                    .io, "the directory \(dir) above \(what) \(path) disappeared while it was checked; try again")
            }
            guard o.owner == me || o.owner == 0 else {
                throw KeychainError(
                    .io,
                    "the directory \(dir), above \(what) \(path), belongs to uid \(o.owner), not to you (uid \(me)) or root: its owner could replace \(what); have \(dir) given to you",
                    remedy: .giveDeviceSecret)
            }
            guard !o.writableByOthers || o.sticky else {
                throw KeychainError(
                    .io,
                    "the directory \(dir), above \(what) \(path), is writable by other users (mode \(octal(o.mode))): anyone who can write there could replace \(what) or its device state; run 'chmod go-w \(dir)'",
                    remedy: .giveDeviceSecret)
            }
            if dir == "/" { return }
            dir = directoryOf(dir)
        }
    }

    /// The device secret, as its open descriptor describes it.
    static func checkSecretFile(_ o: FileOwnership, path: String, userID me: UInt32) throws {
        guard o.kind == .regular else {
            throw KeychainError(
                .io, "the device secret \(path) is not a regular file; put the device secret file itself there")
        }
        guard o.owner == me else {
            throw KeychainError(
                .io,
                "the device secret \(path) belongs to uid \(o.owner), not to you (uid \(me)); refusing it; if it is yours, give it back to yourself ('chown \(me) \(path)' as root)",
                remedy: .giveDeviceSecret)
        }
        guard o.mode & 0o077 == 0 else {
            throw KeychainError(
                .io,
                "the device secret \(path) is readable or writable by others (mode \(octal(o.mode))); run 'chmod 600 \(path)'"
            )
        }
    }

    /// The `.state` directory beside the device secret (lstat: a symlink is refused).
    static func checkStateDirectory(_ o: FileOwnership, path: String, userID me: UInt32) throws {
        guard o.kind == .directory else {
            throw KeychainError(
                .io,
                "the device state directory \(path) is not a directory (a symlink or a file is refused); remove it (latchkey makes it again, mode 700)"
            )
        }
        guard o.owner == me else {
            throw KeychainError(
                .io,
                "the device state directory \(path) belongs to uid \(o.owner), not to you (uid \(me)): its owner could reset the passcode attempt counter and the rollback check. Have it removed (as root, or by its owner); latchkey makes it again"
            )
        }
        guard !o.writableByOthers else {
            throw KeychainError(
                .io,
                "the device state directory \(path) is writable by others (mode \(octal(o.mode))); run 'chmod 700 \(path)'"
            )
        }
    }

    /// One state file, as its open descriptor describes it.
    static func checkStateFile(_ o: FileOwnership, path: String, userID me: UInt32) throws {
        guard o.kind == .regular else {
            throw KeychainError(
                .io, "the device state file \(path) is not a regular file; remove it (latchkey makes it again)")
        }
        guard o.owner == me else {
            throw KeychainError(
                .io,
                "the device state file \(path) belongs to uid \(o.owner), not to you (uid \(me)); have it removed (as root, or by its owner): latchkey makes it again"
            )
        }
        guard !o.writableByOthers else {
            throw KeychainError(
                .io,
                "the device state file \(path) is writable by others (mode \(octal(o.mode))); run 'chmod 600 \(path)'")
        }
    }

    /// Opens a file of the device without following a symlink, turning ELOOP into a message.
    /// - Throws: `IOFailure` for ENOENT (opening) and EEXIST (creating), for the caller to
    ///   handle; `KeychainError` for anything else.
    static func open(_ path: String, what: String, writable: Bool, create: Bool = false, fs: FileSystem) throws -> Int32
    {
        do {
            return try fs.openNoFollow(path, writable: writable, create: create, mode: 0o600)
        } catch let f as IOFailure where f.errno == ELOOP || f.errno == EMLINK {
            throw KeychainError(
                .io,
                "\(what) \(path) is a symbolic link; refusing to follow it (it could point at any file). Replace the link with the file itself, or remove it if you did not make it"
            )
        } catch let f as IOFailure where (f.errno == EEXIST && create) || (f.errno == ENOENT && !create) {
            throw f
        } catch {
            return try io({ throw error }, "open \(what) \(path)")
        }
    }

    static func octal(_ mode: UInt32) -> String { String(mode, radix: 8) }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
