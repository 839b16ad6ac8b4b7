import Foundation
import Testing

/// `latchkey backup` and `latchkey restore` as a script sees them: stdout, stderr, exit status
/// (docs/CLI.md), running the built binary.
@Suite struct CommandTests {
    static let binary: URL? = {
        var dirs = [URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()]
        if let arg0 = CommandLine.arguments.first {
            dirs.append(URL(fileURLWithPath: arg0).resolvingSymlinksInPath().deletingLastPathComponent())
        }
        return dirs.map { $0.appendingPathComponent("latchkey") }.first {
            FileManager.default.isExecutableFile(atPath: $0.path)
        }
    }()
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("fixtures/backup")

    struct Result {
        var status: Int32
        var stdout: [UInt8]
        var stderr: String
        var out: String { String(decoding: stdout, as: UTF8.self) }
    }

    let dir: String
    var env: [String: String]

    init() throws {
        dir =
            FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-backup-cli-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        env = [
            "PATH": "/usr/bin:/bin", "HOME": dir, "LATCHKEY_KEYCHAIN": dir + "/login.keychain",
            "LATCHKEY_DEVICE": dir + "/device.secret", "LATCHKEY_PASSCODE": "correct horse",
            "LATCHKEY_BACKUP_PASSWORD": "backup pw",
            // The default agent socket inside the sandbox: an agent the user runs is never reached.
            "XDG_RUNTIME_DIR": dir
        ]
    }

    func run(_ args: [String], stdin: [UInt8] = [], env extra: [String: String?] = [:]) throws -> Result {
        let p = Process()
        p.executableURL = try #require(Self.binary, "build the latchkey binary with the tests")
        p.arguments = args
        var e = env
        for (k, v) in extra { e[k] = v }
        p.environment = e
        let input = dir + "/stdin-\(UUID().uuidString)"
        try Data(stdin).write(to: URL(fileURLWithPath: input))
        p.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: input))
        let out = dir + "/stdout-\(UUID().uuidString)", err = dir + "/stderr-\(UUID().uuidString)"
        FileManager.default.createFile(atPath: out, contents: nil)
        FileManager.default.createFile(atPath: err, contents: nil)
        p.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        p.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        try p.run()
        p.waitUntilExit()
        return Result(
            status: p.terminationStatus, stdout: [UInt8](try Data(contentsOf: URL(fileURLWithPath: out))),
            stderr: try String(contentsOf: URL(fileURLWithPath: err), encoding: .utf8))
    }

    func populated() throws {
        #expect(try run(["init", "--kdf-log-n", "10"]).status == 0)
        #expect(try run(["add", "--account", "a", "--service", "s"], stdin: Array("s1".utf8)).status == 0)
        #expect(try run(["add", "--account", "b", "--accessible", "cku"], stdin: Array("s2".utf8)).status == 0)
        #expect(try run(["add", "--account", "c", "--accessible", "akpu"], stdin: Array("s3".utf8)).status == 0)
    }

    @Test(.enabled(if: binary != nil))
    func backupToStdout_restoreFromStdin_roundTrips() throws {
        try populated()
        let backup = try run(["backup", "--output", "-", "--compress", "zstd", "--kdf-log-n", "10"])
        #expect(backup.status == 0, "\(backup.stderr)")
        // No progress on a stderr that is not a terminal; only the warning that the test's cheap
        // scrypt cost (issue 13 §5) is below the default.
        #expect(
            backup.stderr
                == "latchkey: warning: the backup password is protected with scrypt N=2^10, 128× cheaper to guess offline than the default N=2^17\n",
            "\(backup.stderr)")
        #expect(Array(backup.stdout.prefix(4)) == [0x28, 0xB5, 0x2F, 0xFD])
        let restored = try run(
            ["restore", "-", "--json", "--keychain-kdf-log-n", "10"], stdin: backup.stdout,
            env: ["LATCHKEY_KEYCHAIN": dir + "/restored.keychain"])
        #expect(restored.status == 0, "\(restored.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(restored.stdout)) as? [String: Any])
        #expect(json["restored"] as? Int == 2)
        #expect(json["restoredByProtection"] as? [String: Int] == ["ak": 1, "cku": 1])
        #expect((json["backup"] as? [String: Any])?["notExported"] as? Int == 1)
        let found = try run(["find", "--account", "b"], env: ["LATCHKEY_KEYCHAIN": dir + "/restored.keychain"])
        #expect(found.out == "s2")
    }

    @Test(.enabled(if: binary != nil))
    func exitStatuses_followTheContract() throws {
        try populated()
        let archive = dir + "/kc.backup"
        #expect(try run(["backup", "--output", archive, "--kdf-log-n", "10"]).status == 0)
        let keychain = dir + "/login.keychain"
        let before = try Data(contentsOf: URL(fileURLWithPath: keychain))

        let wrong = try run(["restore", archive, "--merge"], env: ["LATCHKEY_BACKUP_PASSWORD": "nope"])
        #expect(wrong.status == 4)
        #expect(
            wrong.stderr.contains("wrong backup password") && wrong.stderr.contains("errSecAuthFailed -25293"),
            "\(wrong.stderr)")

        let exists = try run(["restore", archive])
        #expect(exists.status == 7)
        #expect(exists.stderr.contains("--merge"))

        let noPassword = try run(["backup", "--output", dir + "/x.backup"], env: ["LATCHKEY_BACKUP_PASSWORD": nil])
        #expect(noPassword.status == 2, "\(noPassword.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/x.backup"))

        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: archive)))
        bytes[512 + 200] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: dir + "/damaged.backup"))
        let damaged = try run(["restore", dir + "/damaged.backup", "--merge"])
        #expect(damaged.status == 5, "\(damaged.stderr)")
        #expect(damaged.stderr.contains("errSecDecode -26275"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: keychain)) == before)

        let dry = try run(["restore", archive, "--merge", "--dry-run"])
        #expect(dry.status == 0)
        #expect(dry.out.contains("nothing was written"), "\(dry.out)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: keychain)) == before)
    }

    /// Every negative fixture through the CLI: exit 4 or 5, and the keychain untouched.
    @Test(.enabled(if: binary != nil))
    func negativeFixtures_exitWithTheirStatus_andLeaveTheKeychainAlone() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.fixtures.path).sorted()
        var checked = 0
        for name in names {
            let fixture = Self.fixtures.appendingPathComponent(name)
            guard let header = try? String(contentsOf: fixture.appendingPathComponent("FIXTURE.txt"), encoding: .utf8),
                let expect = header.split(separator: "\n").first(where: { $0.hasPrefix("expect: ") })?.dropFirst(8),
                expect != "success"
            else { continue }
            let work = dir + "/" + name
            try FileManager.default.copyItem(atPath: fixture.path, toPath: work)
            try FileManager.default.setAttributes(
                [.posixPermissions: 0o600], ofItemAtPath: work + "/source-device.secret")
            let e: [String: String?] = [
                "LATCHKEY_DEVICE": work + "/source-device.secret", "LATCHKEY_KEYCHAIN": work + "/kc",
                "LATCHKEY_BACKUP_PASSWORD": nil, "LATCHKEY_PASSCODE": nil
            ]
            #expect(try run(["init", "--no-passcode"], env: e).status == 0)
            let before = try Data(contentsOf: URL(fileURLWithPath: work + "/kc"))
            let r = try run(
                ["restore", work + "/backup.tar", "--merge", "--password-file", work + "/password.txt"], env: e)
            #expect(r.status == (expect == "authentication-error" ? 4 : 5), "\(name): \(r.stderr)")
            #expect(r.stderr.hasPrefix("latchkey: ") && r.stdout.isEmpty, "\(name)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: work + "/kc")) == before, "\(name)")
            checked += 1
        }
        #expect(checked >= 16)
    }
}
