// libFuzzer target: the keychain file reader (spec/FORMAT.md §3, §6–§8, §10).
//
// Each input is a keychain file. It is opened three ways on an in-memory disk with the
// fixtures' device secrets (the one whose UUID the header names; fixtures/keychain/*/device.secret):
//   1. as it is: magic, version, header length, header MAC; damage must be refused, never crash;
//   2. re-signed: the harness first rewrites the device UUID, the header MAC, every frame CRC
//      and every record tag with the right keys, so that mutations get past the MACs into the
//      keybag decoder, the record scan, the transaction rules (§10.3), the torn-tail logic,
//      verify, and, after unlocking with the fixture passcodes when the scrypt cost is small,
//      item decryption and the plaintext decoder;
//   3. the bytes themselves fed to every small decoder (frame header, put, delete and history
//      payloads, item plaintext, device state).
// Each keychain that opens is also listed (its history, §7.7) and compacted.
// Any crash, trap, hang or unbounded allocation is a bug; errors are the expected outcome.
import Foundation
import Latchkey
import LatchkeyTestSupport
import LatchkeyCrypto
import LatchkeyFormat

/// LATCHKEY_FUZZ_DEBUG=1 prints each outcome (for `fuzz-keychain input…` by hand).
private let debug = ProcessInfo.processInfo.environment["LATCHKEY_FUZZ_DEBUG"] != nil
private let devicePath = "/device/device.secret"
private let keychainPath = "/keychains/login.keychain"
/// The device secret files of the fixtures (fixtures/keychain/*/device.secret), the first
/// being golden_small's (LATCHKEY_FUZZ_DEVICE overrides it).
private let deviceFiles: [[UInt8]] = {
    var files: [[UInt8]] = []
    let first =
        ProcessInfo.processInfo.environment["LATCHKEY_FUZZ_DEVICE"] ?? "fixtures/keychain/golden_small/device.secret"
    let others = ((try? FileManager.default.contentsOfDirectory(atPath: "fixtures/keychain")) ?? []).sorted()
        .map { "fixtures/keychain/\($0)/device.secret" }
    for path in [first] + others {
        guard let data = FileManager.default.contents(atPath: path), !files.contains([UInt8](data)) else { continue }
        files.append([UInt8](data))
    }
    guard !files.isEmpty else {
        fatalError("fuzz-keychain: no device secret at \(first); run from the package root or set LATCHKEY_FUZZ_DEVICE")
    }
    return files
}()
private let devices = deviceFiles.map { try! DeviceSecret.decodeFile($0) }

/// The index of the device a header names (offset 32), or 0.
private func deviceIndex(_ b: [UInt8]) -> Int {
    guard b.count >= 48 else { return 0 }
    return devices.firstIndex { $0.uuid[...] == b[32..<48] } ?? 0
}
/// The passcodes of the fixtures (fixtures/keychain/*/passcode.txt).
private let passcodes = ["fixture-passcode-0000", "new-passcode-5678"].map { Array($0.utf8) }

/// scrypt costs the harness pays for (a hostile keybag may ask up to 1 GiB, which is allowed).
private let cheapKDF: Set<String> = ["scrypt N=2^10 r=8 p=1", "scrypt N=2^10 r=1 p=1", "scrypt N=2^11 r=1 p=1"]

/// The u32 at `at` (0 past the end).
private func u32(_ b: [UInt8], _ at: Int) -> Int { Int(ByteReader(b).getInteger(at: at, as: UInt32.self) ?? 0) }

/// Rewrites the device UUID, header MAC, frame CRCs and record tags so they verify.
private func resign(_ input: [UInt8]) -> [UInt8]? {
    var b = input
    guard b.count >= 16 else { return nil }
    let headerLength = u32(b, 12)
    guard headerLength >= 74 + 32, headerLength <= b.count else { return nil }
    let device = devices[deviceIndex(b)]
    b.replaceSubrange(32..<48, with: device.uuid)
    let fileUUID = Array(b[16..<32])
    guard let keys = try? FileKeys(device: device, fileUUID: fileUUID) else { return nil }
    let mac = Crypto.hmacSHA256(key: keys.headerMAC, parts: [Array(b[0..<(headerLength - 32)])])
    b.replaceSubrange((headerLength - 32)..<headerLength, with: mac)
    var o = headerLength
    while o + 20 <= b.count {
        let length = u32(b, o)
        guard length <= 16 << 20, o + 36 + length <= b.count else { break }
        let crc = CRC32C.checksum(b[o..<(o + 16)])
        b.replaceSubrange(
            (o + 16)..<(o + 20),
            with: [UInt8(crc >> 24), UInt8(crc >> 16 & 0xff), UInt8(crc >> 8 & 0xff), UInt8(crc & 0xff)])
        let tag = RecordFrame.tag(macKey: keys.recordMAC, offset: UInt64(o), headerAndPayload: b[o..<(o + 20 + length)])
        b.replaceSubrange((o + 20 + length)..<(o + 36 + length), with: tag)
        o += 36 + length
    }
    return b
}

private func open(_ bytes: [UInt8], unlock: Bool) {
    let disk = MemoryFileSystem()
    try! disk.makeDirectory("/device", mode: 0o700)
    try! disk.makeDirectory("/keychains", mode: 0o700)
    let deviceFile = deviceFiles[deviceIndex(bytes)]
    disk.setContents(devicePath, deviceFile)
    disk.setContents(keychainPath, bytes)
    for acceptRollback in [false, true] {
        let kc: Keychain
        do {
            kc = try Keychain.open(path: keychainPath, devicePath: devicePath, acceptRollback: acceptRollback, fs: disk)
        } catch {
            if debug { print("fuzz-keychain: \(error)") }
            continue
        }
        if unlock, kc.hasPasscode, let info = try? kc.info(), cheapKDF.contains(info.kdf) {
            for p in passcodes where (try? kc.unlock(passcode: p)) != nil { break }
        }
        var found = 0
        for c in ItemClass.allCases {
            for pc in ProtectionClass.allCases {
                for sync in [SyncFilter.notSynchronizable, .synchronizable] {
                    found +=
                        (try? kc.find(Query(c, protection: pc, synchronizable: sync), includeData: true))?.count ?? 0
                }
            }
        }
        // The history (spec/FORMAT.md §7.7): its walk, the bound, and each version decrypted
        // when its class is unlocked; then a compaction, which copies or refuses it.
        var versions = 0
        for c in [ItemClass.genericPassword, .internetPassword] {
            versions += (try? kc.history(Query(c, synchronizable: .any)))?.versions.count ?? 0
        }
        let report = kc.verify()
        _ = try? kc.compact()
        if debug {
            print(
                "fuzz-keychain: opened (unlock \(unlock)), \(found) items read, \(versions) versions listed, verify ok \(report.ok) \(report.problems)"
            )
        }
        _ = try? kc.info()
        return
    }
}

private func decoders(_ bytes: [UInt8]) {
    _ = try? FrameHeader.decode(bytes[...])
    _ = try? ItemPutPayload.decode(bytes[...])
    _ = try? ItemPutPayload.decodeClear(bytes[...])
    _ = try? ItemDeletePayload.decode(bytes[...])
    _ = try? HistoryRecord.decode(bytes[...])
    _ = try? ItemPlaintext.decode(bytes)
    _ = try? FileHeader.decode(bytes)
    _ = try? DeviceSecret.decodeFile(bytes)
    if let key = try? DeviceState.macKey(device: devices[0]) { _ = try? DeviceState.decode(bytes, macKey: key) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzKeychain(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    open(input, unlock: false)
    if let signed = resign(input) {
        // Unlocking runs scrypt (a few ms at the fixtures' logN 10): do it for a quarter of the
        // inputs, chosen by content so that a run is reproducible.
        open(signed, unlock: input.reduce(0, { $0 &+ UInt32($1) }) & 3 == 0)
    }
    decoders(input)
    return 0
}
