import Foundation
import Testing
@testable import Latchkey
import LatchkeyFormat
import LatchkeyTestSupport

/// Passcode attempts are throttled as on iOS (spec/SECURITY.md §2.4): five wrong passcodes in
/// a row are free, then 1, 5, 15 and 60 minutes must pass between attempts. The count lives in
/// the device state (spec/FORMAT.md §9), so a new process or a copy of the file does not reset it.
@Suite struct PasscodeThrottleTests {
    /// A settable clock shared by every instance of a test.
    final class Clock: @unchecked Sendable {
        private let lock = NSLock()
        private var seconds: Int64 = 1_800_000_000
        var now: Int64 {
            get { lock.lock(); defer { lock.unlock() }; return seconds }
            set { lock.lock(); seconds = newValue; lock.unlock() }
        }
        func advance(_ s: Int64) { now = now + s }
    }

    func open(_ disk: MemoryFileSystem, _ clock: Clock, path: String = TestEnv.keychainPath) throws -> Keychain {
        let kc = try Keychain.open(path: path, devicePath: TestEnv.devicePath, fs: disk)
        kc.localStore!.clock = { clock.now }
        return kc
    }

    func fail(_ kc: Keychain, times: Int) {
        for i in 0..<times {
            expectKeychainError(.authFailed, "wrong passcode \(i + 1)") {
                try kc.unlock(passcode: TestEnv.wrongPasscode)
            }
        }
    }

    func state(_ disk: MemoryFileSystem, _ kc: Keychain) throws -> DeviceState? {
        try kc.localStore!.device.state(fileUUID: kc.localStore!.fileUUID)
    }

    @Test func schedule_isFiveFreeThenOneFiveFifteenSixtyMinutes() {
        #expect((0...4).map { PasscodeThrottle.delay(afterFailures: UInt32($0)) } == [0, 0, 0, 0, 0])
        #expect((5...10).map { PasscodeThrottle.delay(afterFailures: UInt32($0)) } == [60, 300, 900, 3600, 3600, 3600])
        #expect(PasscodeThrottle.delay(afterFailures: .max) == 3600)
    }

    @Test func fiveWrongPasscodes_thenEveryAttemptWaitsAMinute_evenTheRightOne() throws {
        let disk = try makeDisk()
        _ = try createKeychain(on: disk)
        let clock = Clock()
        let kc = try open(disk, clock)
        fail(kc, times: 4)
        let fifth = expectKeychainError(.authFailed) { try kc.unlock(passcode: TestEnv.wrongPasscode) }
        #expect(
            fifth?.message.contains("5 wrong passcodes in a row; try again in 60 seconds") == true,
            "\(String(describing: fifth))")
        clock.advance(20)
        let refused = expectKeychainError(.authFailed) { try kc.unlock(passcode: TestEnv.passcode) }
        #expect(refused?.message.contains("try again in 40 seconds") == true, "\(String(describing: refused))")
        #expect(!kc.isAvailable(.whenUnlocked))
        #expect(try state(disk, kc)?.failedAttempts == 5, "a refused attempt is not counted")
        clock.advance(40)
        try kc.unlock(passcode: TestEnv.passcode)
        #expect(kc.isAvailable(.whenUnlocked))
        let reset = try state(disk, kc)
        #expect(
            reset?.failedAttempts == 0 && reset?.lastFailureAt == 0,
            "a correct passcode resets the count: \(String(describing: reset))")
    }

    @Test func delaysEscalate_andEachFailureAfterTheFifthSaysHowLongToWait() throws {
        let disk = try makeDisk()
        _ = try createKeychain(on: disk)
        let clock = Clock()
        let kc = try open(disk, clock)
        fail(kc, times: 5)
        for (n, wait) in [(6, 300), (7, 900), (8, 3600), (9, 3600)] {
            clock.advance(PasscodeThrottle.delay(afterFailures: UInt32(n - 1)))
            let e = expectKeychainError(.authFailed) { try kc.unlock(passcode: TestEnv.wrongPasscode) }
            #expect(
                e?.message.contains("\(n) wrong passcodes in a row; try again in \(wait) seconds") == true,
                "\(String(describing: e))")
        }
        clock.advance(3599)
        expectKeychainError(.authFailed) { try kc.unlock(passcode: TestEnv.passcode) }
        clock.advance(1)
        try kc.unlock(passcode: TestEnv.passcode)
    }

    @Test func aRightPasscodeResetsTheCount() throws {
        let disk = try makeDisk()
        _ = try createKeychain(on: disk)
        let clock = Clock()
        let kc = try open(disk, clock)
        fail(kc, times: 4)
        try kc.unlock(passcode: TestEnv.passcode)
        fail(kc, times: 4)
        try kc.unlock(passcode: TestEnv.passcode)
        #expect(try state(disk, kc)?.failedAttempts == 0)
    }

    @Test func theCountSurvivesANewProcess_andACopyOfTheFileElsewhere() throws {
        let disk = try makeDisk()
        _ = try createKeychain(on: disk)
        let clock = Clock()
        fail(try open(disk, clock), times: 3)
        fail(try open(disk, clock), times: 2)
        // A "restart": a new instance, as a new process would open it.
        let restarted = expectKeychainError(.authFailed) { try open(disk, clock).unlock(passcode: TestEnv.passcode) }
        #expect(restarted?.message.contains("try again in 60 seconds") == true, "\(String(describing: restarted))")
        // The same file copied to another path on this device: same file UUID, same state.
        try disk.makeDirectory("/elsewhere", mode: 0o700)
        disk.setContents("/elsewhere/copy.keychain", disk.keychainBytes)
        let copy = try open(disk, clock, path: "/elsewhere/copy.keychain")
        let copied = expectKeychainError(.authFailed) { try copy.unlock(passcode: TestEnv.passcode) }
        #expect(copied?.message.contains("try again in 60 seconds") == true, "\(String(describing: copied))")
        clock.advance(60)
        try copy.unlock(passcode: TestEnv.passcode)
    }

    @Test func theDelayIsEnforcedBeforeScryptRuns() throws {
        // scrypt at logN 17 costs 128 MiB and about half a second here: a refusal must not pay it.
        let disk = try makeDisk()
        let made = try Keychain.create(
            path: TestEnv.keychainPath, devicePath: TestEnv.devicePath,
            passcode: TestEnv.passcode, kdfLogN: 17, fs: disk)
        let clock = Clock()
        try made.localStore!.device.withLockedState(fileUUID: made.localStore!.fileUUID) { state in
            state?.failedAttempts = 5
            state?.lastFailureAt = clock.now
        }
        let kc = try open(disk, clock)
        let started = Date()
        expectKeychainError(.authFailed) { try kc.unlock(passcode: TestEnv.passcode) }
        expectKeychainError(.authFailed) { try kc.localStore!.checkPasscode(TestEnv.passcode) }
        expectKeychainError(.authFailed) {
            try kc.changePasscode(old: TestEnv.passcode, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN)
        }
        let elapsed = Date().timeIntervalSince(started)
        #expect(elapsed < 0.3, "three refused attempts took \(elapsed) s: scrypt ran")
    }

    @Test func userPresenceChecksAndPasscodeChangesAreCountedToo() throws {
        let disk = try makeDisk()
        _ = try createKeychain(on: disk)
        let clock = Clock()
        let kc = try open(disk, clock)
        fail(kc, times: 2)
        expectKeychainError(.authFailed) { try kc.localStore!.checkPasscode(TestEnv.wrongPasscode) }
        expectKeychainError(.authFailed) {
            try kc.changePasscode(old: TestEnv.wrongPasscode, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN)
        }
        let fifth = expectKeychainError(.authFailed) { try kc.localStore!.checkPasscode(TestEnv.wrongPasscode) }
        #expect(fifth?.message.contains("try again in 60 seconds") == true, "\(String(describing: fifth))")
        expectKeychainError(.authFailed) {
            try kc.changePasscode(old: TestEnv.passcode, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN)
        }
        clock.advance(60)
        try kc.changePasscode(old: TestEnv.passcode, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN)
        #expect(try state(disk, kc)?.failedAttempts == 0)
    }

    @Test func commitsKeepTheCount() throws {
        let disk = try makeDisk()
        _ = try createKeychain(on: disk)
        let clock = Clock()
        let kc = try open(disk, clock)
        fail(kc, times: 5)
        // A dk item can be added while locked; its commit rewrites the device state.
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "a", "svce": "s"]), data: bytes("x"), protection: .always)
        try kc.compact()
        let s = try state(disk, kc)
        #expect(s?.failedAttempts == 5 && s?.lastFailureAt == clock.now, "\(String(describing: s))")
        #expect(s?.newestSequence == kc.localStore!.lastSequence)
        expectKeychainError(.authFailed) { try kc.unlock(passcode: TestEnv.passcode) }
    }

    @Test func aClockSetBackNeverLengthensTheDelay() throws {
        let disk = try makeDisk()
        _ = try createKeychain(on: disk)
        let clock = Clock()
        let kc = try open(disk, clock)
        fail(kc, times: 5)
        clock.advance(-86_400)
        let e = expectKeychainError(.authFailed) { try kc.unlock(passcode: TestEnv.passcode) }
        #expect(e?.message.contains("try again in 60 seconds") == true, "\(String(describing: e))")
        clock.advance(60)
        try kc.unlock(passcode: TestEnv.passcode)
    }

    @Test func aDamagedStateCountsAsNoFailures_likeAnAbsentOne() throws {
        // Whoever can damage the device state can delete it (spec §9.4): no false lock-out.
        let disk = try makeDisk()
        let made = try createKeychain(on: disk)
        let clock = Clock()
        fail(try open(disk, clock), times: 5)
        let path = made.localStore!.device.statePath(fileUUID: made.localStore!.fileUUID)
        var bytes = try #require(disk.contents(path))
        bytes[40] ^= 0xff
        disk.setContents(path, bytes)
        try open(disk, clock).unlock(passcode: TestEnv.passcode)
    }
}
