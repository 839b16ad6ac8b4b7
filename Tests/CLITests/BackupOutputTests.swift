#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Testing

/// Where `latchkey backup` writes and how backup and restore end (issue 13 point 6, issue 14
/// point 3): only regular files, through a temporary file and a rename (never into a FIFO or
/// device planted at the path); errno in the message; Ctrl-C leaves no temporary file and no
/// progress bar behind.
@Suite struct BackupOutputTests {
    static func sandbox() throws -> CLISandbox {
        let sb = try CLISandbox()
        sb.environment["LATCHKEY_BACKUP_PASSWORD"] = "backup password"
        sb.environment["LATCHKEY_AGENT_SOCK"] = "none"
        try sb.initKeychain()
        try sb.add(account: "alice", data: Array("s3cret".utf8))
        return sb
    }

    func leftovers(_ sb: CLISandbox) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: sb.directory.path)
            .filter { $0.contains(".tmp-") || $0.contains(".restore-") || $0.contains(".create-") }
    }

    /// A FIFO planted at the output path (another user's, in a shared directory): the backup
    /// used to be written into it, to whoever reads the other end.
    @Test func fifoAtTheOutputPath_isRefused_andNothingIsWrittenIntoIt() throws {
        let sb = try BackupOutputTests.sandbox()
        let fifo = sb.directory.appendingPathComponent("out.tar").path
        #expect(mkfifo(fifo, 0o666) == 0)
        // A reader at the other end, so that a writer that opens the FIFO does not block.
        let reader = open(fifo, O_RDONLY | O_NONBLOCK)
        #expect(reader >= 0)
        defer { close(reader) }
        let r = try sb.run(["backup", "--output", fifo, "--kdf-log-n", "10"])
        #expect(r.status == 7, "\(r.stderr)")
        #expect(r.stderr.contains("not a regular file") && r.stderr.contains("errSecIO -36"), "\(r.stderr)")
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = read(reader, &buffer, buffer.count)
        #expect(n <= 0, "\(n) bytes of a backup went into the FIFO")
        #expect(try leftovers(sb).isEmpty)
    }

    @Test(arguments: ["device", "symlink", "directory"])
    func otherNonRegularFilesAtTheOutputPath_areRefused(_ kind: String) throws {
        let sb = try BackupOutputTests.sandbox()
        var path = sb.directory.appendingPathComponent("out.tar").path
        switch kind {
        case "device": path = "/dev/null"
        case "symlink":
            let target = try sb.writeFile("target", Array("keep me".utf8))
            #expect(symlink(target, path) == 0)
        default: #expect(mkdir(path, 0o700) == 0)
        }
        let r = try sb.run(["backup", "--output", path, "--kdf-log-n", "10"])
        #expect(r.status == 7 && r.stderr.contains("not a regular file"), "\(kind): \(r.status) \(r.stderr)")
        if kind == "symlink" {
            var st = stat()
            #expect(lstat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFLNK, "the link is left as it was")
        }
    }

    @Test func aRegularFileAtTheOutputPath_isReplaced() throws {
        let sb = try BackupOutputTests.sandbox()
        let path = try sb.writeFile("out.tar", Array("old backup".utf8))
        let r = try sb.run(["backup", "--output", path, "--kdf-log-n", "10"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count > 1000)
        #expect(try leftovers(sb).isEmpty)
    }

    /// A full disk used to say only "Write error".
    @Test func diskFull_theMessageSaysSo() throws {
        let sb = try BackupOutputTests.sandbox()
        let r = try sb.run(
            executable: URL(fileURLWithPath: "/bin/sh"),
            ["-c", "exec \"$0\" backup --output - --kdf-log-n 10 >/dev/full", try CLISandbox.binary().path], env: [:])
        #expect(r.status == 7)
        #expect(r.stderr.contains(String(cString: strerror(ENOSPC))), "names the errno: \(r.stderr)")
        #expect(r.stderr.contains("standard output"), "names what failed: \(r.stderr)")
    }

    // MARK: Ctrl-C

    /// Interrupts `latchkey args…` (stderr on a pseudo-terminal, TERM=xterm) with SIGINT once
    /// `ready` holds for the sandbox directory and what stderr showed so far; returns how it
    /// ended and all of stderr. The KDF costs make the window a second or so wide.
    func interrupt(
        _ sb: CLISandbox, _ args: [String], env: [String: String] = [:],
        when ready: ([String], String) -> Bool
    ) throws -> (Spawned.End, String) {
        let (master, name) = try PseudoTerminal.open()
        defer { close(master) }
        _ = fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK)
        var environment = sb.environment
        environment["TERM"] = "xterm"
        for (k, v) in env { environment[k] = v }
        let process = try Spawned(args, environment: environment, in: sb.directory, stderrTerminal: name)
        var text = ""
        var buffer = [UInt8](repeating: 0, count: 4096)
        func drain() {
            while true {
                let n = read(master, &buffer, buffer.count)
                if n <= 0 { return }
                text += String(decoding: buffer[0..<n], as: UTF8.self)
            }
        }
        var signalled = false
        let start = monotonicMicroseconds()
        while !signalled, process.running, monotonicMicroseconds() - start < 60_000_000 {
            drain()
            let names = (try? FileManager.default.contentsOfDirectory(atPath: sb.directory.path)) ?? []
            if ready(names, text) {
                kill(process.pid, SIGINT)
                signalled = true
            } else {
                pause(microseconds: 2_000)
            }
        }
        let end = process.wait()
        drain()
        if !signalled { Issue.record("the command ended before it could be interrupted (\(end)); stderr: \(text)") }
        return (end, text)
    }

    @Test func ctrlC_duringBackup_leavesNoTemporaryFile_andErasesTheBar() throws {
        let sb = try BackupOutputTests.sandbox()
        // The password's KDF (2^18, about a second) runs after the temporary file is made, under the bar
        // (drawn from 0.4 s on).
        let out = sb.directory.appendingPathComponent("out.tar").path
        let (end, text) = try interrupt(sb, ["backup", "--output", out, "--kdf-log-n", "18"]) { names, text in
            names.contains { $0.hasPrefix("out.tar.tmp-") } && text.contains("backup  ")  // the bar's label
        }
        #expect(end == .killed(SIGINT), "ends as SIGINT would: \(end)")
        let left = try leftovers(sb)
        #expect(left.isEmpty, "no temporary file: \(left)")
        #expect(!FileManager.default.fileExists(atPath: out))
        let lastBar = try #require(text.range(of: "backup  ", options: .backwards))
        #expect(
            text[lastBar.upperBound...].contains("\r\u{1B}[K"),
            "the bar is erased after it was last drawn: \(text.debugDescription)")
    }

    @Test func ctrlC_duringRestore_leavesNoTemporaryKeychainNorDeviceSecret() throws {
        let sb = try BackupOutputTests.sandbox()
        let backup = sb.directory.appendingPathComponent("k.backup").path
        let made = try sb.run(["backup", "--output", backup, "--kdf-log-n", "10"])
        #expect(made.status == 0, "\(made.stderr)")
        let keychain = sb.directory.appendingPathComponent("new.keychain").path
        let device = sb.directory.appendingPathComponent("new.device").path
        // The new keychain's passcode KDF (2^17) runs once the temporary keychain exists.
        let (end, _) = try interrupt(
            sb, ["restore", backup, "--keychain-kdf-log-n", "17"],
            env: ["LATCHKEY_KEYCHAIN": keychain, "LATCHKEY_DEVICE": device]
        ) { names, _ in
            names.contains { $0.hasPrefix("new.keychain.restore-") }
        }
        #expect(end == .killed(SIGINT), "\(end)")
        let left = try leftovers(sb)
        #expect(left.isEmpty, "no temporary keychain: \(left)")
        for path in [keychain, device, device + ".state"] {
            #expect(!FileManager.default.fileExists(atPath: path), "\(path) is not left behind")
        }
    }
}

/// A pseudo-terminal pair. posix_openpt and friends are not in Swift's Glibc module (they
/// need _XOPEN_SOURCE), so they are looked up by name.
enum PseudoTerminal {
    private typealias IntOfInt = @convention(c) (Int32) -> Int32
    private typealias NameOfInt = @convention(c) (Int32) -> UnsafeMutablePointer<CChar>?

    private static func function<T>(_ name: String, as type: T.Type) throws -> T {
        guard let sym = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
            throw CLITestError("no \(name) in libc")
        }
        return unsafeBitCast(sym, to: type)
    }

    /// The master's descriptor and the slave's path.
    static func open() throws -> (Int32, String) {
        let openpt = try function("posix_openpt", as: IntOfInt.self)
        let grant = try function("grantpt", as: IntOfInt.self)
        let unlock = try function("unlockpt", as: IntOfInt.self)
        let name = try function("ptsname", as: NameOfInt.self)
        let master = openpt(O_RDWR | O_NOCTTY)
        guard master >= 0, grant(master) == 0, unlock(master) == 0, let slave = name(master) else {
            throw CLITestError("no pseudo-terminal: \(String(cString: strerror(errno)))")
        }
        return (master, String(cString: slave))
    }
}
