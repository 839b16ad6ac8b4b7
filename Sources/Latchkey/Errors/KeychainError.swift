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
        if case .tooLarge(_, let size, let limit) = error {
            return tooLarge(size: size, limit: limit)
        }
        if case .badMagic = error {
            return KeychainError(.decode, "\(what) is not a Latchkey file (bad magic number); check the path")
        }
        return damaged(what, error)
    }

    /// An item over the format's size limit (spec/FORMAT.md §6.4), refused before anything is
    /// written.
    static func tooLarge(size: Int, limit: Int) -> KeychainError {
        KeychainError(.param, "the item is \(size) bytes of attributes and data; an item may hold at most \(limit) bytes (16 MiB less 96, spec/FORMAT.md §6.4); nothing was written; store a larger secret in a file and keep its key in the keychain")
    }

    /// A passcode given for a keychain that has none: never ignored, because a keychain that
    /// lost its passcode unexpectedly may have been replaced (spec/SECURITY.md §2.4).
    package static func passcodeForKeychainWithout(_ path: String) -> KeychainError {
        KeychainError(.param, "a passcode was given, but the keychain \(path) has no passcode; if it should have one, it may have been replaced: check it with 'latchkey info' and restore from a backup; otherwise stop giving a passcode (unset LATCHKEY_PASSCODE), or set one with 'latchkey passwd'")
    }

    /// A keychain path that names a directory (open and create say so, never "damaged" or
    /// "already exists").
    package static func pathIsDirectory(_ path: String) -> KeychainError {
        KeychainError(.param, "the keychain path \(path) is a directory, not a keychain file; give the file's path (for example \(path.hasSuffix("/") ? path : path + "/")login.keychain) with --keychain or LATCHKEY_KEYCHAIN")
    }

    static func locked(_ pc: ProtectionClass) -> KeychainError {
        KeychainError(.interactionNotAllowed,
                      "the keychain is locked: items protected \(pc.longName) (\(pc.code)) need the passcode; unlock it (LATCHKEY_PASSCODE, --passcode-file or a prompt)")
    }
}
