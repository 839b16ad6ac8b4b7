#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
import Latchkey

/// The controlling terminal: whether the standard streams are terminals, and prompts for
/// secrets on `/dev/tty` with echo off (never on stdout, so `find` output stays clean).
enum Terminal {
    static var stdinIsTerminal: Bool { isatty(STDIN_FILENO) == 1 }
    static var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }
    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// Whether the process started with stdin closed (`<&-`); see `guardStandardStreams`.
    nonisolated(unsafe) private(set) static var stdinWasClosed = false

    /// Puts /dev/null on any of fds 0–2 that the process was started without, so that no file
    /// the keychain opens later can land on them: error text written to a closed stderr would
    /// otherwise go into the keychain file, and a closed stdin would read it as a secret.
    /// Remembers a closed stdin, so that commands that need it say so (`requireStdin`).
    static func guardStandardStreams() {
        for fd in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] where fcntl(fd, F_GETFD) == -1 && errno == EBADF {
            if fd == STDIN_FILENO { stdinWasClosed = true }
            let null = open("/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY)
            if null >= 0 && null != fd {
                _ = dup2(null, fd)
                close(null)
            }
        }
    }

    /// Throws `message` as a usage error when stdin was closed.
    static func requireStdin(_ message: @autoclosure () -> String, command: String) throws {
        if stdinWasClosed { throw UsageError(message(), command: command) }
    }

    /// Columns of the terminal on `fd`, or nil when it is not one.
    static func columns(_ fd: Int32) -> Int? {
        guard isatty(fd) == 1 else { return nil }
        var size = winsize()
        if ioctl(fd, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        if let text = GlobalOptions.environment("COLUMNS"), let n = Int(text), n > 0 { return n }
        return 80
    }

    /// `given`, or else the secret asked once when stdin is a terminal; nil when neither.
    static func secret(given: [UInt8]?, prompt: String) throws -> [UInt8]? {
        if let given { return given }
        guard stdinIsTerminal else { return nil }
        return try readSecret(prompt: prompt)
    }

    /// A new passcode or password: `given`, or else asked twice when stdin is a terminal; nil
    /// when neither.
    /// - Throws: errSecParam with `mismatch` when the two entries differ, with `empty` when the
    ///   secret is empty.
    static func newSecret(given: [UInt8]?, prompt: String, mismatch: String, empty: String) throws -> [UInt8]? {
        var secret = given
        if secret == nil, stdinIsTerminal {
            guard let first = try readSecret(prompt: prompt) else { return nil }
            let second = try readSecret(prompt: "Repeat it: ")
            guard first == second else { throw KeychainError(.param, mismatch) }
            secret = first
        }
        if let s = secret, s.isEmpty { throw KeychainError(.param, empty) }
        return secret
    }

    /// Asks for a secret on `/dev/tty` with echo off. Returns nil when there is no terminal.
    /// - Throws: errSecUserCanceled when the input ends before a line (Ctrl-D).
    static func readSecret(prompt: String) throws -> [UInt8]? {
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }

        // Echo off first, then the prompt (as getpass does): what was typed before the prompt
        // is discarded, what is typed once it shows is read, however fast it comes.
        var saved = termios()
        let canSilence = tcgetattr(fd, &saved) == 0
        if canSilence {
            var silent = saved
            silent.c_lflag &= ~tcflag_t(ECHO)
            ttyState = SavedTTY(fd: fd, attributes: saved)
            installRestoringHandlers()
            _ = tcsetattr(fd, TCSAFLUSH, &silent)
        }
        writeAll(fd, Array(prompt.utf8))
        defer {
            if canSilence {
                // Without discarding input: an answer to the next prompt may already be typed.
                _ = tcsetattr(fd, TCSADRAIN, &saved)
                ttyState = nil
            }
            writeAll(fd, Array("\n".utf8))
        }

        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = read(fd, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                if line.isEmpty { throw KeychainError(.userCanceled, "no passcode was entered") }
                break
            }
            if byte == UInt8(ascii: "\n") { break }
            line.append(byte)
        }
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        return line
    }

    /// Asks a yes/no question on `/dev/tty` (with echo). True only for `y` or `yes` (any
    /// case); false for anything else, the end of input, or no terminal.
    static func confirm(prompt: String) -> Bool {
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        writeAll(fd, Array(prompt.utf8))
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count < 64 {
            let n = read(fd, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 || byte == UInt8(ascii: "\n") { break }
            line.append(byte)
        }
        let answer = String(decoding: line, as: UTF8.self).lowercased().filter { $0 != " " && $0 != "\r" && $0 != "\t" }
        return answer == "y" || answer == "yes"
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Turns off core dumps (soft and hard limit 0, so no child can raise them again) so a crash
    /// cannot write passcodes, class keys or item data to disk. Called first thing in `main`,
    /// before any command is parsed.
    static func disableCoreDumps() {
        var limit = rlimit(rlim_cur: 0, rlim_max: 0)
        #if canImport(Glibc)
            _ = setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &limit)
        #else
            _ = setrlimit(RLIMIT_CORE, &limit)
        #endif
    }
}

/// The terminal settings to put back when a signal arrives while echo is off.
private struct SavedTTY {
    var fd: Int32
    var attributes: termios
}

nonisolated(unsafe) private var ttyState: SavedTTY?

extension Terminal {
    /// Makes SIGINT, SIGTERM, SIGHUP and SIGQUIT leave nothing behind before they end the
    /// process as they would have: terminal echo is put back, a progress bar is erased, and the
    /// temporary files of a backup or restore are removed (`InterruptCleanup`). Commands that
    /// write such files call it first; a prompt for a secret calls it too.
    static func cleanUpOnSignals() {
        installRestoringHandlers()
    }
}

private func installRestoringHandlers() {
    InterruptCleanup.prepare()
    Progress.prepareForSignals()
    for sig in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] {
        // Only what is async-signal-safe: tcsetattr, write, unlink, rmdir, signal, raise.
        signal(sig) { received in
            if var state = ttyState {
                _ = tcsetattr(state.fd, TCSAFLUSH, &state.attributes)
            }
            Progress.eraseFromSignalHandler()
            InterruptCleanup.removeAll()
            signal(received, SIG_DFL)
            raise(received)
        }
    }
}
