// libFuzzer target: the backup archive reader (Sources/LatchkeyBackup, spec/BACKUP.md §10–§11).
//
// Each input is a backup archive (a tar stream, plain or compressed). It is verified, as
// `latchkey restore --dry-run` does, with the fixtures' source device secrets and backup
// password (fixtures/backup/; LATCHKEY_FUZZ_BACKUP_FIXTURES overrides the directory):
//   1. as it is;
//   2. "re-sealed": the harness recomputes every ustar header checksum and the keybag entry's
//      SHA-256, so that mutations get past libarchive's header check and the keybag checksum
//      into the keybag decoder, the unlock, the items entries and the manifest rules.
// The archive is read from an unlinked tmpfs file through BackupSource, libarchive included. The password is
// given only when the first entry is a plain ustar keybag whose scrypt cost is at most the
// fixtures' (logN 10, r 8, p 1): a hostile archive may ask up to 1 GiB, which is allowed, and
// not worth paying per input. Any crash, trap, hang or unbounded allocation is a bug.
import Foundation
import Latchkey
import LatchkeyTestSupport
import LatchkeyBackup
import LatchkeyCrypto
import LatchkeyFormat
#if canImport(Glibc)
    import Glibc
#endif

private let fixtures = ProcessInfo.processInfo.environment["LATCHKEY_FUZZ_BACKUP_FIXTURES"] ?? "fixtures/backup"
/// LATCHKEY_FUZZ_DEBUG=1 prints each outcome (for `fuzz-backup input…` by hand).
private let debug = ProcessInfo.processInfo.environment["LATCHKEY_FUZZ_DEBUG"] != nil
private let password = Array("fixture backup password".utf8)

/// The fixtures' source devices, each on its own in-memory disk.
private let devices: [Device] = {
    var out: [Device] = []
    var seen = Set<[UInt8]>()
    let names = (try? FileManager.default.contentsOfDirectory(atPath: fixtures)) ?? []
    for name in names.sorted() {
        guard let bytes = FileManager.default.contents(atPath: "\(fixtures)/\(name)/source-device.secret"),
            seen.insert([UInt8](bytes)).inserted
        else { continue }
        let disk = MemoryFileSystem()
        try! disk.makeDirectory("/device", mode: 0o700)
        disk.setContents("/device/device.secret", [UInt8](bytes))
        out.append(try! Device.load(path: "/device/device.secret", fs: disk))
    }
    guard !out.isEmpty else {
        fatalError(
            "fuzz-backup: no fixtures in \(fixtures); run from the package root or set LATCHKEY_FUZZ_BACKUP_FIXTURES")
    }
    return out
}()

/// An unlinked file on tmpfs (when there is one) that holds the current input.
private let memfd: Int32 = {
    let dir = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
    let path = "\(dir)/latchkey-fuzz-backup-\(getpid())"
    let fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    precondition(fd >= 0, "cannot create \(path)")
    unlink(path)
    return fd
}()

private func octal(_ b: [UInt8], _ at: Int, _ count: Int) -> Int? {
    var v = 0
    var any = false
    for c in b[at..<(at + count)] {
        if c == 0 || c == 32 { if any { break } else { continue } }
        guard (48...55).contains(c) else { return nil }
        v = v * 8 + Int(c - 48)
        any = true
        if v > 1 << 30 { return nil }
    }
    return any ? v : nil
}

/// The first entry's data when it is a plain ustar regular file named like the keybag.
private func ustarKeybag(_ b: [UInt8]) -> [UInt8]? {
    guard b.count >= 1024, let size = octal(b, 124, 12), b[156] == 48 || b[156] == 0, 512 + size <= b.count else {
        return nil
    }
    let name = String(decoding: b[0..<100].prefix { $0 != 0 }, as: UTF8.self)
    guard name == "latchkey-backup/keybag" else { return nil }
    return Array(b[512..<(512 + size)])
}

/// Recomputes the ustar header checksums and the keybag's trailing SHA-256.
private func reseal(_ input: [UInt8]) -> [UInt8] {
    var b = input
    var o = 0
    var first = true
    while o + 512 <= b.count, b[o..<(o + 512)].contains(where: { $0 != 0 }) {
        b.replaceSubrange((o + 148)..<(o + 156), with: [UInt8](repeating: 32, count: 8))
        let sum = b[o..<(o + 512)].reduce(0) { $0 + Int($1) }
        let digits = Array(String(sum, radix: 8).utf8)
        let field = [UInt8](repeating: 48, count: max(0, 6 - digits.count)) + digits.suffix(6) + [0, 32]
        b.replaceSubrange((o + 148)..<(o + 156), with: field)
        guard let size = octal(b, o + 124, 12) else { break }
        if first, size >= 32, o + 512 + size <= b.count {
            let start = o + 512, end = o + 512 + size
            b.replaceSubrange((end - 32)..<end, with: Crypto.sha256(Array(b[start..<(end - 32)])))
        }
        first = false
        o += 512 + (size + 511) / 512 * 512
    }
    return b
}

private func verify(_ bytes: [UInt8]) {
    _ = ftruncate(memfd, 0)
    _ = bytes.withUnsafeBytes { pwrite(memfd, $0.baseAddress, $0.count, 0) }
    var device = devices[0]
    var cheap = false
    if let kb = ustarKeybag(bytes), let bag = try? BackupKeybag.decode(kb) {
        device = devices.first { $0.deviceSecret.uuid == bag.common.sourceDeviceUUID } ?? devices[0]
        let k = bag.common.kdf
        cheap = k.kind == .none || (k.logN <= 10 && k.r <= 8 && k.p <= 1)
    }
    guard let source = try? BackupSource.file("/proc/self/fd/\(memfd)") else { return }
    do {
        let backup = try VerifiedBackup.verify(
            source, device: device, password: { cheap ? password : nil }, target: .newKeychain(hasPasscode: true))
        if debug { print("fuzz-backup: verified, \(backup.plan.restored) items to restore") }
    } catch {
        if debug { print("fuzz-backup: \(error)") }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBackup(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    verify(input)
    let resealed = reseal(input)
    if resealed != input { verify(resealed) }
    return 0
}
