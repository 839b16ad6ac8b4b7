import Foundation
import Testing

/// Disk full and read-only media on a real file system (issue 14 defects 3 and 4), through the
/// built binary: the keychain and device secret live on a 64 KiB tmpfs (`SmallDisk`), the
/// test's own files (stdin, inputs, outputs) beside it in the sandbox directory. The
/// `FileSystem` seam tests (IOFaultLoopTests, ReadOnlyMediumTests) inject the same errors
/// without root; these check what the kernel really does.
///
/// Skipped, with the reason, where no tmpfs can be mounted (not root, or no CAP_SYS_ADMIN).
@Suite(.serialized, .enabled(if: SmallDisk.available, Comment(rawValue: SmallDisk.unavailable ?? "")))
struct RealDiskTests {
    /// A sandbox whose keychain and device secret are on `disk`.
    func sandbox(on disk: SmallDisk) throws -> CLISandbox {
        let sandbox = try CLISandbox()
        sandbox.environment["LATCHKEY_KEYCHAIN"] = disk.path("login.keychain")
        sandbox.environment["LATCHKEY_DEVICE"] = disk.path("device.secret")
        return sandbox
    }

    func bytes(_ path: String) -> [UInt8] { (try? [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))) ?? [] }

    /// What a reader sees: the dump and every secret.
    func state(_ s: CLISandbox, accounts: [String], env: [String: String?] = [:]) throws -> String {
        var out = try s.run(["dump", "--json"], env: env).out
        for a in accounts { out += "\n\(a): " + (try s.run(["find", "--account", a], env: env).out) }
        return out
    }

    /// Adds an item whose record ends the keychain file on a 4 KiB boundary, so that any
    /// append needs a new page of the tmpfs.
    func alignToPage(_ s: CLISandbox, _ keychain: String) throws {
        let size0 = bytes(keychain).count
        try s.add(account: "probe", data: [1])
        let overhead = bytes(keychain).count - size0 - 1  // the record of "probe" minus its data
        let size1 = bytes(keychain).count
        let data = (4096 - (size1 + overhead) % 4096) % 4096
        try s.add(account: "pad00", data: [UInt8](repeating: 0x50, count: data))
        #expect(bytes(keychain).count % 4096 == 0, "the keychain is not page-aligned")
    }

    struct Writer {
        var name: String
        var args: [String]
        var stdin: [UInt8] = []
        var env: [String: String?] = [:]
    }

    /// Every writing command. Call it before the disk is filled or made read-only: it backs up
    /// the keychain beside the sandbox, for the two restores, with an item that it then
    /// deletes (so that `restore --merge` has something to write).
    func writers(_ s: CLISandbox, _ disk: SmallDisk) throws -> [Writer] {
        let importFile = try s.writeFile(
            "import.jsonl", Array(#"{"class":"genp","acct":"imported","v_Data":"aW1wb3J0ZWQ="}"#.utf8 + [0x0A]))
        let backup = s.directory.appendingPathComponent("merge.backup").path
        try s.add(account: "from-backup", data: Array("restored".utf8))
        let made = try s.run(["backup", "--no-password", "--output", backup])
        guard made.status == 0 else { throw CLITestError("backup for the restores: \(made.stderr)") }
        let deleted = try s.run(["delete", "--account", "from-backup"])
        guard deleted.status == 0 else { throw CLITestError("delete: \(deleted.stderr)") }
        return [
            Writer(
                name: "add", args: ["add", "--account", "new"], stdin: Array(String(repeating: "n", count: 100).utf8)),
            Writer(name: "update", args: ["update", "--account", "a", "--set-data"], stdin: Array("a, changed".utf8)),
            Writer(name: "import", args: ["import", importFile]),
            Writer(name: "compact", args: ["compact"]),
            Writer(name: "backup", args: ["backup", "--no-password", "--output", disk.path("keychain.backup")]),
            Writer(name: "restore --merge", args: ["restore", "--merge", backup]),
            Writer(
                name: "restore into a new keychain",
                args: ["restore", backup, "--keychain-kdf-log-n", CLISandbox.kdfLogN],
                env: ["LATCHKEY_KEYCHAIN": disk.path("restored.keychain")]),
            Writer(
                name: "passwd", args: ["passwd", "--kdf-log-n", CLISandbox.kdfLogN],
                env: ["LATCHKEY_NEW_PASSCODE": "battery staple"])
        ]
    }

    @Test func diskFull_writersFailSayingSo_keychainUnchanged_workAgainOnceFreed() throws {
        let disk = try SmallDisk(size: "64k")
        defer { disk.unmount() }
        let s = try sandbox(on: disk)
        let keychain = disk.path("login.keychain")
        try s.initKeychain()
        try s.add(account: "a", data: Array("a-secret".utf8))
        try s.add(account: "b", data: Array("b-secret".utf8))
        #expect(try s.run(["update", "--account", "b", "--set-label", "dead record for compact"]).status == 0)
        let writers = try writers(s, disk)
        try alignToPage(s, keychain)
        let accounts = ["a", "b", "probe"]
        let before = try state(s, accounts: accounts)
        let files = disk.list()

        try disk.fill()
        for w in writers {
            let r = try s.run(w.args, stdin: w.stdin, env: w.env)
            #expect(r.status == 7, "\(w.name) on a full disk: exit \(r.status): \(r.stderr)")
            #expect(r.stderr.contains("disk is full"), "\(w.name) on a full disk does not say so: \(r.stderr)")
            #expect(r.stderr.hasSuffix("(errSecIO -36)\n"), "\(w.name): \(r.stderr)")
            #expect(disk.list() == (files + ["filler"]).sorted(), "\(w.name) left files behind: \(disk.list())")
            let verify = try s.run(["verify"])
            #expect(verify.status == 0, "verify after \(w.name) on a full disk: \(verify.out) \(verify.stderr)")
            #expect(try state(s, accounts: accounts) == before, "\(w.name) on a full disk changed the keychain")
        }
        // Readers work on a full disk.
        for args in [["find", "--account", "a"], ["dump"], ["info"], ["verify"]] {
            let r = try s.run(args)
            #expect(r.status == 0, "\(args[0]) on a full disk: \(r.stderr)")
        }

        try disk.free()
        for w in writers {
            let r = try s.run(w.args, stdin: w.stdin, env: w.env)
            #expect(r.status == 0, "\(w.name) once space is free: exit \(r.status): \(r.stderr)")
        }
        let env: [String: String?] = ["LATCHKEY_PASSCODE": "battery staple"]
        #expect(try s.run(["verify"], env: env).status == 0)
        #expect(try s.run(["find", "--account", "a"], env: env).out == "a, changed")
        #expect(try s.run(["find", "--account", "new"], env: env).status == 0)
        #expect(try s.run(["find", "--account", "imported"], env: env).out == "imported")
        #expect(try s.run(["find", "--account", "from-backup"], env: env).out == "restored")
        #expect(FileManager.default.fileExists(atPath: disk.path("keychain.backup")))
        let restored = try s.run(["find", "--account", "a"], env: ["LATCHKEY_KEYCHAIN": disk.path("restored.keychain")])
        #expect(restored.out == "a-secret", "the keychain restored once space was free: \(restored.stderr)")
    }

    @Test func readOnlyMedium_readersWork_writersSayTheFileSystemIsReadOnly() throws {
        let disk = try SmallDisk(size: "64k")
        defer { disk.unmount() }
        let s = try sandbox(on: disk)
        let keychain = disk.path("login.keychain")
        try s.initKeychain()
        try s.add(account: "a", data: Array("a-secret".utf8))
        try s.add(account: "b", data: Array("b-secret".utf8), ["--accessible", "dk"])
        var writers = try writers(s, disk).filter { $0.name != "backup" }
        writers.append(Writer(name: "delete", args: ["delete", "--account", "b"]))
        let before = bytes(keychain)
        let accounts = ["a", "b"]
        let state0 = try state(s, accounts: accounts)

        try disk.remount(readOnly: true)
        let find = try s.run(["find", "--account", "a"])
        #expect(find.status == 0 && find.out == "a-secret", "find on a read-only medium: \(find.stderr)")
        let backupPath = s.directory.appendingPathComponent("ro.backup").path
        for args in [
            ["dump"], ["dump", "--json"], ["info"], ["verify"], ["backup", "--no-password", "--output", backupPath]
        ] {
            let r = try s.run(args)
            #expect(
                r.status == 0, "\(args.joined(separator: " ")) on a read-only medium: exit \(r.status): \(r.stderr)")
        }
        #expect(FileManager.default.fileExists(atPath: backupPath), "no backup was written from the read-only medium")

        for w in writers {
            let r = try s.run(w.args, stdin: w.stdin, env: w.env)
            #expect(r.status == 7, "\(w.name) on a read-only medium: exit \(r.status): \(r.stderr)")
            #expect(r.stderr.contains("read-only"), "\(w.name) on a read-only medium does not say so: \(r.stderr)")
        }
        let unchanged = bytes(keychain) == before
        #expect(unchanged)

        try disk.remount(readOnly: false)
        #expect(try state(s, accounts: accounts) == state0)
        #expect(try s.run(["add", "--account", "c"], stdin: [3]).status == 0)
        #expect(try s.run(["verify"]).status == 0)
    }
}
