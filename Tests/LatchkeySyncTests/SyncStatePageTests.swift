import Foundation
import Latchkey
import Testing

@testable import LatchkeySync

/// The sync state in pages (spec/SYNC.md §9.1): a sync of one change rewrites only the pages of
/// that item; a page that is damaged, or stands for another, stops the sync before it applies
/// or sends anything.
@Suite struct SyncStatePageTests {
    /// The page files of a machine's state: name → contents.
    func pages(_ m: Machine) throws -> [String: Data] {
        let dir = m.engine.pagesPath
        var out: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: dir) {
            out[name] = try Data(contentsOf: URL(fileURLWithPath: dir + "/" + name))
        }
        return out
    }

    /// Two machines, `count` items written on a and synced to b.
    func lab(_ count: Int) throws -> (SyncLab, Machine, Machine) {
        let lab = try SyncLab()
        let ms = try lab.circle(["a", "b"])
        for i in 0..<count { try ms[0].put("user\(i)", "secret-\(i)") }
        try ms[0].engine.sync()
        try ms[1].engine.sync()
        return (lab, ms[0], ms[1])
    }

    @Test func aSyncOfOneChangeRewritesOnlyThePagesOfThatItem() throws {
        let (keep, a, b) = try lab(600)
        defer { withExtendedLifetime(keep) {} }
        #expect(try b.synced().count == 600)
        let beforeA = try pages(a), beforeB = try pages(b)
        #expect(beforeA.count > 200, "600 items spread over most of the 256 item pages: \(beforeA.count) files")
        try a.put("user7", "changed")
        try a.engine.sync()
        try b.engine.sync()
        #expect(try b.synced()["user7"] == "changed")
        for (m, before) in [(a, beforeA), (b, beforeB)] {
            let after = try pages(m)
            let written = after.filter { before[$0.key] != $0.value }
            // The item's page; its unique page only when its unique digest changed (not here).
            #expect(written.count == 1, "\(m.name) rewrote \(written.count) pages for one change")
            #expect(after.count == before.count, "\(m.name): old generations are removed")
        }
    }

    @Test func aDamagedPageStopsTheSyncBeforeAnythingIsApplied() throws {
        let (lab, a, b) = try lab(40)
        try a.put("user3", "changed")
        try a.engine.sync()
        // Every page of b damaged: whichever the sync reads is refused.
        for name in try pages(b).keys {
            let path = b.engine.pagesPath + "/" + name
            var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            bytes[bytes.count - 1] ^= 1
            try bytes.write(to: URL(fileURLWithPath: path))
        }
        let before = try lab.remoteObjects()
        #expect(throws: KeychainError.self) { try b.engine.sync() }
        #expect(try b.synced()["user3"] == "secret-3", "nothing was applied")
        #expect(try lab.remoteObjects() == before, "nothing was pushed")
        #expect(b.engine.lastOutcome().lastError.contains("damaged"))
    }

    @Test func aPageCannotStandForAnotherPage() throws {
        let (keep, a, b) = try lab(40)
        defer { withExtendedLifetime(keep) {} }
        try a.put("user3", "changed")
        try a.engine.sync()
        // Each item page of b replaced by the file of the next page (same generation or not).
        let names = try pages(b).keys.filter { $0.hasPrefix("i") }.sorted()
        let contents = try names.map { try Data(contentsOf: URL(fileURLWithPath: b.engine.pagesPath + "/" + $0)) }
        for (i, name) in names.enumerated() {
            try contents[(i + 1) % names.count].write(to: URL(fileURLWithPath: b.engine.pagesPath + "/" + name))
        }
        #expect(throws: KeychainError.self) { try b.engine.sync() }
        #expect(try b.synced()["user3"] == "secret-3")
    }
}
