#if canImport(Glibc)
    import Glibc
#endif
import Latchkey

/// Backups into a directory under names of their own, and the removal of the oldest of them:
/// `latchkey backup --output-dir DIR --keep N`, which the daily backup timer runs
/// (dist/systemd/latchkey-backup.service).
///
/// A backup of the keychain `login.keychain` is named `login-20261207T030012.345Z.backup`: the
/// keychain's file name without its extension, and the UTC time it was started, to the
/// millisecond, so names sort by time. Removal considers only the files of `directory` that
/// carry such a name for the same keychain, are regular files (not symbolic links) and belong
/// to this user: every other file is left alone, whatever it holds.
package enum BackupRotation {
    /// `login` for `/home/me/.local/share/latchkey/login.keychain`: the last path component
    /// without its extension (the whole component when that would leave nothing).
    package static func stem(ofKeychain path: String) -> String {
        let name = path.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? "keychain"
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name }
        return String(name[..<dot])
    }

    /// The name of a backup of `stem` started at `seconds` (since the epoch, UTC) and
    /// `milliseconds`: `<stem>-YYYYMMDDTHHMMSS.mmmZ.backup`.
    package static func name(stem: String, seconds: Int, milliseconds: Int) -> String {
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        func digits(_ value: Int32, _ width: Int) -> String {
            let s = String(value)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        let stamp =
            digits(parts.tm_year + 1900, 4) + digits(parts.tm_mon + 1, 2) + digits(parts.tm_mday, 2) + "T"
            + digits(parts.tm_hour, 2) + digits(parts.tm_min, 2) + digits(parts.tm_sec, 2) + "."
            + digits(Int32(milliseconds), 3) + "Z"
        return "\(stem)-\(stamp).backup"
    }

    /// The time part of `name` (`20261207T030012.345Z`, which sorts as the time does) when
    /// `name` is what `name(stem:seconds:milliseconds:)` makes for `stem`; nil otherwise.
    package static func timePart(of name: String, stem: String) -> String? {
        let prefix = stem + "-", suffix = ".backup"
        guard name.hasPrefix(prefix), name.hasSuffix(suffix) else { return nil }
        let middle = Array(name.utf8.dropFirst(prefix.utf8.count).dropLast(suffix.utf8.count))
        // YYYYMMDD T HHMMSS . mmm Z
        let shape = Array("99999999T999999.999Z".utf8)
        guard middle.count == shape.count else { return nil }
        for (c, s) in zip(middle, shape) {
            if s == UInt8(ascii: "9") {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) else { return nil }
            } else if c != s {
                return nil
            }
        }
        return String(decoding: middle, as: UTF8.self)
    }

    /// Writes a backup of `keychain` into `directory` (made, 0700, with its missing parents,
    /// when absent) under a new name for `stem` and the time now; never replaces a file.
    /// - Returns: the backup's path and what it holds.
    /// - Throws: as `BackupArchive.write(_:toFile:options:)`; errSecIO when the directory cannot
    ///   be made or a file already has the name.
    package static func write(
        _ keychain: Keychain, intoDirectory directory: String, stem: String, options: BackupOptions,
        fs: FileSystem = PosixFileSystem.shared
    ) throws -> (path: String, summary: BackupSummary) {
        try BackupArchive.fsCall({ try fs.makeDirectory(directory, mode: 0o700) }, "make the directory \(directory)")
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let name = Self.name(stem: stem, seconds: Int(now.tv_sec), milliseconds: Int(now.tv_nsec / 1_000_000))
        let path = (directory.hasSuffix("/") ? directory : directory + "/") + name
        let summary = try BackupArchive.write(keychain, toFile: path, options: options, fs: fs, replacing: false)
        return (path, summary)
    }

    /// What `prune` removed, and what it could not remove.
    package struct Pruned: Sendable, Equatable {
        /// Paths removed, oldest first.
        package var removed: [String] = []
        /// Paths it meant to remove, each with the reason it could not.
        package var failed: [(path: String, reason: String)] = []

        package static func == (a: Pruned, b: Pruned) -> Bool {
            a.removed == b.removed && a.failed.map(\.path) == b.failed.map(\.path)
        }
    }

    /// Removes the oldest backups of `stem` in `directory` until `keep` remain, `newest` (the
    /// backup just written, a name in `directory`) always among them; then what killed backups
    /// into the directory left (their locked temporary files, `<name>.tmp-…`, once no live
    /// writer holds them). Only regular files of this user named as `name(stem:…)` names
    /// them count; nothing else is touched.
    /// - Precondition: `keep` ≥ 1.
    package static func prune(
        directory: String, stem: String, keep: Int, newest: String, fs: FileSystem = PosixFileSystem.shared
    ) -> Pruned {
        precondition(keep >= 1)
        let base = directory.hasSuffix("/") ? directory : directory + "/"
        var ours: [(time: String, name: String)] = []
        var temporaryPrefixes: [String] = []
        for name in fs.list(directory) where name != newest {
            if let time = timePart(of: name, stem: stem) {
                guard let found = try? fs.ownership(path: base + name), found.kind == .regular,
                    found.owner == fs.userID
                else { continue }
                ours.append((time, name))
            } else if let tmp = name.firstRange(of: ".backup.tmp-") {
                let backupName = String(name[..<tmp.lowerBound]) + ".backup"
                if timePart(of: backupName, stem: stem) != nil { temporaryPrefixes.append(base + backupName + ".tmp-") }
            }
        }
        ours.sort { $0.time > $1.time || ($0.time == $1.time && $0.name > $1.name) }
        var result = Pruned()
        for old in ours.dropFirst(keep - 1).reversed() {
            let path = base + old.name
            do {
                try fs.remove(path)
                result.removed.append(path)
            } catch let f as IOFailure {
                result.failed.append((path, BackupArchive.errnoDescription(f.errno)))
            } catch {
                result.failed.append((path, "\(error)"))
            }
        }
        for prefix in Set(temporaryPrefixes) { fs.removeAbandonedTemporaryFiles(prefix: prefix) }
        if !result.removed.isEmpty { try? fs.syncDirectory(directory) }
        return result
    }
}
