#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Latchkey
import LatchkeyTestSupport
import LatchkeyBackup
import LatchkeyFormat
import Testing

/// How backup and restore fail (issue 14, point 3): no crash when libarchive cannot start, no
/// temporary file left, errno in the message, a failed directory fsync reported, never a
/// second name left on a restored keychain.
@Suite struct BackupFailureTests {
    func options() -> BackupOptions { BackupOptions(password: BackupSandbox.password, kdfLogN: BackupSandbox.logN) }

    /// libarchive cannot start the stream on a descriptor that is not open. The writer's
    /// failing initializer used to free the archive and `deinit` to free it again (SIGSEGV):
    /// run in a child process so that the suite survives the old code.
    @Test func writerThatCannotStart_throwsInsteadOfCrashing() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        try kc.add(.genericPassword, attributes: ["acct": .string("a")], data: Array("x".utf8))
        let notOpen = open("/dev/null", O_RDONLY)
        close(notOpen)
        let pid = fork()
        if pid == 0 {
            do {
                try BackupArchive.write(kc, to: notOpen, options: options())
                _exit(1)  // must not succeed
            } catch let e as KeychainError where e.status == .io && e.message.contains("nothing was written") {
                _exit(0)
            } catch {
                _exit(2)
            }
        }
        #expect(pid > 0)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        #expect(status & 0x7f == 0, "the child was killed by signal \(status & 0x7f)")
        #expect((status >> 8) & 0xff == 0, "exit \((status >> 8) & 0xff): 0 = errSecIO saying nothing was written")
    }

    /// A full disk (/dev/full answers every write with ENOSPC) is named as the engine names
    /// it, with the next step, not only as libarchive's "Write error" and the errno text.
    @Test func fullDisk_isNamedWithTheNextStep() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        try kc.add(.genericPassword, attributes: ["acct": .string("a")], data: Array("x".utf8))
        let fd = open("/dev/full", O_WRONLY | O_CLOEXEC)
        try #require(fd >= 0, "no /dev/full on this machine")
        defer { close(fd) }
        let error = keychainError { try BackupArchive.write(kc, to: fd, options: options()) }
        #expect(error?.status == .io)
        #expect(
            error?.message.contains("the disk is full: free some space and try again") == true,
            "\(String(describing: error))")
    }

    /// The backup is renamed into place, then its directory fsync fails: the command must not
    /// report plain success, and must say the file is there (its bytes are durable).
    @Test func directorySyncFailingAfterTheRename_isReported_andTheBackupIsComplete() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        try kc.add(.genericPassword, attributes: ["acct": .string("a")], data: Array("x".utf8))
        let fs = FaultyFileSystem(PosixFileSystem.shared)
        fs.beforeSyncDirectory = { path in
            if path == s.directory { throw IOFailure("fsync", path, EIO) }
        }
        let error = keychainError { _ = try BackupArchive.write(kc, toFile: s.backupPath, options: options(), fs: fs) }
        #expect(error?.status == .io)
        #expect(error?.message.contains("complete at \(s.backupPath)") == true, "\(String(describing: error))")
        #expect(error?.message.contains(String(cString: strerror(EIO))) == true)
        #expect(try s.restoreNew(devicePath: s.devicePath).restored == 1, "the backup itself is whole")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: s.directory).filter { $0.contains(".tmp-") }.isEmpty)
    }

    // MARK: Restore into a new keychain

    func verified(_ s: BackupSandbox) throws -> VerifiedBackup {
        let kc = try s.makeSource()
        try kc.add(.genericPassword, attributes: ["acct": .string("a")], data: Array("x".utf8))
        try s.backup(kc)
        return try VerifiedBackup.verify(
            try BackupSource.file(s.backupPath), device: nil, password: { BackupSandbox.password },
            target: .newKeychain(hasPasscode: true))
    }

    /// On a file system without RENAME_NOREPLACE the temporary keychain is linked into place
    /// and then unlinked. When the unlink fails the keychain must not keep two names.
    @Test func unlinkFailingAfterTheLink_leavesNoSecondName() throws {
        let s = try BackupSandbox()
        let backup = try verified(s)
        let disk = MemoryFileSystem()
        try disk.makeDirectory("/new", mode: 0o700)
        let fs = FaultyFileSystem(disk)
        fs.beforeRemove = { path in
            // The restore's own move (the temporary keychain's creation has a name of its own).
            if path.contains(".restore-") && !path.contains(".create-") { throw IOFailure("unlink", path, EIO) }
        }
        let error = keychainError {
            _ = try backup.restoreNewKeychain(
                path: "/new/login.keychain", devicePath: "/new/device.secret", passcode: BackupSandbox.passcode,
                kdfLogN: BackupSandbox.logN, progress: nil, fs: fs)
        }
        #expect(error?.status == .io)
        #expect(error?.message.contains("nothing was restored") == true, "\(String(describing: error))")
        let keychains = disk.listFiles().filter { $0.hasPrefix("/new/login.keychain") }
        #expect(keychains.count <= 1, "one name at most for the keychain: \(keychains)")
        #expect(!keychains.contains("/new/login.keychain"), "the link was undone: nothing was restored")
    }

    /// The worst case: neither the temporary name nor (to undo) the new one can be removed.
    /// The keychain is then in place, and its device secret must stay; the message says so
    /// and names the second name to remove.
    @Test func unlinkAndItsUndoFailing_keepsTheKeychainUsable_andNamesTheSecondName() throws {
        let s = try BackupSandbox()
        let backup = try verified(s)
        let disk = MemoryFileSystem()
        try disk.makeDirectory("/new", mode: 0o700)
        let fs = FaultyFileSystem(disk)
        fs.beforeRemove = { path in
            if path.contains("login.keychain") && !path.contains(".create-") { throw IOFailure("unlink", path, EIO) }
        }
        let error = keychainError {
            _ = try backup.restoreNewKeychain(
                path: "/new/login.keychain", devicePath: "/new/device.secret", passcode: BackupSandbox.passcode,
                kdfLogN: BackupSandbox.logN, progress: nil, fs: fs)
        }
        #expect(error?.status == .io)
        let temp = try #require(disk.listFiles().first { $0.hasPrefix("/new/login.keychain.restore-") })
        #expect(
            error?.message.contains("complete at /new/login.keychain") == true && error?.message.contains(temp) == true,
            "\(String(describing: error))")
        let kc = try Keychain.open(path: "/new/login.keychain", devicePath: "/new/device.secret", fs: disk)
        try kc.unlock(passcode: BackupSandbox.passcode)
        #expect(try kc.find(Query(.genericPassword)).count == 1)
    }

    @Test func directorySyncFailingAfterTheRestore_isReported_andTheKeychainIsThere() throws {
        let s = try BackupSandbox()
        let backup = try verified(s)
        let disk = MemoryFileSystem()
        try disk.makeDirectory("/new", mode: 0o700)
        let fs = FaultyFileSystem(disk)
        fs.beforeSyncDirectory = { [unowned fs] path in
            if path == "/new", fs.renamed.contains(where: { $0.1 == "/new/login.keychain" }) {
                throw IOFailure("fsync", path, EIO)
            }
        }
        let error = keychainError {
            _ = try backup.restoreNewKeychain(
                path: "/new/login.keychain", devicePath: "/new/device.secret", passcode: BackupSandbox.passcode,
                kdfLogN: BackupSandbox.logN, progress: nil, fs: fs)
        }
        #expect(error?.status == .io)
        #expect(error?.message.contains("restore is complete") == true, "\(String(describing: error))")
        let kc = try Keychain.open(path: "/new/login.keychain", devicePath: "/new/device.secret", fs: disk)
        try kc.unlock(passcode: BackupSandbox.passcode)
        #expect(try kc.find(Query(.genericPassword)).count == 1)
        #expect(disk.listFiles().filter { $0.contains(".restore-") }.isEmpty)
    }
}
