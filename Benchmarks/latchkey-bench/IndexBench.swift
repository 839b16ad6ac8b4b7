import Foundation
import Latchkey

/// `--index`: open a keychain and find one item by its unique key, each time in a new
/// `Keychain` (as a CLI command does, without the process start), with the index file of
/// spec/FORMAT.md §17 and without it (removed, so every open scans the log). No passcode, so
/// no KDF hides anything. Prints the medians in milliseconds and what one open read.
///
/// For profiling the library's find (`perf record`): with `LK_HOT_DIR=DIR` the keychain is
/// built in DIR and kept; when DIR already holds one, only the hot loop runs, with
/// `LK_HOT_ROUNDS` finds (default 200,000).
func runIndexBench(items: Int) throws {
    let keepDir = ProcessInfo.processInfo.environment["LK_HOT_DIR"]
    let dir =
        keepDir ?? FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-indexbench-\(getpid())").path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { if keepDir == nil { try? FileManager.default.removeItem(atPath: dir) } }
    let path = dir + "/bench.keychain", devicePath = dir + "/device.secret"
    func attrs(_ i: Int) -> [String: AttributeValue] {
        ["acct": .string("user\(i)@example.com"), "svce": .string("service-\(i % 10)"), "agrp": .string("bench.app")]
    }
    if let keep = keepDir, FileManager.default.fileExists(atPath: keep + "/bench.keychain.index") {
        let reader = try Keychain.open(path: keep + "/bench.keychain", devicePath: keep + "/device.secret")
        let rounds = Int(ProcessInfo.processInfo.environment["LK_HOT_ROUNDS"] ?? "") ?? 200_000
        let queries = (0..<rounds).map { Query(.genericPassword, attrs(($0 * 104729) % items)) }
        var hot: [Double] = []
        hot.reserveCapacity(rounds)
        for q in queries {
            let t = now()
            _ = try reader.find(q)
            hot.append(now() - t)
        }
        print(String(format: "hot find=%.2fus", median(hot)))
        return
    }
    let kc = try Keychain.create(path: path, devicePath: devicePath, passcode: nil)
    // A bulk load: no index until the end (each batch is a transaction of its own, and would
    // otherwise rewrite the index every index size / 64 bytes of appends, spec §17.6).
    kc.localStore!.indexTailLimit = .max
    var next = 0
    while next < items {
        let batch = (next..<min(items, next + 1000)).map {
            NewItem(
                .genericPassword, attributes: attrs($0), data: Array("secret \($0)".utf8), protection: .afterFirstUnlock
            )
        }
        try kc.add(contentsOf: batch)
        next += batch.count
    }
    // One more write with the index forced, so that it covers the whole log.
    kc.localStore!.indexTailLimit = 0
    try kc.add(.genericPassword, attributes: attrs(items), data: [1], protection: .afterFirstUnlock)
    let logBytes = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? UInt64) ?? 0
    let indexBytes = (try? FileManager.default.attributesOfItem(atPath: path + ".index")[.size] as? UInt64) ?? 0

    func openAndFind(rounds: Int) throws -> (open: Double, find: Double, usedIndex: Bool) {
        var opens: [Double] = [], finds: [Double] = []
        var used = false
        for r in 0..<rounds {
            let k = (r * 7919) % items
            let t0 = now()
            let reader = try Keychain.open(path: path, devicePath: devicePath)
            let t1 = now()
            used = reader.localStore!.usesIndex
            let found = try reader.find(Query(.genericPassword, attrs(k)))
            let t2 = now()
            precondition(found.count == 1 && found[0].data == Array("secret \(k)".utf8))
            opens.append(t1 - t0)
            finds.append(t2 - t1)
        }
        return (median(opens) / 1000, median(finds) / 1000, used)
    }
    let rounds = items >= 100_000 ? 7 : 21
    let with = try openAndFind(rounds: rounds)
    // The library's hot path: many finds in one open keychain (index pages cached).
    let reader = try Keychain.open(path: path, devicePath: devicePath)
    // The queries are built before the clock starts: what is timed is the library's find.
    let queries = (0..<5000).map { Query(.genericPassword, attrs(($0 * 104729) % items)) }
    var hot: [Double] = []
    for q in queries {
        let t = now()
        _ = try reader.find(q)
        hot.append(now() - t)
    }
    if let keepDir {
        print("kept the keychain of \(items) items in \(keepDir)")
        return
    }
    try FileManager.default.removeItem(atPath: path + ".index")
    let without = try openAndFind(rounds: rounds)
    print(
        String(
            format:
                "items=%-7d log=%.1fMB index=%.1fMB | with index: open=%.3fms find=%.3fms (used=%@) | without: open=%.3fms find=%.3fms (used=%@) | hot find in an open keychain=%.1fus",
            items, Double(logBytes) / 1e6, Double(indexBytes) / 1e6, with.open, with.find,
            with.usedIndex ? "yes" : "no",
            without.open, without.find, without.usedIndex ? "yes" : "no", median(hot)))
}
