#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Testing

/// `latchkey backup --output-dir DIR --keep N` (issue 31, part 8), what the daily backup timer
/// runs: a new name per backup, printed on stdout; then the oldest backups of the same keychain
/// removed until N remain, the new one always among them, and nothing else ever touched.
@Suite struct BackupRotationTests {
    static func sandbox() throws -> CLISandbox {
        let sb = try CLISandbox()
        sb.environment["LATCHKEY_BACKUP_PASSWORD"] = "backup password"
        sb.environment["LATCHKEY_AGENT_SOCK"] = "none"
        try sb.initKeychain()
        try sb.add(account: "alice", data: Array("s3cret".utf8))
        return sb
    }

    /// `<stem>-YYYYMMDDTHHMMSS.mmmZ.backup`
    static func isRotationName(_ name: String, stem: String = "login") -> Bool {
        guard name.hasPrefix(stem + "-"), name.hasSuffix(".backup") else { return false }
        let middle = Array(name.dropFirst(stem.count + 1).dropLast(".backup".count))
        let shape = Array("99999999T999999.999Z")
        return middle.count == shape.count
            && zip(middle, shape).allSatisfy { c, s in s == "9" ? c.isASCII && c.isNumber : c == s }
    }

    static func names(_ dir: String) throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: dir))
    }

    static func mode(_ path: String) -> mode_t {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_mode & 0o7777 : 0
    }

    @Test func outputDir_makesTheDirectory_writesANewName_andPrintsItsPath() throws {
        let sb = try Self.sandbox()
        let dir = sb.directory.appendingPathComponent("backups/daily").path
        let r = try sb.run(["backup", "--output-dir", dir, "--kdf-log-n", "10"])
        #expect(r.status == 0, "\(r.stderr)")
        let printed = r.out.trimmingCharacters(in: .newlines)
        #expect(r.out == printed + "\n", "one line on stdout: \(r.out)")
        #expect(printed.hasPrefix(dir + "/") && Self.isRotationName(URL(fileURLWithPath: printed).lastPathComponent))
        #expect(try Self.names(dir) == [URL(fileURLWithPath: printed).lastPathComponent], "the backup alone")
        #expect(Self.mode(dir) == 0o700 && Self.mode(printed) == 0o600)
        let check = try sb.run(["backup-verify", printed])
        #expect(check.status == 0, "\(check.stderr)")

        // A second one gets a name of its own; without --keep both stay.
        let again = try sb.run(["backup", "--output-dir", dir, "--kdf-log-n", "10"])
        #expect(again.status == 0 && again.out != r.out, "\(again.stderr)")
        #expect(try Self.names(dir).count == 2)
    }

    @Test func keep_removesTheOldestOfItsOwnBackups_andNothingElse() throws {
        let sb = try Self.sandbox()
        let dir = sb.directory.appendingPathComponent("backups").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let seed = sb.directory.appendingPathComponent("seed.backup").path
        #expect(try sb.run(["backup", "--output", seed, "--kdf-log-n", "10"]).status == 0)
        let backup = try Data(contentsOf: URL(fileURLWithPath: seed))
        let older = (1...4).map { "login-2020010\($0)T000000.000Z.backup" }
        for name in older { try backup.write(to: URL(fileURLWithPath: dir + "/" + name)) }
        // Named otherwise, another keychain's, a symlink or a directory under a backup's name:
        // none of them is a backup this command made of this keychain.
        let outside = try sb.writeFile("precious", Array("keep me".utf8))
        let foreign = [
            "notes.txt", "login-20190101T000000.000Z.backup.orig", "work-20190101T000000.000Z.backup",
            "login-2019.backup", "login-20190101T000000Z.backup", "Login-20190101T000000.000Z.backup"
        ]
        for name in foreign { try backup.write(to: URL(fileURLWithPath: dir + "/" + name)) }
        let link = "login-20190102T000000.000Z.backup", directory = "login-20190103T000000.000Z.backup"
        #expect(symlink(outside, dir + "/" + link) == 0)
        #expect(mkdir(dir + "/" + directory, 0o700) == 0)
        let before = try Self.names(dir)

        let r = try sb.run(["backup", "--output-dir", dir, "--keep", "3", "--kdf-log-n", "10"])
        #expect(r.status == 0, "\(r.stderr)")
        let new = URL(fileURLWithPath: r.out.trimmingCharacters(in: .newlines)).lastPathComponent
        #expect(
            try Self.names(dir) == before.subtracting(older.prefix(2)).union([new]),
            "the new backup and the two newest older ones stay; of the rest only its own oldest go")
        #expect(r.stderr.contains("removed 2 older backup(s)"), "\(r.stderr)")
        #expect(
            try String(contentsOfFile: outside, encoding: .utf8) == "keep me", "a symlink's target is never touched")

        // Run again with --keep 1: only the new backup of this keychain stays.
        let last = try sb.run(["backup", "--output-dir", dir, "--keep", "1", "--kdf-log-n", "10"])
        #expect(last.status == 0, "\(last.stderr)")
        let newest = URL(fileURLWithPath: last.out.trimmingCharacters(in: .newlines)).lastPathComponent
        #expect(try Self.names(dir) == Set(foreign + [link, directory, newest]))
    }

    /// The backup just written is never removed, even when another one's name says it is newer
    /// (a clock that was ahead).
    @Test func keep_neverRemovesTheNewBackup() throws {
        let sb = try Self.sandbox()
        let dir = sb.directory.appendingPathComponent("backups").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let future = "login-29991231T235959.999Z.backup"
        try Data("not really a backup".utf8).write(to: URL(fileURLWithPath: dir + "/" + future))
        let r = try sb.run(["backup", "--output-dir", dir, "--keep", "2", "--kdf-log-n", "10"])
        #expect(r.status == 0, "\(r.stderr)")
        let new = URL(fileURLWithPath: r.out.trimmingCharacters(in: .newlines)).lastPathComponent
        #expect(try Self.names(dir) == [future, new], "two to keep: both stay")
        let once = try sb.run(["backup", "--output-dir", dir, "--keep", "1", "--kdf-log-n", "10"])
        let newer = URL(fileURLWithPath: once.out.trimmingCharacters(in: .newlines)).lastPathComponent
        #expect(once.status == 0, "\(once.stderr)")
        #expect(try Self.names(dir) == [newer], "one to keep: the new one, not the one named later")
    }

    /// A backup that fails removes nothing: here the keychain is locked (no passcode, no agent,
    /// no terminal), as when the timer fires before `latchkey unlock`.
    @Test func aFailedBackup_removesNothing() throws {
        let sb = try Self.sandbox()
        let dir = sb.directory.appendingPathComponent("backups").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        for day in 1...3 {
            try Data("old".utf8).write(to: URL(fileURLWithPath: dir + "/login-2020010\(day)T000000.000Z.backup"))
        }
        let before = try Self.names(dir)
        let r = try sb.run(
            ["backup", "--output-dir", dir, "--keep", "1", "--kdf-log-n", "10"], env: ["LATCHKEY_PASSCODE": nil])
        #expect(r.status == 4, "locked: \(r.status) \(r.stderr)")
        #expect(r.out.isEmpty)
        #expect(try Self.names(dir) == before, "nothing removed, nothing left behind")
    }

    /// What a killed backup into the directory left (its temporary file, no longer locked) goes
    /// with the next --keep; other temporary-looking files stay.
    @Test func keep_removesWhatKilledBackupsLeft() throws {
        let sb = try Self.sandbox()
        let dir = sb.directory.appendingPathComponent("backups").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let abandoned = "login-20200101T000000.000Z.backup.tmp-0123abcd"
        let others = ["notes.tmp-0123abcd", "work-20200101T000000.000Z.backup.tmp-0123abcd"]
        for name in [abandoned] + others { try Data("partial".utf8).write(to: URL(fileURLWithPath: dir + "/" + name)) }
        let r = try sb.run(["backup", "--output-dir", dir, "--keep", "5", "--kdf-log-n", "10"])
        #expect(r.status == 0, "\(r.stderr)")
        let names = try Self.names(dir)
        #expect(!names.contains(abandoned) && names.isSuperset(of: others), "\(names)")
    }

    /// Each mistake is named, with what to give instead; nothing is written.
    @Test(arguments: [
        (["--keep", "2", "--output", "x.backup"], "give --output-dir DIR"),
        (["--keep", "0", "--output-dir", "d"], "give --keep 1 or more"),
        (["--keep=-1", "--output-dir", "d"], "give --keep 1 or more"),
        (["--output", "x.backup", "--output-dir", "d"], "contradict each other"),
        ([], "--output FILE, --output - or --output-dir DIR")
    ])
    func usageErrors_sayWhatToGive_andWriteNothing(_ arguments: [String], _ advice: String) throws {
        let sb = try Self.sandbox()
        let r = try sb.run(["backup"] + arguments + ["--kdf-log-n", "10"])
        #expect(r.status == 2, "\(arguments): \(r.status) \(r.stderr)")
        #expect(r.stderr.contains(advice), "\(arguments): \(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: sb.directory.appendingPathComponent("d").path))
        #expect(!FileManager.default.fileExists(atPath: sb.directory.appendingPathComponent("x.backup").path))
    }
}
