import LatchkeyCrypto

/// What the device remembers about one keychain (spec/FORMAT.md §9): the newest committed
/// sequence number (rollback detection) and the passcode attempt counter. Kept beside the
/// device secret, never beside the keychain, so a copied keychain does not carry it.
public struct DeviceState: Equatable, Sendable {
    public var fileUUID: [UInt8]
    public var newestSequence: UInt64
    public var failedAttempts: UInt32
    /// Unix seconds of the last failed passcode attempt (0 when none).
    public var lastFailureAt: Int64
    /// The keychain had a passcode at its last commit on this device (flags byte 12, bit 0,
    /// format 1.1 of the state): a header without one is then refused at open (spec §9.2).
    public var passcodeSet: Bool

    public init(
        fileUUID: [UInt8], newestSequence: UInt64, failedAttempts: UInt32 = 0, lastFailureAt: Int64 = 0,
        passcodeSet: Bool = false
    ) {
        self.fileUUID = fileUUID
        self.newestSequence = newestSequence
        self.failedAttempts = failedAttempts
        self.lastFailureAt = lastFailureAt
        self.passcodeSet = passcodeSet
    }

    /// The MAC key: HKDF(device secret, salt = device UUID, "latchkey v1 device state").
    public static func macKey(device: DeviceSecret) throws -> SecretKey {
        try Crypto.hkdfSHA256(ikm: device.secret, salt: device.uuid, info: FormatConstants.infoState)
    }

    public func encode(macKey: SecretKey) -> [UInt8] {
        var w = ByteWriter(capacity: FormatConstants.stateFileSize)
        w.writeBytes(FormatConstants.stateMagic)
        // Minor version 1 only when a flag is set: a state without one is byte for byte what
        // version 1.0 wrote.
        w.writeInteger(1, as: UInt16.self)
        w.writeInteger(passcodeSet ? 1 : 0, as: UInt16.self)
        w.writeInteger(passcodeSet ? 1 : 0, as: UInt8.self)
        w.writeZeros(3)
        w.writeBytes(fileUUID)
        w.writeInteger(newestSequence, as: UInt64.self)
        w.writeInteger(failedAttempts, as: UInt32.self)
        w.writeZeros(4)
        w.writeInteger(UInt64(bitPattern: lastFailureAt), as: UInt64.self)
        w.writeBytes(Crypto.hmacSHA256(key: macKey, parts: [w.bytes]))
        return w.bytes
    }

    public static func decode(_ bytes: [UInt8], macKey: SecretKey) throws -> DeviceState {
        var r = ByteReader(bytes)
        _ = try r.readPreamble(
            magic: FormatConstants.stateMagic, major: 1, field: "device state", file: "device state file")
        guard bytes.count == FormatConstants.stateFileSize else {
            throw FormatError.truncated(field: "device state file")
        }
        let flags = try r.readInteger(as: UInt8.self, "device state flags")
        guard flags & ~1 == 0 else {
            throw FormatError.invalidField(field: "device state flags", reason: "reserved bits are set")
        }
        try r.readReserved(count: 3, "device state reserved")
        let uuid = try r.readBytes(count: 16, "device state file UUID")
        let seq = try r.readInteger(as: UInt64.self, "device state sequence")
        let failures = try r.readInteger(as: UInt32.self, "device state failed attempts")
        try r.readReserved(count: 4, "device state reserved")
        let last = Int64(bitPattern: try r.readInteger(as: UInt64.self, "device state last failure"))
        let mac = try r.readBytes(count: 32, "device state MAC")
        guard Crypto.constantTimeEqual(Crypto.hmacSHA256(key: macKey, parts: [Array(bytes[0..<56])]), mac) else {
            throw FormatError.checksumMismatch(what: "device state file")
        }
        return DeviceState(
            fileUUID: uuid, newestSequence: seq, failedAttempts: failures, lastFailureAt: last,
            passcodeSet: flags & 1 != 0)
    }
}
