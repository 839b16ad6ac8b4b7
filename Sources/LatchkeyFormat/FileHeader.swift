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
        w.writeBytes(FormatConstants.fileMagic)
        w.writeInteger(major, as: UInt16.self)
        w.writeInteger(minor, as: UInt16.self)
        w.writeInteger(UInt32(total), as: UInt32.self)
        w.writeBytes(fileUUID)
        w.writeBytes(deviceUUID)
        w.writeZeros(4)  // flags: none defined in 1.0
        w.writeZeros(4)  // reserved
        w.writeInteger(baseSequence, as: UInt64.self)
        w.writeInteger(createdAt, as: UInt64.self)
        w.writeInteger(UInt16(bag.count), as: UInt16.self)
        w.writeBytes(bag)
        w.writeBytes(extensionBytes)
        let mac = Crypto.hmacSHA256(key: macKey, parts: [w.bytes])
        w.writeBytes(mac)
        return w.bytes
    }

    /// Reads only the length field, so a caller knows how many bytes the whole header takes.
    /// Checks the magic and the major version first: a foreign or newer file is refused before
    /// anything else is read.
    public static func peekLength(_ prefix: [UInt8]) throws -> Int {
        var r = ByteReader(prefix)
        _ = try r.readPreamble(
            magic: FormatConstants.fileMagic, major: FormatConstants.fileMajor, field: "header", file: "keychain file")
        let length = Int(try r.readInteger(as: UInt32.self, "header length"))
        guard
            length >= FormatConstants.headerFixedSize + FormatConstants.keybagFixedSize + FormatConstants.headerMACSize,
            length <= FormatConstants.headerMaxSize
        else {
            throw FormatError.invalidField(field: "header length", reason: "\(length) is outside the allowed range")
        }
        return length
    }

    /// Decodes a whole header (exactly `peekLength` bytes). The MAC is returned, not checked:
    /// checking needs the device key, which depends on `deviceUUID` and `fileUUID` read here.
    public static func decode(_ bytes: [UInt8]) throws -> (
        header: FileHeader, authenticated: ArraySlice<UInt8>, mac: [UInt8]
    ) {
        let length = try peekLength(bytes)
        guard bytes.count == length else { throw FormatError.truncated(field: "header") }
        var r = ByteReader(bytes[0..<(length - FormatConstants.headerMACSize)])
        _ = try r.readSlice(count: 8, "header magic")
        let major = try r.readInteger(as: UInt16.self, "header major version")
        let minor = try r.readInteger(as: UInt16.self, "header minor version")
        _ = try r.readInteger(as: UInt32.self, "header length")
        let fileUUID = try r.readBytes(count: 16, "header file UUID")
        let deviceUUID = try r.readBytes(count: 16, "header device UUID")
        let flags = try r.readInteger(as: UInt32.self, "header flags")
        if minor <= FormatConstants.fileMinor, flags != 0 {
            throw FormatError.invalidField(
                field: "header flags", reason: "no flags are defined in version 1.\(FormatConstants.fileMinor)")
        }
        if minor <= FormatConstants.fileMinor {
            try r.readReserved(count: 4, "header reserved")
        } else {
            _ = try r.readSlice(count: 4, "header reserved")
        }
        let base = try r.readInteger(as: UInt64.self, "header base sequence")
        let created = try r.readInteger(as: UInt64.self, "header creation time")
        let bagLength = Int(try r.readInteger(as: UInt16.self, "header keybag length"))
        var bagReader = ByteReader(try r.readSlice(count: bagLength, "header keybag"))
        let keybag = try Keybag.decode(&bagReader)
        try bagReader.expectEnd("header keybag")
        let ext = try r.readBytes(count: r.remaining, "header extension")
        if minor <= FormatConstants.fileMinor, !ext.isEmpty {
            throw FormatError.invalidField(
                field: "header", reason: "\(ext.count) bytes after the keybag that version 1.\(minor) does not define")
        }
        var header = FileHeader(
            fileUUID: fileUUID, deviceUUID: deviceUUID, baseSequence: base, createdAt: created, keybag: keybag)
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
