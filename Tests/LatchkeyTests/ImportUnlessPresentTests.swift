import Testing
@testable import Latchkey
import LatchkeyFormat
import LatchkeyTestSupport

/// `ItemImporter.addUnlessPresent` (`import --skip-existing`): inside one streaming
/// transaction, an item whose unique key the keychain holds (through its index or in memory),
/// or an earlier item of the same import holds, is not added, and nothing else changes.
@Suite struct ImportUnlessPresentTests {
    static func item(_ account: String, _ secret: String, group: String = "g") -> NewItem {
        NewItem(.genericPassword, attributes: attrs(["acct": account, "svce": "s", "agrp": group]), data: bytes(secret))
    }

    @Test(arguments: [false, true])
    func skipsWhatTheKeychainOrThisImportHolds(indexed: Bool) throws {
        let disk: MemoryFileSystem
        if indexed {
            disk = try IndexTests.indexedKeychain(300).0
        } else {
            disk = try makeDisk()
            try createKeychain(on: disk, passcode: nil).add(
                contentsOf: (0..<3).map { Self.item("user-\($0)", "secret-\($0)") })
        }
        let kc = try openKeychain(on: disk)
        kc.localStore!.indexTailLimit = .max
        #expect(kc.localStore!.usesIndex == indexed)
        let added = try kc.importItems { i in
            [
                try i.addUnlessPresent(Self.item("user-2", "other")),
                try i.addUnlessPresent(Self.item("user-2", "other", group: "h")),
                try i.addUnlessPresent(Self.item("fresh", "first")),
                try i.addUnlessPresent(Self.item("fresh", "second"))
            ]
        }
        #expect(added == [false, true, true, false])
        #expect(try IndexTests.secret(kc, "user-2") == bytes("secret-2"))
        #expect(try IndexTests.secret(kc, "fresh") == bytes("first"))
        #expect(
            try kc.find(Query(.genericPassword, attrs(["acct": "user-2", "agrp": "h"]))).first?.data == bytes("other"))
        #expect(try kc.containsItem(withUniqueKeyOf: Self.item("fresh", "x")))
        #expect(try !kc.containsItem(withUniqueKeyOf: Self.item("fresh", "x", group: "z")))
        #expect(kc.verify().ok, "\(kc.verify().problems)")
    }
}
