import Foundation
import Testing
@testable import Latchkey
import LatchkeyFormat
import LatchkeyTestSupport

/// Queries on non-unique attributes are answered by the attribute index (Items/AttributeIndex),
/// which follows the store through the log's journal. These tests drive two instances on one
/// keychain through adds, updates, deletes, compactions, locks and bursts larger than the
/// journal, and after every step compare each instance's answers with a model kept here.
@Suite struct AttributeIndexTests {
    /// acct → (svce, labl) of every live item.
    typealias Model = [String: (svce: String, labl: String)]

    func answers(_ kc: Keychain, svce: String) throws -> [String: String] {
        var out: [String: String] = [:]
        for item in try kc.find(Query(.genericPassword, ["svce": .string(svce)]), includeData: false) {
            guard case .string(let acct)? = item.attributes["acct"], case .string(let labl)? = item.attributes["labl"]
            else {
                Issue.record("an item without acct or labl: \(item.attributes.keys.sorted())")
                continue
            }
            #expect(item.data.isEmpty)
            #expect(item.attributes["pdmn"] == .string(item.protection.code))
            out[acct] = labl
        }
        return out
    }

    func check(_ model: Model, _ instances: [Keychain], _ step: String) throws {
        for svce in ["s0", "s1", "s2"] {
            let want = model.filter { $0.value.svce == svce }.mapValues(\.labl)
            for (n, kc) in instances.enumerated() {
                let got = try answers(kc, svce: svce)
                #expect(
                    got == want, "instance \(n), svce \(svce), after \(step): \(got.count) items, want \(want.count)")
            }
        }
    }

    @Test func followsAddsUpdatesDeletesAndCompactionsOfEitherInstance() throws {
        let disk = try makeDisk()
        let a = try createKeychain(on: disk)
        let b = try openKeychain(on: disk)
        try b.unlock(passcode: TestEnv.passcode)
        var model: Model = [:]
        var rng = SplitMix(seed: 7)
        var next = 0
        func item(_ i: Int, _ svce: String) -> NewItem {
            NewItem(
                .genericPassword, attributes: attrs(["acct": "a\(i)", "svce": svce, "labl": "l\(i)"]),
                data: bytes("secret \(i)"))
        }
        try check(model, [a, b], "nothing")
        for step in 0..<60 {
            let kc = rng.next() % 2 == 0 ? a : b
            let live = model.keys.sorted()
            switch rng.next() % 6 {
            case 0, 1:  // a few adds in one transaction
                let n = Int(rng.next() % 5) + 1
                let batch = (0..<n).map { k in item(next + k, "s\(rng.next() % 3)") }
                try kc.add(contentsOf: batch)
                for k in 0..<n {
                    if case .string(let s) = batch[k].attributes["svce"]! {
                        model["a\(next + k)"] = (s, "l\(next + k)")
                    }
                }
                next += n
            case 2 where !live.isEmpty:  // move an item to another service, or relabel it
                let acct = live[Int(rng.next() % UInt64(live.count))]
                let svce = "s\(rng.next() % 3)"
                try kc.update(
                    Query(.genericPassword, ["acct": .string(acct)]),
                    attributes: ["svce": .string(svce), "labl": .string("u\(step)")])
                model[acct] = (svce, "u\(step)")
            case 3 where !live.isEmpty:
                let acct = live[Int(rng.next() % UInt64(live.count))]
                try kc.delete(Query(.genericPassword, ["acct": .string(acct)]))
                model[acct] = nil
            case 4:
                try kc.compact()
            default:  // a query on the other instance first, so both indexes are warm
                _ = try answers(kc === a ? b : a, svce: "s1")
            }
            try check(model, [a, b], "step \(step)")
        }
    }

    @Test func burstsLargerThanTheJournalAndManyDeletes() throws {
        let disk = try makeDisk()
        let a = try createKeychain(on: disk)
        let b = try openKeychain(on: disk)
        try b.unlock(passcode: TestEnv.passcode)
        var model: Model = [:]
        // Warm b's index, then change more items than the journal holds behind its back.
        try a.add(
            contentsOf: (0..<10).map {
                NewItem(.genericPassword, attributes: attrs(["acct": "a\($0)", "svce": "s0", "labl": "l"]), data: [])
            })
        for i in 0..<10 { model["a\(i)"] = ("s0", "l") }
        try check(model, [a, b], "the first items")
        let n = LogState.journalLimit + 500
        try a.add(
            contentsOf: (10..<n).map {
                NewItem(
                    .genericPassword, attributes: attrs(["acct": "a\($0)", "svce": "s\($0 % 3)", "labl": "l"]), data: []
                )
            })
        for i in 10..<n { model["a\(i)"] = ("s\(i % 3)", "l") }
        try a.delete(Query(.genericPassword, ["acct": .string("a3")]))
        model["a3"] = nil
        try check(model, [b, a], "a burst of \(n) items")
        // Deleting most items makes the index drop its dead rows (a rebuild); answers stay.
        try b.delete(Query(.genericPassword, ["svce": .string("s1")]))
        try b.delete(Query(.genericPassword, ["svce": .string("s2")]))
        model = model.filter { $0.value.svce == "s0" }
        try check(model, [a, b], "deleting two thirds")
        try a.update(
            Query(.genericPassword, ["svce": .string("s0")]),
            attributes: ["svce": .string("s2"), "labl": .string("moved")])
        model = model.mapValues { _ in ("s2", "moved") }
        try check(model, [b, a], "moving every item")
    }

    /// `update` queries inside the store's write lock (store, then index); a concurrent query
    /// must take the locks in the same order, or the two threads wait for each other forever.
    @Test func concurrentUpdatesAndQueriesOnOneKeychain_doNotDeadlock() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk)
        try kc.add(
            contentsOf: (0..<200).map {
                NewItem(.genericPassword, attributes: attrs(["acct": "a\($0)", "svce": "s\($0 % 2)"]), data: [])
            })
        let group = DispatchGroup()
        let failures = Failures()
        for worker in 0..<2 {
            DispatchQueue.global().async(group: group) {
                for i in 0..<150 {
                    do {
                        if worker == 0 {
                            try kc.update(
                                Query(.genericPassword, ["svce": .string("s0")]), attributes: ["labl": .string("u\(i)")]
                            )
                        } else {
                            _ = try kc.find(Query(.genericPassword, ["svce": .string("s1")]), includeData: false)
                        }
                    } catch { failures.add("\(error)") }
                }
            }
        }
        #expect(group.wait(timeout: .now() + 60) == .success, "the two threads deadlocked")
        #expect(failures.all.isEmpty, "\(failures.all.prefix(3))")
    }

    final class Failures: @unchecked Sendable {
        private let lock = NSLock()
        private var list: [String] = []
        func add(_ s: String) { lock.lock(); list.append(s); lock.unlock() }
        var all: [String] { lock.lock(); defer { lock.unlock() }; return list }
    }

    @Test func lockForgetsWhenUnlockedRowsAndTheCallFails() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk)
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "ak", "svce": "s"]), data: [], protection: .whenUnlocked)
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "ck", "svce": "s"]), data: [], protection: .afterFirstUnlock)
        #expect(try kc.find(Query(.genericPassword, ["svce": .string("s")]), includeData: false).count == 2)
        kc.lock()
        expectKeychainError(.interactionNotAllowed) {
            _ = try kc.find(Query(.genericPassword, ["svce": .string("s")]), includeData: false)
        }
        // Pinning the class that is still available answers from the index.
        let ck = try kc.find(
            Query(.genericPassword, ["svce": .string("s")], protection: .afterFirstUnlock), includeData: false)
        #expect(ck.map { $0.attributes["acct"] } == [.string("ck")])
        try kc.unlock(passcode: TestEnv.passcode)
        #expect(try kc.find(Query(.genericPassword, ["svce": .string("s")]), includeData: false).count == 2)
    }

    @Test func pdmnIsInResultsButMatchesNothingAsAQueryAttribute() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk)
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "x", "svce": "s"]), data: [], protection: .afterFirstUnlock)
        let found = try kc.find(Query(.genericPassword, ["svce": .string("s")]), includeData: false)
        #expect(found.first?.attributes["pdmn"] == .string("ck"))
        // As the unique-key path: an item's stored attributes never hold pdmn.
        #expect(try kc.find(Query(.genericPassword, ["svce": .string("s"), "pdmn": .string("ck")])).isEmpty)
        #expect(
            try kc.find(Query(.genericPassword, ["acct": .string("x"), "svce": .string("s"), "pdmn": .string("ck")]))
                .isEmpty)
    }
}
