import Foundation
import Latchkey
import LatchkeyBackup
import LatchkeyFormat
import Testing

/// Damaged, truncated and tampered archives and wrong passwords: a clear error with the
/// right status, and the destination keychain byte for byte as it was.
@Suite struct DamageTests {
    /// Where each entry's data lies in an uncompressed tar.
    static func entries(_ tar: [UInt8]) -> [(name: String, offset: Int, size: Int)] {
        var out: [(String, Int, Int)] = []
        var at = 0
        while at + 512 <= tar.count, tar[at] != 0 {
            let name = String(decoding: tar[at..<at + 100].prefix { $0 != 0 }, as: UTF8.self)
            let sizeText = String(decoding: tar[at + 124..<at + 136].prefix { $0 != 0 && $0 != 0x20 }, as: UTF8.self)
            let size = Int(sizeText, radix: 8) ?? 0
            out.append((name, at + 512, size))
            at += 512 + (size + 511) / 512 * 512
        }
        return out
    }

    /// A source with items of every class, its backup, and a destination keychain (on the
    /// source device) for merges.
    func setUp() throws -> (BackupSandbox, [UInt8], Keychain) {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        try s.populate(kc)
        try kc.add(
            contentsOf: (0..<1500).map {
                NewItem(.genericPassword, attributes: ["acct": .string("bulk\($0)")], data: [1])
            })
        try s.backup(kc)
        let dest = try Keychain.create(
            path: s.path("dest.keychain"), devicePath: s.devicePath, passcode: BackupSandbox.passcode, kdfLogN: 10)
        try dest.add(.genericPassword, attributes: ["acct": .string("already here")], data: [42])
        return (s, try s.bytes(s.backupPath), dest)
    }

    /// Restores `archive` both ways and checks the status and that nothing changed.
    func expectRefused(
        _ s: BackupSandbox, _ archive: [UInt8], _ dest: Keychain, status: KeychainStatus,
        password: [UInt8]? = BackupSandbox.password, saying: String? = nil, _ what: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let path = s.path("bad.backup")
        try s.write(archive, to: path)
        let before = try s.bytes(s.path("dest.keychain"))
        let merged = keychainError(
            { _ = try s.merge(path, into: dest, password: password) }, sourceLocation: sourceLocation)
        #expect(
            merged?.status == status, "\(what): \(merged.map(String.init(describing:)) ?? "no error")",
            sourceLocation: sourceLocation)
        #expect(
            try s.bytes(s.path("dest.keychain")) == before, "\(what): the keychain changed",
            sourceLocation: sourceLocation)
        let fresh = keychainError(
            { _ = try s.restoreNew(path, name: "fresh.keychain", devicePath: s.devicePath, password: password) },
            sourceLocation: sourceLocation)
        #expect(fresh?.status == status, "\(what)", sourceLocation: sourceLocation)
        if let saying {
            for e in [merged, fresh] {
                #expect(
                    e.map { String(describing: $0).contains(saying) } == true,
                    "\(what): \(e.map(String.init(describing:)) ?? "no error")", sourceLocation: sourceLocation)
            }
        }
        #expect(
            !FileManager.default.fileExists(atPath: s.path("fresh.keychain")), "\(what)", sourceLocation: sourceLocation
        )
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: s.directory).filter {
            $0.contains(".restore-")
        }
        #expect(leftovers.isEmpty, "\(what): \(leftovers)", sourceLocation: sourceLocation)
    }

    @Test func wrongPassword_isAnAuthenticationFailure() throws {
        let (s, archive, dest) = try setUp()
        try expectRefused(s, archive, dest, status: .authFailed, password: Array("wrong".utf8), "wrong password")
        try expectRefused(s, archive, dest, status: .authFailed, password: nil, "no password")
    }

    @Test func flippedByte_inEveryEntry_isAnIntegrityFailure() throws {
        let (s, archive, dest) = try setUp()
        let entries = Self.entries(archive)
        #expect(
            entries.map(\.name) == [
                "latchkey-backup/keybag", "latchkey-backup/items-000001", "latchkey-backup/items-000002",
                "latchkey-backup/manifest"
            ])
        for e in entries {
            // First byte after the magic, one in the middle, and the last byte.
            for offset in Set([e.offset + 8, e.offset + e.size / 2, e.offset + e.size - 1]) {
                var bad = archive
                bad[offset] ^= 0x01
                try expectRefused(s, bad, dest, status: .decode, "\(e.name) byte \(offset - e.offset)")
            }
        }
    }

    @Test func truncatedArchive_isAnIntegrityFailure() throws {
        let (s, archive, dest) = try setUp()
        let entries = Self.entries(archive)
        var cuts = [0, 100, 512, entries[1].offset - 512, entries[1].offset + 1000, entries[3].offset]
        cuts.append(entries[3].offset + entries[3].size - 1)
        for cut in cuts {
            try expectRefused(s, Array(archive.prefix(cut)), dest, status: .decode, "cut at \(cut)")
        }
    }

    @Test func entriesMissingRepeatedOrReordered_areIntegrityFailures() throws {
        let (s, archive, dest) = try setUp()
        let e = Self.entries(archive)
        func block(_ i: Int) -> [UInt8] {
            Array(archive[(e[i].offset - 512)..<(e[i].offset + (e[i].size + 511) / 512 * 512)])
        }
        let end = [UInt8](repeating: 0, count: 1024)
        try expectRefused(s, block(0) + block(2) + block(3) + end, dest, status: .decode, "first items entry missing")
        try expectRefused(s, block(0) + block(1) + block(3) + end, dest, status: .decode, "last items entry missing")
        try expectRefused(s, block(0) + block(1) + block(2) + end, dest, status: .decode, "manifest missing")
        try expectRefused(
            s, block(0) + block(2) + block(1) + block(3) + end, dest, status: .decode, "items entries swapped")
        try expectRefused(
            s, block(0) + block(1) + block(1) + block(2) + block(3) + end, dest, status: .decode, "items entry repeated"
        )
        try expectRefused(
            s, block(0) + block(1) + block(2) + block(3) + block(3) + end, dest, status: .decode,
            "entry after the manifest")
        try expectRefused(s, block(1) + block(0) + block(2) + block(3) + end, dest, status: .decode, "keybag not first")
    }

    /// Not a tar stream at all: not a Latchkey file (spec/BACKUP.md §2.1), which says to check
    /// the file given, rather than damage.
    @Test func notATarArchive_isNotALatchkeyFile() throws {
        let (s, _, dest) = try setUp()
        let notABackup = "is not a Latchkey backup"
        try expectRefused(s, Array("definitely not a backup".utf8), dest, status: .decode, saying: notABackup, "text")
        try expectRefused(s, [], dest, status: .decode, saying: notABackup, "empty file")
        try expectRefused(s, try s.bytes(s.keychainPath), dest, status: .decode, saying: notABackup, "a keychain file")
        try expectRefused(
            s, [UInt8](repeating: 0, count: 1024), dest, status: .decode, saying: notABackup, "zero blocks")
    }

    /// Sets `bytes` at `offset` in the header block at `header` and recomputes its checksum,
    /// as someone who edits a field on purpose would.
    static func patchHeader(_ tar: inout [UInt8], header: Int, at offset: Int, _ bytes: [UInt8]) {
        tar.replaceSubrange(header + offset..<header + offset + bytes.count, with: bytes)
        for i in 148..<156 { tar[header + i] = 0x20 }
        let digits = Array(String(tar[header..<header + 512].reduce(0) { $0 + Int($1) }, radix: 8).utf8)
        tar.replaceSubrange(
            header + 148..<header + 156, with: [UInt8](repeating: 0x30, count: 6 - digits.count) + digits + [0, 0x20])
    }

    /// spec/BACKUP.md §2.1 rule 6: a header field that no reader needs, given another value
    /// than the writer's (checksum recomputed), is refused rather than ignored: bytes outside
    /// the manifest's hashes carry nothing. Latchkey's own archives pass (every other test).
    @Test func headerFieldsWithOtherValues_areRefused() throws {
        let (s, archive, dest) = try setUp()
        let items = Self.entries(archive)[1]
        let header = items.offset - 512
        let cases: [(String, Int, [UInt8])] = [
            ("mode 0644", 100, Array("000644 \0".utf8)), ("mode 4755", 100, Array("004755 \0".utf8)),
            ("uid 1000", 108, Array("001750 \0".utf8)), ("gid 1000", 116, Array("001750 \0".utf8)),
            ("mtime 1", 136, Array("00000000001 ".utf8)), ("link name", 157, Array("/etc/passwd".utf8)),
            ("user name", 265, Array("root".utf8)), ("group name", 297, Array("wheel".utf8)),
            ("text after the name", items.name.utf8.count + 1, Array("hidden".utf8)),
            ("device major 1", 329, Array("000001 \0".utf8)), ("byte 500", 500, [1])
        ]
        for (what, offset, bytes) in cases {
            var bad = archive
            Self.patchHeader(&bad, header: header, at: offset, bytes)
            try expectRefused(s, bad, dest, status: .decode, saying: "fixed values", what)
        }
        // The keybag entry's own header: its mtime is checked once the entry gives the time.
        var bad = archive
        Self.patchHeader(&bad, header: 0, at: 136, Array("00000000001 ".utf8))
        try expectRefused(
            s, bad, dest, status: .decode, saying: "not the backup's creation time", "keybag header mtime")
        // Spelled otherwise, the same values pass: leading spaces, a NUL-terminated 7 digits.
        var respelled = archive
        Self.patchHeader(&respelled, header: header, at: 100, Array("    600\0".utf8))
        Self.patchHeader(&respelled, header: header, at: 108, Array("0000000\0".utf8))
        Self.patchHeader(&respelled, header: header, at: 329, [UInt8](repeating: 0, count: 16))
        try s.write(respelled, to: s.path("respelled.backup"))
        #expect(
            try s.restoreNew(s.path("respelled.backup"), name: "respelled.keychain", devicePath: s.devicePath).restored
                > 0)
    }

    /// Inputs shorter than their fixed part (spec/BACKUP.md §2.1 (a), §6.4 rule 1) say so.
    @Test func shortInputs_sayWhatIsMissing() throws {
        let (s, archive, dest) = try setUp()
        try expectRefused(
            s, Array(archive.prefix(300)), dest, status: .decode, saying: "shorter than the 512-byte block", "300 bytes"
        )
        let e = Self.entries(archive)
        var entries = e.map { (name: $0.name, bytes: Array(archive[$0.offset..<$0.offset + $0.size])) }
        let createdAt = try BackupKeybag.decode(entries[0].bytes).common.createdAt
        entries[entries.count - 1].bytes = Array(entries[entries.count - 1].bytes.prefix(207))
        try expectRefused(
            s, TestTar.archive(entries, mtime: createdAt), dest, status: .decode,
            saying: "its manifest is 207 bytes, shorter than the 208", "manifest of 207 bytes")
    }

    @Test func backupToAPipe_withEveryCompression_restoresFromAStream() throws {
        for compression in BackupCompression.allCases {
            let s = try BackupSandbox()
            let kc = try s.makeSource()
            try s.populate(kc)
            var fds: [Int32] = [0, 0]
            #expect(pipe(&fds) == 0)
            // Write into the pipe from here and spool it on another thread.
            final class Box: @unchecked Sendable { var source: BackupSource?; var error: Error? }
            let box = Box()
            let done = DispatchSemaphore(value: 0)
            let readEnd = fds[0]
            Thread {
                do { box.source = try BackupSource.spooling(fd: readEnd) } catch { box.error = error }
                done.signal()
            }.start()
            try BackupArchive.write(
                kc, to: fds[1],
                options: BackupOptions(password: BackupSandbox.password, compression: compression, kdfLogN: 10))
            close(fds[1])
            done.wait()
            close(fds[0])
            let source = try #require(box.source, "\(String(describing: box.error))")
            let verified = try VerifiedBackup.verify(
                source, device: try Device.load(path: s.devicePath),
                password: { BackupSandbox.password }, target: .newKeychain(hasPasscode: false))
            let report = try verified.restoreNewKeychain(
                path: s.path("piped.keychain"), devicePath: s.devicePath, passcode: nil, kdfLogN: 10)
            #expect(report.restored == 8, "\(compression)")
        }
    }
}
