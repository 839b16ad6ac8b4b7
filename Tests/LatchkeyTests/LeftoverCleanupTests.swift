import Foundation
import Testing
@testable import Latchkey

/// What killed work leaves beside a keychain, a backup or the device secret, and who removes it
/// (issue 27, points 14 and 15; spec/FORMAT.md §2.2, §11.1, BACKUP.md §8, §9.3): exactly the
/// names of the specs' form, a second name of the keychain included, never a user's file that
/// merely begins like one, never a temporary file whose writer is alive.
@Suite struct LeftoverCleanupTests {
    @Test func temporaryNames_areThePrefixAndExactlyEightLowercaseHexDigits() {
        let p = "login.keychain.create-"
        for ok in ["0badf00d", "12345678", "abcdef09"] { #expect(isTemporaryName(p + ok, prefix: p), "\(ok)") }
        for bad in ["0BADF00D", "1234567", "123456789", "notes123", "1234567g", "12345678.bak", "", "１２３４５６７８"] {
            #expect(!isTemporaryName(p + bad, prefix: p), "\(bad)")
        }
        #expect(!isTemporaryName("other.keychain.create-12345678", prefix: p))
    }

    /// An init or restore killed between link(2) and unlink(2) (the fallback of a rename that
    /// must not replace) left a second name of the keychain; one killed before its rename left
    /// its own file; an index write or a compaction killed before its rename left its
    /// temporary file. The first write under the lock removes them all, and nothing else.
    @Test func firstWrite_removesSecondNamesAndAbandonedCreations_only() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.path + "/login.keychain"
        let kc = try Keychain.create(path: path, devicePath: dir.path + "/device.secret", passcode: nil)
        for second in [path + ".create-0badf00d", path + ".restore-deadbeef"] { #expect(link(path, second) == 0) }
        let abandoned = [
            path + ".create-12345678", path + ".restore-1234abcd", path + ".restore-1234abcd.index",
            path + ".restore-1234abcd.index-89abcdef", path + ".restore-1234abcd.create-00000000",
            path + ".restore-a0a0a0a0.index",
            // A killed index write's or compaction's temporary file (as large as the
            // index or the keychain): removed by a write that writes neither.
            path + ".index-0badf00d", path + ".compact-0badf00d"
        ]
        let unrelated = [
            path + ".create-notes123", path + ".restore-ABCDEF12", path + ".create-0badf00d.bak",
            path + ".restore-1234abcd.notes", dir.path + "/other.keychain.create-12345678"
        ]
        for p in abandoned + unrelated { #expect(FileManager.default.createFile(atPath: p, contents: Data([1, 2, 3]))) }

        _ = try kc.add(
            .genericPassword, attributes: ["acct": .string("a"), "svce": .string("s")], data: Array("x".utf8),
            protection: .always)

        for p in abandoned + [path + ".create-0badf00d", path + ".restore-deadbeef"] {
            #expect(!FileManager.default.fileExists(atPath: p), "\(p) was left")
        }
        for p in unrelated { #expect(FileManager.default.fileExists(atPath: p), "\(p) was removed") }
        // The stray index was not a valid index of this keychain, so it was removed, not adopted.
        #expect(!FileManager.default.fileExists(atPath: path + ".index"))
        var st = stat()
        #expect(stat(path, &st) == 0 && st.st_nlink == 1, "the keychain has one name")
        #expect(try Keychain.open(path: path, devicePath: dir.path + "/device.secret").verify().ok)
    }

    /// A restore killed after its keychain reached the path but before the index followed left
    /// the index under the temporary name: the first write adopts it, being valid for the
    /// keychain (a new handle's single add writes none of its own).
    @Test func firstWrite_adoptsTheIndexOfARestoreKilledBeforeTheIndexFollowed() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.path + "/login.keychain", device = dir.path + "/device.secret"
        let kc = try Keychain.create(path: path, devicePath: device, passcode: nil)
        kc.localStore!.indexTailLimit = 0
        _ = try kc.add(
            .genericPassword, attributes: ["acct": .string("a"), "svce": .string("s")], data: Array("x".utf8),
            protection: .always)
        let index = try #require(FileManager.default.contents(atPath: path + ".index"))
        #expect(rename(path + ".index", path + ".restore-0badf00d.index") == 0)

        let next = try Keychain.open(path: path, devicePath: device)
        _ = try next.add(
            .genericPassword, attributes: ["acct": .string("b"), "svce": .string("s")], data: Array("y".utf8),
            protection: .always)

        #expect(!FileManager.default.fileExists(atPath: path + ".restore-0badf00d.index"))
        #expect(
            FileManager.default.contents(atPath: path + ".index") == index,
            "the restore's index, moved beside the keychain")
        #expect(try Keychain.open(path: path, devicePath: device).verify().ok)
    }

    /// `init` over leftovers of a killed `init`: the new keychain's creator removes them once
    /// its file is in place.
    @Test func create_removesTheFilesOfAKilledCreation() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.path + "/login.keychain"
        let stale = [path + ".create-0badf00d", path + ".restore-1234abcd"]
        for p in stale { #expect(FileManager.default.createFile(atPath: p, contents: Data([1]))) }
        _ = try Keychain.create(path: path, devicePath: dir.path + "/device.secret", passcode: nil)
        for p in stale { #expect(!FileManager.default.fileExists(atPath: p), "\(p) was left") }
    }

    /// A backup's or the device secret's temporary file is locked while written: the clean-up
    /// removes only those whose lock it can take (their writer died).
    @Test func abandonedTemporaryFiles_areRemoved_liveOnesAndOtherNamesStay() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let fs = PosixFileSystem.shared
        let prefix = dir.path + "/out.tar.tmp-"
        let live = try fs.createLockedTemporaryFile(prefix: prefix, mode: 0o600)
        defer { fs.close(live.fd); InterruptCleanup.unregister(live.token) }
        #expect(isTemporaryName(String(live.path.dropFirst(dir.path.count + 1)), prefix: "out.tar.tmp-"))
        let abandoned = prefix + "0badf00d"
        let unrelated = [prefix + "notes123", prefix + "0BADF00D", dir.path + "/out.tar"]
        for p in [abandoned] + unrelated { #expect(FileManager.default.createFile(atPath: p, contents: Data([1]))) }
        #expect(mkfifo(prefix + "fifo0000", 0o600) == 0)
        #expect(mkfifo(prefix + "ffff0000", 0o600) == 0)  // the name form, but not a regular file: never opened

        fs.removeAbandonedTemporaryFiles(prefix: prefix)

        #expect(!FileManager.default.fileExists(atPath: abandoned))
        #expect(FileManager.default.fileExists(atPath: live.path), "the live writer's file stays")
        for p in unrelated + [prefix + "fifo0000", prefix + "ffff0000"] {
            #expect(FileManager.default.fileExists(atPath: p), "\(p) was removed")
        }
    }
}
