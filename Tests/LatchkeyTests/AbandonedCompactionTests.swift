import Foundation
import Testing
@testable import Latchkey
import LatchkeyTestSupport

/// A compaction killed before its rename leaves `<keychain>.compact-XXXXXXXX` behind, a full
/// copy of the (encrypted) keychain. The next compaction removes such files (spec §11.5): while
/// it holds the writer lock no other compaction can be in progress. Found by KillTests (a
/// power cut cannot leave one: the name is never made durable before the rename).
@Suite struct AbandonedCompactionTests {
    @Test func compact_removesTheTemporaryFilesOfDeadCompactions_only() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk)
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "a", "svce": "s"]), data: bytes("x"), protection: .always)
        let stale = ["/keychains/login.keychain.compact-0badf00d", "/keychains/login.keychain.compact-12345678"]
        let unrelated = [
            "/keychains/login.keychain.compact-notes", "/keychains/other.keychain.compact-0badf00d",
            "/keychains/login.keychain.bak"
        ]
        for p in stale + unrelated { disk.setContents(p, disk.keychainBytes) }
        try kc.compact()
        let files = Set(disk.listFiles())
        for p in stale { #expect(!files.contains(p), "\(p) was left") }
        for p in unrelated { #expect(files.contains(p), "\(p) was removed") }
        #expect(files.filter { $0.contains(".compact-") }.count == 2)
        #expect(try openKeychain(on: disk).verify().ok)
    }

    /// The temporary names are `<name>.compact-` or `<name>.index-` and 8 lowercase hex
    /// digits (spec §11.5, §17.1); a user's file that has 8 other characters there is kept.
    @Test func compactionAndIndexWrites_keepUserFilesThatOnlyLookLikeTemporaryFiles() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk)
        kc.localStore!.indexTailLimit = 0  // every commit writes an index
        let stale = ["/keychains/login.keychain.compact-0badf00d", "/keychains/login.keychain.index-12ab56ef"]
        let users = [
            "/keychains/login.keychain.compact-ABCDEFGH", "/keychains/login.keychain.compact-0BADF00D",
            "/keychains/login.keychain.index-notmine!", "/keychains/login.keychain.index-12ab56eg",
            "/keychains/login.keychain.compact-0badf0é", "/keychains/login.keychain.index-1 2 3 4 "
        ]
        for p in stale + users { disk.setContents(p, [1, 2, 3]) }
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "a", "svce": "s"]), data: bytes("x"), protection: .always)
        #expect(disk.contents(TestEnv.keychainPath + ".index") != nil, "no index was written")
        #expect(!disk.listFiles().contains(stale[1]), "the index write left its dead temporary file")
        try kc.compact()
        let files = Set(disk.listFiles())
        for p in stale { #expect(!files.contains(p), "\(p) was left") }
        for p in users { #expect(files.contains(p), "\(p), a user's file, was removed") }
        for p in users { #expect(disk.contents(p) == [1, 2, 3]) }
    }

    @Test func compact_onTheRealFileSystem_removesAbandonedFiles() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let devicePath = dir.path + "/device.secret"
        let path = dir.path + "/login.keychain"
        let kc = try Keychain.create(path: path, devicePath: devicePath, passcode: nil)
        let stale = path + ".compact-a1b2c3d4"
        #expect(FileManager.default.createFile(atPath: stale, contents: Data([1, 2, 3])))
        try kc.compact()
        #expect(!FileManager.default.fileExists(atPath: stale))
        #expect(
            PosixFileSystem.shared.list(dir.path).sorted() == ["device.secret", "device.secret.state", "login.keychain"]
        )
    }
}
