import LatchkeyCrypto
import LatchkeyFormat
import Testing

/// Item put and delete payloads (spec §7).
@Suite struct ItemRecordTests {
    static let keys = try! FileKeys(device: DeviceSecretFileTests.secret, fileUUID: Sample.fileUUID)
    static let classKey = SecretKey(copying: [UInt8](repeating: 0x77, count: 32))
    static let itemUUID: [UInt8] = (0..<16).map { UInt8(0xC0 + $0) }
    static let plaintext = ItemPlaintext(
        itemClass: .genericPassword,
        attributes: ["acct": .string("alice"), "svce": .string("mail")], data: Array("s3cret".utf8))

    func sealed(flags: UInt8 = 0) throws -> ItemPutPayload {
        try ItemPutPayload.seal(
            Self.plaintext, uuid: Self.itemUUID, protectionClass: .whenUnlocked, flags: flags,
            keys: Self.keys, classKey: Self.classKey, fileUUID: Sample.fileUUID)
    }

    @Test func putPayload_roundTripsAndOpens() throws {
        let put = try sealed(flags: ItemPutPayload.userPresenceFlag)
        let bytes = put.encode()
        #expect(bytes.count == 80 + Self.plaintext.encode().count + 16)
        #expect(Array(bytes.prefix(16)) == Self.itemUUID)
        #expect(Array(bytes[16..<20]) == Self.keys.classTag(.genericPassword))
        #expect(bytes[20] == ProtectionClass.whenUnlocked.rawValue)
        #expect(bytes[21] == 1)
        #expect(
            Array(bytes[24..<40])
                == Self.keys.uniqueKeyHash(
                    UniqueKey(itemClass: .genericPassword, attributes: Self.plaintext.attributes)))
        let decoded = try ItemPutPayload.decode(bytes[...])
        #expect(decoded == put)
        #expect(try decoded.open(classKey: Self.classKey, fileUUID: Sample.fileUUID) == Self.plaintext)
        let clear = try ItemPutPayload.decodeClear(bytes[...])
        #expect(Array(clear.uuid) == Self.itemUUID && clear.protectionClass == .whenUnlocked && clear.flags == 1)
    }

    @Test func noPlaintextByteReachesThePayload() throws {
        let bytes = try sealed().encode()
        for needle in ["alice", "mail", "s3cret", "acct"] {
            let n = Array(needle.utf8)
            let found = (0...(bytes.count - n.count)).contains { Array(bytes[$0..<$0 + n.count]) == n }
            #expect(!found, "\(needle) appears in clear")
        }
    }

    @Test func freshItemKey_eachSeal() throws {
        #expect(try sealed().encode() != sealed().encode())
    }

    @Test func open_failsForAnyFlippedByteOrAnotherFileOrClassKey() throws {
        let bytes = try sealed().encode()
        for offset in bytes.indices {
            let damaged = bytes.flipping(offset)
            guard let put = try? ItemPutPayload.decode(damaged[...]) else { continue }
            #expect(throws: (any Error).self, "byte \(offset)") {
                try put.open(classKey: Self.classKey, fileUUID: Sample.fileUUID)
            }
        }
        let put = try ItemPutPayload.decode(bytes[...])
        #expect(throws: (any Error).self) { try put.open(classKey: Self.classKey, fileUUID: Sample.deviceUUID) }
        #expect(throws: (any Error).self) {
            try put.open(classKey: SecretKey(copying: [UInt8](repeating: 1, count: 32)), fileUUID: Sample.fileUUID)
        }
    }

    /// The in-place open that a find uses (`open(_:classKey:fileUUID:context:scratch:)`) gives
    /// what decode-then-open gives, through one reused context and buffer for items of every
    /// size; it never returns a plaintext for a damaged payload, another file or another class
    /// key (nil: the caller then reports the error of decode-then-open); and it leaves no
    /// plaintext byte in the reused buffer, whatever the outcome.
    @Test func openInPlace_equalsDecodeAndOpen_andLeavesNoPlaintextBehind() throws {
        let context = GCMContext()
        var scratch: [UInt8] = []
        for size in [0, 1, 15, 16, 17, 300, 5000, 3] {
            var p = Self.plaintext
            p.data = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let bytes = try ItemPutPayload.seal(
                p, uuid: Self.itemUUID, protectionClass: .afterFirstUnlock, flags: 0, keys: Self.keys,
                classKey: Self.classKey, fileUUID: Sample.fileUUID
            ).encode()
            let opened = try ItemPutPayload.open(
                bytes[...], classKey: Self.classKey, fileUUID: Sample.fileUUID, context: context, scratch: &scratch)
            #expect(opened == p, "\(size) data bytes")
            #expect(
                opened
                    == (try ItemPutPayload.decode(bytes[...]).open(classKey: Self.classKey, fileUUID: Sample.fileUUID)))
            #expect(
                scratch.count >= bytes.count - 96 && scratch.allSatisfy { $0 == 0 },
                "the buffer holds no plaintext after \(size) data bytes")
        }
        let bytes = try sealed().encode()
        for offset in bytes.indices {
            let damaged = bytes.flipping(offset)
            let opened = try? ItemPutPayload.open(
                damaged[...], classKey: Self.classKey, fileUUID: Sample.fileUUID, context: context, scratch: &scratch)
            #expect(opened == nil, "byte \(offset) flipped, a plaintext came out")
            #expect(scratch.allSatisfy { $0 == 0 })
        }
        for (key, file) in [
            (Self.classKey, Sample.deviceUUID), (SecretKey(copying: [UInt8](repeating: 1, count: 32)), Sample.fileUUID),
            (SecretKey(copying: [UInt8](repeating: 1, count: 20)), Sample.fileUUID)
        ] {
            #expect(
                try ItemPutPayload.open(bytes[...], classKey: key, fileUUID: file, context: context, scratch: &scratch)
                    == nil)
            #expect(scratch.allSatisfy { $0 == 0 })
        }
        #expect(
            try ItemPutPayload.open(
                bytes.dropLast(bytes.count - 95), classKey: Self.classKey, fileUUID: Sample.fileUUID,
                context: context, scratch: &scratch) == nil)
    }

    /// A plaintext that decrypts but does not decode (a version this reader does not know)
    /// throws from the in-place open exactly what decode-then-open throws, and is zeroed too.
    @Test func openInPlace_undecodablePlaintext_throwsAsDecodeAndOpen() throws {
        let itemKey = [UInt8](repeating: 0x42, count: 32)
        var put = try ItemPutPayload.seal(
            Self.plaintext, uuid: Self.itemUUID, protectionClass: .whenUnlocked, flags: 0, keys: Self.keys,
            classKey: Self.classKey, fileUUID: Sample.fileUUID, itemKey: itemKey)
        for body in [
            [FormatConstants.itemPlaintextVersion + 1] + Self.plaintext.encode().dropFirst(),
            Self.plaintext.encode() + [0]
        ] {
            let sealed = try Crypto.aesGCMSeal(
                key: itemKey, nonce: FormatConstants.itemNonce, aad: put.aad(fileUUID: Sample.fileUUID), plaintext: body
            )
            put.ciphertext = sealed.ciphertext
            put.tag = sealed.tag
            let bytes = put.encode()
            var expected = ""
            do {
                _ = try ItemPutPayload.decode(bytes[...]).open(classKey: Self.classKey, fileUUID: Sample.fileUUID)
            } catch { expected = "\(error)" }
            var scratch: [UInt8] = []
            var got = ""
            do {
                _ = try ItemPutPayload.open(
                    bytes[...], classKey: Self.classKey, fileUUID: Sample.fileUUID, context: GCMContext(),
                    scratch: &scratch)
            } catch {
                got = "\(error)"
            }
            #expect(!expected.isEmpty && got == expected)
            #expect(!scratch.isEmpty && scratch.allSatisfy { $0 == 0 })
        }
    }

    @Test func putPayload_shorterThan96Bytes_isRejected() throws {
        let bytes = try sealed().encode()
        for length in [0, 16, 40, 79, 80, 95] {
            expectRejection(.truncated, "decodeClear, length \(length)") {
                try ItemPutPayload.decodeClear(bytes.prefix(length))
            }
            expectRejection(.truncated, "decode, length \(length)") { try ItemPutPayload.decode(bytes.prefix(length)) }
        }
        #expect(throws: Never.self) { try ItemPutPayload.decodeClear(bytes.prefix(96)) }
    }

    @Test(arguments: [0, 5, 13, 0xFF] as [UInt8])
    func putPayload_unknownProtectionClass_isRejected(rawClass: UInt8) throws {
        let bytes = try sealed().encode().setting(rawClass, at: 20)
        expectRejection(.invalidField) { try ItemPutPayload.decodeClear(bytes[...]) }
        expectRejection(.invalidField) { try ItemPutPayload.decode(bytes[...]) }
    }

    @Test func putPayload_reservedFlagBitsAndBytes_areRejected() throws {
        let bytes = try sealed().encode()
        for bit in 1..<8 {
            expectRejection(.invalidField, "flag bit \(bit)") {
                try ItemPutPayload.decodeClear(bytes.flipping(21, UInt8(1 << bit))[...])
            }
            expectRejection(.invalidField, "flag bit \(bit)") {
                try ItemPutPayload.decode(bytes.flipping(21, UInt8(1 << bit))[...])
            }
        }
        for offset in [22, 23] {
            expectRejection(.invalidField, "byte \(offset)") {
                try ItemPutPayload.decodeClear(bytes.flipping(offset)[...])
            }
            expectRejection(.invalidField, "byte \(offset)") { try ItemPutPayload.decode(bytes.flipping(offset)[...]) }
        }
    }

    @Test func deletePayload_isExactly16Bytes() throws {
        let bytes = ItemDeletePayload(uuid: Self.itemUUID).encode()
        #expect(bytes == Self.itemUUID)
        #expect(try ItemDeletePayload.decode(bytes[...]).uuid == Self.itemUUID)
        expectRejection(.truncated) { try ItemDeletePayload.decode(bytes.prefix(15)) }
        expectRejection(.invalidField) { try ItemDeletePayload.decode((bytes + [0])[...]) }
    }

    @Test func classTagAndUniqueKeyHash_areKeyedByTheDevice() throws {
        let other = try FileKeys(
            device: DeviceSecret(uuid: Sample.deviceUUID, secret: SecretKey(copying: [UInt8](repeating: 5, count: 32))),
            fileUUID: Sample.fileUUID)
        #expect(Self.keys.classTag(.genericPassword) != other.classTag(.genericPassword))
        let key = UniqueKey(itemClass: .genericPassword, attributes: Self.plaintext.attributes)
        #expect(Self.keys.uniqueKeyHash(key) != other.uniqueKeyHash(key))
        // A string and data with the same bytes are the same key; absent attributes take defaults.
        #expect(
            UniqueKey(
                itemClass: .genericPassword, attributes: ["acct": .data(Array("alice".utf8)), "svce": .string("mail")])
                == key)
        #expect(
            UniqueKey(
                itemClass: .genericPassword, attributes: Self.plaintext.attributes.merging(["sync": .integer(0)]) { $1 }
            ) == key)
        #expect(UniqueKey(itemClass: .genericPassword, attributes: ["acct": .string("alice")]) != key)
    }
}
