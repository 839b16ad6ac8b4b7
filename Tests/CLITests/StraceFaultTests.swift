#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Testing

/// Faults injected by strace(1) into the system calls of a real `latchkey` process (issue 27,
/// points 14 and 15): SIGKILL on entering, or ENOSPC or EIO returned by, the n-th call of each
/// file-system system call of `init`, a restore into a new keychain, `backup --output FILE` and
/// an import that writes an index; then the operation (or another writing command) runs again
/// and nothing may be left behind: no `.create-`, `.restore-`, `.tmp-`, `.index-` or
/// `.compact-` file, no second name of the keychain, and the keychain opens holding the state
/// before or after the operation, complete.
///
/// Unlike the fault loops over MemoryFileSystem (IOFaultLoopTests), this reaches the binary
/// itself, the statically linked release included: `make strace-fault-test` builds it and
/// points LATCHKEY_STRACE_BINARY at it (default: the debug build next to the tests).
/// LATCHKEY_STRACE_POINTS is how many points each operation gets per fault besides every call
/// that names a file (rename, link, unlink): a number, spread evenly over the calls on the
/// sandbox's files in the order they are made, or `all` (every call, the dynamic loader's
/// included). The default, 6 for kills and 2 for ENOSPC and EIO, keeps this suite under 20 s
/// in `make test`.
@Suite(.serialized) struct StraceFaultTests {
    static let straceWorks = DataDirectoryDurabilityTests.straceWorks

    /// The system calls faults are injected into.
    static let calls = [
        "openat", "write", "pwrite64", "fsync", "fdatasync", "ftruncate", "rename", "renameat", "renameat2",
        "link", "linkat", "unlink", "unlinkat", "mkdir", "flock"
    ]
    /// Calls that change names: every one of them is a point, whatever the budget.
    static let namingCalls: Set<String> = ["rename", "renameat", "renameat2", "link", "linkat", "unlink", "unlinkat"]

    enum Fault: CustomStringConvertible {
        case kill, error(String)
        var injection: String {
            switch self {
            case .kill: return "signal=KILL"
            case .error(let e): return "error=\(e)"
            }
        }
        var description: String { injection }
    }

    /// The binary under test: LATCHKEY_STRACE_BINARY, else the debug build.
    static func binary() throws -> URL {
        if let path = ProcessInfo.processInfo.environment["LATCHKEY_STRACE_BINARY"], !path.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw CLITestError("LATCHKEY_STRACE_BINARY=\(path) is not an executable")
            }
            return URL(fileURLWithPath: path)
        }
        return try CLISandbox.binary()
    }

    /// How many points besides the naming calls: nil for all.
    static func budget(_ fault: Fault) -> Int? {
        let value = ProcessInfo.processInfo.environment["LATCHKEY_STRACE_POINTS"] ?? ""
        if value == "all" { return nil }
        if let n = Int(value), n >= 0 { return n }
        if case .kill = fault { return 6 }
        return 2
    }

    /// One sandbox: the keychain's directory `kc/`, the device secret's `dev/`, backups in `out/`.
    final class Bench {
        let sb: CLISandbox
        let bin: URL
        var kc: URL { sb.directory.appendingPathComponent("kc") }
        var dev: URL { sb.directory.appendingPathComponent("dev") }
        var out: URL { sb.directory.appendingPathComponent("out") }
        var keychain: String { kc.appendingPathComponent("login.keychain").path }

        init() throws {
            sb = try CLISandbox()
            bin = try StraceFaultTests.binary()
            for d in [kc, dev, out] {
                try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
            }
            sb.environment["LATCHKEY_KEYCHAIN"] = keychain
            sb.environment["LATCHKEY_DEVICE"] = dev.appendingPathComponent("device.secret").path
            sb.environment["LATCHKEY_PASSCODE"] = nil
            // Under `make test-asan`: LeakSanitizer cannot run under ptrace.
            sb.environment["ASAN_OPTIONS"] =
                (ProcessInfo.processInfo.environment["ASAN_OPTIONS"].map { $0 + ":" } ?? "") + "detect_leaks=0"
        }

        @discardableResult
        func run(_ args: [String], stdin: [UInt8] = [], env: [String: String?] = [:]) throws -> CLIResult {
            try sb.run(executable: bin, args, stdin: stdin, env: env)
        }

        /// `add` of one item with the binary under test; throws unless it succeeds.
        func add(_ account: String) throws {
            let r = try run(["add", "--account", account, "--service", "strace"], stdin: Array("x".utf8))
            guard r.status == 0 else { throw CLITestError("add failed (\(r.status)): \(r.stderr)") }
        }

        /// Runs under strace: with `log`, every call of `StraceFaultTests.calls` is written there
        /// (no string contents: `-s 0`); with `inject`, that fault is injected.
        @discardableResult
        func traced(
            _ args: [String], stdin: [UInt8] = [], log: String? = nil,
            inject: (call: String, n: Int, fault: Fault)? = nil
        ) throws -> CLIResult {
            // -y: descriptors are printed with their paths (what says whether a call touches the
            // sandbox); -s 0: no bytes of what is written (secrets) in the log.
            var strace = ["-f", "-qq", "-y", "-s", "0", "-o", log ?? "/dev/null"]
            if let inject {
                strace += [
                    "-e", "trace=\(inject.call)", "-e",
                    "inject=\(inject.call):\(inject.fault.injection):when=\(inject.n)"
                ]
            } else {
                strace += ["-e", "trace=" + StraceFaultTests.calls.joined(separator: ",")]
            }
            return try sb.run(
                executable: URL(fileURLWithPath: "/usr/bin/strace"), strace + [bin.path] + args, stdin: stdin, env: [:])
        }

        /// The calls an operation makes, in order, each as (call, its ordinal in its process,
        /// whether it touches a file of the sandbox: the dynamic loader's opens of libraries do
        /// not, and are left out of a budget).
        func events(_ args: [String], stdin: [UInt8] = [], prepare: () throws -> Void) throws -> [(
            call: String, n: Int, ours: Bool
        )] {
            try prepare()
            let log = sb.directory.appendingPathComponent("trace.log").path
            defer { try? FileManager.default.removeItem(atPath: log) }
            try traced(args, stdin: stdin, log: log)
            var seen: [String: Int] = [:]
            var events: [(String, Int, Bool)] = []
            var made = Set<String>()
            for line in try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n") {
                // "PID  call(arguments) = result", the PID padded with spaces.
                let fields = line.split(separator: " ", maxSplits: 1)
                guard fields.count == 2 else { continue }
                let rest = fields[1].drop { $0 == " " }
                guard let paren = rest.firstIndex(of: "(") else { continue }
                let call = String(rest[..<paren])
                guard StraceFaultTests.calls.contains(call) else { continue }
                let key = "\(fields[0]) \(call)"
                seen[key, default: 0] += 1
                let event = "\(call) \(seen[key]!)"
                if made.insert(event).inserted { events.append((call, seen[key]!, line.contains(sb.directory.path))) }
            }
            return events
        }

        /// Files that killed or failed work may have left, in every directory of the bench.
        func leftovers() throws -> [String] {
            var found: [String] = []
            for d in [kc, dev, out] {
                for name in try FileManager.default.contentsOfDirectory(atPath: d.path)
                where [".create-", ".restore-", ".tmp-", ".index-", ".compact-"].contains(where: { name.contains($0) })
                {
                    found.append(d.lastPathComponent + "/" + name)
                }
            }
            return found.sorted()
        }

        /// The hard links of the keychain file (1: no second name).
        func links(_ path: String) throws -> Int {
            var st = stat()
            guard stat(path, &st) == 0 else { throw CLITestError("no file at \(path)") }
            return Int(st.st_nlink)
        }

        /// The number of items `dump` lists (the keychain opens and every item decrypts).
        func itemCount() throws -> Int {
            let dumped = try run(["dump", "--json"])
            guard dumped.status == 0 else { throw CLITestError("dump failed (\(dumped.status)): \(dumped.stderr)") }
            return try #require(try dumped.json() as? [[String: Any]]).count
        }

        func clear(_ dir: URL) throws {
            for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) {
                try FileManager.default.removeItem(at: dir.appendingPathComponent(name))
            }
        }
    }

    /// Lines for `import`: `count` passwords with 120-byte secrets (about 350 bytes of records
    /// each, so that 1,000 pass the 256 KiB after which a writer writes an index).
    static func importLines(_ count: Int, prefix: String = "i") -> [UInt8] {
        let secret = Data(repeating: 0x5a, count: 120).base64EncodedString()
        return Array(
            (0..<count).map { #"{"class":"genp","acct":"\#(prefix)\#($0)","svce":"strace","v_Data":"\#(secret)"}"# }
                .joined(separator: "\n").utf8) + [10]
    }

    /// Injects each fault at the chosen points of `args` and checks what is left after `rerun`.
    /// - Parameters:
    ///   - prepare: puts the bench in the state before the operation.
    ///   - rerun: what runs after the faulty run (the operation again, any writing command).
    ///   - check: the state after the rerun: opens, complete, one of the two states.
    func exercise(
        _ bench: Bench, _ label: String, _ args: [String], stdin: [UInt8] = [], prepare: () throws -> Void,
        rerun: () throws -> Void, check: () throws -> Void
    ) throws {
        let events = try bench.events(args, stdin: stdin, prepare: prepare)
        #expect(!events.isEmpty, "\(label): strace saw the calls")
        var points = 0
        var killed = 0
        for fault in [Fault.kill, .error("ENOSPC"), .error("EIO")] {
            var chosen = events.filter { Self.namingCalls.contains($0.call) }.map { ($0.call, $0.n) }
            let others = events.filter { !Self.namingCalls.contains($0.call) }
            if let n = Self.budget(fault) {
                let others = others.filter(\.ours).map { ($0.call, $0.n) }
                if n > 0, !others.isEmpty {
                    let step = max(1, others.count / n)
                    chosen += stride(from: step / 2, to: others.count, by: step).prefix(n).map { others[$0] }
                }
            } else {
                chosen += others.map { ($0.call, $0.n) }
            }
            for (call, n) in chosen {
                try prepare()
                let faulty = try bench.traced(args, stdin: stdin, inject: (call, n, fault))
                try rerun()
                let where_ = "\(label), \(fault) at \(call) #\(n) (exit \(faulty.status): \(faulty.stderr.prefix(300)))"
                let left = try bench.leftovers()
                #expect(left.isEmpty, "\(where_): left behind \(left)")
                do {
                    try check()
                } catch {
                    Issue.record("\(where_): \(error)")
                }
                points += 1
                if case .kill = fault, faulty.status == SIGKILL { killed += 1 }
                if !left.isEmpty { return }  // one failure says it; the rest would repeat it
            }
        }
        print("StraceFaultTests: \(label): \(events.count) calls, faults at \(points) points, \(killed) runs killed")
        #expect(points > 0)
        #expect(killed > 0, "\(label): the injected SIGKILL ended the process (strace injects)")
    }

    @Test(.enabled(if: straceWorks, "needs strace(1) allowed to trace a child"))
    func init_killedOrFailedAtAnyCall_leavesNothingBehind() throws {
        let b = try Bench()
        try exercise(
            b, "init", ["init", "--no-passcode"],
            prepare: { () throws in
                try b.clear(b.kc)
                try b.clear(b.dev)
            },
            rerun: { () throws in
                let again = try b.run(["init", "--no-passcode"])
                #expect(
                    again.status == 0 || (again.status == 7 && FileManager.default.fileExists(atPath: b.keychain)),
                    "init again: \(again.stderr)")
                try b.add("after")
            },
            check: { () throws in
                #expect(try b.links(b.keychain) == 1, "no second name of the keychain")
                #expect(try b.itemCount() == 1)
            })
    }

    @Test(.enabled(if: straceWorks, "needs strace(1) allowed to trace a child"))
    func restoreIntoANewKeychain_killedOrFailedAtAnyCall_leavesNothingBehind() throws {
        let b = try Bench()
        // The backup of a keychain elsewhere, with enough items that the restore writes an index.
        let source = b.sb.directory.appendingPathComponent("source.keychain").path
        let backup = b.sb.directory.appendingPathComponent("source.backup").path
        let items = 1000
        #expect(try b.run(["init", "--no-passcode"], env: ["LATCHKEY_KEYCHAIN": source]).status == 0)
        let imported = try b.run(["import", "-"], stdin: Self.importLines(items), env: ["LATCHKEY_KEYCHAIN": source])
        #expect(imported.status == 0, "\(imported.stderr)")
        let made = try b.run(["backup", "--output", backup, "--no-password"], env: ["LATCHKEY_KEYCHAIN": source])
        #expect(made.status == 0, "\(made.stderr)")
        let restore = ["restore", backup, "--no-passcode"]
        try exercise(
            b, "restore into a new keychain", restore,
            prepare: { () throws in
                try b.clear(b.kc)
            },
            rerun: { () throws in
                let again = try b.run(restore)
                #expect(
                    again.status == 0 || (again.status == 7 && FileManager.default.fileExists(atPath: b.keychain)),
                    "restore again: \(again.stderr)")
                try b.add("after")
            },
            check: { () throws in
                #expect(try b.links(b.keychain) == 1, "no second name of the keychain")
                #expect(try b.itemCount() == items + 1, "every restored item, and the one added after")
                #expect(
                    FileManager.default.fileExists(atPath: b.keychain + ".index"), "the restored keychain has its index"
                )
            })
    }

    @Test(.enabled(if: straceWorks, "needs strace(1) allowed to trace a child"))
    func backupToAFile_killedOrFailedAtAnyCall_leavesNothingBehind() throws {
        let b = try Bench()
        #expect(try b.run(["init", "--no-passcode"]).status == 0)
        #expect(try b.run(["import", "-"], stdin: Self.importLines(50)).status == 0)
        let output = b.out.appendingPathComponent("kc.backup").path
        let backup = ["backup", "--output", output, "--no-password"]
        try exercise(
            b, "backup --output FILE", backup,
            prepare: { () throws in
                try b.clear(b.out)
            },
            rerun: { () throws in
                let again = try b.run(backup)
                #expect(again.status == 0, "backup again: \(again.stderr)")
            },
            check: { () throws in
                let verified = try b.run(["backup-verify", output])
                #expect(verified.status == 0, "\(verified.stderr)")
                #expect(try b.links(output) == 1)
            })
    }

    @Test(.enabled(if: straceWorks, "needs strace(1) allowed to trace a child"))
    func importWritingAnIndex_killedOrFailedAtAnyCall_leavesNothingBehind() throws {
        let b = try Bench()
        let items = 1000
        let lines = Self.importLines(items)
        try exercise(
            b, "import with an index write", ["import", "-"], stdin: lines,
            prepare: { () throws in
                try b.clear(b.kc)
                #expect(try b.run(["init", "--no-passcode"]).status == 0)
            },
            rerun: { () throws in
                try b.add("after")
            },
            check: { () throws in
                #expect(try b.links(b.keychain) == 1)
                let n = try b.itemCount()
                #expect(n == 1 || n == items + 1, "all of the import or none of it: \(n) items")
            })
    }

    /// The rename that must not replace is one system call (renameat2 RENAME_NOREPLACE) in the
    /// binary under test, the static release included: never link(2) then unlink(2), which a
    /// kill between the two leaves as a second name of the keychain.
    @Test(.enabled(if: straceWorks, "needs strace(1) allowed to trace a child"))
    func init_putsTheKeychainInPlaceWithOneRenameNotALink() throws {
        let b = try Bench()
        let log = b.sb.directory.appendingPathComponent("names.log").path
        let r = try b.sb.run(
            executable: URL(fileURLWithPath: "/usr/bin/strace"),
            ["-f", "-qq", "-o", log, "-e", "trace=link,linkat,renameat2", b.bin.path, "init", "--no-passcode"], env: [:]
        )
        #expect(r.status == 0, "\(r.stderr)")
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        #expect(!lines.contains { $0.contains("link(") || $0.contains("linkat(") }, "\(lines)")
        #expect(
            lines.contains {
                $0.contains("renameat2(") && $0.contains("RENAME_NOREPLACE") && $0.contains("login.keychain\"")
                    && $0.hasSuffix("= 0")
            },
            "\(lines)")
    }
}
