import Foundation
import Latchkey
import LatchkeyBackup
import LatchkeyCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// `latchkey-bench --backup --items N`: backup and restore of N items (issue 4), in a process
/// of its own so that peak RSS belongs to it. The KDFs run at logN 10 (about a millisecond) and
/// the default backup KDF is timed on its own, so the backup and restore times exclude it.
func runBackupBench(items: Int) throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-backup-bench-\(getpid())").path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let path = dir + "/source.keychain", devicePath = dir + "/device.secret", archive = dir + "/bench.backup"
    let password = Array("bench backup password".utf8)

    let kc = try Keychain.create(path: path, devicePath: devicePath, passcode: nil)
    let classes: [ProtectionClass] = [
        .whenUnlocked, .afterFirstUnlock, .always, .whenUnlockedThisDeviceOnly,
        .afterFirstUnlockThisDeviceOnly, .alwaysThisDeviceOnly
    ]
    var next = 0
    while next < items {
        let batch = (next..<min(items, next + 1000)).map {
            NewItem(
                .genericPassword, attributes: attrs($0), data: Array("correct horse battery staple 0123456789".utf8),
                protection: classes[$0 % classes.count])
        }
        try kc.add(contentsOf: batch)
        next += batch.count
    }
    let rssSource = peakRSSMiB()

    let c0 = cpuSeconds()
    let t0 = now()
    let summary = try BackupArchive.write(kc, toFile: archive, options: BackupOptions(password: password, kdfLogN: 10))
    let backupSeconds = now() - t0
    let backupCPU = cpuSeconds() - c0
    precondition(summary.items == items)
    let rssBackup = peakRSSMiB()
    let archiveBytes = (try FileManager.default.attributesOfItem(atPath: archive)[.size] as? UInt64) ?? 0

    let c1 = cpuSeconds()
    let t1 = now()
    let verified = try VerifiedBackup.verify(
        try BackupSource.file(archive), device: try Device.load(path: devicePath),
        password: { password }, target: .newKeychain(hasPasscode: false))
    let verifySeconds = now() - t1
    let t2 = now()
    let report = try verified.restoreNewKeychain(
        path: dir + "/restored.keychain", devicePath: devicePath, passcode: nil)
    let writeSeconds = now() - t2
    let restoreCPU = cpuSeconds() - c1
    precondition(report.restored == items)
    let rssRestore = peakRSSMiB()

    let kdf = KDFParametersForBench.backupDefault
    let tk = now()
    _ = try Crypto.scrypt(
        password: password, salt: [UInt8](repeating: 1, count: 16), n: kdf.n, r: 8, p: 1, maxMemory: kdf.maxMemory,
        count: 32)
    let kdfMs = (now() - tk) * 1000

    print(
        String(
            format:
                "backup items=%-7d backup=%.2fs (cpu %.2fs) restore=%.2fs (cpu %.2fs; wall: verify %.2fs + write %.2fs) archive=%.1fMiB (%.0f B/item) peakRSS: source keychain %.1fMiB, after backup %.1fMiB, after restore %.1fMiB; backup KDF (N=2^%d,r=8,p=1)=%.0fms, excluded",
            items, backupSeconds, backupCPU, verifySeconds + writeSeconds, restoreCPU, verifySeconds, writeSeconds,
            Double(archiveBytes) / 1_048_576, Double(archiveBytes) / Double(max(items, 1)),
            rssSource, rssBackup, rssRestore, Int(BackupOptions.defaultLogN), kdfMs))
}

/// User and system CPU time of this process: less disturbed than wall time on a busy machine.
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(
        usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// The default backup KDF's parameters (spec/BACKUP.md §4.1).
enum KDFParametersForBench {
    struct Parameters { var n: UInt64; var maxMemory: UInt64 }
    static var backupDefault: Parameters {
        let n = UInt64(1) << UInt64(BackupOptions.defaultLogN)
        return Parameters(n: n, maxMemory: 128 * 8 * n + 128 * 8 + (1 << 20))
    }
}
