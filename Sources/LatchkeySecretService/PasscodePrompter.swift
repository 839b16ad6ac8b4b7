import LatchkeyCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// Who the provider asks for the keychain's passcode when a client's Unlock needs it
/// (spec/SECRET-SERVICE.md §4): a pinentry program when one is configured, else the terminal the
/// provider runs on, else nobody, and then Unlock fails at once with a message that says how
/// to unlock (`latchkey unlock`).
public enum PasscodePrompter: Sendable {
    /// A pinentry program (the Assuan protocol of GnuPG's pinentry): its path.
    case pinentry(String)
    /// The provider's controlling terminal (/dev/tty).
    case terminal
    case nobody

    /// The pinentry named by `configured` (or LATCHKEY_PINENTRY), else the terminal when the
    /// process has one, else nobody.
    public static func choose(configured: String?) -> PasscodePrompter {
        if let p = configured ?? getenv("LATCHKEY_PINENTRY").map({ String(cString: $0) }), !p.isEmpty {
            return .pinentry(p)
        }
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        if fd >= 0 {
            close(fd)
            return .terminal
        }
        return .nobody
    }

    /// The passcode the person typed, or nil when they cancelled or nobody could be asked.
    /// `error` is shown above the prompt (a wrong passcode before).
    func ask(description: String, error: String?) -> [UInt8]? {
        switch self {
        case .pinentry(let path): return Pinentry.ask(path: path, description: description, error: error)
        case .terminal: return TerminalPrompt.ask(description: description, error: error)
        case .nobody: return nil
        }
    }
}

/// One exchange with a pinentry program: its commands written at once, its answers read to
/// the end. The passcode travels only through the pipe.
enum Pinentry {
    static func escape(_ s: String) -> String {
        var out: [UInt8] = []
        for b in s.utf8 {
            switch b {
            case 0x25: out += Array("%25".utf8)
            case 0x0A: out += Array("%0A".utf8)
            case 0x0D: out += Array("%0D".utf8)
            default: out.append(b)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func unescape(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        var i = bytes.startIndex
        func hex(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: return c - 0x30
            case 0x41...0x46: return c - 0x41 + 10
            case 0x61...0x66: return c - 0x61 + 10
            default: return nil
            }
        }
        while i < bytes.endIndex {
            if bytes[i] == 0x25, i + 2 < bytes.endIndex, let h = hex(bytes[i + 1]), let l = hex(bytes[i + 2]) {
                out.append(h << 4 | l)
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return out
    }

    static func ask(path: String, description: String, error: String?) -> [UInt8]? {
        var script = "SETTITLE Latchkey\nSETDESC \(escape(description))\nSETPROMPT Passcode:\n"
        if let error { script += "SETERROR \(escape(error))\n" }
        script += "GETPIN\nBYE\n"
        guard var output = ChildProcess.exchange(path: path, input: Array(script.utf8)) else { return nil }
        defer { Crypto.cleanse(&output) }
        // Answers: "OK …" lines, "D <data>" for the PIN, "ERR …" (cancelled) instead.
        var pin: [UInt8]?
        for line in output.split(separator: 0x0A, omittingEmptySubsequences: true) {
            if line.starts(with: Array("D ".utf8)) { pin = unescape(line.dropFirst(2)) }
            if line.starts(with: Array("ERR".utf8)) && pin == nil { return nil }
        }
        return pin
    }
}

/// Asks on the controlling terminal, echo off.
enum TerminalPrompt {
    static func ask(description: String, error: String?) -> [UInt8]? {
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var old = termios()
        let isTTY = tcgetattr(fd, &old) == 0
        var text = "\n" + description + "\n"
        if let error { text += error + "\n" }
        text += "Passcode: "
        _ = text.withCString { write(fd, $0, strlen($0)) }
        if isTTY {
            var quiet = old
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(fd, TCSAFLUSH, &quiet)
        }
        defer {
            if isTTY { tcsetattr(fd, TCSADRAIN, &old) }
            _ = write(fd, "\n", 1)
        }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1 {
            if byte == 0x0A { return line }
            line.append(byte)
            if line.count > 4096 {
                Crypto.cleanse(&line)
                return nil
            }
        }
        Crypto.cleanse(&line)
        return nil
    }
}

/// A child process fed `input` on its stdin whose stdout is read to the end (stderr is
/// inherited). nil when it cannot be started or does not exit 0.
enum ChildProcess {
    static func exchange(path: String, input: [UInt8]) -> [UInt8]? {
        var toChild: [Int32] = [-1, -1]
        var fromChild: [Int32] = [-1, -1]
        guard cloexecPipe(&toChild) else { return nil }
        guard cloexecPipe(&fromChild) else {
            close(toChild[0])
            close(toChild[1])
            return nil
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup(path), nil]
        defer { for a in argv { free(a) } }
        let r = posix_spawnp(&pid, path, &actions, nil, argv, environ)
        close(toChild[0])
        close(fromChild[1])
        guard r == 0 else {
            close(toChild[1])
            close(fromChild[0])
            return nil
        }
        // A child that stops reading must not kill the provider with SIGPIPE: MSG_NOSIGNAL is
        // for sockets only, so the writes go through with SIGPIPE ignored process-wide
        // (`SecretServiceProvider.start` ignores it).
        input.withUnsafeBytes { b in
            var off = 0
            while off < b.count {
                let n = write(toChild[1], b.baseAddress! + off, b.count - off)
                if n <= 0 { break }
                off += n
            }
        }
        close(toChild[1])
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fromChild[0], &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            out += buffer[0..<n]
            if out.count > 1 << 20 { break }
        }
        Crypto.cleanse(&buffer)
        close(fromChild[0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return out
    }
}

/// pipe(2) with both ends close-on-exec (Glibc's module does not declare pipe2).
func cloexecPipe(_ fds: inout [Int32], nonblocking: Bool = false) -> Bool {
    guard pipe(&fds) == 0 else { return false }
    for fd in fds {
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        if nonblocking { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
    }
    return true
}
