#if canImport(Glibc)
    import Glibc
#endif
import Foundation

/// A `latchkey` process started with posix_spawn, so a test can kill it at a chosen moment
/// (Foundation's Process adds threads and run-loop latency between "started" and "running").
/// stdin comes from a file; stdout and stderr go to files in the sandbox directory.
final class Spawned {
    /// How a process ended.
    enum End: Equatable {
        case exited(Int32)
        case killed(Int32)
    }

    let pid: pid_t
    private let outPath: String
    private let errPath: String
    private let inPath: String
    private(set) var end: End?

    /// Starts `latchkey args…` with `environment` (exactly: nothing is inherited). With
    /// `stderrTerminal` (a pseudo-terminal's path) stderr goes there instead of to a file.
    init(
        _ args: [String], environment: [String: String], stdin: [UInt8] = [], in directory: URL,
        stderrTerminal: String? = nil
    ) throws {
        let binary = try CLISandbox.binary().path
        let id = UUID().uuidString
        inPath = directory.appendingPathComponent("in-\(id)").path
        outPath = directory.appendingPathComponent("out-\(id)").path
        errPath = directory.appendingPathComponent("err-\(id)").path
        try Data(stdin).write(to: URL(fileURLWithPath: inPath))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, inPath, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        if let stderrTerminal {
            posix_spawn_file_actions_addopen(&actions, 2, stderrTerminal, O_RDWR | O_NOCTTY, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        }

        let argv = ([binary] + args).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        // The child starts with no signal blocked and the default action for the signals a
        // test sends: the test's own thread may block them (the dispatch threads tests run on
        // do), and a blocked mask is inherited across exec.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), defaults = sigset_t()
        sigemptyset(&none)
        sigemptyset(&defaults)
        for sig in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] { sigaddset(&defaults, sig) }
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, binary, &actions, &attributes, argv, envp)
        guard rc == 0 else { throw CLITestError("posix_spawn \(binary): \(String(cString: strerror(rc)))") }
        self.pid = pid
    }

    deinit {
        if end == nil { _ = Glibc.kill(pid, SIGKILL); _ = wait() }
        for p in [inPath, outPath, errPath] { unlink(p) }
    }

    /// Whether the process has not ended yet (reaps it when it has).
    var running: Bool {
        if end != nil { return false }
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        guard r == pid else { return r == 0 }
        let signal = status & 0x7f
        end = signal == 0 ? .exited((status >> 8) & 0xff) : .killed(signal)
        return false
    }

    /// Sends SIGKILL (a no-op when the process has already exited).
    func kill() { _ = Glibc.kill(pid, SIGKILL) }

    /// Waits for the end of the process.
    @discardableResult
    func wait() -> End {
        if let end { return end }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let signal = status & 0x7f
        let e: End = signal == 0 ? .exited((status >> 8) & 0xff) : .killed(signal)
        end = e
        return e
    }

    /// Waits for the end of the process; returns it with the process's peak resident set size
    /// in bytes: the largest VmHWM of /proc/PID/status read while it ran (read every 2 ms; the
    /// high-water mark only grows, so a peak is seen unless it comes in the process's last
    /// moments). ru_maxrss cannot tell: posix_spawn's child shares the test process's memory
    /// until exec, and the kernel carries that high-water mark into the new program's.
    func waitWithPeakRSS() -> (End, Int) {
        precondition(end == nil, "the process was already reaped")
        var peakKiB = 0
        let statusPath = "/proc/\(pid)/status"
        while true {
            if let text = try? String(contentsOfFile: statusPath, encoding: .utf8),
                let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
                let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
            {
                peakKiB = max(peakKiB, kib)
            }
            if !running { break }
            pause(microseconds: 2_000)
        }
        return (end!, peakKiB * 1024)
    }

    var stdout: [UInt8] { (try? [UInt8](Data(contentsOf: URL(fileURLWithPath: outPath)))) ?? [] }
    var stderr: String { (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "" }
}

/// Sleeps for `microseconds`.
func pause(microseconds: Int) {
    guard microseconds > 0 else { return }
    var t = timespec(tv_sec: microseconds / 1_000_000, tv_nsec: (microseconds % 1_000_000) * 1000)
    var rest = timespec()
    while nanosleep(&t, &rest) != 0 && errno == EINTR { t = rest }
}

/// Monotonic time in microseconds.
func monotonicMicroseconds() -> Int64 {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Int64(t.tv_sec) * 1_000_000 + Int64(t.tv_nsec) / 1000
}

/// The test's knob from the environment (e.g. LATCHKEY_KILLS for `make kill-test`).
func environmentCount(_ name: String, default value: Int) -> Int {
    ProcessInfo.processInfo.environment[name].flatMap { Int($0) } ?? value
}
