import LatchkeyCrypto
import LatchkeyFormat

/// Every keychain fixture. Negative fixtures are golden_small with exactly one defect, so a
/// reader that fails one of them fails for that defect alone.
enum FixtureCatalog {
    static let goldenPasscode = "fixture-passcode-0000"
    static let oldPasscode = "old-passcode-1234"
    static let newPasscode = "new-passcode-5678"

    /// golden_small's records (0-based): the middle one damaged by the record_* fixtures.
    /// Record 4 is the cku item's put, which stays live to the end.
    static let middleRecord = 4

    static func all() throws -> [Fixture] {
        var out: [Fixture] = []
        out += try goldens()
        out += try headerDefects()
        out += try keybagDefects()
        out += try recordDefects()
        out += try logCases()
        out += try deviceCases()
        out += try itemCases()
        out += try passcodeCases()
        out += try indexCases()
        out += try attributeHashCases()
        out += try historyCases()
        out += try clearPartCases()
        return out.sorted { $0.name < $1.name }
    }

    /// golden_nopasscode's writes: a genp item in each of the six classes a keychain without a
    /// passcode has; `between` runs after the third, so a fixture can slip a record into the
    /// middle of the same log.
    static func buildGoldenNoPasscode(between: ((KeychainBuilder) throws -> Void)? = nil) throws -> KeychainBuilder {
        let nopass = try KeychainBuilder(seed: "golden_nopasscode", passcode: nil)
        for (i, pc) in ProtectionClass.allCases.enumerated() where pc != .whenPasscodeSetThisDeviceOnly {
            try nopass.commit([
                .put(
                    nopass.makeItem(
                        .genericPassword,
                        [
                            "acct": .string("user-\(pc.code)"), "svce": .string("fixtures.latchkey.example/\(pc.code)")
                        ], data: "no-passcode-\(pc.code)", protection: pc, minute: i))
            ])
            if i == 2 { try between?(nopass) }
        }
        return nopass
    }

    // MARK: golden_small

    /// golden_small's writes: a genp item in each of the 7 protection classes and one inet item,
    /// then an update (a replacing put) and a delete. `between` runs after the inet item, before
    /// the update, so a fixture can slip one extra record into the middle of the same log.
    /// `minor`, `extensionBytes` and `flagsAndReserved` shape the header (the items stay the same).
    static func buildGoldenSmall(
        minor: UInt16 = FormatConstants.fileMinor, extensionBytes: [UInt8] = [],
        flagsAndReserved: [UInt8]? = nil, hashRecords: Bool = false,
        between: ((KeychainBuilder) throws -> Void)? = nil
    ) throws -> KeychainBuilder {
        let b = try KeychainBuilder(
            seed: "golden_small", passcode: goldenPasscode, minor: minor,
            extensionBytes: extensionBytes, flagsAndReserved: flagsAndReserved)
        b.hashRecords = hashRecords
        var byClass: [ProtectionClass: FixtureItem] = [:]
        for (i, pc) in ProtectionClass.allCases.enumerated() {
            var attrs: [String: AttributeValue] = [
                "acct": .string("user-\(pc.code)"),
                "svce": .string("fixtures.latchkey.example/\(pc.code)"),
                "labl": .string("Golden \(pc.longName)")
            ]
            // One item per attribute type beyond strings: UTF-8 text, data, an integer.
            switch pc {
            case .afterFirstUnlock: attrs["icmt"] = .string("non-ASCII: clé ключ 🔑")
            case .whenPasscodeSetThisDeviceOnly:
                attrs["gena"] = .data([0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff])
                attrs["crtr"] = .integer(0x4C4B_4658)  // 'LKFX'
            case .alwaysThisDeviceOnly: attrs["type"] = .integer(-2)
            default: break
            }
            byClass[pc] = b.makeItem(.genericPassword, attrs, data: "secret-\(pc.code)", protection: pc, minute: i)
        }
        let inet = b.makeItem(
            .internetPassword,
            [
                "acct": .string("bob"), "srvr": .string("www.example.com"), "port": .integer(443),
                "path": .string("/login"), "labl": .string("Golden internet password")
            ], data: "pw-for-web", protection: .whenUnlocked, minute: 7)

        // The first transaction holds two records (the first carries the continues flag).
        try b.commit([.put(byClass[.whenUnlocked]!), .put(byClass[.afterFirstUnlock]!)])
        for pc in ProtectionClass.allCases.dropFirst(2) { try b.commit([.put(byClass[pc]!)]) }
        try b.commit([.put(inet)])
        try between?(b)
        // Update: same UUID, new data, new label, mdat moves and cdat stays (a replacing put).
        var updated = b.item(byClass[.afterFirstUnlock]!.uuid)
        updated.plaintext.data = Array("secret-ck-rotated".utf8)
        updated.plaintext.attributes["labl"] = .string("Golden AfterFirstUnlock (updated)")
        updated.plaintext.attributes["mdat"] = .date(KeychainBuilder.createdAtAbsolute + 3600)
        try b.commit([.put(updated)])
        try b.commit([.delete(uuid: byClass[.alwaysThisDeviceOnly]!.uuid)])
        return b
    }

    // MARK: Goldens

    static func goldens() throws -> [Fixture] {
        let small = try buildGoldenSmall()

        let nopass = try buildGoldenNoPasscode()

        let passwd = try KeychainBuilder(seed: "golden_passwd", passcode: oldPasscode)
        for (i, pc) in [ProtectionClass.whenUnlocked, .whenPasscodeSetThisDeviceOnly, .always].enumerated() {
            try passwd.commit([
                .put(
                    passwd.makeItem(
                        .genericPassword,
                        [
                            "acct": .string("before-change-\(pc.code)"),
                            "svce": .string("fixtures.latchkey.example/passwd")
                        ], data: "written-under-old-passcode-\(pc.code)", protection: pc, minute: i))
            ])
        }
        try passwd.changePasscode(to: newPasscode)
        try passwd.commit([
            .put(
                passwd.makeItem(
                    .genericPassword,
                    [
                        "acct": .string("after-change-aku"), "svce": .string("fixtures.latchkey.example/passwd")
                    ], data: "written-under-new-passcode", protection: .whenUnlockedThisDeviceOnly, minute: 10))
        ])
        var passwdFixture = try Fixture(
            name: "golden_passwd", expect: .success,
            description:
                "passcode \(oldPasscode) changed to \(newPasscode) as spec §11.6 writes it: the file rewritten with a new keybag (new class keys for every class but dk and dku, whose entries are kept byte for byte), each live item key rewrapped under its class's new key, base sequence number \(passwd.header.baseSequence) (the old last plus one); then one more item; the new passcode unlocks every item, including those written before the change; the old passcode must fail (errSecAuthFailed)",
            builder: passwd)
        passwdFixture.notes.append(("old-passcode-must-fail", oldPasscode))

        // The passcode removed (spec §11.6): KDF id 0, six entries, the akpu item left out.
        let removal = try KeychainBuilder(seed: "golden_passcode_removed", passcode: oldPasscode)
        for (i, pc) in [
            ProtectionClass.whenUnlocked, .whenPasscodeSetThisDeviceOnly, .always, .afterFirstUnlockThisDeviceOnly
        ].enumerated() {
            try removal.commit([
                .put(
                    removal.makeItem(
                        .genericPassword,
                        [
                            "acct": .string("before-removal-\(pc.code)"),
                            "svce": .string("fixtures.latchkey.example/removal")
                        ], data: "written-under-the-passcode-\(pc.code)", protection: pc, minute: i))
            ])
        }
        try removal.changePasscode(to: nil)
        try removal.commit([
            .put(
                removal.makeItem(
                    .genericPassword,
                    [
                        "acct": .string("after-removal-aku"), "svce": .string("fixtures.latchkey.example/removal")
                    ], data: "written-without-a-passcode", protection: .whenUnlockedThisDeviceOnly, minute: 10))
        ])
        let removed = try Fixture(
            name: "golden_passcode_removed", expect: .success,
            description:
                "passcode \(oldPasscode) removed as spec §11.6 writes it: the file rewritten with KDF id 0 and six keybag entries (no akpu entry), new class keys for ak, ck, aku and cku wrapped by the device wrap key, the dk and dku entries kept byte for byte, the live akpu item left out (deleted, as iOS deletes it), base sequence number \(removal.header.baseSequence) (the old last plus one); then one more item; the keychain opens without a passcode and holds every item but the akpu one",
            builder: removal)

        // User presence (item flag bit 0, spec §7.1), and a date that is not a whole second.
        let presence = try KeychainBuilder(seed: "golden_user_presence", passcode: goldenPasscode)
        for (i, pc) in [ProtectionClass.whenUnlocked, .always].enumerated() {
            var item = presence.makeItem(
                .genericPassword,
                [
                    "acct": .string("needs-presence-\(pc.code)"), "svce": .string("fixtures.latchkey.example/presence")
                ], data: "secret-behind-presence-\(pc.code)", protection: pc, minute: i)
            item.flags = ItemPutPayload.userPresenceFlag
            try presence.commit([.put(item)])
        }
        var plain = presence.makeItem(
            .genericPassword,
            [
                "acct": .string("no-presence-ck"), "svce": .string("fixtures.latchkey.example/presence")
            ], data: "secret-without-presence-ck", protection: .afterFirstUnlock, minute: 2)
        plain.plaintext.attributes["mdat"] = .date(KeychainBuilder.createdAtAbsolute + 120 + 1.0 / 3.0)
        try presence.commit([.put(plain)])
        let userPresence = try Fixture(
            name: "golden_user_presence", expect: .success,
            description:
                "passcode; an ak and a dk genp item whose put records set item flag bit 0 (reading their data needs user presence: the passcode asked again, spec §7.1), and a ck item without it whose mdat is not a whole second (757382520.333…, compared exactly); a reader reports each item's flag, and gives a flagged item's data only once the passcode has been asked for and checked, even for the dk item, which needs no unlock",
            builder: presence)

        return [
            try Fixture(
                name: "golden_small", expect: .success,
                description:
                    "passcode; a genp item in each of the 7 protection classes (the ak and ck puts share one two-record transaction) and an inet item, then an update of the ck item (a replacing put) and a delete of the dku item",
                builder: small),
            try Fixture(
                name: "golden_nopasscode", expect: .success,
                description:
                    "no passcode (KDF none, every class key wrapped by the device key, no akpu key); a genp item in each of the six other protection classes",
                builder: nopass),
            passwdFixture,
            removed,
            userPresence
        ]
    }

    // MARK: Header

    static func headerDefects() throws -> [Fixture] {
        let b = try buildGoldenSmall()
        var badMagic = b.file
        let magicDefect = flip(&badMagic, at: 3, what: "magic, 4th byte")

        var major2 = b.header
        major2.major = 2

        // A 1.1 header that uses every extension point a 1.0 reader must tolerate (§12.2).
        let minor1 = try buildGoldenSmall(
            minor: 1, extensionBytes: Array("LKv1.1 extension".utf8),
            flagsAndReserved: [0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x07])

        var flags = b.file
        let flagsDefect = flip(&flags, at: 51, what: "header flags, low byte; header MAC recomputed")
        KeychainBuilder.recomputeHeaderMAC(&flags, headerSize: b.headerSize, keys: b.keys)

        var flipped = b.file
        let flippedDefect = flip(&flipped, at: 71, what: "creation time, last byte; header MAC left as it was")

        return [
            try Fixture(
                name: "header_bad_magic", expect: .notALatchkeyFile,
                description:
                    "golden_small with one byte of the magic number changed; a reader must refuse it as not a Latchkey file (spec §3.1, §10.1 step 2), before anything else",
                defect: magicDefect, builder: b, keychain: badMagic),
            try Fixture(
                name: "file_shorter_than_magic", expect: .notALatchkeyFile,
                description:
                    "golden_small cut to its first 7 bytes, one short of the magic number: a file that cannot hold the 8-byte magic is not a Latchkey file (spec §10.1 step 2), even when its bytes begin the magic",
                defect: "file cut to 7 bytes (\(hexString(Array(b.file.prefix(7)))))", builder: b,
                keychain: Array(b.file.prefix(7))),
            try Fixture(
                name: "header_unknown_major", expect: .unsupportedVersion,
                description:
                    "golden_small with header major version 2 and a valid header MAC; a reader must refuse it as needing a newer Latchkey before reading anything else",
                defect: "bytes 8–9 (major version) changed from 00 01 to 00 02; header MAC recomputed",
                builder: b, keychain: major2.encode(macKey: b.keys.headerMAC) + b.body),
            try Fixture(
                name: "header_newer_minor", expect: .success,
                description:
                    "golden_small's items under a 1.1 header that sets a header flag, the reserved bytes 52–55 and \(minor1.header.extensionBytes.count) extension bytes, all under a valid MAC; a 1.0 reader tolerates exactly these (spec §12.2) and reads every item, read-only",
                builder: minor1),
            try Fixture(
                name: "header_flags_nonzero", expect: .integrityError,
                description:
                    "golden_small with a header flag set in a 1.0 header and the header MAC recomputed; a reader of the same minor must reject flags it does not know (spec §3.5)",
                defect: flagsDefect, builder: b, keychain: flags),
            try Fixture(
                name: "header_flipped_byte", expect: .integrityError,
                description:
                    "golden_small with one bit flipped inside the authenticated header, in a field that still parses; only the header MAC catches it",
                defect: flippedDefect, builder: b, keychain: flipped)
        ]
    }

    // MARK: Keybag

    static func keybagDefects() throws -> [Fixture] {
        let b = try buildGoldenSmall()
        func tamper(_ pc: ProtectionClass) -> ([UInt8], String) {
            var h = b.header
            let index = h.keybag.entries.firstIndex { $0.protectionClass == pc }!
            let inWrap = 20
            h.keybag.entries[index].wrappedKey[inWrap] ^= 0x01
            let offset =
                FormatConstants.headerFixedSize + FormatConstants.keybagFixedSize
                + index * FormatConstants.keybagEntrySize + 2 + inWrap
            let bytes = h.encode(macKey: b.keys.headerMAC) + b.body
            let defect =
                "byte \(offset) (keybag entry \(index), class \(pc.code), wrapped key byte \(inWrap)) changed from 0x\(hexString([bytes[offset] ^ 0x01])) to 0x\(hexString([bytes[offset]])); header MAC recomputed"
            return (bytes, defect)
        }
        let (dk, dkDefect) = tamper(.always)
        let (ak, akDefect) = tamper(.whenUnlocked)
        return [
            try Fixture(
                name: "keybag_wrap_tampered", expect: .integrityError,
                description:
                    "golden_small with one byte of the dk class key's wrapped bytes flipped and the header MAC recomputed, so only the RFC 3394 unwrap (with the device key, no passcode involved) can catch it",
                defect: dkDefect, builder: b, keychain: dk),
            try Fixture(
                name: "keybag_ak_wrap_tampered", expect: .authenticationError,
                description:
                    "golden_small with one byte of the ak class key's wrapped bytes flipped and the header MAC recomputed; the file opens, but unlocking with the right passcode fails, as a wrong passcode would (errSecAuthFailed)",
                defect: akDefect, builder: b, keychain: ak)
        ]
    }

    // MARK: Records

    static func recordDefects() throws -> [Fixture] {
        let b = try buildGoldenSmall()
        let r = b.records[middleRecord]

        var tagFlipped = b.file
        let tagDefect = flip(
            &tagFlipped, at: r.offset + r.size - 1,
            what: "last byte of the 16-byte tag of the record with sequence \(r.sequence)")

        var lengthDamaged = b.file
        let lengthDefect = flip(
            &lengthDamaged, at: r.offset + 3,
            what: "low byte of the payload length of the record with sequence \(r.sequence); header CRC left as it was")

        // The GCM tag is the payload's last 16 bytes; the record tag is recomputed over the change.
        var itemTag = b.file
        let gcmByte = r.offset + r.size - FormatConstants.frameTagSize - 1
        let itemDefect = flip(
            &itemTag, at: gcmByte,
            what:
                "last byte of the AES-GCM tag of the item in the record with sequence \(r.sequence); record tag recomputed"
        )
        let newTag = RecordFrame.tag(
            macKey: b.keys.recordMAC, offset: UInt64(r.offset),
            headerAndPayload: itemTag[r.offset..<(r.offset + r.size - FormatConstants.frameTagSize)])
        itemTag.replaceSubrange((r.offset + r.size - FormatConstants.frameTagSize)..<(r.offset + r.size), with: newTag)

        return [
            try Fixture(
                name: "record_tag_flipped", expect: .integrityError,
                description:
                    "golden_small with one bit of a middle record's tag flipped; the record tag check must catch it on open",
                defect: tagDefect, builder: b, keychain: tagFlipped),
            try Fixture(
                name: "record_length_damaged", expect: .integrityError,
                description:
                    "golden_small with a middle record's length field changed and its header CRC left alone; this is damage, never an incomplete tail to cut off",
                defect: lengthDefect, builder: b, keychain: lengthDamaged),
            try Fixture(
                name: "item_tag_flipped", expect: .integrityError,
                description:
                    "golden_small with one bit of a cku item's AES-GCM tag flipped and the record tag recomputed, so the file opens and only decrypting that item (after unlock) catches it",
                defect: itemDefect, builder: b, keychain: itemTag)
        ]
    }

    // MARK: The log's end and record types

    static func logCases() throws -> [Fixture] {
        let b = try buildGoldenSmall()
        let last = b.records.last!
        let beforeLast = b.snapshots[b.snapshots.count - 2]
        precondition(beforeLast.fileSize == last.offset, "golden_small's last transaction is one record")
        let keep = FormatConstants.frameHeaderSize + 6

        var torn = try Fixture(
            name: "torn_tail", expect: .success,
            description:
                "golden_small cut \(keep) bytes into its last record (the delete of the dku item), as a crash during the append leaves it; the reader cuts the incomplete record off, and the dku item is still live",
            defect:
                "file cut to \(last.offset + keep) bytes: the last record (sequence \(last.sequence), \(last.size) bytes at byte \(last.offset)) is incomplete; the device state remembers sequence \(beforeLast.sequence), as the engine leaves it when the append never completed",
            builder: b, keychain: Array(b.file.prefix(last.offset + keep)), stateSequence: beforeLast.sequence)
        torn.items = beforeLast.live
        torn.recoveredTailBytes = keep

        let rolledBack = try Fixture(
            name: "rolled_back", expect: .rolledBack,
            description:
                "golden_small without its last transaction (an older copy put back), while the device state remembers the newer file's last sequence",
            defect:
                "device state remembers sequence \(b.sequence); the file ends cleanly at sequence \(beforeLast.sequence) (\(beforeLast.fileSize) bytes)",
            builder: b, keychain: Array(b.file.prefix(beforeLast.fileSize)), stateSequence: b.sequence)

        let futurePayload = Array("a record from v1.x".utf8)
        var futureInfo: RecordInfo?
        let future = try buildGoldenSmall { b in
            try b.commit([.raw(type: 0x05, payload: futurePayload)])
            futureInfo = b.records.last
        }
        let notePayload = Array("ancillary: readers that do not know type 0x90 skip it".utf8)
        var noteInfo: RecordInfo?
        let note = try buildGoldenSmall { b in
            try b.commit([.raw(type: 0x90, payload: notePayload)])
            noteInfo = b.records.last
        }
        // A last transaction that opens with an ancillary record and whose closing put is cut:
        // the whole transaction is torn, from its first record (§10.2).
        let group = try buildGoldenSmall()
        let groupStart = group.snapshots.last!
        var rotated = group.item(
            group.liveItems.first { $0.protection == .whenUnlocked && $0.plaintext.itemClass == .genericPassword }!.uuid
        )
        rotated.plaintext.data = Array("secret-ak-never-committed".utf8)
        try group.commit([
            .raw(type: 0x90, payload: Array("ancillary record opening a transaction".utf8)), .put(rotated)
        ])
        let closer = group.records.last!
        let groupKeep = closer.offset + closer.size / 2
        var tornGroup = try Fixture(
            name: "torn_transaction", expect: .success,
            description:
                "golden_small followed by a two-record transaction (an ancillary record with the continues flag, then a put that updates the ak item) cut in the middle of its second record; an incomplete transaction is torn as a whole, from its first record, and the update is absent",
            defect:
                "file cut to \(groupKeep) bytes, \(closer.size / 2) bytes into the transaction's closing record (sequence \(closer.sequence)); the transaction starts at byte \(groupStart.fileSize)",
            builder: group, keychain: Array(group.file.prefix(groupKeep)), stateSequence: groupStart.sequence)
        tornGroup.items = groupStart.live
        tornGroup.recoveredTailBytes = groupKeep - groupStart.fileSize

        let zeroCount = 4096
        var zeroTail = try Fixture(
            name: "zero_tail", expect: .success,
            description:
                "golden_small followed by \(zeroCount) zero bytes, as a crash can leave blocks the file system allocated but never wrote; an all-zero end is a torn tail, not damage",
            defect: "\(zeroCount) zero bytes appended at byte \(b.file.count)",
            builder: b, keychain: b.file + [UInt8](repeating: 0, count: zeroCount))
        zeroTail.recoveredTailBytes = zeroCount

        var gapAt: RecordInfo?
        let gap = try buildGoldenSmall { b in
            b.skipSequenceNumber()
            try b.commit([
                .put(
                    b.makeItem(
                        .genericPassword,
                        ["acct": .string("after-the-gap"), "svce": .string("fixtures.latchkey.example/gap")],
                        data: "gap", protection: .always, minute: 20))
            ])
            gapAt = b.records.last
        }
        var missingAt: RecordInfo?
        var missingUUID: [UInt8] = []
        let missing = try buildGoldenSmall { b in
            missingUUID = b.newUUID()
            try b.commit([
                .raw(type: RecordType.itemDelete.rawValue, payload: ItemDeletePayload(uuid: missingUUID).encode())
            ])
            missingAt = b.records.last
        }
        var duplicateAt: RecordInfo?
        let duplicate = try buildGoldenSmall { b in
            // Same class, account and service as the live ak item, under another UUID.
            let ak = b.liveItems.first { $0.protection == .whenUnlocked && $0.plaintext.itemClass == .genericPassword }!
            var twin = b.makeItem(.genericPassword, [:], data: "twin", protection: .always, minute: 30)
            twin.plaintext.attributes["acct"] = ak.plaintext.attributes["acct"]
            twin.plaintext.attributes["svce"] = ak.plaintext.attributes["svce"]
            try b.commit([.put(twin)])
            duplicateAt = b.records.last
        }

        // A final transaction whose append lost one 512-byte block in its middle while later
        // blocks reached the disk (out-of-order persistence, spec §10.4): never acknowledged,
        // since the device state remembers the transaction before it, so it is a torn tail.
        let holed = try buildGoldenSmall()
        let holeStart = holed.snapshots.last!
        var batch: [Change] = []
        for i in 0..<4 {
            batch.append(
                .put(
                    holed.makeItem(
                        .genericPassword,
                        [
                            "acct": .string("never-acknowledged-\(i)"),
                            "svce": .string("fixtures.latchkey.example/hole")
                        ], data: String(repeating: "never-acknowledged-secret-\(i) ", count: 12), protection: .always,
                        minute: 40 + i)))
        }
        try holed.commit(batch)
        let blockSize = 512
        let hole = ((holeStart.fileSize + blockSize - 1) / blockSize + 1) * blockSize
        precondition(hole + blockSize < holed.file.count - blockSize, "the transaction spans blocks after the hole")
        var holedFile = holed.file
        holedFile.replaceSubrange(hole..<hole + blockSize, with: [UInt8](repeating: 0, count: blockSize))
        var tornHole = try Fixture(
            name: "torn_hole", expect: .success,
            description:
                "golden_small followed by a four-record transaction of which one 512-byte block in the middle never reached the disk while the blocks after it did (a power cut during an append whose blocks were persisted out of order); the device state remembers golden_small's last sequence, so the transaction was never acknowledged: the reader cuts it off as a torn tail (spec §10.4)",
            defect:
                "file[\(hole)..\(hole + blockSize)) (inside the transaction at file[\(holeStart.fileSize)..\(holed.file.count)), sequences \(holeStart.sequence + 1)–\(holed.sequence)) is zero bytes; the device state remembers sequence \(holeStart.sequence)",
            builder: holed, keychain: holedFile, stateSequence: holeStart.sequence)
        tornHole.items = holeStart.live
        tornHole.recoveredTailBytes = holed.file.count - holeStart.fileSize

        // The same damage in golden_small's last record, which the device state says was
        // acknowledged: damage, never a tail to cut off (spec §10.4).
        var lastFlipped = b.file
        let lastDefect = flip(
            &lastFlipped, at: last.offset + FormatConstants.frameHeaderSize + 3,
            what:
                "4th payload byte of the last record (sequence \(last.sequence)), which the device state remembers as acknowledged; record tag left as it was"
        )

        // A passcode change appended as Latchkey 0.1 wrote it (retired, spec §6.6).
        var legacyAt: RecordInfo?
        let legacy = try buildGoldenSmall { b in
            try b.commit([.keybag(try b.legacyKeybagChange(to: newPasscode))])
            legacyAt = b.records.last
        }

        // golden_small whose last record (sequence `last`) fails its frame CRC, followed by an
        // ancillary record of the maximum size (L = 2^24, so byte 0 of its frame header is 1),
        // which closes a transaction, and three bytes of a torn append. The device state
        // remembers the sequence before the damaged record, so only the search of §10.2 can
        // tell: it finds the big record, which proves the damaged one was committed.
        var maxInfo: RecordInfo?
        let maxRecord = try buildGoldenSmall { b in
            try b.commit([
                .raw(type: 0x91, payload: [UInt8](repeating: 0x4D, count: Int(FormatConstants.maxPayloadSize)))
            ])
            maxInfo = b.records.last
        }
        var maxFile = maxRecord.file
        precondition(maxFile[maxInfo!.offset] == 1, "L = 2^24 has byte 0 equal to 1")
        let damaged = maxRecord.records[maxRecord.records.count - 2]
        let maxDefect = flip(
            &maxFile, at: damaged.offset + 15,
            what:
                "low byte of the sequence number of golden_small's last record (sequence \(damaged.sequence)), so that its frame CRC fails"
        )
        maxFile += [0x07, 0x07, 0x07]

        return [
            torn,
            tornGroup,
            zeroTail,
            tornHole,
            try Fixture(
                name: "damage_search_max_record", expect: .integrityError,
                description:
                    "golden_small whose last record fails its frame CRC, followed by a properly framed and tagged ancillary record (type 0x91) of the maximum size, L = 2^24 (frame header byte 0 is 1), that closes its transaction, and 3 bytes of a torn append; the device state remembers the sequence before the damaged record. The search of spec §10.2 finds the big record, which ends before the end of the file and so shows that a transaction closed after the damaged record: integrity error. A reader that skipped offsets whose byte 0 is not zero would cut the damaged record off as a torn tail",
                defect: maxDefect
                    + "; the ancillary record of \(maxInfo!.size) bytes at byte \(maxInfo!.offset), sequence \(maxInfo!.sequence), closes a transaction; 3 bytes 07 07 07 follow it",
                builder: maxRecord, keychain: maxFile, stateSequence: damaged.sequence - 1),
            try Fixture(
                name: "acknowledged_record_damaged", expect: .integrityError,
                description:
                    "golden_small with one bit flipped in the payload of its last record, which the device state remembers; a failing record that this device acknowledged is damage, not a torn tail, even at the end of the file (spec §10.4)",
                defect: lastDefect, builder: b, keychain: lastFlipped),
            try Fixture(
                name: "keybag_change_record", expect: .integrityError,
                description:
                    "golden_small with a keybag-change record (type 0x03, as Latchkey 0.1's passwd appended: the same class keys rewrapped under \(newPasscode)) properly framed and tagged in the middle of the log; the type is retired because anyone holding the device secret could forge one, and a reader must refuse it (spec §6.6)",
                defect: "the record at byte \(legacyAt!.offset), sequence \(legacyAt!.sequence), is a keybag change",
                builder: legacy),
            try Fixture(
                name: "sequence_gap", expect: .integrityError,
                description:
                    "golden_small with one sequence number skipped before a properly framed and tagged record in the middle of the log (spec §6.5: each record carries the previous one's number plus one)",
                defect:
                    "record at byte \(gapAt!.offset) carries sequence \(gapAt!.sequence) where \(gapAt!.sequence - 1) is due",
                builder: gap),
            try Fixture(
                name: "delete_missing_item", expect: .integrityError,
                description:
                    "golden_small with a properly framed and tagged delete record, in the middle of the log, naming a UUID that was never live (spec §10.3)",
                defect:
                    "record at byte \(missingAt!.offset), sequence \(missingAt!.sequence), deletes \(hexString(missingUUID)), which is not live",
                builder: missing),
            try Fixture(
                name: "duplicate_unique_key", expect: .integrityError,
                description:
                    "golden_small with a put, in the middle of the log, of a second genp item under a new UUID with the same account and service (so the same unique-key hash) as the live ak item (spec §10.3)",
                defect:
                    "record at byte \(duplicateAt!.offset), sequence \(duplicateAt!.sequence), repeats a live item's unique-key hash",
                builder: duplicate),
            rolledBack,
            try Fixture(
                name: "unknown_record_type", expect: .unsupportedVersion,
                description:
                    "golden_small with a record of type 0x05 (below 0x80, so not skippable) properly framed and tagged in the middle of the log; a reader must refuse the file as needing a newer Latchkey",
                defect: "the record at byte \(futureInfo!.offset), sequence \(futureInfo!.sequence), has type 0x05",
                builder: future),
            try Fixture(
                name: "ancillary_record", expect: .success,
                description:
                    "golden_small with an ancillary record of type 0x90 properly framed and tagged in the middle of the log; a reader skips it and finds every item",
                defect: nil, builder: note
            )
            .noting("ancillary-record", "type 0x90 at byte \(noteInfo!.offset), sequence \(noteInfo!.sequence)")
        ]
    }
}

extension FixtureCatalog {
    // MARK: Device secret and device state

    static func deviceCases() throws -> [Fixture] {
        let b = try buildGoldenSmall()
        var foreign = try Fixture(
            name: "device_foreign", expect: .authenticationError,
            description:
                "golden_small's keychain with the device secret of another device; the file is intact, but this device cannot open it (spec §10.1: authentication error, not integrity)",
            defect: "device.secret is another device's (seed \"foreign_device\"); no device state",
            builder: b)
        foreign.device = try KeychainBuilder(seed: "foreign_device", passcode: nil).device
        foreign.state = nil

        var damagedState = try Fixture(
            name: "state_damaged", expect: .success,
            description:
                "golden_small whose device state fails its MAC: a reader must treat it as absent (spec §9.4), not trust it; the damage raises its remembered sequence, so a reader that skipped the MAC would wrongly report a rollback",
            builder: b)
        damagedState.defect = flip(
            &damagedState.state!, at: 39,
            what: "device state: low byte of the remembered sequence; state MAC left as it was")
        var tornState = try Fixture(
            name: "state_truncated", expect: .success,
            description:
                "golden_small whose device state file is cut to 44 of its 88 bytes, as a power cut during its overwrite in place (without fsync, spec §9.3) can leave it: a reader must distrust it and treat it as absent (spec §9.4), never refuse the keychain for it (spec §15: not a refusal)",
            builder: b)
        tornState.state = Array(tornState.state!.prefix(44))
        tornState.defect = "device state cut to 44 bytes"
        return [foreign, damagedState, tornState]
    }

    // MARK: Item plaintext

    static func itemCases() throws -> [Fixture] {
        var at: RecordInfo?
        let b = try buildGoldenSmall { b in
            let item = b.makeItem(
                .genericPassword, ["acct": .string("from-the-future"), "svce": .string("fixtures.latchkey.example/v2")],
                data: "v2", protection: .always, minute: 40)
            try b.commit([.raw(type: RecordType.itemPut.rawValue, payload: try b.putPayload(item, plaintextVersion: 2))]
            )
            at = b.records.last
        }
        var flagsAt: RecordInfo?
        let reserved = try buildGoldenSmall { b in
            var item = b.makeItem(
                .genericPassword,
                ["acct": .string("reserved-flag"), "svce": .string("fixtures.latchkey.example/flags")],
                data: "reserved-flag", protection: .always, minute: 50)
            item.flags = 0x02
            try b.commit([.put(item)])
            flagsAt = b.records.last
        }
        return [
            try Fixture(
                name: "item_flags_reserved", expect: .integrityError,
                description:
                    "golden_small with a put, in the middle of the log, whose item flags set bit 1 (reserved: only bit 0, user presence, is defined), its AAD, GCM tag and record tag all computed over that byte; a reader refuses it when it decodes the payload, without any key (spec §7.1)",
                defect:
                    "payload byte 21 (item flags) of the record at byte \(flagsAt!.offset), sequence \(flagsAt!.sequence), is 0x02",
                builder: reserved),
            try Fixture(
                name: "item_plaintext_newer_version", expect: .unsupportedVersion,
                description:
                    "golden_small with a dk item, in the middle of the log, whose plaintext carries version 2, correctly encrypted and tagged; the file opens, and reading that item must report that a newer Latchkey is needed (spec §12.5), not damage",
                defect:
                    "the item in the record at byte \(at!.offset), sequence \(at!.sequence), has plaintext version 2",
                builder: b)
        ]
    }
}

extension Fixture {
    func noting(_ key: String, _ value: String) -> Fixture {
        var copy = self
        copy.notes.append((key, value))
        return copy
    }
}

extension FixtureCatalog {
    // MARK: Passcode removal and keybag invariants

    static func passcodeCases() throws -> [Fixture] {
        var at: RecordInfo?
        let orphan = try buildGoldenNoPasscode { b in
            let item = b.makeItem(
                .genericPassword, ["acct": .string("orphan-akpu"), "svce": .string("fixtures.latchkey.example/akpu")],
                data: "never-readable", protection: .whenPasscodeSetThisDeviceOnly, minute: 20)
            try b.commit([
                .raw(type: RecordType.itemPut.rawValue, payload: try b.putPayload(item, classKey: b.newKey()))
            ])
            at = b.records.last
        }
        return [
            try Fixture(
                name: "akpu_item_without_passcode", expect: .integrityError,
                description:
                    "golden_nopasscode with a properly framed and tagged put, in the middle of the log, of a WhenPasscodeSetThisDeviceOnly (akpu, class 12) item, its item key wrapped under a key the keybag does not hold: a keychain without a passcode has no akpu entry (spec §4.2) and no writer makes such an item (removing the passcode deletes them, §11.6); a reader refuses the file when it applies the put (spec §10.3), with no key needed",
                defect:
                    "the record at byte \(at!.offset), sequence \(at!.sequence), puts an item of protection class 12 into a file whose keybag (KDF id 0) has no entry for class 12",
                builder: orphan)
        ]
    }

    // MARK: Index files (spec §17)

    /// golden_small with an index file beside it: valid (used), stale (the log grew after it:
    /// used, the tail applied on top), tampered, foreign and describing a longer log (each
    /// ignored). Every one of them reads as golden_small (or its older copy) does without an
    /// index: the index changes what a reader reads, never what it finds. `index:` in
    /// FIXTURE.txt says whether a conforming reader uses the index (check §17.5).
    static func indexCases() throws -> [Fixture] {
        let b = try buildGoldenSmall()
        let full = try IndexBuilder.build(b, label: "index_valid")
        let beforeUpdate = b.snapshots[b.snapshots.count - 3]  // before the update and the delete

        var valid = try Fixture(
            name: "index_valid", expect: .success,
            description:
                "golden_small with an index file (keychain.index) that covers all of it; a reader uses it and scans no record",
            builder: b)
        valid.index = full
        valid.notes = [
            ("index", "used: it covers the whole file (\(b.file.count) bytes, through sequence \(b.sequence))")
        ]

        var stale = try Fixture(
            name: "index_stale", expect: .success,
            description:
                "golden_small with an index written before its last two transactions (an update, then the delete of the dku item); the log grew after it, so a reader uses it and applies the records after its covered end on top",
            builder: b)
        stale.index = try IndexBuilder.build(b, coveredEnd: beforeUpdate.fileSize, label: "index_stale")
        stale.notes = [
            (
                "index",
                "used: it covers \(beforeUpdate.fileSize) bytes (through sequence \(beforeUpdate.sequence)); the reader scans the \(b.file.count - beforeUpdate.fileSize) bytes after"
            )
        ]

        var tamperedIndex = full
        let entryByte = FormatConstants.indexPageSize + 16 + 7  // the low byte of the first item entry's record offset
        let change = flip(
            &tamperedIndex, at: entryByte, what: "the record offset of the first item entry of index page 1")
        var tampered = try Fixture(
            name: "index_tampered", expect: .success,
            description:
                "index_valid with one bit of its first item page changed; the page MAC fails, so a reader must not use the page (nor, here, the index) and reads golden_small from its log",
            defect: "keychain.index " + change, builder: b)
        tampered.index = tamperedIndex
        tampered.notes = [("index", "not used: page 1 fails its MAC (§17.5)")]

        let other = try buildGoldenNoPasscode()
        var foreign = try Fixture(
            name: "index_foreign", expect: .success,
            description:
                "golden_small with the index of another keychain (golden_nopasscode's, made with another device secret) beside it; its header MAC fails under this file's keys, so a reader ignores it",
            defect: "keychain.index is golden_nopasscode's index", builder: b)
        foreign.index = try IndexBuilder.build(other, label: "index_foreign")
        foreign.notes = [("index", "not used: another keychain's (§17.5 check 1)")]

        let last = b.snapshots[b.snapshots.count - 2]
        var longer = try Fixture(
            name: "index_longer_log", expect: .success,
            description:
                "golden_small without its last transaction, as the device state remembers it, with the index of the whole golden_small beside it (an index of a newer copy, the file cut back by verify --repair): its covered end is beyond the end of the file, so a reader ignores it",
            defect: "keychain.index covers \(b.file.count) bytes; the file has \(last.fileSize)",
            builder: b, keychain: Array(b.file.prefix(last.fileSize)), stateSequence: last.sequence)
        longer.items = last.live
        longer.index = full
        longer.notes = [("index", "not used: it covers more than the file holds (§17.5 check 4)")]
        var swapped = try Fixture(
            name: "index_swapped", expect: .success,
            description:
                "golden_small with an index whose first two item entries (UUIDs \(hexString(Array(full[4096..<4112]))) and \(hexString(Array(full[4096 + 58..<4096 + 74])))) have swapped everything but their UUIDs, and whose unique-key entries name the swapped items, every page MAC recomputed with the device's index key (as someone with the device secret but not the passcode can): each entry's record carries the other item's UUID. A reader must not use those entries (§17.5 rule 11): it finds every item under its own UUID, as golden_small without an index",
            defect:
                "keychain.index item entries 0 and 1 of page 1 swapped but for their UUIDs; their unique-key entries swapped likewise; pages re-sealed",
            builder: b)
        swapped.index = try IndexBuilder.swappingFirstTwoItems(full, keys: b.keys)
        swapped.notes = [
            (
                "index",
                "not used for the swapped items: the record each entry names carries another item's UUID (§17.5 rule 11)"
            )
        ]
        return [valid, stale, tampered, foreign, longer, swapped]
    }

    // MARK: Attribute-hash records (spec §7.6)

    /// golden_small as a writer that knows attribute-hash records writes it (each put followed
    /// by its hash record), with and without its index (1.1: attribute pages); one hash record
    /// damaged; and two hash records that are validly tagged but not bound to the put before
    /// them, which a reader ignores (those puts are unhashed: found by every attribute query).
    static func attributeHashCases() throws -> [Fixture] {
        let b = try buildGoldenSmall(hashRecords: true)
        var hashed = try Fixture(
            name: "attribute_hashes", expect: .success,
            description:
                "golden_small as a writer of attribute-hash records writes it: each put is followed, in its transaction, by its attribute-hash record (type 0x80, spec §7.6); a reader that knows the type uses them to find items by acct, svce, labl or gena without decrypting the others, one that does not skips them; either finds every item",
            builder: b)
        let first = b.records[0]
        let hashRecord = b.records[1]
        hashed.notes = [
            (
                "attribute-hash-record",
                "type 0x80 at byte \(hashRecord.offset), sequence \(hashRecord.sequence), bound to the put at byte \(first.offset)"
            )
        ]

        var indexed = try Fixture(
            name: "attribute_hashes_index", expect: .success,
            description:
                "attribute_hashes with an index file (version 1.1, spec §17.2) covering all of it: item and unique-key pages, then one attribute page holding every (hash, item) pair sorted, and no unhashed page",
            builder: b)
        indexed.index = try IndexBuilder.build(b, label: "attribute_hashes_index")
        indexed.notes = [
            (
                "index",
                "used: it covers the whole file (\(b.file.count) bytes, through sequence \(b.sequence)), with attribute pages"
            )
        ]

        // A bit of a hash in the middle of the log: the record's tag fails, and transactions
        // close after it, so it is damage like any other record's (§10.2), not an ignored hint.
        var damaged = b.file
        let change = flip(
            &damaged, at: hashRecord.offset + FormatConstants.frameHeaderSize + 36 + 7,
            what: "the last byte of the first hash of the hash record at byte \(hashRecord.offset)")
        let tampered = try Fixture(
            name: "attribute_hash_tampered", expect: .integrityError,
            description:
                "attribute_hashes with one bit of a hash in its first hash record changed: the record's tag fails and later transactions closed, so the file is damaged (spec §10.2); a reader must not skip a damaged ancillary record",
            defect: change, builder: b, keychain: damaged)

        // Validly tagged hash records (as only the device can write) that are not bound to the
        // put before them: a reader ignores them, and those items stay candidates for every
        // query on an indexed attribute.
        var forgedAt: [Int] = []
        let forged = try buildGoldenSmall(hashRecords: true) { b in
            let claimed = b.keys.attributeHash(
                itemClass: .genericPassword, name: "svce",
                value: .string("fixtures.latchkey.example/ak"))!
            b.hashRecords = false
            // Wrong binding: the UUID is the put's, the binding is not its wrapped key's.
            let x = b.makeItem(
                .genericPassword,
                ["acct": .string("unbound-binding"), "svce": .string("fixtures.latchkey.example/forged")],
                data: "found-by-svce-all-the-same", protection: .always, minute: 20)
            let wrongBinding = AttributeHashRecord(
                uuid: x.uuid, binding: [UInt8](repeating: 0xA5, count: 16), hashes: [claimed])
            try b.commit([.put(x), .raw(type: RecordType.attributeHashes.rawValue, payload: wrongBinding.encode())])
            forgedAt.append(b.records[b.records.count - 1].offset)
            // Another item's UUID: the record names an item other than the put before it.
            let y = b.makeItem(
                .genericPassword,
                ["acct": .string("unbound-uuid"), "svce": .string("fixtures.latchkey.example/forged")],
                data: "found-by-svce-too", protection: .always, minute: 21)
            let otherItem = AttributeHashRecord(
                uuid: x.uuid, binding: [UInt8](repeating: 0, count: 16), hashes: [claimed])
            try b.commit([.put(y), .raw(type: RecordType.attributeHashes.rawValue, payload: otherItem.encode())])
            forgedAt.append(b.records[b.records.count - 1].offset)
            b.hashRecords = true
        }
        var unbound = try Fixture(
            name: "attribute_hash_unbound", expect: .success,
            description:
                "attribute_hashes with two more items whose hash records are validly tagged but not bound to their puts (one with a binding that is not the put's wrapped key, one naming another item's UUID), each claiming the hash of svce \"fixtures.latchkey.example/ak\": a reader ignores both records, so the two items are unhashed and a query on svce \"fixtures.latchkey.example/forged\" finds both, while one on \"fixtures.latchkey.example/ak\" finds only the ak item",
            builder: forged)
        unbound.notes = [("unbound-hash-records", forgedAt.map { "byte \($0)" }.joined(separator: ", "))]
        return [hashed, indexed, tampered, unbound]
    }
}
