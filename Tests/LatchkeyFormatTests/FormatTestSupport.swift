import LatchkeyCrypto
import LatchkeyFormat
import Testing

/// Which `FormatError` a decoder must throw.
enum Rejection: CustomStringConvertible {
    case truncated, badMagic, unsupportedVersion, invalidField, checksumMismatch
    /// Any `FormatError` (where the spec says "integrity error" without naming the check).
    case anyFormatError

    func matches(_ e: FormatError) -> Bool {
        switch (self, e) {
        case (.truncated, .truncated), (.badMagic, .badMagic), (.unsupportedVersion, .unsupportedVersion),
            (.invalidField, .invalidField), (.checksumMismatch, .checksumMismatch), (.anyFormatError, _):
            return true
        default:
            return false
        }
    }

    var description: String {
        switch self {
        case .truncated: return "truncated"
        case .badMagic: return "badMagic"
        case .unsupportedVersion: return "unsupportedVersion"
        case .invalidField: return "invalidField"
        case .checksumMismatch: return "checksumMismatch"
        case .anyFormatError: return "a FormatError"
        }
    }
}

/// Checks that `body` throws the `FormatError` `expected`.
func expectRejection<T>(
    _ expected: Rejection, _ comment: String = "", sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> T
) {
    do {
        _ = try body()
        Issue.record("\(comment): expected \(expected), but it decoded", sourceLocation: sourceLocation)
    } catch let e as FormatError {
        #expect(expected.matches(e), "\(comment): expected \(expected), got \(e)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("\(comment): expected FormatError \(expected), got \(error)", sourceLocation: sourceLocation)
    }
}

/// Fixed sample values: format tests need no randomness.
enum Sample {
    static let fileUUID: [UInt8] = (0..<16).map { UInt8(0x10 + $0) }
    static let deviceUUID: [UInt8] = (0..<16).map { UInt8(0xA0 + $0) }
    static let macKey = SecretKey(copying: [UInt8](repeating: 0x42, count: 32))
    static let otherMacKey = SecretKey(copying: [UInt8](repeating: 0x43, count: 32))
    static let salt: [UInt8] = (0..<16).map { UInt8(0x50 + $0) }

    /// The keybag of spec §4.2 for a keychain with or without a passcode; the wrapped keys are
    /// placeholders (decoding does not unwrap them).
    static func keybag(passcode: Bool) -> Keybag {
        var entries: [KeybagEntry] = []
        for pc in ProtectionClass.allCases {
            if pc == .whenPasscodeSetThisDeviceOnly && !passcode { continue }
            let wrap: WrapKind = pc.isAlwaysAvailable || !passcode ? .device : .passcode
            entries.append(
                KeybagEntry(protectionClass: pc, wrap: wrap, wrappedKey: [UInt8](repeating: pc.rawValue, count: 40)))
        }
        return Keybag(kdf: passcode ? .scrypt(salt: salt, logN: 15) : .none, entries: entries)
    }

    static func header(passcode: Bool, baseSequence: UInt64 = 0) -> FileHeader {
        FileHeader(
            fileUUID: fileUUID, deviceUUID: deviceUUID, baseSequence: baseSequence, createdAt: 1_700_000_000,
            keybag: keybag(passcode: passcode))
    }
}

extension Array where Element == UInt8 {
    /// A copy with big-endian `value` written at `offset`.
    func setting<T: FixedWidthInteger>(_ value: T, at offset: Int) -> [UInt8] {
        var out = self
        for i in 0..<MemoryLayout<T>.size {
            out[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * (MemoryLayout<T>.size - 1 - i)))
        }
        return out
    }

    func flipping(_ offset: Int, _ mask: UInt8 = 0x01) -> [UInt8] {
        var out = self
        out[offset] ^= mask
        return out
    }
}
