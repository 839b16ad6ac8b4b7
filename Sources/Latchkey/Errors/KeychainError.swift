import LatchkeyCrypto
import LatchkeyFormat

/// The one error type of the Swift API: an OSStatus, a message for a person that says what
/// happened and what to do, and the underlying cause (an errno text, an OpenSSL error, a
/// format error). Never carries secrets.
public struct KeychainError: Error, Equatable, Sendable, CustomStringConvertible {
    public let status: KeychainStatus
    public let message: String
    public let underlying: String?

    public init(_ status: KeychainStatus, _ message: String, underlying: String? = nil) {
        self.status = status
        self.message = message
        self.underlying = underlying
    }

    /// The raw OSStatus (e.g. -25300).
    public var osStatus: Int32 { status.rawValue }

    /// `<message> (<errSecName> <number>)`, the form the CLI prints.
    public var description: String {
        var text = message
        if let u = underlying, !u.isEmpty { text += ": \(u)" }
        return "\(text) (\(status.name) \(status.rawValue))"
    }

    static func damaged(_ what: String, _ cause: Error) -> KeychainError {
        KeychainError(.decode, "\(what) is damaged or has been tampered with; run 'latchkey verify' and restore from a backup if needed",
                      underlying: String(describing: cause))
    }

    /// Maps a format error to errSecDecode, keeping "newer version" distinct in the message.
    static func fromFormat(_ what: String, _ error: FormatError) -> KeychainError {
        if case .unsupportedVersion(_, let major, let minor) = error {
            return KeychainError(.decode, "\(what) uses format version \(major).\(minor), which this Latchkey cannot read; upgrade Latchkey")
        }
        if case .badMagic = error {
            return KeychainError(.decode, "\(what) is not a Latchkey file (bad magic number); check the path")
        }
        return damaged(what, error)
    }

    static func locked(_ pc: ProtectionClass) -> KeychainError {
        KeychainError(.interactionNotAllowed,
                      "the keychain is locked: items protected \(pc.longName) (\(pc.code)) need the passcode; unlock it (LATCHKEY_PASSCODE, --passcode-file or a prompt)")
    }
}
