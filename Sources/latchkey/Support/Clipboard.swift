#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import Latchkey
import LatchkeyCrypto

/// `--clip` of find, generate and otp (docs/CLI.md, "The clipboard"): the secret goes to the
/// desktop's clipboard through the program the session has for it, and a detached copy of
/// latchkey clears it after `LATCHKEY_CLIP_SECONDS` (45) unless something else was copied since.
///
/// The secret reaches the clipboard program on its stdin, never in its argv, a file or the
/// environment. The clearer knows only a keyed hash of it: a random key and the HMAC-SHA256 of
/// the secret under it, given on its stdin. After the delay it reads the clipboard, and clears
/// it only when the HMAC of what it reads is the same. A plain hash would let anyone who read
/// it (a core file, /proc) try the few million six-digit codes; without the key, it tells
/// nothing. The clipboard programs fork a process that serves the selection: it and the
/// clearer get /dev/null for stdout and stderr, so a caller reading ours (`$(latchkey find
/// --clip …)`, a test) is not kept waiting, and neither keeps the secret variables of the
/// environment (LATCHKEY_PASSCODE …).
enum Clipboard {
    /// A clipboard program and how to copy, read and clear with it.
    struct Tool: Equatable {
        var name: String
        /// Its path, found on PATH.
        var path: String
        var copyArguments: [String]
        var pasteArguments: [String]
        /// How to clear: these arguments, or (nil) copying nothing.
        var clearArguments: [String]?
    }

    static let defaultSeconds = 45
    static let secondsVariable = "LATCHKEY_CLIP_SECONDS"

    /// How long the secret stays: LATCHKEY_CLIP_SECONDS (1 to 86400), else 45.
    /// - Throws: a usage error (exit 2) for another value.
    static func seconds(command: String) throws -> Int {
        guard let text = GlobalSettings.environment(secondsVariable) else { return defaultSeconds }
        guard let n = Int(text), (1...86_400).contains(n) else {
            throw UsageError("\(secondsVariable) must be a number of seconds from 1 to 86400", command: command)
        }
        return n
    }

    /// What `--clip` of `command` needs, checked before anything else is done: the delay
    /// (a usage error first), then the clipboard program.
    static func prepare(command: String) throws -> (tool: Tool, seconds: Int) {
        let seconds = try seconds(command: command)
        return (try tool(command: command), seconds)
    }

    /// The clipboard program for this session: wl-copy when WAYLAND_DISPLAY is set and it is
    /// installed, else xclip or xsel when DISPLAY is set.
    /// - Throws: errSecUnimplemented (exit 7) when no display is set, or no program for it is
    ///   installed (the message names the package to install); nothing has been done then.
    static func tool(command: String, environment: (String) -> String? = GlobalSettings.environment) throws -> Tool {
        let wayland = environment("WAYLAND_DISPLAY") != nil, x = environment("DISPLAY") != nil
        let path = environment("PATH") ?? "/usr/bin:/bin"
        if wayland, let copy = find("wl-copy", in: path), find("wl-paste", in: path) != nil {
            return Tool(
                name: "wl-copy", path: copy, copyArguments: [], pasteArguments: ["--no-newline"],
                clearArguments: ["--clear"])
        }
        if x {
            if let xclip = find("xclip", in: path) {
                return Tool(
                    name: "xclip", path: xclip, copyArguments: ["-selection", "clipboard", "-in"],
                    pasteArguments: ["-selection", "clipboard", "-out"], clearArguments: nil)
            }
            if let xsel = find("xsel", in: path) {
                return Tool(
                    name: "xsel", path: xsel, copyArguments: ["--clipboard", "--input"],
                    pasteArguments: ["--clipboard", "--output"], clearArguments: ["--clipboard", "--clear"])
            }
        }
        let what = "--clip (on \(command)) copies nothing"
        if !wayland && !x {
            throw KeychainError(
                .unimplemented,
                "\(what): there is no graphical session (neither WAYLAND_DISPLAY nor DISPLAY is set). Run it in the desktop's terminal, or leave out --clip to print to stdout"
            )
        }
        let install =
            wayland && !x
            ? "install wl-clipboard (wl-copy and wl-paste), e.g. 'apt install wl-clipboard'"
            : wayland
                ? "install wl-clipboard for Wayland, or xclip or xsel for X, e.g. 'apt install wl-clipboard'"
                : "install xclip or xsel, e.g. 'apt install xclip'"
        throw KeychainError(.unimplemented, "\(what): no clipboard program was found on PATH; \(install)")
    }

    /// The first executable file `name` in the directories of `path`.
    static func find(_ name: String, in path: String) -> String? {
        for dir in path.split(separator: ":", omittingEmptySubsequences: true) {
            let candidate = dir + "/" + name
            var st = stat()
            if stat(candidate, &st) == 0, st.st_mode & S_IFMT == S_IFREG, access(candidate, X_OK) == 0 {
                return candidate
            }
        }
        return nil
    }

    /// Copies `secret` with `tool`, starts the clearer, and says so on stderr.
    /// - Throws: errSecIO when the program cannot be started or fails (its status named).
    static func copy(_ secret: [UInt8], with tool: Tool, seconds: Int) throws {
        let status = try run(tool, tool.copyArguments, input: secret)
        guard status == 0 else {
            throw KeychainError(
                .io,
                "\(tool.name) \(describe(status)), so nothing was copied; check that the display it uses (\(display)) is running"
            )
        }
        var key = try Crypto.randomBytes(32)
        defer { Crypto.cleanse(&key) }
        var message = key + Crypto.hmacSHA256(key: key, secret)
        defer { Crypto.cleanse(&message) }
        try startClearer(tool: tool, message: message)
        Output.status("copied; clears in \(seconds) s")
    }

    static var display: String {
        GlobalSettings.environment("WAYLAND_DISPLAY").map { "WAYLAND_DISPLAY=\($0)" }
            ?? GlobalSettings.environment("DISPLAY").map { "DISPLAY=\($0)" } ?? "none"
    }

    static func describe(_ status: Int32) -> String {
        status & 0x7f == 0 ? "exited with status \((status >> 8) & 0xff)" : "was killed by signal \(status & 0x7f)"
    }

    /// The environment of the programs started here: ours without the secret variables.
    static func environment() -> [UnsafeMutablePointer<CChar>?] {
        var out: [UnsafeMutablePointer<CChar>?] = []
        var p = environ
        while let entry = p.pointee {
            let text = String(cString: entry)
            let name = text.split(separator: "=", maxSplits: 1).first.map(String.init) ?? text
            if !GlobalSettings.secretVariables.contains(name) { out.append(strdup(entry)) }
            p += 1
        }
        return out + [nil]
    }

    /// Starts `path` (`argv`) with `stdin` (-1: /dev/null) and `stdout` (-1: /dev/null) as
    /// its standard input and output, stderr on /dev/null, and the environment without the
    /// secret variables; `newSession` puts it in a session of its own.
    /// - Returns: its pid, or the errno of posix_spawn.
    static func spawn(
        _ path: String, _ arguments: [String], stdin: Int32 = -1, stdout: Int32 = -1, newSession: Bool = false
    ) -> Result<pid_t, SpawnError> {
        // Nothing of ours but the given pipes may reach it: the clipboard programs leave a
        // process serving the selection that outlives us, and it must not hold the keychain.
        AgentCommand.closeOnExecAll(except: [0, 1, 2])
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (fd, given, mode) in [(Int32(0), stdin, O_RDONLY), (1, stdout, O_WRONLY)] {
            if given >= 0 {
                posix_spawn_file_actions_adddup2(&actions, given, fd)
            } else {
                posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", mode, 0)
            }
        }
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        // POSIX_SPAWN_SETSID (glibc's 0x80; Swift's Glibc module leaves out the GNU names).
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | (newSession ? 0x80 : 0)))
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        var envp = environment()
        defer { for p in argv + envp { free(p) } }
        var pid: pid_t = 0
        let r = posix_spawn(&pid, path, &actions, &attributes, &argv, &envp)
        return r == 0 ? .success(pid) : .failure(SpawnError(code: r))
    }

    struct SpawnError: Error {
        var code: Int32
        var text: String { String(cString: strerror(code)) }
    }

    /// A pipe whose ends are closed on exec (spawn dups the one a child needs).
    static func makePipe(for what: String) throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw KeychainError(.io, "cannot create a pipe for \(what): \(String(cString: strerror(errno)))")
        }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (fds[0], fds[1])
    }

    /// Writes `bytes` to `fd` and closes it; a reader that went away is not a signal that
    /// kills us (SIGPIPE), only a short write.
    static func writeAndClose(_ fd: Int32, _ bytes: [UInt8]) {
        let previous = signal(SIGPIPE, SIG_IGN)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            offset += n
        }
        close(fd)
        signal(SIGPIPE, previous)
    }

    static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status
    }

    /// Runs `tool` with `arguments` and `input` on its stdin (nil: /dev/null); waits for it
    /// (not for the process it forks to serve the selection).
    /// - Returns: its raw wait status.
    static func run(_ tool: Tool, _ arguments: [String], input: [UInt8]?) throws -> Int32 {
        let p = input == nil ? nil : try makePipe(for: tool.name)
        let started = spawn(tool.path, [tool.name] + arguments, stdin: p?.read ?? -1)
        if let p { close(p.read) }
        switch started {
        case .failure(let e):
            if let p { close(p.write) }
            throw KeychainError(.io, "cannot run \(tool.path): \(e.text)")
        case .success(let pid):
            if let p, let input { writeAndClose(p.write, input) }
            return wait(pid)
        }
    }

    // MARK: The clearer

    /// The hidden command the clearer runs as (`latchkey clipboard-clear TOOL`).
    static let clearerCommand = "clipboard-clear"

    /// Starts `latchkey clipboard-clear TOOL` in a session of its own, with `message` (key ‖
    /// HMAC) on its stdin and /dev/null for stdout and stderr; does not wait for it.
    static func startClearer(tool: Tool, message: [UInt8]) throws {
        let p = try makePipe(for: "the clipboard's clearer")
        let exe = executablePath()
        let started = spawn(exe, ["latchkey", clearerCommand, tool.name], stdin: p.read, newSession: true)
        close(p.read)
        guard case .success = started else {
            close(p.write)
            if case .failure(let e) = started {
                throw KeychainError(.io, "cannot start the clipboard's clearer (\(exe)): \(e.text)")
            }
            return
        }
        writeAndClose(p.write, message)
    }

    /// This program's file: /proc/self/exe, else argv[0].
    static func executablePath() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if n > 0 { return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        return CommandLine.arguments[0]
    }

    /// The clearer (`latchkey clipboard-clear TOOL`, started by `startClearer`): reads the key
    /// and HMAC from stdin, waits, reads the clipboard and clears it if it still holds the
    /// secret. Exits 0 whatever happens: no one reads its status.
    static func runClearer(toolName: String) -> Never {
        _ = setsid()  // already a session leader when started by startClearer; by hand, now one
        _ = chdir("/")
        var message = [UInt8](repeating: 0, count: 64)
        var got = 0
        while got < 64 {
            let n = message.withUnsafeMutableBytes { read(0, $0.baseAddress! + got, 64 - got) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { exit(0) }
            got += n
        }
        close(0)
        guard let tool = try? Clipboard.tool(command: clearerCommand), tool.name == toolName,
            let seconds = try? Clipboard.seconds(command: clearerCommand)
        else { exit(0) }
        var request = timespec(tv_sec: seconds, tv_nsec: 0), remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
        // A clipboard program that hangs (a display gone) must not keep this process for ever.
        alarm(30)
        if var content = paste(tool) {
            let key = Array(message[0..<32]), mac = Array(message[32..<64])
            let same = Crypto.constantTimeEqual(Crypto.hmacSHA256(key: key, content), mac)
            Crypto.cleanse(&content)
            if same {
                // xclip has no "clear": it copies nothing instead.
                if let clear = tool.clearArguments {
                    _ = try? run(tool, clear, input: nil)
                } else {
                    _ = try? run(tool, tool.copyArguments, input: [])
                }
            }
        }
        Crypto.cleanse(&message)
        exit(0)
    }

    /// What the clipboard holds (at most 1 MiB: more than any secret copied here), or nil
    /// when it cannot be read.
    static func paste(_ tool: Tool) -> [UInt8]? {
        guard let p = try? makePipe(for: tool.name) else { return nil }
        defer { close(p.read) }
        let started = spawn(tool.path, [tool.name] + tool.pasteArguments, stdout: p.write)
        close(p.write)
        guard case .success(let pid) = started else { return nil }
        var content: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let limit = 1 << 20
        while content.count <= limit {
            let n = buffer.withUnsafeMutableBytes { read(p.read, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            content += buffer[0..<n]
        }
        Crypto.cleanse(&buffer)
        if content.count > limit { kill(pid, SIGKILL) }
        guard wait(pid) == 0, content.count <= limit else {
            Crypto.cleanse(&content)
            return nil
        }
        return content
    }
}
