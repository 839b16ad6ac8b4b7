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
    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// Asks for a secret on `/dev/tty` with echo off. Returns nil when there is no terminal.
    /// - Throws: errSecUserCanceled when the input ends before a line (Ctrl-D).
    static func readSecret(prompt: String) throws -> [UInt8]? {
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        writeAll(fd, Array(prompt.utf8))

        var saved = termios()
        let canSilence = tcgetattr(fd, &saved) == 0
        if canSilence {
            var silent = saved
            silent.c_lflag &= ~tcflag_t(ECHO)
            ttyState = SavedTTY(fd: fd, attributes: saved)
            installRestoringHandlers()
            _ = tcsetattr(fd, TCSAFLUSH, &silent)
        }
        defer {
            if canSilence {
                _ = tcsetattr(fd, TCSAFLUSH, &saved)
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

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Turns off core dumps so a crash cannot write passcodes or class keys to disk.
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

private func installRestoringHandlers() {
    for sig in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] {
        signal(sig) { received in
            if var state = ttyState {
                _ = tcsetattr(state.fd, TCSAFLUSH, &state.attributes)
            }
            signal(received, SIG_DFL)
            raise(received)
        }
    }
}
