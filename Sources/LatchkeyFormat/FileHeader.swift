import LatchkeyCrypto

/// The keychain file header (spec/FORMAT.md §3).
public struct FileHeader: Equatable, Sendable {
    public var major: UInt16
    public var minor: UInt16
    public var fileUUID: [UInt8]
    public var deviceUUID: [UInt8]
    /// Sequence number before the first record: the first record carries `baseSequence + 1`.
    public var baseSequence: UInt64
    /// Creation time, Unix seconds.
    public var createdAt: UInt64
    public var keybag: Keybag
    /// Bytes a newer minor version placed between the keybag and the MAC (kept, not interpreted).
    public var extensionBytes: [UInt8]

    public init(fileUUID: [UInt8], deviceUUID: [UInt8], baseSequence: UInt64, createdAt: UInt64, keybag: Keybag) {
        self.major = FormatConstants.fileMajor
        self.minor = FormatConstants.fileMinor
        self.fileUUID = fileUUID
        self.deviceUUID = deviceUUID
        self.baseSequence = baseSequence
        self.createdAt = createdAt
        self.keybag = keybag
        self.extensionBytes = []
    }

    /// Encodes the header and appends its MAC under `macKey`.
    public func encode(macKey: SecretKey) -> [UInt8] {
        let bag = keybag.encode()
        let total = FormatConstants.headerFixedSize + bag.count + extensionBytes.count + FormatConstants.headerMACSize
        var w = ByteWriter(capacity: total)
        w.raw(FormatConstants.fileMagic)
        w.u16(major)
        w.u16(minor)
        w.u32(UInt32(total))
        w.raw(fileUUID)
        w.raw(deviceUUID)
        w.zeros(4)          // flags: none defined in 1.0
        w.zeros(4)          // reserved
        w.u64(baseSequence)
        w.u64(createdAt)
        w.u16(UInt16(bag.count))
        w.raw(bag)
        w.raw(extensionBytes)
        let mac = Crypto.hmacSHA256(key: macKey, parts: [w.bytes])
        w.raw(mac)
        return w.bytes
    }

    /// Reads only the length field, so a caller knows how many bytes the whole header takes.
    /// Checks the magic and the major version first: a foreign or newer file is refused before
    /// anything else is read.
    public static func peekLength(_ prefix: [UInt8]) throws -> Int {
        var r = ByteReader(prefix)
        let magic = try r.bytes(8, "header magic")
        guard magic == FormatConstants.fileMagic else { throw FormatError.badMagic(what: "Latchkey keychain file") }
        let major = try r.u16("header major version")
        let minor = try r.u16("header minor version")
        guard major == FormatConstants.fileMajor else {
            throw FormatError.unsupportedVersion(what: "keychain file", major: major, minor: minor)
        }
        let length = Int(try r.u32("header length"))
        guard length >= FormatConstants.headerFixedSize + FormatConstants.keybagFixedSize + FormatConstants.headerMACSize,
              length <= FormatConstants.headerMaxSize else {
            throw FormatError.invalidField(field: "header length", reason: "\(length) is outside the allowed range")
        }
        return length
    }

    /// Decodes a whole header (exactly `peekLength` bytes). The MAC is returned, not checked:
    /// checking needs the device key, which depends on `deviceUUID` and `fileUUID` read here.
    public static func decode(_ bytes: [UInt8]) throws -> (header: FileHeader, authenticated: ArraySlice<UInt8>, mac: [UInt8]) {
        let length = try peekLength(bytes)
        guard bytes.count == length else { throw FormatError.truncated(field: "header") }
        var r = ByteReader(bytes[0..<(length - FormatConstants.headerMACSize)])
        _ = try r.take(8, "header magic")
        let major = try r.u16("header major version")
        let minor = try r.u16("header minor version")
        _ = try r.u32("header length")
        let fileUUID = try r.bytes(16, "header file UUID")
        let deviceUUID = try r.bytes(16, "header device UUID")
        let flags = try r.u32("header flags")
        if minor <= FormatConstants.fileMinor, flags != 0 {
            throw FormatError.invalidField(field: "header flags", reason: "no flags are defined in version 1.\(FormatConstants.fileMinor)")
        }
        if minor <= FormatConstants.fileMinor { try r.reserved(4, "header reserved") } else { _ = try r.take(4, "header reserved") }
        let base = try r.u64("header base sequence")
        let created = try r.u64("header creation time")
        let bagLength = Int(try r.u16("header keybag length"))
        var bagReader = ByteReader(try r.take(bagLength, "header keybag"))
        let keybag = try Keybag.decode(&bagReader)
        try bagReader.expectEnd("header keybag")
        let ext = try r.bytes(r.remaining, "header extension")
        if minor <= FormatConstants.fileMinor, !ext.isEmpty {
            throw FormatError.invalidField(field: "header", reason: "\(ext.count) bytes after the keybag that version 1.\(minor) does not define")
        }
        var header = FileHeader(fileUUID: fileUUID, deviceUUID: deviceUUID, baseSequence: base, createdAt: created, keybag: keybag)
        header.major = major
        header.minor = minor
        header.extensionBytes = ext
        let mac = Array(bytes[(length - FormatConstants.headerMACSize)...])
        return (header, bytes[0..<(length - FormatConstants.headerMACSize)], mac)
    }

    /// Checks a header MAC in constant time.
    public static func verifyMAC(authenticated: ArraySlice<UInt8>, mac: [UInt8], macKey: SecretKey) -> Bool {
        Crypto.constantTimeEqual(Crypto.hmacSHA256(key: macKey, parts: [Array(authenticated)]), mac)
    }
}
