// The library benchmarks of issue 8: every public operation of Latchkey at each size of
// BENCH_LIB_SIZES (default 1k, 10k, 100k; `make bench-lib`, results in docs/RESULTS.md).
//
// Each benchmark runs in a process of its own (package-benchmark's rule), on a keychain of N
// generic passwords populated once per size (Fixtures.swift). Names are numbered so that the
// table reads in this order and "01 populate" builds the size's keychain before the others.
//
// Metrics: wall clock, mallocs, peak RSS of the process (setup included: the open keychain),
// throughput where an operation is small; "05 memory" adds the RSS that opening and unlocking
// N items costs, per item.
import Benchmark
import Foundation
import Latchkey
import LatchkeyBackup
import LatchkeyBenchFixtures

#if canImport(Glibc)
    import Glibc
#endif

/// What a benchmark's setup hands to its body (one benchmark per process).
final class State: @unchecked Sendable {
    var kc: Keychain?
    var paths: Fixture.Paths?
    var counter = 0
    var fd: Int32 = -1
    var record: [UInt8] = []
    var offset: off_t = 0
    var archive = ""
}

struct Budget {
    var warmup: Int
    var maxIterations: Int
    var maxDuration: Duration
    var timeUnits: BenchmarkTimeUnits = .microseconds

    /// Microsecond operations: many samples.
    static var micro: Budget { Budget(warmup: 10, maxIterations: 100_000, maxDuration: .seconds(2)) }
    /// One fsync each: a few hundred samples.
    static func durable(_ n: Int) -> Budget {
        Budget(warmup: 3, maxIterations: min(300, n / 2), maxDuration: .seconds(3))
    }
    /// Whole-keychain operations: a handful of samples, fewer as the keychain grows.
    static func whole(_ n: Int) -> Budget {
        Budget(
            warmup: n >= 1_000_000 ? 0 : 1, maxIterations: n >= 1_000_000 ? 3 : n >= 100_000 ? 10 : 30,
            maxDuration: .seconds(5), timeUnits: .milliseconds)
    }
    static var once: Budget {
        Budget(warmup: 0, maxIterations: 1, maxDuration: .seconds(600), timeUnits: .milliseconds)
    }
}

let standardMetrics: [BenchmarkMetric] = [.wallClock, .mallocCountTotal, .peakMemoryResident]
let rssPerItem = BenchmarkMetric.custom("RSS per item (bytes)", polarity: .prefersSmaller, useScalingFactor: false)
let rssGrowth = BenchmarkMetric.custom("RSS growth (KiB)", polarity: .prefersSmaller, useScalingFactor: false)
let rssAnonPerItem = BenchmarkMetric.custom(
    "RSS anonymous per item (bytes)", polarity: .prefersSmaller, useScalingFactor: false)
let addMicros = BenchmarkMetric.custom("add (us)", polarity: .prefersSmaller, useScalingFactor: false)
let rawMicros = BenchmarkMetric.custom("raw append+fsync (us)", polarity: .prefersSmaller, useScalingFactor: false)
let addOverRaw = BenchmarkMetric.custom("add / raw (%)", polarity: .prefersSmaller, useScalingFactor: false)

/// Registers one benchmark for `items` items. `body` runs once per iteration; it may call
/// `startMeasurement`/`stopMeasurement` to leave per-iteration preparation out.
func bench(
    _ name: String, items: Int, _ budget: Budget, metrics: [BenchmarkMetric] = standardMetrics,
    setup: @escaping (State) throws -> Void = { _ in },
    teardown: @escaping (State) throws -> Void = { _ in },
    body: @escaping (Benchmark, State) throws -> Void
) {
    let state = State()
    Benchmark(
        name,
        configuration: .init(
            metrics: metrics, tags: ["items": "\(items)"], timeUnits: budget.timeUnits,
            units: [.mallocCountTotal: .count, .peakMemoryResident: .mega, .throughput: .count],
            warmupIterations: budget.warmup,
            maxDuration: budget.maxDuration, maxIterations: budget.maxIterations,
            setup: { try setup(state) },
            teardown: {
                try teardown(state)
                state.kc = nil
                if state.fd >= 0 { close(state.fd) }
                Fixture.remove(state.paths)
            }),
        closure: { (benchmark: Benchmark) throws -> Void in try body(benchmark, state) })
}

func fileSize(_ path: String) throws -> off_t {
    var st = stat()
    guard stat(path, &st) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    return st.st_size
}

/// Opens a work copy and unlocks it.
func openWork(_ s: State, items: Int, name: String) throws {
    let p = try Fixture.workCopy(items: items, name: name)
    s.paths = p
    let kc = try Keychain.open(path: p.keychain, devicePath: p.device)
    try kc.unlock(passcode: Fixture.passcode)
    s.kc = kc
}

func newItem(_ tag: String, _ i: Int) -> NewItem {
    NewItem(
        .genericPassword,
        attributes: [
            "acct": .string("new-\(tag)-\(i)@example.com"), "svce": .string("service-new"),
            "agrp": .string("bench.app"), "labl": .string("Added item \(i)")
        ],
        data: Fixture.secret, protection: .afterFirstUnlock)
}

let benchmarks: @Sendable () -> Void = {
    for n in Fixture.sizes {
        bench(
            "01 populate (add(contentsOf:), 10k per transaction)", items: n, .once,
            metrics: [.wallClock, .peakMemoryResident],
            setup: { _ in try? FileManager.default.removeItem(atPath: Fixture.root + "/\(n)") }
        ) { _, _ in
            _ = try Fixture.template(items: n)
        }

        // Durable add: one item, one transaction, one write and one fsync.
        bench(
            "02 add (durable)", items: n, .durable(n), metrics: standardMetrics + [.throughput],
            setup: { s in try openWork(s, items: n, name: "add") }
        ) { b, s in
            s.counter += 1
            try s.kc!.add(contentsOf: [newItem("add", s.counter)])
        }

        // The floor for a durable add: the bytes of one add's transaction appended to a copy of
        // the same keychain file with pwrite, then fsync.
        bench(
            "03 raw append+fsync (same bytes as 02)", items: n, .durable(n), metrics: standardMetrics + [.throughput],
            setup: { s in
                try openWork(s, items: n, name: "raw")
                let path = s.paths!.keychain
                let before = try fileSize(path)
                try s.kc!.add(contentsOf: [newItem("raw", 0)])
                let after = try fileSize(path)
                s.kc = nil
                s.fd = open(path, O_RDWR)
                guard s.fd >= 0 else { throw POSIXError(.EIO) }
                s.record = [UInt8](repeating: 0, count: Int(after - before))
                guard pread(s.fd, &s.record, s.record.count, before) == s.record.count else { throw POSIXError(.EIO) }
                s.offset = after
                Fixture.log("one add appends \(s.record.count) bytes (\(n) items)")
            }
        ) { _, s in
            let written = s.record.withUnsafeBytes { pwrite(s.fd, $0.baseAddress, $0.count, s.offset) }
            guard written == s.record.count, fsync(s.fd) == 0 else { throw POSIXError(.EIO) }
            s.offset += off_t(written)
        }

        // The goal "durable add within 2x of a raw append+fsync of the same bytes", measured
        // in pairs: each iteration does one add and one raw append+fsync to a copy of the
        // keychain file beside it (alternating which goes first), so that both see the disk
        // in the same state. Reported: each one's time and the add as a percentage of the raw.
        bench(
            "03b add vs raw append+fsync (paired)", items: n, .durable(n), metrics: [addMicros, rawMicros, addOverRaw],
            setup: { s in
                try openWork(s, items: n, name: "paired")
                let path = s.paths!.keychain
                let before = try fileSize(path)
                try s.kc!.add(contentsOf: [newItem("paired", 0)])
                let after = try fileSize(path)
                let rawPath = s.paths!.dir + "/raw.keychain"
                try FileManager.default.copyItem(atPath: path, toPath: rawPath)
                s.fd = open(rawPath, O_RDWR)
                guard s.fd >= 0 else { throw POSIXError(.EIO) }
                s.record = [UInt8](repeating: 0, count: Int(after - before))
                guard pread(s.fd, &s.record, s.record.count, before) == s.record.count else { throw POSIXError(.EIO) }
                s.offset = after
            }
        ) { b, s in
            s.counter += 1
            func raw() throws -> Double {
                let t = BenchClock.now()
                let written = s.record.withUnsafeBytes { pwrite(s.fd, $0.baseAddress, $0.count, s.offset) }
                guard written == s.record.count, fsync(s.fd) == 0 else { throw POSIXError(.EIO) }
                s.offset += off_t(written)
                return BenchClock.now() - t
            }
            func add() throws -> Double {
                let t = BenchClock.now()
                try s.kc!.add(contentsOf: [newItem("paired", s.counter)])
                return BenchClock.now() - t
            }
            var a = 0.0, r = 0.0
            if s.counter % 2 == 0 { a = try add(); r = try raw() } else { r = try raw(); a = try add() }
            b.measurement(addMicros, Int(a * 1e6))
            b.measurement(rawMicros, Int(r * 1e6))
            b.measurement(addOverRaw, Int(a / r * 100))
        }

        // Find by unique key (account, service, group; sync implied), item and data.
        bench(
            "04 find by unique key", items: n, .micro, metrics: standardMetrics + [.throughput],
            setup: { s in s.kc = try Fixture.openTemplate(items: n) }
        ) { _, s in
            s.counter += 1
            let found = try s.kc!.find(Fixture.uniqueQuery((s.counter &* 7919) % n))
            guard found.count == 1 else {
                throw KeychainError(.itemNotFound, "find by unique key found \(found.count)")
            }
            blackHole(found)
        }

        // Memory of the open keychain: RSS after open + unlock minus RSS before, per item.
        // (Anonymous: the indexes and other heap; the rest is the keychain file, which open
        // maps and reads whole, in the page cache.)
        bench(
            "05 memory of open + unlock", items: n, .once,
            metrics: [rssPerItem, rssAnonPerItem, rssGrowth, .peakMemoryResident],
            setup: { _ in _ = try Fixture.template(items: n) }
        ) { b, s in
            let t = try Fixture.template(items: n)
            let before = Memory.residentBytes(), anonBefore = Memory.status("RssAnon")
            let kc = try Keychain.open(path: t.keychain, devicePath: t.device)
            try kc.unlock(passcode: Fixture.passcode)
            let grown = Memory.residentBytes() - before
            b.measurement(rssPerItem, grown / n)
            b.measurement(rssAnonPerItem, (Memory.status("RssAnon") - anonBefore) / n)
            b.measurement(rssGrowth, grown / 1024)
            s.kc = kc
        }

        // Find on a non-unique attribute: one service among 10, attributes only. Warm: the
        // query of the setup has decrypted every item once and cached its attributes.
        var warmQuery = Budget.whole(n)
        warmQuery.timeUnits = .microseconds
        bench(
            "06 find by attribute (1 service in 10, warm)", items: n, warmQuery,
            setup: { s in
                let kc = try Fixture.openTemplate(items: n)
                kc.caller = CallerIdentity(applicationIdentifier: "bench.app")
                let t0 = BenchClock.now()
                _ = try kc.find(Query(.genericPassword, ["svce": .string("service-0")]), includeData: false)
                Fixture.log(
                    "first find by attribute after open (\(n) items): \(String(format: "%.3f", BenchClock.now() - t0)) s"
                )
                s.kc = kc
            }
        ) { _, s in
            s.counter += 1
            let found = try s.kc!.find(
                Query(.genericPassword, ["svce": .string("service-\(s.counter % 10)")]), includeData: false)
            guard found.count >= n / 10 else {
                throw KeychainError(.itemNotFound, "find by attribute found \(found.count)")
            }
            blackHole(found)
        }

        // The same query as the first after opening: it decrypts every item.
        bench("07 find by attribute (cold, first after open)", items: n, .whole(n)) { b, s in
            s.kc = nil
            let kc = try Fixture.openTemplate(items: n)
            kc.caller = CallerIdentity(applicationIdentifier: "bench.app")
            b.startMeasurement()
            let found = try kc.find(Query(.genericPassword, ["svce": .string("service-3")]), includeData: false)
            b.stopMeasurement()
            blackHole(found)
            s.kc = kc
        }

        // Update one item's label (found by unique key): read, re-seal, one fsync.
        bench("08 update", items: n, .durable(n), setup: { s in try openWork(s, items: n, name: "update") }) { _, s in
            s.counter += 1
            try s.kc!.update(
                Fixture.uniqueQuery((s.counter &* 104_729) % n), attributes: ["labl": .string("updated \(s.counter)")])
        }

        // Delete one item (found by unique key): one fsync.
        bench("09 delete", items: n, .durable(n), setup: { s in try openWork(s, items: n, name: "delete") }) { _, s in
            try s.kc!.delete(Fixture.uniqueQuery(s.counter))
            s.counter += 1
        }

        // Open without the KDF: read and check every record, build the indexes.
        bench("10 open (no KDF)", items: n, .whole(n)) { b, s in
            let t = try Fixture.template(items: n)
            s.kc = nil
            b.startMeasurement()
            let kc = try Keychain.open(path: t.keychain, devicePath: t.device)
            b.stopMeasurement()
            s.kc = kc
        }

        // Open and unlock with the passcode: the above plus the KDF (scrypt at the default
        // N=2^15, r=8, p=1), which does not depend on N.
        bench("11 open + unlock (KDF included)", items: n, .whole(n)) { b, s in
            let t = try Fixture.template(items: n)
            s.kc = nil
            b.startMeasurement()
            let kc = try Keychain.open(path: t.keychain, devicePath: t.device)
            try kc.unlock(passcode: Fixture.passcode)
            b.stopMeasurement()
            s.kc = kc
        }

        // Compact: rewrite the live records into a new file, fsync, rename, fsync the directory.
        bench("12 compact", items: n, .whole(n), setup: { s in try openWork(s, items: n, name: "compact") }) { _, s in
            _ = try s.kc!.compact()
        }

        // Backup of every item to an archive file (password-protected, KDF at logN 10).
        bench(
            "13 backup", items: n, .whole(n),
            setup: { s in
                s.kc = try Fixture.openTemplate(items: n)
                let dir = Fixture.root + "/\(n)/work-\(getpid())-backup"
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                s.paths = Fixture.Paths(dir: dir)
                s.archive = dir + "/bench.backup"
            }
        ) { b, s in
            try? FileManager.default.removeItem(atPath: s.archive)
            b.startMeasurement()
            let summary = try BackupArchive.write(s.kc!, toFile: s.archive, options: Fixture.backupOptions)
            b.stopMeasurement()
            guard summary.items == n else { throw KeychainError(.decode, "backup wrote \(summary.items) items") }
        }

        // Restore that archive into a new keychain: verify pass + write pass (KDFs at logN 10).
        bench(
            "14 restore (verify + write)", items: n, .whole(n),
            setup: { s in
                s.archive = try Fixture.templateBackup(items: n)
                let t = try Fixture.template(items: n)
                let dir = Fixture.root + "/\(n)/work-\(getpid())-restore"
                try? FileManager.default.removeItem(atPath: dir)
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                s.paths = Fixture.Paths(dir: dir)
                try FileManager.default.copyItem(atPath: t.device, toPath: s.paths!.device)
                chmod(s.paths!.device, 0o600)
            }
        ) { b, s in
            let target = s.paths!.dir + "/restored.keychain"
            try? FileManager.default.removeItem(atPath: target)
            b.startMeasurement()
            let verified = try VerifiedBackup.verify(
                try BackupSource.file(s.archive), device: try Device.load(path: s.paths!.device),
                password: { Fixture.backupPassword }, target: .newKeychain(hasPasscode: true))
            let report = try verified.restoreNewKeychain(
                path: target, devicePath: s.paths!.device, passcode: Fixture.passcode,
                kdfLogN: 10)
            b.stopMeasurement()
            guard report.restored == n else { throw KeychainError(.decode, "restore wrote \(report.restored) items") }
        }
    }
}
