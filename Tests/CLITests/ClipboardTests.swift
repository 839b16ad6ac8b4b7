#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Testing

@testable import latchkey

/// `--clip` on find, generate and otp (issue 31, part 4), on a real X server (Xvfb, from
/// `make deps`) with xclip: the secret is copied, stdout stays empty, and the clearer that
/// latchkey leaves behind clears the clipboard after LATCHKEY_CLIP_SECONDS unless something
/// else was copied since.
@Suite struct ClipboardTests {
    /// An Xvfb display of its own for one test, stopped when the value goes away.
    final class Display {
        let name: String
        let pid: pid_t
        let directory: URL

        init() throws {
            guard
                let xvfb = ["/usr/bin/Xvfb", "/bin/Xvfb"].first(where: {
                    FileManager.default.isExecutableFile(atPath: $0)
                })
            else { throw CLITestError("Xvfb is not installed; 'make deps' installs it (package xvfb)") }
            // A display number no other test or session uses: its socket and lock file are absent.
            var number = 0
            for _ in 0..<100 {
                let n = Int.random(in: 200...5000)
                if !FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(n)"),
                    !FileManager.default.fileExists(atPath: "/tmp/.X\(n)-lock")
                {
                    number = n
                    break
                }
            }
            name = ":\(number)"
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-x-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            pid = try Display.spawn(xvfb, [name, "-nolisten", "tcp", "-screen", "0", "320x200x8"], display: name)
            for _ in 0..<200 where !FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(number)") {
                usleep(50_000)
            }
            guard FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(number)") else {
                kill(pid, SIGKILL)
                throw CLITestError("Xvfb \(name) did not start")
            }
        }

        deinit {
            kill(pid, SIGTERM)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            try? FileManager.default.removeItem(at: directory)
        }

        /// Starts `path` with no signal blocked and none of this process's descriptors (a
        /// test's Process watches its child through one: an X server or the selection-serving
        /// process of xclip that held it would keep that test waiting), stdin from `stdin`.
        static func spawn(_ path: String, _ arguments: [String], display: String, stdin: String = "/dev/null") throws
            -> pid_t
        {
            let exec = "import os, sys; os.closerange(3, 65536); os.execv(sys.argv[1], sys.argv[1:])"
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 0, stdin, O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
            var attributes = posix_spawnattr_t()
            posix_spawnattr_init(&attributes)
            defer { posix_spawnattr_destroy(&attributes) }
            var none = sigset_t(), defaults = sigset_t()
            sigemptyset(&none)
            sigemptyset(&defaults)
            for sig in [SIGINT, SIGTERM, SIGHUP, SIGPIPE] { sigaddset(&defaults, sig) }
            posix_spawnattr_setsigmask(&attributes, &none)
            posix_spawnattr_setsigdefault(&attributes, &defaults)
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
            let argv: [UnsafeMutablePointer<CChar>?] =
                (["python3", "-c", exec, path] + arguments as [String]).map { strdup($0) } + [nil]
            let envp: [UnsafeMutablePointer<CChar>?] =
                (["DISPLAY=\(display)", "PATH=/usr/bin:/bin"] as [String]).map { strdup($0) } + [nil]
            defer { (argv + envp).forEach { free($0) } }
            var pid: pid_t = 0
            let rc = posix_spawnp(&pid, "python3", &actions, &attributes, argv, envp)
            guard rc == 0 else { throw CLITestError("cannot start \(path): \(String(cString: strerror(rc)))") }
            return pid
        }

        /// Copies `text` as another program would.
        func copy(_ text: String) throws {
            let file = directory.appendingPathComponent("copy-\(UUID().uuidString)")
            try Data(text.utf8).write(to: file)
            let pid = try Display.spawn(
                "/usr/bin/xclip", ["-selection", "clipboard", "-in"], display: name, stdin: file.path)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            #expect(status == 0, "xclip -in")
        }

        /// What the clipboard holds (nil: nothing, or unreadable). xclip -out does not fork.
        func clipboard() throws -> String? {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/xclip")
            p.arguments = ["-selection", "clipboard", "-out"]
            p.environment = ["DISPLAY": name]
            let output = Pipe()
            p.standardInput = FileHandle.nullDevice
            p.standardOutput = output
            p.standardError = FileHandle.nullDevice
            try p.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return p.terminationStatus == 0 ? String(decoding: data, as: UTF8.self) : nil
        }

        /// Waits (up to a minute) until no clearer started for this display is left.
        func waitForClearers() throws {
            for _ in 0..<600 {
                if clearers().isEmpty { return }
                usleep(100_000)
            }
            throw CLITestError("the clipboard's clearer for \(name) is still running after a minute")
        }

        /// The pids of `latchkey clipboard-clear` processes whose DISPLAY is this one.
        func clearers() -> [Int32] {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            return names.compactMap(Int32.init).filter { pid in
                guard let cmdline = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"),
                    cmdline.split(separator: 0).map({ String(decoding: $0, as: UTF8.self) }).dropFirst().first
                        == "clipboard-clear",
                    let environ = FileManager.default.contents(atPath: "/proc/\(pid)/environ")
                else { return false }
                return environ.split(separator: 0).contains { String(decoding: $0, as: UTF8.self) == "DISPLAY=\(name)" }
            }
        }
    }

    static func sandbox(_ display: Display, seconds: Int) throws -> CLISandbox {
        let sb = try CLISandbox()
        sb.environment["DISPLAY"] = display.name
        sb.environment["LATCHKEY_CLIP_SECONDS"] = String(seconds)
        try sb.initKeychain()
        return sb
    }

    @Test func find_copiesTheSecret_printsNothing_andTheClipboardIsClearedAfterTheDelay() throws {
        let display = try Display()
        let sb = try Self.sandbox(display, seconds: 4)
        try sb.add(account: "alice", service: "mail", data: Array("hunter2".utf8))
        let r = try sb.run(["find", "--account", "alice", "--service", "mail", "--clip"])
        #expect(r.status == 0 && r.stdout.isEmpty, "\(r.stderr)")
        #expect(r.stderr == "copied; clears in 4 s\n")
        #expect(try display.clipboard() == "hunter2")
        #expect(display.clearers().count == 1, "one clearer waits")
        try display.waitForClearers()
        let after = try display.clipboard()
        #expect(after == nil || after == "", "cleared: \(String(describing: after))")
    }

    @Test func clipboardChangedSince_isLeftAlone() throws {
        let display = try Display()
        let sb = try Self.sandbox(display, seconds: 3)
        try sb.add(account: "alice", service: "mail", data: Array("hunter2".utf8))
        #expect(try sb.run(["find", "--account", "alice", "--service", "mail", "--clip"]).status == 0)
        #expect(try display.clipboard() == "hunter2")
        try display.copy("something else")
        try display.waitForClearers()
        #expect(try display.clipboard() == "something else")
    }

    @Test func generateAndOtp_copyWhatTheyMake() throws {
        let display = try Display()
        let sb = try Self.sandbox(display, seconds: 30)
        let g = try sb.run(["generate", "--account", "a", "--service", "s", "--words", "5", "--clip"])
        #expect(g.status == 0 && g.stdout.isEmpty && g.stderr == "copied; clears in 30 s\n", "\(g.stderr)")
        let stored = try sb.run(["find", "--account", "a", "--service", "s"]).out
        #expect(try display.clipboard() == stored && stored.split(separator: "-").count == 5)

        let uri = "otpauth://totp/x?secret=\(OneTimeCodeTests.sha1Secret)&digits=8"
        #expect(try sb.run(["otp", "--set", "acme/a"], stdin: Array(uri.utf8)).status == 0)
        let o = try sb.run(["otp", "acme/a", "--at", "59", "--clip"])
        #expect(o.status == 0 && o.stdout.isEmpty, "\(o.stderr)")
        #expect(try display.clipboard() == "94287082")
        for pid in display.clearers() { kill(pid, SIGKILL) }
    }

    /// The fast parser of find does not know --clip: it steps aside, and ArgumentParser's
    /// command copies (FastParser.swift's rule for a new option).
    @Test func findClip_isLeftToArgumentParser() throws {
        #expect(FindCommand.fastRequest(["--account", "a", "--service", "s", "--clip"]) == nil)
        #expect(FindCommand.fastRequest(["--account", "a", "--service", "s"]) != nil)
        let parsed = try #require(try FindCommand.parseAsRoot(["--account", "a", "--clip"]) as? FindCommand)
        #expect(parsed.clip)
        for bad in [
            ["--clip", "--json"], ["--clip", "--return", "all"], ["--clip", "--limit", "all"], ["--clip", "--jsonl"]
        ] {
            #expect(throws: (any Error).self) { try FindCommand.parseAsRoot(["--account", "a"] + bad) }
        }
    }

    @Test func noDisplayOrNoProgram_isExit7_sayingWhatToInstall_andNothingIsDone() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        try sb.add(account: "alice", service: "mail", data: Array("hunter2".utf8))
        let none = try sb.run(["find", "--account", "alice", "--service", "mail", "--clip"])
        #expect(none.status == 7 && none.stdout.isEmpty, "\(none.stderr)")
        #expect(none.stderr.contains("DISPLAY") && none.stderr.contains("WAYLAND_DISPLAY"), "\(none.stderr)")
        #expect(!none.stderr.contains("hunter2"))

        let noTool = try sb.run(
            ["find", "--account", "alice", "--service", "mail", "--clip"],
            env: ["DISPLAY": ":9", "PATH": "/nonexistent"])
        #expect(noTool.status == 7 && noTool.stderr.contains("apt install xclip"), "\(noTool.stderr)")
        let wayland = try sb.run(
            ["find", "--account", "alice", "--service", "mail", "--clip"],
            env: ["WAYLAND_DISPLAY": "wayland-0", "PATH": "/nonexistent"])
        #expect(wayland.status == 7 && wayland.stderr.contains("wl-clipboard"), "\(wayland.stderr)")

        // generate stores nothing, and an HOTP counter does not move, when the copy cannot be made.
        #expect(try sb.run(["generate", "--account", "b", "--service", "mail", "--clip"]).status == 7)
        #expect(try sb.run(["find", "--account", "b", "--service", "mail"]).status == 1)
        let hotp = "otpauth://hotp/x?secret=\(OneTimeCodeTests.sha1Secret)&counter=0"
        #expect(try sb.run(["otp", "--set", "bank"], stdin: Array(hotp.utf8)).status == 0)
        #expect(try sb.run(["otp", "bank", "--clip"]).status == 7)
        #expect(try sb.run(["otp", "bank"]).out == "755224\n")

        // A delay that is not a number of seconds is a usage error.
        let bad = try sb.run(
            ["find", "--account", "alice", "--service", "mail", "--clip"], env: ["LATCHKEY_CLIP_SECONDS": "soon"])
        #expect(bad.status == 2 && bad.stderr.contains("LATCHKEY_CLIP_SECONDS"), "\(bad.stderr)")
    }
}
