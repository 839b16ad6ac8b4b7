// Keychains of N items for the library benchmarks, built once per size and kept on disk.
//
// package-benchmark runs every benchmark in a process of its own, so a keychain cannot be
// shared in memory. Each size is populated once into `<root>/<N>/template/` (keychain,
// device secret, device state) and marked complete with `<root>/<N>/template.ok`; a benchmark
// that only reads opens the template, one that writes works on a copy of the whole directory
// (the device state remembers the newest sequence, so a mutated copy needs its own device).
// `make bench-lib` gives every run a fresh root (LATCHKEY_BENCH_DIR) and removes it afterwards.
import Foundation
import Latchkey
import LatchkeyBackup

#if canImport(Glibc)
    import Glibc
#endif

public enum Fixture {
    public static let passcode = Array("bench passcode".utf8)
    public static let backupPassword = Array("bench backup password".utf8)
    /// The item's secret: 39 bytes, as in latchkey-bench.
    public static let secret = Array("correct horse battery staple 0123456789".utf8)
    /// Items per `add(contentsOf:)` transaction while populating (one write, one fsync each).
    public static let populateBatch = 10_000
    /// Bumped when what a template holds changes, so that a kept root is not reused.
    public static let version = "1"

    public static var root: String {
        if let r = ProcessInfo.processInfo.environment["LATCHKEY_BENCH_DIR"], !r.isEmpty { return r }
        return NSTemporaryDirectory() + "latchkey-libbench-\(getuid())"
    }

    /// The sizes to run: BENCH_LIB_SIZES ("1000 10000 100000 1000000", commas allowed).
    public static var sizes: [Int] {
        let spec = ProcessInfo.processInfo.environment["BENCH_LIB_SIZES"] ?? ""
        let parsed = spec.split(whereSeparator: { $0 == " " || $0 == "," }).compactMap { Int($0) }.filter { $0 > 0 }
        return parsed.isEmpty ? [1000, 10_000, 100_000] : parsed
    }

    /// The attributes of item `i`: a unique account, one service among 10.
    public static func attributes(_ i: Int) -> [String: AttributeValue] {
        [
            "acct": .string("user\(i)@example.com"), "svce": .string("service-\(i % 10)"), "agrp": .string("bench.app"),
            "labl": .string("Bench item \(i)")
        ]
    }

    /// The unique key of item `i` (class, account, service, group; sync is implied).
    public static func uniqueQuery(_ i: Int) -> Query {
        Query(
            .genericPassword,
            [
                "acct": .string("user\(i)@example.com"), "svce": .string("service-\(i % 10)"),
                "agrp": .string("bench.app")
            ])
    }

    public struct Paths: Sendable {
        public let dir: String
        public init(dir: String) { self.dir = dir }
        public var keychain: String { dir + "/bench.keychain" }
        public var device: String { dir + "/device.secret" }
    }

    /// The populated template of `items` items (built on first use).
    public static func template(items: Int) throws -> Paths {
        let base = root + "/\(items)"
        let paths = Paths(dir: base + "/template")
        let marker = base + "/template.ok"
        if let v = try? String(contentsOfFile: marker, encoding: .utf8), v == version { return paths }
        try? FileManager.default.removeItem(atPath: base)
        try FileManager.default.createDirectory(atPath: paths.dir, withIntermediateDirectories: true)
        let t0 = BenchClock.now()
        let kc = try Keychain.create(path: paths.keychain, devicePath: paths.device, passcode: passcode)
        var next = 0
        while next < items {
            let batch = (next..<min(items, next + populateBatch)).map {
                NewItem(.genericPassword, attributes: attributes($0), data: secret, protection: .afterFirstUnlock)
            }
            try kc.add(contentsOf: batch)
            next += batch.count
        }
        log(
            "populated \(items) items in \(String(format: "%.1f", BenchClock.now() - t0)) s (batches of \(populateBatch)), peak RSS \(Memory.peakResidentMiB()) MiB"
        )
        try version.write(toFile: marker, atomically: true, encoding: .utf8)
        return paths
    }

    /// A private copy of the template of `items` items, for a benchmark that writes.
    public static func workCopy(items: Int, name: String) throws -> Paths {
        let template = try template(items: items)
        let dir = root + "/\(items)/work-\(getpid())-\(name)"
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.copyItem(atPath: template.dir, toPath: dir)
        let paths = Paths(dir: dir)
        chmod(paths.device, 0o600)
        return paths
    }

    /// The template opened and unlocked.
    public static func openTemplate(items: Int) throws -> Keychain {
        let t = try template(items: items)
        let kc = try Keychain.open(path: t.keychain, devicePath: t.device)
        try kc.unlock(passcode: passcode)
        return kc
    }

    /// A backup archive of the template (built on first use), for the restore benchmark.
    public static func templateBackup(items: Int) throws -> String {
        let path = root + "/\(items)/template.backup"
        let marker = path + ".ok"
        if FileManager.default.fileExists(atPath: marker) { return path }
        let kc = try openTemplate(items: items)
        try? FileManager.default.removeItem(atPath: path)
        _ = try BackupArchive.write(kc, toFile: path, options: backupOptions)
        _ = FileManager.default.createFile(atPath: marker, contents: nil)
        return path
    }

    /// Backups at KDF logN 10 (about a millisecond): the backup KDF is not what is measured.
    public static var backupOptions: BackupOptions { BackupOptions(password: backupPassword, kdfLogN: 10) }

    public static func remove(_ paths: Paths?) {
        if let paths { try? FileManager.default.removeItem(atPath: paths.dir) }
    }

    public static func log(_ s: String) {
        FileHandle.standardError.write(Data("latchkey-bench-lib: \(s)\n".utf8))
    }
}

public enum BenchClock {
    public static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

public enum Memory {
    /// Resident set size now, in bytes (/proc/self/statm).
    public static func residentBytes() -> Int {
        guard let s = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = s.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// A field of /proc/self/status in bytes ("RssAnon", "RssFile", "VmHWM").
    public static func status(_ field: String) -> Int {
        guard let s = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in s.split(separator: "\n") where line.hasPrefix(field + ":") {
            let kb =
                line.dropFirst(field.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap {
                    Int($0)
                } ?? 0
            return kb * 1024
        }
        return 0
    }

    public static func peakResidentMiB() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_maxrss / 1024
    }
}
