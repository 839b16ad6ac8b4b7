#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
import Dispatch
import Latchkey
import LatchkeyCrypto
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A progress bar on stderr for long commands (import, compact, backup, restore):
///
///     import   [██████████░░░░░░░░░░]  45,000/100,000 items  31,250/s  0:01
///
/// Drawn only when stderr is a terminal (and TERM is not `dumb`), so scripts and pipes never see
/// it; never before `delay` has passed, so quick runs on small keychains show nothing; at most
/// ten times a second. `finish()` erases the line. Without a total it shows a spinner with the
/// count, rate and time. Safe to update from any thread, and `whileRunning` redraws (and polls)
/// from a background thread while a call that reports nothing runs.
///
/// ```swift
/// let progress = Progress("backup", total: items.count)
/// for item in items { try write(item); progress.advance() }
/// progress.finish()
/// ```
final class Progress: @unchecked Sendable {
    enum Unit: Sendable { case items, bytes }

    private let lock = Lock()
    private var label: String
    private var total: Int?
    private var completed = 0
    private let unit: Unit
    private let enabled: Bool
    private let delay: Double
    private let start = Progress.now()
    private var phaseStart = Progress.now()
    private var counting = true
    private var lastDraw = 0.0
    private var drawn = false
    private var finished = false
    /// A prompt is on stderr (`whilePrompting`): nothing is drawn until it has been answered.
    private var prompting = false
    private var spin = 0

    /// - Parameters:
    ///   - total: the count at 100%, or nil for a spinner.
    ///   - enabled: default: stderr is a terminal and TERM is not `dumb`.
    ///   - delay: seconds before the first drawing.
    init(
        _ label: String, total: Int? = nil, unit: Unit = .items, enabled: Bool = Progress.stderrCanShow,
        delay: Double = 0.4
    ) {
        self.label = label
        self.total = total
        self.unit = unit
        self.enabled = enabled
        self.delay = delay
    }

    /// Whether a bar may be drawn on stderr at all.
    static var stderrCanShow: Bool {
        Terminal.stderrIsTerminal && GlobalOptions.environment("TERM") != "dumb"
    }

    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    func advance(by n: Int = 1) { change { $0.completed += n } }
    func update(completed: Int) { change { $0.completed = completed } }
    /// A new phase: another label, total and count; its rate and time start from now.
    /// - Parameter counting: false for work that reports nothing until it is done (one
    ///   transaction): then only a spinner and the time are shown.
    func restart(_ label: String, total: Int?, completed: Int = 0, counting: Bool = true) {
        change {
            $0.label = label
            $0.total = total
            $0.completed = completed
            $0.counting = counting
            $0.phaseStart = Progress.now()
        }
    }

    private func change(_ body: (Progress) -> Void) {
        lock.lock()
        defer { lock.unlock() }
        body(self)
        drawLocked(force: false)
    }

    /// Erases the bar (if it was drawn). Call once, when the work is done or failed.
    func finish() {
        lock.lock()
        defer { lock.unlock() }
        if drawn && !finished { write("\r\u{1B}[K") }
        finished = true
        Progress.lineOnScreen.store(0)
    }

    /// Runs `body`, which asks something on the terminal (a password), with the bar erased
    /// and not drawn meanwhile; the bar comes back with the next update after it. `finish()`
    /// would end the bar for good: a restore whose backup password was asked never showed its
    /// progress again.
    func whilePrompting<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        if drawn && !finished {
            write("\r\u{1B}[K")
            drawn = false
        }
        prompting = true
        Progress.lineOnScreen.store(0)
        lock.unlock()
        defer {
            lock.lock()
            prompting = false
            lock.unlock()
        }
        return try body()
    }

    // The two flags a signal handler shares with the drawing thread are atomic
    // (`SignalSafeInt32`): plain variables written by one thread and read by a handler that
    // interrupts another are a data race (ThreadSanitizer reported it).

    /// 1 while a bar is on stderr, for a signal handler to erase it (see `Terminal.cleanUpOnSignals`).
    private static let lineOnScreen = SignalSafeInt32()

    /// Set by a signal handler: no bar is drawn any more (one being drawn may still finish its
    /// write before the handler's erase).
    private static let signalled = SignalSafeInt32()

    /// Initializes what `eraseFromSignalHandler` reads, before a handler can run (a static is
    /// made on first use, which a handler must not be).
    static func prepareForSignals() { _ = lineOnScreen; _ = signalled }

    /// Erases the bar, if one is on the screen, and stops further drawing. Async-signal-safe
    /// (atomic loads and stores, one write(2)).
    static func eraseFromSignalHandler() {
        signalled.store(1)
        guard lineOnScreen.load() != 0 else { return }
        let erase: StaticString = "\r\u{1B}[K"
        writeRaw(STDERR_FILENO, erase.utf8Start, erase.utf8CodeUnitCount)
    }

    /// Runs `body` while a background thread redraws the bar every 100 ms, first calling
    /// `tick` when given, which may update the count (for work that reports nothing itself,
    /// such as one transaction or a compaction).
    @discardableResult
    func whileRunning<T>(tick: (@Sendable (Progress) -> Void)? = nil, _ body: () throws -> T) rethrows -> T {
        guard enabled else { return try body() }
        let done = DispatchSemaphore(value: 0)
        let stop = AtomicFlag()
        let started = DetachedThread.start { [self] in
            while !stop.isSet {
                usleep(100_000)
                tick?(self)
                self.change { _ in }
            }
            done.signal()
        }
        if !started { done.signal() }
        defer {
            stop.set()
            done.wait()
        }
        return try body()
    }

    private func drawLocked(force: Bool) {
        guard enabled, !finished, !prompting, Progress.signalled.load() == 0 else { return }
        let t = Progress.now()
        guard t - start >= delay, force || t - lastDraw >= 0.1 else { return }
        lastDraw = t
        spin += 1
        let line = Progress.render(
            label: label, completed: counting ? completed : nil, total: total, unit: unit,
            elapsed: t - phaseStart, width: Terminal.columns(STDERR_FILENO) ?? 80,
            unicode: Progress.unicode, spin: spin)
        // Marked before it is written: a signal that arrives right after the write must find
        // the mark and erase the line.
        Progress.lineOnScreen.store(1)
        write("\r" + line + "\u{1B}[K")
        drawn = true
    }

    private func write(_ text: String) { Terminal.writeAll(STDERR_FILENO, Array(text.utf8)) }

    /// Whether the locale can show block characters.
    static let unicode: Bool = {
        let env = ProcessInfo.processInfo.environment
        let locale =
            env["LC_ALL"].flatMap { $0.isEmpty ? nil : $0 } ?? env["LC_CTYPE"].flatMap { $0.isEmpty ? nil : $0 } ?? env[
                "LANG"] ?? ""
        return locale.uppercased().contains("UTF-8") || locale.uppercased().contains("UTF8")
    }()

    /// One line of progress, at most `width` columns:
    /// `label  [####------]  4,500/10,000 items  1,500/s  0:03`; with no total
    /// `label  ⠋ 4,500 items  1,500/s  0:03`; with no count (nil) `label  ⠋  0:03`.
    static func render(
        label: String, completed: Int?, total: Int?, unit: Unit, elapsed: Double, width: Int,
        unicode: Bool = false, spin: Int = 0
    ) -> String {
        var tail = ""
        if let completed {
            if let total {
                tail += "  \(amount(completed, unit, withUnit: false))/\(amount(total, unit, withUnit: true))"
            } else {
                tail += "  " + amount(completed, unit, withUnit: true)
            }
            if elapsed >= 0.5 {
                let rate = Double(completed) / elapsed
                tail += "  " + (unit == .bytes ? amount(Int(rate), unit, withUnit: true) : grouped(Int(rate))) + "/s"
            }
        }
        let seconds = Int(elapsed)
        tail += "  " + TextEditing.format("%d:%02d", seconds / 60, seconds % 60)

        let head = label + "  "
        guard let total, let completed else {
            let frames = unicode ? ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"] : ["|", "/", "-", "\\"]
            return clip(head + frames[spin % frames.count] + tail, width)
        }
        let room = width - 1 - head.count - tail.count - 2
        let barWidth = min(40, room)
        guard barWidth >= 10 else { return clip(head + percent(completed, total) + tail, width) }
        let fraction = total > 0 ? min(1, Double(completed) / Double(total)) : 1
        let full = Int(fraction * Double(barWidth))
        let bar =
            String(repeating: unicode ? "█" : "#", count: full)
            + String(repeating: unicode ? "░" : "-", count: barWidth - full)
        return clip(head + "[" + bar + "]" + tail, width)
    }

    static func percent(_ completed: Int, _ total: Int) -> String {
        "\(total > 0 ? min(100, completed * 100 / total) : 100)%"
    }

    /// `12,345` items or `12.3 MiB`.
    static func amount(_ n: Int, _ unit: Unit, withUnit: Bool) -> String {
        switch unit {
        case .items: return grouped(n) + (withUnit ? " items" : "")
        case .bytes:
            let units = ["B", "KiB", "MiB", "GiB", "TiB"]
            var value = Double(n)
            var index = 0
            while value >= 1024 && index < units.count - 1 {
                value /= 1024
                index += 1
            }
            return index == 0 ? "\(n) B" : TextEditing.format("%.1f", value) + " " + units[index]
        }
    }

    /// `1234567` → `1,234,567`.
    static func grouped(_ n: Int) -> String {
        let digits = String(n.magnitude)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return (n < 0 ? "-" : "") + out
    }

    private static func clip(_ line: String, _ width: Int) -> String {
        line.count < width ? line : String(line.prefix(max(0, width - 1)))
    }
}

/// write(2), from a context (a signal handler) where nothing may allocate.
private func writeRaw(_ fd: Int32, _ bytes: UnsafePointer<UInt8>, _ count: Int) {
    _ = write(fd, bytes, count)
}

/// A flag set by one thread and read by another.
final class AtomicFlag: @unchecked Sendable {
    private let lock = Lock()
    private var value = false

    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }

    /// Sets the flag. - Returns: whether it was already set.
    @discardableResult
    func set() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        let was = value
        value = true
        return was
    }
}
