#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import Latchkey
import LatchkeyCrypto
import LatchkeyFormat

/// The class keys a restore could unwrap, and why the others could not.
struct UnlockedKeybag {
    var classKeys: [ProtectionClass: SecretKey]
    var macKey: SecretKey
    /// The keybag entry's bytes, so the second pass can insist on the same ones.
    var keybagDigest: [UInt8]
    /// What the archive proved about itself, for the merge rules (spec/BACKUP.md §9.2).
    var provenance: Provenance
}

/// What a restore may believe about an archive beyond its items: which of its records this
/// device made, and how late its dates may be (spec/BACKUP.md §9.2).
struct Provenance {
    /// The classes whose backup class key unwrapped with a key derived from this device's
    /// secret (wrap kind 1 or 3, §4.3): only this device can have made their records. In a
    /// password backup the migratory classes are not among them even on the source device:
    /// their keys, and the manifest MAC key, need the password alone, so anyone who knows it
    /// can keep a genuine keybag, put their own records in those classes and reseal the
    /// manifest. The source device UUID proves nothing either: the archive's author writes it.
    var deviceBound: Set<ProtectionClass>
    /// The latest date an item of the archive may carry, as seconds since 2001-01-01 (the
    /// `cdat`/`mdat` scale): the end of the second the archive says it was made in, and never
    /// later than now. The archive's author writes every date in it; a later one is clamped
    /// to this (spec/BACKUP.md §9.2).
    var dateCeiling: Double

    init(deviceBound: Set<ProtectionClass>, createdAt: UInt64, now: Double = Date().timeIntervalSinceReferenceDate) {
        self.deviceBound = deviceBound
        dateCeiling = min(Double(createdAt) + 1 - Date.timeIntervalBetween1970AndReferenceDate, now)
    }

    /// A record of class `pc` was made on this device: it may replace a ThisDeviceOnly item.
    func madeHere(_ pc: ProtectionClass) -> Bool { deviceBound.contains(pc) }

    /// `p` with `cdat` and `mdat` no later than `dateCeiling`.
    func trusted(_ p: ItemPlaintext) -> ItemPlaintext {
        var out = p
        for name in ["cdat", "mdat"] {
            if case .date(let d)? = p.attributes[name], d > dateCeiling { out.attributes[name] = .date(dateCeiling) }
        }
        return out
    }
}

/// One item as a pass meets it: its record and, when its class key is here, its plaintext.
struct PassItem {
    var record: BackupItemRecord
    var plaintext: ItemPlaintext?
}

/// What a whole pass over the archive established.
struct PassResult {
    var keybag: BackupKeybag
    var manifest: Manifest
    var entries: [ManifestEntry]
}

/// One pass over a backup archive, checking every rule of spec/BACKUP.md §11 in archive
/// order. Nothing is written by the pass itself: `unlock` turns the keybag into class keys,
/// and `item` is called for every item record, after its entry's bytes have been read and
/// decoded, with the plaintext when its class key is available (the GCM tag checked).
/// The manifest, the last entry, is checked at the end: MAC, the list of entries with their
/// sizes and SHA-256, and the counts. Every failure is thrown as a `KeychainError`.
struct ArchivePass {
    let source: BackupSource
    var progress: ((_ done: Int64, _ total: Int64) -> Void)?

    func run(unlock: (BackupKeybag, [UInt8]) throws -> UnlockedKeybag, item: (PassItem) throws -> Void) throws
        -> PassResult
    {
        let fd = try source.rewound()
        let reader: ArchiveReader
        do {
            reader = try ArchiveReader(fd: fd)
        } catch let e as ArchiveError {
            throw e.notAnArchive ? notABackup(e.description) : damaged("is damaged or truncated", e)
        }
        let total = source.size

        // §11 step 1: the keybag entry comes first.
        guard let first = try header(reader) else { throw damaged("is empty: it holds no entry") }
        guard first.name == BackupConstants.keybagName else {
            throw notABackup("its first entry is \(first.name ?? "unnamed"), not \(BackupConstants.keybagName)")
        }
        let keybagBytes = try data(reader, first, limit: BackupConstants.maxKeybagEntrySize)
        guard keybagBytes.starts(with: BackupConstants.keybagMagic) else {
            throw notABackup("\(Self.keybagPart) does not begin with the magic number \"LKBACKUP\"")
        }
        let keybag: BackupKeybag
        do {
            keybag = try BackupKeybag.decode(keybagBytes)
        } catch let e as FormatError {
            throw formatError(Self.keybagPart, e)
        }
        try requireCreationTime(first, keybag)
        var seen = [
            ManifestEntry(name: first.name!, size: UInt64(keybagBytes.count), sha256: Crypto.sha256(keybagBytes))
        ]
        let unlocked = try unlock(keybag, seen[0].sha256)

        // Items entries, in order, then the manifest.
        var number = 1
        var records: UInt64 = 0
        var countsByClass = [UInt64](repeating: 0, count: 6)
        var manifestBytes: [UInt8]?
        while manifestBytes == nil {
            guard let h = try header(reader) else {
                throw KeychainError(
                    .decode,
                    "\(source.name) ends without its manifest (\(BackupConstants.manifestName)): the archive is truncated or an entry is missing"
                )
            }
            let name = h.name!
            try requireCreationTime(h, keybag)
            if name == BackupConstants.manifestName {
                manifestBytes = try data(reader, h, limit: BackupConstants.maxManifestSize)
                seen.append(ManifestEntry(name: name, size: UInt64(manifestBytes!.count), sha256: []))
                break
            }
            if name == BackupConstants.itemsName(number) {
                let bytes = try data(reader, h, limit: BackupConstants.maxItemsEntrySize)
                seen.append(ManifestEntry(name: name, size: UInt64(bytes.count), sha256: Crypto.sha256(bytes)))
                let decoded: [BackupItemRecord]
                do {
                    decoded = try ItemsEntry.decode(bytes, expectedNumber: number)
                } catch let e as FormatError {
                    throw formatError("its entry \(name)", e)
                }
                for (index, record) in decoded.enumerated() {
                    var plaintext: ItemPlaintext?
                    if let key = unlocked.classKeys[record.protectionClass] {
                        do {
                            plaintext = try record.open(
                                classKey: key, backupUUID: keybag.common.backupUUID, entry: number, index: index)
                        } catch let e as FormatError {
                            throw formatError("item \(hexString(record.uuid)) in \(name)", e)
                        } catch {
                            throw KeychainError(
                                .decode,
                                "\(source.name): item \(hexString(record.uuid)) in \(name) does not decrypt: the archive is damaged or was tampered with; nothing was restored"
                            )
                        }
                    }
                    try item(PassItem(record: record, plaintext: plaintext))
                    records += 1
                    countsByClass[Int(record.protectionClass.rawValue) - 6] += 1
                }
                number += 1
                progress?(min(source.position, total), total)
                continue
            }
            if BackupConstants.isAncillaryName(name), keybag.common.minor > BackupConstants.minor {
                // An entry a newer minor version added: checked against the manifest, not read.
                let bytes = try data(reader, h, limit: BackupConstants.maxAncillaryEntrySize)
                seen.append(ManifestEntry(name: name, size: UInt64(bytes.count), sha256: Crypto.sha256(bytes)))
                continue
            }
            if name.hasPrefix(BackupConstants.itemsPrefix) {
                throw KeychainError(
                    .decode,
                    "\(source.name): found \(name) where \(BackupConstants.itemsName(number)) was expected: an entry is missing or out of order; nothing was restored"
                )
            }
            throw KeychainError(
                .decode,
                "\(source.name) holds an unexpected entry \(name): an entry this version of the format does not have, added by another program or by tampering; nothing was restored"
            )
        }
        if let extra = try header(reader) {
            throw KeychainError(
                .decode,
                "\(source.name) has an entry after its manifest (\(extra.name ?? "unnamed")): it was tampered with; nothing was restored"
            )
        }
        // §2.1: only the end-of-archive marker and zero blocks after the manifest, and nothing
        // after a compressed stream.
        do {
            try reader.finish()
        } catch let e as ArchiveError {
            throw damaged("is damaged or was altered after its manifest", e)
        }

        // §11 last step: the manifest.
        // The backup's version is the keybag entry's (§10): the manifest's version fields are
        // only compared with it, as part of bytes 8–103, so a disagreement is damage whichever
        // version either claims (§6.4).
        let bytes = manifestBytes!
        // §6.4 rule 1: the smallest manifest is its fixed fields (176 bytes) and its MAC (32);
        // anything shorter has no MAC to check.
        let smallest = BackupConstants.manifestFixedSize + BackupConstants.macSize
        guard bytes.count >= smallest else {
            throw KeychainError(
                .decode,
                "\(source.name): its manifest is \(bytes.count) bytes, shorter than the \(smallest) of its fixed fields and MAC: the archive is damaged or was tampered with; nothing was restored"
            )
        }
        guard Array(bytes[0..<8]) == BackupConstants.manifestMagic else {
            throw KeychainError(
                .decode,
                "\(source.name): its manifest does not begin with the manifest magic number: the archive is damaged or was tampered with; nothing was restored"
            )
        }
        guard bytes[8..<BackupConstants.commonSize].elementsEqual(keybagBytes[8..<BackupConstants.commonSize]) else {
            throw KeychainError(
                .decode,
                "\(source.name): the manifest and the keybag entry describe different backups (bytes 8-103 differ); nothing was restored"
            )
        }
        guard Manifest.verifyMAC(bytes, macKey: unlocked.macKey) else {
            throw KeychainError(
                .decode,
                "\(source.name): the manifest fails its MAC: the archive is damaged or was tampered with; nothing was restored"
            )
        }
        let manifest: Manifest
        do {
            manifest = try Manifest.decode(bytes)
        } catch let e as FormatError {
            throw formatError("its manifest", e)
        }
        let listed = manifest.entries
        let found = Array(seen.dropLast())
        for (i, entry) in listed.enumerated() {
            guard i < found.count else {
                throw KeychainError(
                    .decode,
                    "\(source.name): the manifest lists \(entry.name), which the archive lacks (truncated, or an entry was removed); nothing was restored"
                )
            }
            let f = found[i]
            guard f.name == entry.name else {
                throw KeychainError(
                    .decode,
                    "\(source.name): the manifest lists \(entry.name) where the archive has \(f.name) (an entry was added, removed or reordered); nothing was restored"
                )
            }
            guard f.size == entry.size else {
                throw KeychainError(
                    .decode,
                    "\(source.name): the entry \(f.name) is \(f.size) bytes, the manifest says \(entry.size); nothing was restored"
                )
            }
            guard Crypto.constantTimeEqual(f.sha256, entry.sha256) else {
                throw KeychainError(
                    .decode,
                    "\(source.name): the entry \(f.name) does not match its SHA-256 in the manifest (damaged or tampered with); nothing was restored"
                )
            }
        }
        if found.count > listed.count {
            throw KeychainError(
                .decode,
                "\(source.name) holds \(found[listed.count].name), which its manifest does not list (an entry was added); nothing was restored"
            )
        }
        guard manifest.itemCount == records, manifest.countsByClass == countsByClass else {
            throw KeychainError(
                .decode,
                "\(source.name): the manifest counts \(manifest.itemCount) items, the archive holds \(records); nothing was restored"
            )
        }
        progress?(total, total)
        return PassResult(keybag: keybag, manifest: manifest, entries: found)
    }

    // MARK: Entries

    /// The next header, checked against §2 (regular files only, no path leaving the
    /// archive's directory); nil at the end of the archive.
    private func header(_ reader: ArchiveReader) throws -> ArchiveReader.Header? {
        let h: ArchiveReader.Header?
        do {
            h = try reader.next()
        } catch let e as ArchiveError {
            throw damaged("is damaged or truncated", e)
        }
        guard let h else { return nil }
        guard let name = h.name, !name.isEmpty else { throw damaged("holds an entry whose name cannot be read") }
        let components = name.split(separator: "/", omittingEmptySubsequences: false)
        if name.hasPrefix("/") || components.contains("..") {
            throw KeychainError(
                .decode,
                "\(source.name) holds an entry named \(name), a path outside the archive (absolute or with ..): refusing the archive; nothing was restored"
            )
        }
        if h.isSymlink || h.isHardLink || h.fileType != ArchiveFileType.regular {
            let what =
                h.isSymlink || h.fileType == ArchiveFileType.symlink
                ? "a symbolic link"
                : h.isHardLink
                    ? "a hard link"
                    : h.fileType == ArchiveFileType.directory ? "a directory" : "a device or other special file"
            throw KeychainError(
                .decode,
                "\(source.name) holds \(what) (\(name)); a Latchkey backup holds only regular files: refusing the archive; nothing was restored"
            )
        }
        guard h.sizeKnown, h.size >= 0 else { throw damaged("holds an entry without a size (\(name))") }
        return h
    }

    /// §2.1 rule 6: every header's modification time is the backup's creation time (keybag
    /// offset 64), which the manifest authenticates; the keybag entry's own header is checked
    /// as soon as that entry has been decoded.
    private func requireCreationTime(_ h: ArchiveReader.Header, _ keybag: BackupKeybag) throws {
        guard h.mtime == Int64(clamping: keybag.common.createdAt) else {
            throw KeychainError(
                .decode,
                "\(source.name): the tar header of \(h.name ?? "an entry") gives the modification time \(h.mtime), not the backup's creation time \(keybag.common.createdAt); a backup's tar headers hold fixed values (spec/BACKUP.md §2.1 rule 6), so it was altered after it was written; nothing was restored"
            )
        }
    }

    /// An entry's bytes, refusing before reading any when it is larger than its kind allows.
    private func data(_ reader: ArchiveReader, _ h: ArchiveReader.Header, limit: Int) throws -> [UInt8] {
        guard h.size <= Int64(limit) else {
            throw KeychainError(
                .decode,
                "\(source.name): the entry \(h.name!) claims \(h.size) bytes, more than the \(limit) an entry of its kind may have; refusing the archive; nothing was restored"
            )
        }
        do {
            return try reader.readData(count: Int(h.size))
        } catch let e as ArchiveError {
            throw damaged("is damaged or truncated inside \(h.name!)", e)
        }
    }

    // MARK: Errors

    private static let keybagPart = "its keybag entry"

    /// The file is not a Latchkey backup at all (spec/BACKUP.md §2.1): not the outcome of a
    /// damaged backup, so the message says to check the file given.
    func notABackup(_ why: String) -> KeychainError {
        KeychainError(
            .decode, "\(source.name) is not a Latchkey backup: \(why); check the file given; nothing was restored")
    }

    func damaged(_ what: String, _ cause: ArchiveError? = nil) -> KeychainError {
        KeychainError(.decode, "\(source.name) \(what); nothing was restored", underlying: cause?.description)
    }

    func formatError(_ part: String, _ e: FormatError) -> KeychainError {
        switch e {
        case .unsupportedVersion(_, let major, let minor):
            return KeychainError(
                .decode,
                "\(source.name) is a backup of format version \(major).\(minor), which this Latchkey cannot read; upgrade Latchkey"
            )
        case .badMagic where part == Self.keybagPart:
            // The keybag entry's magic identifies the file (§1.4 of spec/FORMAT.md: not a Latchkey file).
            return notABackup("\(part) has the wrong magic number")
        default:
            return KeychainError(
                .decode, "\(source.name): \(part) is damaged or was tampered with; nothing was restored",
                underlying: e.description)
        }
    }
}
