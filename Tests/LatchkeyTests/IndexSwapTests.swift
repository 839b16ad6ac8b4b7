import Foundation
import Testing
@testable import Latchkey
import LatchkeyCrypto
import LatchkeyFormat
import LatchkeyTestSupport

/// An index signed by someone who has the device secret but not the passcode (spec/SECURITY.md
/// §2.5), whose entries for two items swap their records (issue 27, finding 3): every page's MAC
/// verifies, and every entry's clear fields match the record it names — only the record's own
/// UUID tells. A reader must never return one item for the other, nor delete one for the other.
@Suite struct IndexSwapTests {
    /// Swaps everything but the UUID between the first two item entries of the index, and the
    /// UUIDs of their two unique-key entries (so that each unique-key entry still names an item
    /// entry with its hash), re-sealing the pages with the key from the device secret.
    /// - Returns: the two items' UUIDs.
    static func swapFirstTwoEntries(_ disk: MemoryFileSystem) throws -> (ID16, ID16) {
        let path = IndexTests.indexPath
        var index = try #require(disk.contents(path))
        let header = try IndexTests.header(disk)
        let device = try DeviceSecret.decodeFile(TestEnv.deviceFile)
        let keys = try FileKeys(device: device, fileUUID: header.fileUUID)
        let headerMAC = IndexHeader.mac(of: Array(index.prefix(4096)))
        func reseal(_ page: Int, _ body: [UInt8]) {
            index.replaceSubrange(
                page * 4096..<(page + 1) * 4096,
                with: IndexPage.seal(body: body, page: UInt32(page), headerMAC: headerMAC, macKey: keys.indexFileMAC))
        }
        var body = Array(index[4096..<4096 + 4064])
        var a = try IndexItemEntry.decode(body, at: 0), b = try IndexItemEntry.decode(body, at: 58)
        (a.uuid, b.uuid) = (b.uuid, a.uuid)
        var w = ByteWriter()
        b.encode(into: &w)  // a's UUID with b's record
        a.encode(into: &w)  // b's UUID with a's record
        body.replaceSubrange(0..<116, with: w.bytes)
        reseal(1, body)
        let (idA, idB) = (ID16(b.uuid), ID16(a.uuid))
        var swapped = 0
        for page in (1 + Int(header.itemPages))..<(1 + Int(header.itemPages) + Int(header.uniquePages)) {
            var u = Array(index[page * 4096..<page * 4096 + 4064])
            var changed = false
            for i in 0..<127 {
                let named = ID16(u[i * 32 + 16..<i * 32 + 32])
                let other = named == idA ? idB : named == idB ? idA : nil
                guard let other else { continue }
                u.replaceSubrange(i * 32 + 16..<i * 32 + 32, with: other.bytes)
                changed = true
                swapped += 1
            }
            if changed { reseal(page, u) }
        }
        try #require(swapped == 2)
        disk.setContents(path, index)
        return (idA, idB)
    }

    /// Each item's account and secret, keyed by UUID, from a reader without the index.
    static func truth(_ disk: MemoryFileSystem) throws -> [ID16: (account: String, data: [UInt8])] {
        let copy = disk.clone()
        try? copy.remove(IndexTests.indexPath)
        var out: [ID16: (account: String, data: [UInt8])] = [:]
        for item in try openKeychain(on: copy).find(Query(.genericPassword)) {
            guard case .string(let acct) = item.attributes["acct"] else { continue }
            out[ID16(item.persistentRef.suffix(16))] = (acct, item.data)
        }
        return out
    }

    static func ref(_ id: ID16) -> [UInt8] { Array("genp".utf8) + id.bytes }

    @Test func lookupByPersistentRef_neverReturnsTheOtherItem() throws {
        let (disk, _) = try IndexTests.indexedKeychain(150)
        let truth = try Self.truth(disk)
        let (a, b) = try Self.swapFirstTwoEntries(disk)
        let reader = try openKeychain(on: disk)
        for id in [a, b] {
            let found = try reader.find(Query(.genericPassword, persistentRef: Self.ref(id)))
            #expect(found.map(\.data) == [truth[id]!.data], "item \(hexString(id.bytes))")
            #expect(found.map { ID16($0.persistentRef.suffix(16)) } == [id])
        }
    }

    @Test func lookupByUniqueKey_returnsTheItemUnderItsOwnReference() throws {
        let (disk, _) = try IndexTests.indexedKeychain(150)
        let truth = try Self.truth(disk)
        let (a, _) = try Self.swapFirstTwoEntries(disk)
        let reader = try openKeychain(on: disk)
        let found = try reader.find(
            Query(.genericPassword, attrs(["acct": truth[a]!.account, "svce": "s", "agrp": "g"])))
        #expect(found.map(\.data) == [truth[a]!.data])
        #expect(found.map { ID16($0.persistentRef.suffix(16)) } == [a])
    }

    @Test func deleteByAccount_deletesThatItem_notTheOther() throws {
        let (disk, _) = try IndexTests.indexedKeychain(150)
        let truth = try Self.truth(disk)
        let (a, b) = try Self.swapFirstTwoEntries(disk)
        let writer = try openKeychain(on: disk)
        #expect(
            try writer.delete(Query(.genericPassword, attrs(["acct": truth[a]!.account, "svce": "s", "agrp": "g"])))
                == 1)
        let after = try Self.truth(disk)
        #expect(after[a] == nil, "the item asked for is still there")
        #expect(after[b]?.data == truth[b]!.data, "the other item was deleted")
        #expect(after.count == 149)
    }

    @Test func deleteByPersistentRef_deletesThatItem_notTheOther() throws {
        let (disk, _) = try IndexTests.indexedKeychain(150)
        let truth = try Self.truth(disk)
        let (a, b) = try Self.swapFirstTwoEntries(disk)
        #expect(try openKeychain(on: disk).delete(Query(.genericPassword, persistentRef: Self.ref(b))) == 1)
        let after = try Self.truth(disk)
        #expect(after[b] == nil)
        #expect(after[a]?.data == truth[a]!.data)
    }

    /// Every item enumerated through the swapped index (the whole table read into memory) is
    /// returned under its own reference, or not at all.
    @Test func enumeration_neverLabelsOneItemAsTheOther() throws {
        let (disk, _) = try IndexTests.indexedKeychain(150)
        let truth = try Self.truth(disk)
        _ = try Self.swapFirstTwoEntries(disk)
        let reader = try openKeychain(on: disk)
        var items: [Item] = []
        do {
            items = try reader.find(Query(.genericPassword))
        } catch let e as KeychainError {
            #expect(e.message.contains("named, for one item, the record of another item"), "\(e)")
            items = try reader.find(Query(.genericPassword))
        }
        #expect(items.count == 150)
        for item in items {
            #expect(truth[ID16(item.persistentRef.suffix(16))]?.data == item.data)
        }
    }

    @Test func verify_reportsTheIndex_withoutClaimingMoreThanIsTrue() throws {
        let (disk, _) = try IndexTests.indexedKeychain(150)
        _ = try Self.swapFirstTwoEntries(disk)
        let report = try openKeychain(on: disk).verify()
        #expect(!report.ok)
        #expect(
            report.problems.contains {
                $0.contains("does not describe the keychain") && $0.contains("before they use the entry")
            },
            "\(report.problems)")
    }
}
