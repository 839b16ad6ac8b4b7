import Foundation
import Testing
@testable import Latchkey
import LatchkeyCrypto
import LatchkeyFormat
import LatchkeyTestSupport

/// The search for authenticated records after a record that fails (spec/FORMAT.md §10.2): its
/// cost is bounded whatever bytes are appended, and it sees a record of the maximum size.
@Suite struct DamageSearchTests {
    /// A keychain without a passcode, one item, no index and no device state (a first open
    /// here: the tail is judged by the search alone, §10.4).
    static func oneItem() throws -> MemoryFileSystem {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        try kc.add(contentsOf: [
            NewItem(.genericPassword, attributes: attrs(["acct": "a", "svce": "s"]), data: bytes("secret-a"))
        ])
        kc.close()
        return disk
    }

    static func forgetIndexAndState(_ disk: MemoryFileSystem) {
        try? disk.remove(TestEnv.keychainPath + ".index")
        for name in disk.list(TestEnv.stateDirectory) { try? disk.remove(TestEnv.stateDirectory + "/" + name) }
    }

    static func frameHeader(length: UInt32, type: UInt8, flags: UInt8 = 0, sequence: UInt64) -> [UInt8] {
        FrameHeader(payloadLength: length, type: type, flags: flags, sequence: sequence).encode()
    }

    /// 1 MiB appended by someone who can write the file: a byte that fails the frame CRC, then
    /// a frame header every 20 bytes whose CRC matches and whose length reaches (nearly) the end
    /// of the file. Each would cost a tag over up to 1 MiB: about 50,000 of them, the whole
    /// search quadratic. The budget of §10.2 refuses it as damage, at once.
    @Test func craftedFrameHeadersAppended_areRefusedAsDamage_withinATimeBound() throws {
        let disk = try Self.oneItem()
        var file = disk.keychainBytes
        let end = file.count
        let appended = 1 << 20
        let total = end + appended
        var garbage: [UInt8] = [0xFF]
        while garbage.count + 20 + 36 <= appended {
            let at = end + garbage.count
            garbage += Self.frameHeader(
                length: UInt32(min(total - at - 36, 1 << 24)), type: 0x01, sequence: UInt64(garbage.count))
        }
        garbage += [UInt8](repeating: 0x5A, count: appended - garbage.count)
        file += garbage
        disk.setContents(TestEnv.keychainPath, file)
        Self.forgetIndexAndState(disk)

        let started = monotonicSeconds()
        #expect {
            _ = try openKeychain(on: disk)
        } throws: { error in
            guard let e = error as? KeychainError else { return false }
            return e.status == .decode && e.message.contains("damaged at byte \(end)") && e.message.contains("§10.2")
        }
        #expect(monotonicSeconds() - started < 10, "the search took \(monotonicSeconds() - started) s")
        // Nothing was cut: the evidence stays.
        #expect(disk.keychainBytes.count == total)
    }

    /// A record whose payload is exactly 16 MiB (L = 2^24: byte 0 of its frame header is 1, not
    /// 0) closing a transaction after a damaged record proves the damaged record was committed:
    /// integrity error, never a torn tail cut off (§10.2). The record is an ancillary one of a
    /// type no reader knows (0x81), made with the device's record MAC key.
    @Test func maximumSizeRecordAfterADamagedOne_provesItCommitted() throws {
        let disk = try Self.oneItem()
        let kc = try openKeychain(on: disk)
        let damagedAt = disk.keychainBytes.count
        try kc.add(contentsOf: [
            NewItem(.genericPassword, attributes: attrs(["acct": "b", "svce": "s"]), data: bytes("secret-b"))
        ])
        kc.close()
        var file = disk.keychainBytes
        let (header, _, _) = try FileHeader.decode(
            Array(file.prefix(try FileHeader.peekLength(Array(file.prefix(16))))))
        let keys = try FileKeys(device: try DeviceSecret.decodeFile(TestEnv.deviceFile), fileUUID: header.fileUUID)
        var last = try FrameHeader.decode(file[damagedAt..<damagedAt + 20])
        var at = damagedAt
        while at + last.recordSize < file.count {
            at += last.recordSize
            last = try FrameHeader.decode(file[at..<at + 20])
        }
        let bigAt = file.count
        let big = RecordFrame.encode(
            type: 0x81, flags: 0, sequence: last.sequence + 1,
            payload: [UInt8](repeating: 0x42, count: 1 << 24), offset: UInt64(bigAt), macKey: keys.recordMAC)
        #expect(big[0] == 1, "L = 2^24 has byte 0 = 1")
        file += big
        // The record closing b's transaction fails its frame CRC (only the big record can then
        // show that a transaction closed after it); a few bytes after the big record are a torn
        // append, so the big record ends before the end of the file.
        file[at + 9] ^= 0x01
        file += [0x07, 0x07, 0x07]
        disk.setContents(TestEnv.keychainPath, file)
        Self.forgetIndexAndState(disk)

        #expect {
            _ = try openKeychain(on: disk)
        } throws: { error in
            guard let e = error as? KeychainError else { return false }
            return e.status == .decode && e.message.contains("damaged at byte \(at)")
        }
        #expect(disk.keychainBytes == file, "bytes were cut")
    }
}

private func monotonicSeconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}
