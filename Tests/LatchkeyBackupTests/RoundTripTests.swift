import Foundation
import Latchkey
import LatchkeyBackup
import LatchkeyFormat
import Testing

/// Backups restored on the same device and on a new machine, for every protection class.
@Suite struct RoundTripTests {
    @Test func restore_onTheSameDevice_bringsBackEveryClassButAkpu() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        let items = try s.populate(kc)
        let summary = try s.backup(kc)
        #expect(summary.items == items.count - 1)
        #expect(summary.notExported == 1)
        #expect(summary.itemsByProtection["akpu"] == nil)

        let report = try s.restoreNew(devicePath: s.devicePath)
        #expect(report.restored == items.count - 1)
        #expect(report.skipped == 0)
        #expect(report.backup.sameDevice)
        #expect(report.backup.notExported == 1)
        #expect(report.restoredByProtection == ["ak": 1, "ck": 2, "dk": 1, "aku": 1, "cku": 1, "dku": 2])
        #expect(report.restoredByClass == ["genp": 6, "inet": 1, "keys": 1])

        let restored = try Keychain.open(path: s.path("restored.keychain"), devicePath: s.devicePath)
        try restored.unlock(passcode: BackupSandbox.passcode)
        let expected = items.filter { $0.protection != .whenPasscodeSetThisDeviceOnly }
            .sorted { $0.persistentRef.lexicographicallyPrecedes($1.persistentRef) }
        let got = try BackupSandbox.allItems(restored)
        // Persistent references, cdat/mdat, every attribute and the data come back unchanged.
        #expect(got == expected)
        #expect(restored.verify().ok)
    }

    @Test func restore_onAnotherMachine_restoresMigratoryClassesAndSkipsThisDeviceOnly() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        let items = try s.populate(kc)
        try s.backup(kc)

        let report = try s.restoreNew(devicePath: s.otherDevicePath)
        #expect(!report.backup.sameDevice)
        #expect(report.restored == 4)
        #expect(report.restoredByProtection == ["ak": 1, "ck": 2, "dk": 1])
        #expect(report.skippedByReason == [RestoreSkipReason.thisDeviceOnlyFromAnotherDevice.rawValue: 4])
        #expect(report.skippedByProtection == ["aku": 1, "cku": 1, "dku": 2])
        #expect(FileManager.default.fileExists(atPath: s.otherDevicePath), "restore creates the device secret")

        let restored = try Keychain.open(path: s.path("restored.keychain"), devicePath: s.otherDevicePath)
        try restored.unlock(passcode: BackupSandbox.passcode)
        let expected = items.filter { !$0.protection.isThisDeviceOnly }
            .sorted { $0.persistentRef.lexicographicallyPrecedes($1.persistentRef) }
        #expect(try BackupSandbox.allItems(restored) == expected)
    }

    @Test func deviceOnlyBackup_restoresEverythingHere_andNothingElsewhere() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        try s.populate(kc)
        let summary = try s.backup(kc, password: nil)
        #expect(!summary.passwordProtected)

        let here = try s.restoreNew(devicePath: s.devicePath, password: nil)
        #expect(here.restored == 8)
        #expect(!here.backup.passwordProtected)

        let e = keychainError {
            _ = try s.restoreNew(name: "elsewhere.keychain", devicePath: s.otherDevicePath, password: nil)
        }
        #expect(e?.status == .authFailed)
        #expect(!FileManager.default.fileExists(atPath: s.path("elsewhere.keychain")))
        #expect(!FileManager.default.fileExists(atPath: s.otherDevicePath), "nothing is created for a refused restore")
    }

    @Test(arguments: BackupCompression.allCases)
    func compressedBackups_restore_andTarListsThem(_ compression: BackupCompression) throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        try s.populate(kc)
        try s.backup(kc, compression: compression)
        let report = try s.restoreNew(devicePath: s.devicePath)
        #expect(report.restored == 8)

        let tar = Process()
        tar.executableURL = URL(fileURLWithPath: "/usr/bin/tar")
        tar.arguments = ["-tf", s.backupPath]
        let out = Pipe()
        tar.standardOutput = out
        tar.standardError = FileHandle.nullDevice
        try tar.run()
        let listing = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        tar.waitUntilExit()
        #expect(tar.terminationStatus == 0)
        #expect(listing == "latchkey-backup/keybag\nlatchkey-backup/items-000001\nlatchkey-backup/manifest\n")
    }

    @Test func emptyKeychain_backsUpAndRestores() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource(passcode: nil)
        let summary = try s.backup(kc)
        #expect(summary.items == 0 && summary.entries == 2)
        let report = try s.restoreNew(devicePath: s.otherDevicePath, passcode: nil)
        #expect(report.restored == 0)
        let restored = try Keychain.open(path: s.path("restored.keychain"), devicePath: s.otherDevicePath)
        #expect(!restored.hasPasscode)
    }

    @Test func manyItems_spanSeveralEntries_andComeBackInOrder() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        let n = 2600
        try kc.add(
            contentsOf: (0..<n).map {
                NewItem(
                    .genericPassword, attributes: ["acct": .string("u\($0)")], data: Array("d\($0)".utf8),
                    protection: [ProtectionClass.whenUnlocked, .alwaysThisDeviceOnly][$0 % 2])
            })
        let summary = try s.backup(kc)
        #expect(summary.items == n)
        #expect(summary.entries == 5)  // keybag, 3 items entries, manifest
        let report = try s.restoreNew(devicePath: s.devicePath)
        #expect(report.restored == n)
        let restored = try Keychain.open(path: s.path("restored.keychain"), devicePath: s.devicePath)
        try restored.unlock(passcode: BackupSandbox.passcode)
        let found = try restored.find(Query(.genericPassword, ["acct": .string("u1999")]))
        #expect(found.first?.data == Array("d1999".utf8))
        #expect(restored.verify().ok)
    }

    @Test func backupOfALockedKeychain_isRefusedBeforeWriting() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        try s.populate(kc)
        let locked = try Keychain.open(path: s.keychainPath, devicePath: s.devicePath)
        let e = keychainError { try s.backup(locked) }
        #expect(e?.status == .interactionNotAllowed)
        #expect(!FileManager.default.fileExists(atPath: s.backupPath))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: s.directory).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty)
    }

    @Test func userPresenceItems_keepTheirFlag() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        try kc.add(.genericPassword, attributes: ["acct": .string("guarded")], data: [9], requiresUserPresence: true)
        try s.backup(kc)
        let report = try s.restoreNew(devicePath: s.devicePath)
        #expect(report.restored == 1)
        let restored = try Keychain.open(path: s.path("restored.keychain"), devicePath: s.devicePath)
        try restored.unlock(passcode: BackupSandbox.passcode)
        #expect(try restored.find(Query(.genericPassword), includeData: false).first?.requiresUserPresence == true)

        let none = try s.restoreNew(name: "nopasscode.keychain", devicePath: s.devicePath, passcode: nil)
        #expect(none.skippedByReason == [RestoreSkipReason.userPresenceNeedsPasscode.rawValue: 1])
    }
}
