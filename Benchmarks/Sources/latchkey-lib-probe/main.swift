// latchkey-lib-probe: one operation of the library benchmarks in a plain process (no malloc
// interposer, no harness), for profilers and for numbers to check the suite against.
//
//   latchkey-lib-probe find N [COUNT]     find by unique key COUNT times (default 200,000) on the
//                                         template of N items; prints p50/p90 and memory
//   latchkey-lib-probe memory N           RSS after open + unlock of N items, minus before
//
// Uses the templates of LATCHKEY_BENCH_DIR (built when missing), like the suite. The measured
// loop is `findLoop`, so `valgrind --tool=callgrind --collect-atstart=no
// --toggle-collect='*findLoop*'` profiles only the finds.
import Foundation
import Latchkey
import LatchkeyBenchFixtures

@inline(never)
func findLoop(_ kc: Keychain, items: Int, count: Int, times: inout [Double]) throws {
    for i in 0..<count {
        let t = BenchClock.now()
        let found = try kc.find(Fixture.uniqueQuery((i &* 7919) % items))
        times.append(BenchClock.now() - t)
        precondition(found.count == 1)
    }
}

let args = Array(CommandLine.arguments.dropFirst())
guard args.count >= 2, let items = Int(args[1]) else {
    FileHandle.standardError.write(Data("usage: latchkey-lib-probe find|memory N [COUNT]\n".utf8))
    exit(2)
}
switch args[0] {
case "find":
    let count = args.count > 2 ? Int(args[2]) ?? 200_000 : 200_000
    let kc = try Fixture.openTemplate(items: items)
    var warm: [Double] = []
    try findLoop(kc, items: items, count: min(count, 1000), times: &warm)
    var times: [Double] = []
    times.reserveCapacity(count)
    try findLoop(kc, items: items, count: count, times: &times)
    times.sort()
    func pct(_ p: Double) -> Double { times[min(times.count - 1, Int(Double(times.count) * p))] * 1e6 }
    print(
        String(
            format: "find by unique key, %d items, %d finds: p50 %.1f us, p90 %.1f us, p99 %.1f us; peak RSS %d MiB",
            items, count, pct(0.5), pct(0.9), pct(0.99), Memory.peakResidentMiB()))
case "memory":
    let t = try Fixture.template(items: items)
    let before = Memory.residentBytes(), anon = Memory.status("RssAnon"), file = Memory.status("RssFile")
    let t0 = BenchClock.now()
    let kc = try Keychain.open(path: t.keychain, devicePath: t.device)
    let openSeconds = BenchClock.now() - t0
    try kc.unlock(passcode: Fixture.passcode)
    let grown = Memory.residentBytes() - before
    let grownAnon = Memory.status("RssAnon") - anon, grownFile = Memory.status("RssFile") - file
    print(
        String(
            format:
                "open + unlock of %d items: RSS +%.1f MiB (anonymous +%.1f, file +%.1f) = %.0f B/item (anonymous %.0f); open %.3f s; peak RSS %d MiB",
            items, Double(grown) / 1_048_576, Double(grownAnon) / 1_048_576, Double(grownFile) / 1_048_576,
            Double(grown) / Double(items), Double(grownAnon) / Double(items), openSeconds, Memory.peakResidentMiB()))
    withExtendedLifetime(kc) {}
default:
    FileHandle.standardError.write(Data("unknown mode \(args[0])\n".utf8))
    exit(2)
}
