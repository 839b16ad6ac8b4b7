import Foundation
import Testing

/// `import`, `dump`, `verify`, `backup`, `restore`, `backup-verify` and `backup-list` stream (issue 16 §3): none holds every
/// item at once. Each is run as its own process on more item bytes than the bound, and its
/// peak resident set size (wait4's ru_maxrss of that process alone) must stay below the bound:
/// a command that held the items, or the whole input or output, would pass it whatever the
/// machine. Sizes, not times: nothing here depends on the machine's speed.
@Suite struct BoundedMemoryTests {
    static let mib = 1 << 20

    /// Under a sanitizer (`make test-asan` and `make test-tsan` set LATCHKEY_SANITIZER) a
    /// process's peak is mostly the sanitizer's own memory (TSan's shadow of every byte, ASan's
    /// quarantine of freed blocks): the commands run and their results are checked, the bounds
    /// only where they measure Latchkey (`make test`).
    static let boundsApply = ProcessInfo.processInfo.environment["LATCHKEY_SANITIZER"] == nil

    /// Runs `latchkey args…` in `sandbox`; returns its exit status, stderr and peak RSS.
    static func peak(_ sandbox: CLISandbox, _ args: [String]) throws -> (status: Int32, stderr: String, peak: Int) {
        var env = sandbox.environment
        env["LATCHKEY_PASSCODE"] = nil
        env["LATCHKEY_AGENT_SOCK"] = "none"
        let p = try Spawned(args, environment: env, in: sandbox.directory)
        let (end, peak) = p.waitWithPeakRSS()
        guard case .exited(let status) = end else {
            throw CLITestError("latchkey \(args.joined(separator: " ")) was killed: \(end)")
        }
        return (status, p.stderr, peak)
    }

    /// 32 items of 4 MiB each (176 MiB of JSON lines, 128 MiB of secrets): the import must
    /// stay under 96 MiB, less than the secrets alone. The code before held the whole input,
    /// every item and every sealed record at once (over 400 MiB).
    @Test func import_ofMoreBytesThanTheBound_staysUnderIt() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain(noPasscode: true)
        let secret = Data(repeating: 0x5a, count: 4 * Self.mib).base64EncodedString()
        let url = sandbox.directory.appendingPathComponent("big.jsonl")
        FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        for i in 0..<32 {
            handle.write(Data("{\"class\":\"genp\",\"acct\":\"big\(i)\",\"v_Data\":\"\(secret)\"}\n".utf8))
        }
        try handle.close()

        let result = try Self.peak(sandbox, ["import", url.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            !Self.boundsApply || result.peak < 96 * Self.mib,
            "import peaked at \(result.peak / Self.mib) MiB for 128 MiB of secrets")
        let found = try sandbox.run(["find", "--account", "big31"], env: ["LATCHKEY_PASSCODE": nil])
        #expect(found.stdout.count == 4 * Self.mib)
    }

    /// A keychain of 12,000 items with a 4 KiB label each (47 MiB of attributes, 64 MiB of
    /// JSON): `dump --json` and the table must stay under 72 MiB (about 40 MiB is the floor of any command on this keychain: the open reads the log in 8 MiB chunks). The code before held every
    /// item, the attribute cache of them all and the whole output (over 150 MiB); verify,
    /// backup and restore already streamed and must go on doing so.
    @Test func dump_verify_backup_restore_ofMoreBytesThanTheBound_stayUnderIt() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain(noPasscode: true)
        let label = String(repeating: "L", count: 4096)
        var lines = ""
        for i in 0..<12_000 {
            lines += "{\"class\":\"genp\",\"acct\":\"a\(i)\",\"labl\":\"\(label)\",\"v_Data\":\"AA==\"}\n"
        }
        let input = try sandbox.writeFile("items.jsonl", Array(lines.utf8))
        lines = ""
        let imported = try Self.peak(sandbox, ["import", input])
        #expect(imported.status == 0, "\(imported.stderr)")

        let bound = 72 * Self.mib
        let json = try Self.peak(sandbox, ["dump", "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        #expect(!Self.boundsApply || json.peak < bound, "dump --json peaked at \(json.peak / Self.mib) MiB")
        let table = try Self.peak(sandbox, ["dump"])
        #expect(table.status == 0, "\(table.stderr)")
        #expect(!Self.boundsApply || table.peak < bound, "dump peaked at \(table.peak / Self.mib) MiB")
        let verify = try Self.peak(sandbox, ["verify"])
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(!Self.boundsApply || verify.peak < bound, "verify peaked at \(verify.peak / Self.mib) MiB")
        let backupPath = sandbox.directory.appendingPathComponent("kc.backup").path
        let backup = try Self.peak(sandbox, ["backup", "--no-password", "--output", backupPath])
        #expect(backup.status == 0, "\(backup.stderr)")
        #expect(!Self.boundsApply || backup.peak < bound, "backup peaked at \(backup.peak / Self.mib) MiB")
        let restored = sandbox.directory.appendingPathComponent("restored.keychain").path
        let restore = try Self.peak(sandbox, ["restore", "--keychain", restored, "--no-passcode", backupPath])
        #expect(restore.status == 0, "\(restore.stderr)")
        #expect(!Self.boundsApply || restore.peak < bound, "restore peaked at \(restore.peak / Self.mib) MiB")
        // backup-verify and backup-list read the archive as restore does, an entry at a time.
        for args in [["backup-verify", backupPath], ["backup-list", backupPath], ["backup-list", "--jsonl", backupPath]]
        {
            let run = try Self.peak(sandbox, args)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(
                !Self.boundsApply || run.peak < bound,
                "\(args.joined(separator: " ")) peaked at \(run.peak / Self.mib) MiB")
        }

        // What streamed out is every item, in creation order.
        let dumped = try sandbox.run(["dump", "--json"], env: ["LATCHKEY_PASSCODE": nil])
        let items = try #require(try dumped.json() as? [[String: Any]])
        #expect(items.count == 12_000)
        #expect(items.first?["acct"] as? String == "a0" && items.last?["acct"] as? String == "a11999")
        #expect(try sandbox.run(["dump"], env: ["LATCHKEY_PASSCODE": nil]).out.split(separator: "\n").count == 12_001)
    }
}
