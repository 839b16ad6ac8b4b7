#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Testing

/// Several `latchkey` processes at once on one keychain, doing add, update, delete and find.
///
/// Each worker owns some accounts that no other worker touches: for those every result, and
/// the final contents, must be exactly what the worker's own sequence of operations gives
/// (nothing lost, nothing resurrected). A few "shared" accounts are contended by every worker
/// with unique values; for those the observed results and the final state must be those of
/// some serial order of all the operations that respects real time (an operation that ended
/// before another began comes first): the history is linearizable. At the end the keychain
/// verifies and no account appears twice (no duplicate unique keys).
///
/// LATCHKEY_CONCURRENCY_OPS sets the number of operations (default 80; `make
/// concurrency-test` asks for 400) and LATCHKEY_CONCURRENCY_WORKERS the processes at once (4).
@Suite(.serialized) struct ConcurrencyTests {
    enum Kind: String { case add, update, delete, find }
    enum Outcome: Equatable { case ok, duplicate, notFound, found(String) }

    /// One operation on a shared account, with when it was started and when it was seen to end.
    struct Event {
        var key: String
        var kind: Kind
        var value: String
        var outcome: Outcome
        var start: Int64
        var end: Int64
    }

    final class Recorder: @unchecked Sendable {
        private let lock = NSLock()
        private(set) var events: [Event] = []
        private(set) var problems: [String] = []
        private(set) var finals: [String: String] = [:]
        func record(_ e: Event) { lock.lock(); events.append(e); lock.unlock() }
        func problem(_ p: String) { lock.lock(); problems.append(p); lock.unlock() }
        func own(_ items: [String: String]) { lock.lock(); finals.merge(items) { $1 }; lock.unlock() }
    }

    /// Where the processes run: the sandbox's directory and environment.
    struct Place: Sendable {
        var directory: URL
        var environment: [String: String]
    }

    /// Runs one CLI operation and maps its exit status; anything unexpected is a failure.
    static func run(_ sandbox: Place, _ kind: Kind, account: String, value: String) throws -> Outcome {
        let args: [String]
        switch kind {
        case .add: args = ["add", "--account", account, "--service", "race"]
        case .update: args = ["update", "--account", account, "--service", "race", "--set-data"]
        case .delete: args = ["delete", "--account", account, "--service", "race"]
        case .find: args = ["find", "--account", account, "--service", "race"]
        }
        let p = try Spawned(args, environment: sandbox.environment, stdin: Array(value.utf8), in: sandbox.directory)
        switch (p.wait(), kind) {
        case (.exited(0), .find): return .found(String(decoding: p.stdout, as: UTF8.self))
        case (.exited(0), _): return .ok
        case (.exited(1), .update), (.exited(1), .delete), (.exited(1), .find): return .notFound
        case (.exited(3), .add): return .duplicate
        case (let end, _): throw CLITestError("\(kind) \(account) ended with \(end): \(p.stderr)")
        }
    }

    /// A worker: its own accounts (checked against its own model at every step) and the shared ones.
    static func worker(_ w: Int, operations: Int, shared: [String], sandbox: Place, recorder: Recorder) {
        var rng = SystemRandomNumberGenerator()
        var own: [String: String] = [:]
        let accounts = (0..<3).map { "w\(w)-a\($0)" }
        for i in 0..<operations {
            let value = "w\(w)-\(i)"
            let kind = [Kind.add, .update, .delete, .find, .add, .update].randomElement(using: &rng)!
            do {
                if Bool.random(using: &rng) {
                    let account = accounts.randomElement(using: &rng)!
                    let outcome = try run(sandbox, kind, account: account, value: value)
                    let expected: Outcome
                    switch kind {
                    case .add: expected = own[account] == nil ? .ok : .duplicate
                    case .update, .delete: expected = own[account] == nil ? .notFound : .ok
                    case .find: expected = own[account].map { .found($0) } ?? .notFound
                    }
                    if outcome != expected {
                        recorder.problem(
                            "worker \(w) op \(i): \(kind) of its own \(account) gave \(outcome), expected \(expected)")
                    }
                    switch (kind, outcome) {
                    case (.add, .ok), (.update, .ok): own[account] = value
                    case (.delete, .ok): own[account] = nil
                    default: break
                    }
                } else {
                    let key = shared.randomElement(using: &rng)!
                    let start = monotonicMicroseconds()
                    let outcome = try run(sandbox, kind, account: key, value: value)
                    recorder.record(
                        Event(
                            key: key, kind: kind, value: value, outcome: outcome, start: start,
                            end: monotonicMicroseconds()))
                }
            } catch {
                recorder.problem("worker \(w) op \(i): \(error)")
            }
        }
        recorder.own(own)
    }

    /// Whether the events on one key have a serial order that respects real time, gives every
    /// observed outcome, and ends in `final` (Wing & Gong's search with memoization).
    static func linearizable(_ events: [Event], initial: String? = nil, final: String?) -> Bool {
        let n = events.count
        let words = (n + 63) / 64
        struct Visit: Hashable { var done: [UInt64]; var state: String? }
        var seen = Set<Visit>()
        func apply(_ e: Event, _ state: String?) -> String?? {
            switch (e.kind, e.outcome) {
            case (.add, .ok): return state == nil ? .some(e.value) : nil
            case (.add, .duplicate): return state != nil ? .some(state) : nil
            case (.update, .ok): return state != nil ? .some(e.value) : nil
            case (.delete, .ok): return state != nil ? .some(nil) : nil
            case (.update, .notFound), (.delete, .notFound), (.find, .notFound): return state == nil ? .some(nil) : nil
            case (.find, .found(let v)): return state == v ? .some(state) : nil
            default: return nil
            }
        }
        var done = [UInt64](repeating: 0, count: words)
        func isDone(_ i: Int) -> Bool { done[i / 64] & (1 << UInt64(i % 64)) != 0 }
        func search(_ state: String?, _ count: Int) -> Bool {
            if count == n { return state == final }
            guard seen.insert(Visit(done: done, state: state)).inserted else { return false }
            // The earliest end among the pending events bounds which of them may go next.
            var horizon = Int64.max
            for i in 0..<n where !isDone(i) { horizon = min(horizon, events[i].end) }
            for i in 0..<n where !isDone(i) && events[i].start <= horizon {
                guard let next = apply(events[i], state) else { continue }
                done[i / 64] |= 1 << UInt64(i % 64)
                if search(next, count + 1) { return true }
                done[i / 64] &= ~(1 << UInt64(i % 64))
            }
            return false
        }
        return search(initial, 0)
    }

    @Test func linearizability_checkerRejectsALostUpdate() {
        // Sanity check of the checker: a find that returns a value overwritten before it began.
        let e = [
            Event(key: "k", kind: .add, value: "a", outcome: .ok, start: 0, end: 10),
            Event(key: "k", kind: .update, value: "b", outcome: .ok, start: 20, end: 30),
            Event(key: "k", kind: .find, value: "", outcome: .found("a"), start: 40, end: 50)
        ]
        #expect(!ConcurrencyTests.linearizable(e, final: "b"))
        var overlapping = e
        overlapping[2].start = 25
        #expect(ConcurrencyTests.linearizable(overlapping, final: "b"))
        #expect(!ConcurrencyTests.linearizable(e.dropLast().map { $0 }, final: "a"))
    }

    @Test func processesRacingOnOneKeychain_areLinearizableAndLoseNothing() throws {
        let total = environmentCount("LATCHKEY_CONCURRENCY_OPS", default: 80)
        let workers = environmentCount("LATCHKEY_CONCURRENCY_WORKERS", default: 4)
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let shared = ["shared-0", "shared-1"]
        let recorder = Recorder()
        let place = Place(directory: sandbox.directory, environment: sandbox.environment)
        let started = Date()
        DispatchQueue.concurrentPerform(iterations: workers) { w in
            ConcurrencyTests.worker(w, operations: total / workers, shared: shared, sandbox: place, recorder: recorder)
        }
        let elapsed = Date().timeIntervalSince(started)
        for p in recorder.problems { Issue.record(Comment(rawValue: p)) }

        let verify = try sandbox.run(["verify"])
        #expect(verify.status == 0, "\(verify.out) \(verify.stderr)")
        let listed = try sandbox.run(["find", "--service", "race", "--limit", "all", "--return", "all", "--json"])
        var final: [String: String] = [:]
        if listed.status == 0 {
            let array = try #require(try listed.json() as? [[String: Any]])
            for object in array {
                let account = try #require(object["acct"] as? String)
                let data = try #require((object["v_Data"] as? String).flatMap { Data(base64Encoded: $0) })
                #expect(final[account] == nil, "two items for the account \(account): a duplicate unique key")
                final[account] = String(decoding: data, as: UTF8.self)
            }
        } else {
            #expect(listed.status == 1, "\(listed.stderr)")
        }
        var ownFinal = final
        for key in shared { ownFinal[key] = nil }
        #expect(ownFinal == recorder.finals, "the workers' own accounts differ from what their operations left")
        var checked = 0
        for key in shared {
            let events = recorder.events.filter { $0.key == key }.sorted { $0.start < $1.start }
            checked += events.count
            #expect(
                ConcurrencyTests.linearizable(events, final: final[key]),
                "the \(events.count) operations on \(key) have no serial order that gives what was observed (final \(String(describing: final[key])))"
            )
        }
        print(
            "ConcurrencyTests: \(total / workers * workers) operations by \(workers) processes at once in \(String(format: "%.1f", elapsed)) s; \(checked) on shared accounts checked for linearizability; \(recorder.events.filter { $0.outcome == .ok }.count) of those succeeded"
        )
    }
}
