import LatchkeyCrypto

/// The payload of an item-put record (spec/FORMAT.md §7.1).
public struct ItemPutPayload: Equatable, Sendable {
    /// Flag bit 0: reading the item's data needs user presence (kSecAttrAccessControl).
    public static let userPresenceFlag: UInt8 = 0x01

    public var uuid: [UInt8]
    public var classTag: [UInt8]
    public var protectionClass: ProtectionClass
    public var flags: UInt8
    public var uniqueKeyHash: [UInt8]
    public var wrappedItemKey: [UInt8]
    public var ciphertext: [UInt8]
    public var tag: [UInt8]

    /// The clear part that the AAD covers: bytes 0..<40 of the payload.
    func clearPart() -> [UInt8] {
        var w = ByteWriter(capacity: 40)
        w.writeBytes(uuid)
        w.writeBytes(classTag)
        w.writeInteger(protectionClass.rawValue, as: UInt8.self)
        w.writeInteger(flags, as: UInt8.self)
        w.writeZeros(2)
        w.writeBytes(uniqueKeyHash)
        return w.bytes
    }

    public func encode() -> [UInt8] {
        var out = clearPart()
        out.reserveCapacity(FormatConstants.itemPutFixedSize + ciphertext.count + FormatConstants.gcmTagSize)
        out.append(contentsOf: wrappedItemKey)
        out.append(contentsOf: ciphertext)
        out.append(contentsOf: tag)
        return out
    }

    public static func decode(_ payload: ArraySlice<UInt8>) throws -> ItemPutPayload {
        var r = ByteReader(payload)
        let uuid = try r.readBytes(count: 16, "item UUID")
        let classTag = try r.readBytes(count: 4, "item class tag")
        let rawClass = try r.readInteger(as: UInt8.self, "item protection class")
        guard let pc = ProtectionClass(rawValue: rawClass) else {
            throw FormatError.invalidField(field: "item protection class", reason: "unknown class \(rawClass)")
        }
        let flags = try r.readInteger(as: UInt8.self, "item flags")
        guard flags & ~userPresenceFlag == 0 else {
            throw FormatError.invalidField(field: "item flags", reason: "reserved bits are set")
        }
        try r.readReserved(count: 2, "item reserved")
        let hash = try r.readBytes(count: 16, "item unique-key hash")
        let wrapped = try r.readBytes(count: FormatConstants.wrappedKeySize, "item wrapped key")
        guard r.remaining >= FormatConstants.gcmTagSize else { throw FormatError.truncated(field: "item ciphertext") }
        let ct = try r.readBytes(count: r.remaining - FormatConstants.gcmTagSize, "item ciphertext")
        let tag = try r.readBytes(count: FormatConstants.gcmTagSize, "item tag")
        return ItemPutPayload(
            uuid: uuid, classTag: classTag, protectionClass: pc, flags: flags,
            uniqueKeyHash: hash, wrappedItemKey: wrapped, ciphertext: ct, tag: tag)
    }

    /// AAD (§7.4): "LKv1item" ‖ file UUID ‖ the 40 clear bytes of the payload.
    public func aad(fileUUID: [UInt8]) -> [UInt8] {
        FormatConstants.itemAADPrefix + fileUUID + clearPart()
    }

    /// Seals `plaintext` under a fresh item key wrapped by `classKey`. `classTag` and `uniqueKeyHash`, when given, are what `keys.classTag` and
    ///   `keys.uniqueKeyHash` give for this plaintext, computed by the caller beforehand.
    public static func seal(
        _ plaintext: ItemPlaintext, uuid: [UInt8], protectionClass: ProtectionClass, flags: UInt8,
        keys: FileKeys, classKey: SecretKey, fileUUID: [UInt8],
        itemKey fixedKey: [UInt8]? = nil, wrappedItemKey: [UInt8]? = nil,
        classTag: [UInt8]? = nil, uniqueKeyHash: [UInt8]? = nil
    ) throws -> ItemPutPayload {
        // A given `fixedKey` is either the deterministic fixture generator's, or a fresh key a
        // bulk writer drew and wrapped (`wrappedItemKey`, under `classKey`) with others at once.
        try checkSize(plaintext)
        var itemKey = try fixedKey ?? Crypto.randomBytes(32)
        defer { Crypto.cleanse(&itemKey) }
        var body = plaintext.encode()
        defer { Crypto.cleanse(&body) }
        var p = ItemPutPayload(
            uuid: uuid, classTag: classTag ?? keys.classTag(plaintext.itemClass), protectionClass: protectionClass,
            flags: flags,
            uniqueKeyHash: uniqueKeyHash
                ?? keys.uniqueKeyHash(UniqueKey(itemClass: plaintext.itemClass, attributes: plaintext.attributes)),
            wrappedItemKey: [], ciphertext: [], tag: [])
        p.wrappedItemKey = try wrappedItemKey ?? Crypto.aesKeyWrap(kek: classKey, key: itemKey)
        let sealed = try Crypto.aesGCMSeal(
            key: itemKey, nonce: FormatConstants.itemNonce, aad: p.aad(fileUUID: fileUUID), plaintext: body)
        p.ciphertext = sealed.ciphertext
        p.tag = sealed.tag
        return p
    }

    /// Throws `FormatError.tooLarge` for a plaintext over the limit of §6.4, as `seal` does.
    /// - Returns: the plaintext's encoded size.
    @discardableResult
    public static func checkSize(_ plaintext: ItemPlaintext) throws -> Int {
        let size = plaintext.encodedSize
        guard size <= FormatConstants.maxItemPlaintextSize else {
            throw FormatError.tooLarge(
                what: "the item (attributes and data)", size: size, limit: FormatConstants.maxItemPlaintextSize)
        }
        return size
    }

    /// The size of the payload `seal` makes of a plaintext of `plaintextSize` bytes (GCM adds
    /// no bytes but its tag).
    public static func sealedSize(plaintextSize: Int) -> Int {
        FormatConstants.itemPutFixedSize + plaintextSize + FormatConstants.gcmTagSize
    }

    /// Opens the item with its class key. Throws `CryptoError.integrityCheckFailed` when the
    /// key does not unwrap or the tag does not verify, and `FormatError` for a bad plaintext.
    public func open(classKey: SecretKey, fileUUID: [UInt8]) throws -> ItemPlaintext {
        var itemKey = try Crypto.aesKeyUnwrap(kek: classKey, wrapped: wrappedItemKey)
        defer { Crypto.cleanse(&itemKey) }
        var body = try Crypto.aesGCMOpen(
            key: itemKey, nonce: FormatConstants.itemNonce, aad: aad(fileUUID: fileUUID),
            ciphertext: ciphertext, tag: tag)
        defer { Crypto.cleanse(&body) }
        return try ItemPlaintext.decode(body)
    }
}

extension ItemPutPayload {
    /// Whether `decode` accepts the layout of a put payload (spec §7.1): its length, protection
    /// class, flags and reserved bytes. Its wrapped item key is then bytes 40..<80.
    package static func isWellFormed(_ payload: ArraySlice<UInt8>) -> Bool {
        let s = payload.startIndex
        return payload.count >= FormatConstants.itemPutFixedSize + FormatConstants.gcmTagSize
            && ProtectionClass(rawValue: payload[s + 20]) != nil
            && payload[s + 21] & ~userPresenceFlag == 0 && payload[s + 22] == 0 && payload[s + 23] == 0
    }

    /// `decode(payload).open(classKey:fileUUID:)` read in place, for the reads of single items
    /// (a find): the payload is not copied into fields, the item key is unwrapped through the
    /// class key's cached key schedule onto the stack, the AAD is built on the stack, and the
    /// plaintext is decrypted through `context` into `scratch` (grown when too small), decoded
    /// from there, and zeroed. The same plaintext, or the same error from `ItemPlaintext.decode`.
    /// - Returns: nil when the layout is wrong, the key does not unwrap or the tag does not
    ///   verify: then `decode(_:)` and `open(classKey:fileUUID:)` throw the error to report.
    package static func open(
        _ payload: ArraySlice<UInt8>, classKey: SecretKey, fileUUID: [UInt8],
        context: GCMContext, scratch: inout [UInt8]
    ) throws -> ItemPlaintext? {
        let fixed = FormatConstants.itemPutFixedSize
        let keyStart = 40, keySize = FormatConstants.wrappedKeySize - 8
        guard let ctCount = prepare(payload, &scratch) else { return nil }
        let aadCount = FormatConstants.itemAADPrefix.count + fileUUID.count + 40
        let opened = payload.withUnsafeBytes { p -> Bool in
            withUnsafeTemporaryAllocation(byteCount: keySize + aadCount, alignment: 16) { tmp -> Bool in
                let itemKey = UnsafeMutableRawBufferPointer(rebasing: tmp[0..<keySize])
                defer { Crypto.cleanse(itemKey) }
                guard
                    Crypto.aesKeyUnwrap(
                        kek: classKey, wrapped: UnsafeRawBufferPointer(rebasing: p[keyStart..<fixed]), into: itemKey)
                else {
                    return false
                }
                let aad = UnsafeMutableRawBufferPointer(rebasing: tmp[keySize...])
                writeAAD(aad, fileUUID: fileUUID, clear: UnsafeRawBufferPointer(rebasing: p[0..<40]))
                return scratch.withUnsafeMutableBytes { out in
                    FormatConstants.itemNonce.withUnsafeBytes { nonce in
                        Crypto.aesGCMOpen(
                            context: context, key: UnsafeRawBufferPointer(itemKey), nonce: nonce,
                            aad: UnsafeRawBufferPointer(aad),
                            ciphertext: UnsafeRawBufferPointer(rebasing: p[fixed..<fixed + ctCount]),
                            tag: UnsafeRawBufferPointer(rebasing: p[(fixed + ctCount)...]),
                            into: UnsafeMutableRawBufferPointer(rebasing: out[0..<ctCount]))
                    }
                }
            }
        }
        guard opened else { return nil }
        defer {
            scratch.withUnsafeMutableBytes { Crypto.cleanse(UnsafeMutableRawBufferPointer(rebasing: $0[0..<ctCount])) }
        }
        return try ItemPlaintext.decode(scratch[0..<ctCount])
    }

    /// The ciphertext length of a well-formed payload (nil for any other), with `scratch` grown
    /// to hold its plaintext when too small (the old buffer zeroed first).
    private static func prepare(_ payload: ArraySlice<UInt8>, _ scratch: inout [UInt8]) -> Int? {
        guard isWellFormed(payload) else { return nil }
        let ctCount = payload.count - FormatConstants.itemPutFixedSize - FormatConstants.gcmTagSize
        if scratch.count < ctCount {
            Crypto.cleanse(&scratch)
            scratch = [UInt8](repeating: 0, count: max(ctCount, 2 * scratch.count))
        }
        return ctCount
    }

    /// The AAD (§7.4) into `aad`: "LKv1item" ‖ file UUID ‖ the 40 clear bytes of the payload.
    private static func writeAAD(_ aad: UnsafeMutableRawBufferPointer, fileUUID: [UInt8], clear: UnsafeRawBufferPointer)
    {
        let prefix = FormatConstants.itemAADPrefix
        aad.copyBytes(from: prefix)
        UnsafeMutableRawBufferPointer(rebasing: aad[prefix.count...]).copyBytes(from: fileUUID)
        UnsafeMutableRawBufferPointer(rebasing: aad[(prefix.count + fileUUID.count)...]).copyMemory(from: clear)
    }

    /// The rest of `open` for a well-formed payload whose item key is already unwrapped (for
    /// `verify`, which unwraps many at once): the plaintext is decrypted into `scratch` (grown
    /// when too small) through `context`, `body` called with its bytes, and the plaintext zeroed.
    /// - Returns: `body`'s answer, or nil when the tag does not verify (`open` would throw).
    package static func withOpened(
        _ payload: ArraySlice<UInt8>, itemKey: UnsafeRawBufferPointer, fileUUID: [UInt8],
        context: GCMContext, scratch: inout [UInt8], _ body: (UnsafeRawBufferPointer) -> Bool
    ) -> Bool? {
        let fixed = FormatConstants.itemPutFixedSize
        guard let ctCount = prepare(payload, &scratch) else { return nil }
        return payload.withUnsafeBytes { p -> Bool? in
            withUnsafeTemporaryAllocation(
                byteCount: FormatConstants.itemAADPrefix.count + fileUUID.count + 40, alignment: 16
            ) { aad -> Bool? in
                writeAAD(aad, fileUUID: fileUUID, clear: UnsafeRawBufferPointer(rebasing: p[0..<40]))
                return scratch.withUnsafeMutableBytes { out -> Bool? in
                    let plaintext = UnsafeMutableRawBufferPointer(rebasing: out[0..<ctCount])
                    defer { Crypto.cleanse(plaintext) }
                    let opened = FormatConstants.itemNonce.withUnsafeBytes { nonce in
                        Crypto.aesGCMOpen(
                            context: context, key: itemKey, nonce: nonce, aad: UnsafeRawBufferPointer(aad),
                            ciphertext: UnsafeRawBufferPointer(rebasing: p[fixed..<fixed + ctCount]),
                            tag: UnsafeRawBufferPointer(rebasing: p[(fixed + ctCount)...]), into: plaintext)
                    }
                    guard opened else { return nil }
                    return body(UnsafeRawBufferPointer(plaintext))
                }
            }
        }
    }
}

/// The payload of an item-delete record (§7.2): the UUID of the item it removes.
public struct ItemDeletePayload: Equatable, Sendable {
    public var uuid: [UInt8]
    public init(uuid: [UInt8]) { self.uuid = uuid }
    public func encode() -> [UInt8] { uuid }
    public static func decode(_ payload: ArraySlice<UInt8>) throws -> ItemDeletePayload {
        var r = ByteReader(payload)
        let uuid = try r.readBytes(count: 16, "deleted item UUID")
        try r.expectEnd("item delete record")
        return ItemDeletePayload(uuid: uuid)
    }
}

/// The clear fields of an item-put payload, read without copying the ciphertext.
public struct ItemPutClear: Sendable {
    public var uuid: ArraySlice<UInt8>
    /// The class tag as a big-endian word (the form the index and the item table compare).
    public var classTag: UInt32
    public var protectionClass: ProtectionClass
    public var flags: UInt8
    public var uniqueKeyHash: ArraySlice<UInt8>
}

extension ItemPutPayload {
    /// `classTag` as a big-endian word; 0 when it is not 4 bytes (no decoder or sealer makes
    /// such a payload).
    public var classTagWord: UInt32 {
        classTag.count == 4 ? ByteReader(classTag).getInteger(at: 0, as: UInt32.self) ?? 0 : 0
    }

    /// Validates the fixed part of a put payload and returns its clear fields (spec §7.1).
    public static func decodeClear(_ payload: ArraySlice<UInt8>) throws -> ItemPutClear {
        guard payload.count >= FormatConstants.itemPutFixedSize + FormatConstants.gcmTagSize else {
            throw FormatError.truncated(field: "item put payload")
        }
        var r = ByteReader(payload)
        let uuid = try r.readSlice(count: 16, "item UUID")
        let classTag = try r.readInteger(as: UInt32.self, "item class tag")
        let rawClass = try r.readInteger(as: UInt8.self, "item protection class")
        guard let pc = ProtectionClass(rawValue: rawClass) else {
            throw FormatError.invalidField(field: "item protection class", reason: "unknown class \(rawClass)")
        }
        let flags = try r.readInteger(as: UInt8.self, "item flags")
        let reserved = try r.readInteger(as: UInt16.self, "item reserved")
        guard flags & ~userPresenceFlag == 0, reserved == 0 else {
            throw FormatError.invalidField(field: "item flags", reason: "reserved bits are set")
        }
        return ItemPutClear(
            uuid: uuid, classTag: classTag, protectionClass: pc, flags: flags,
            uniqueKeyHash: try r.readSlice(count: 16, "item unique-key hash"))
    }
}
