#if canImport(Glibc)
    import Glibc
#endif
import Dispatch
import Latchkey
import LatchkeySync

/// The agent's own syncs (spec/AGENT.md §8): a keychain it holds that is in a sync circle
/// (`<keychain>.sync/state` exists) syncs `syncDelay` seconds after a change made through the
/// agent, soon after it is opened or unlocked, and every `syncInterval` seconds. A failed sync
/// is tried again after 30 s, doubling up to `syncInterval`; its error is in the keychain's
/// sync status file, which `latchkey status` shows.
///
/// A sync holds the keychain (as a request does) only while it reads or writes it, never while
/// it talks to the remote, so an unreachable or slow remote delays no request. A keychain
/// never unlocked since the agent opened it is left for later: its sync identity is locked.
final class AgentSyncScheduler: @unchecked Sendable {
    struct Due {
        let held: AgentServer.Held
        var at: DispatchTime
        var failures: Int
    }

    let interval: Double
    let delay: Double
    private let wake = Condition()
    private var due: [String: Due] = [:]
    private var stopping = false
    private let log: (String) -> Void

    init(interval: Double, delay: Double, log: @escaping (String) -> Void) {
        self.interval = interval
        self.delay = delay
        self.log = log
    }

    static func isConfigured(_ path: String) -> Bool { SyncEngine.isConfigured(keychainPath: path) }

    /// A sync of `h` within `seconds`, unless one is due sooner; nothing when it does not sync.
    func schedule(_ h: AgentServer.Held, within seconds: Double) {
        guard Self.isConfigured(h.path) else { return }
        let at = DispatchTime.now() + seconds
        let key = h.path + "\u{0}" + h.device
        wake.lock()
        if var d = due[key], d.held === h {
            if at < d.at { d.at = at }
            due[key] = d
        } else {
            due[key] = Due(held: h, at: at, failures: 0)
        }
        wake.broadcast()
        wake.unlock()
    }

    func stop() {
        wake.lock()
        stopping = true
        due = [:]
        wake.broadcast()
        wake.unlock()
    }

    /// The scheduler's thread: runs the syncs that are due, one at a time.
    func loop() {
        while true {
            wake.lock()
            if stopping { wake.unlock(); return }
            let now = DispatchTime.now()
            let ready = due.filter { $0.value.at <= now }
            if ready.isEmpty {
                let next = due.values.map(\.at).min()
                let wait =
                    next.map { Double($0.uptimeNanoseconds &- now.uptimeNanoseconds) / 1e9 } ?? 60
                _ = wake.wait(seconds: max(0.01, min(wait, 60)))
                wake.unlock()
                continue
            }
            for key in ready.keys { due[key] = nil }
            wake.unlock()
            for (key, d) in ready.sorted(by: { $0.key < $1.key }) {
                let next = run(d)
                wake.lock()
                if !stopping, let next, due[key] == nil || due[key]!.at > next.at { due[key] = next }
                wake.unlock()
            }
        }
    }

    /// Runs one sync. - Returns: when the next is due (nil: the keychain is no longer synced).
    private func run(_ d: Due) -> Due? {
        let h = d.held
        guard Self.isConfigured(h.path) else { return nil }
        var next = d
        do {
            guard let report = try Self.sync(h) else {
                // Not unlocked since the agent opened it: the unlock schedules the next one.
                return nil
            }
            next.failures = 0
            next.at = .now() + interval
            if report.sentPuts + report.sentDeletes + report.receivedPuts + report.receivedDeletes > 0 {
                log(
                    "synced \(h.path): sent \(report.sentPuts + report.sentDeletes), received \(report.receivedPuts + report.receivedDeletes)"
                )
            }
        } catch let e as KeychainError where e.status == .notAvailable {
            return nil  // dropped: the agent stops, or holds another keychain at this path
        } catch {
            next.failures += 1
            let backoff = min(interval, 30 * Double(1 << min(next.failures - 1, 16)))
            next.at = .now() + backoff
            log("sync of \(h.path) failed (again in \(Int(backoff)) s): \(error)")
        }
        return next
    }

    /// A sync of a held keychain; nil when it has not been unlocked since the agent opened it.
    static func sync(_ h: AgentServer.Held) throws -> SyncReport? {
        let kc = try h.acquire()
        let engine: SyncEngine
        do {
            defer { h.release() }
            guard kc.store.unlockedOnce || !kc.hasPasscode else { return nil }
            engine = try SyncEngine(keychain: Keychain(backend: kc))
        }
        engine.withKeychain = { body in
            let now = try h.acquire()
            defer { h.release() }
            guard now === kc else {
                throw KeychainError(.notAvailable, "\(h.path) was replaced while it synced")
            }
            try body()
        }
        return try engine.sync()
    }
}
