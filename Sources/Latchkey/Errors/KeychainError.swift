import LatchkeyCrypto
import LatchkeyFormat

/// The one error type of the Swift API: an OSStatus, a message for a person that says what
/// happened, what to do about it (`remedy`, which each surface words in its own terms), and
/// the underlying cause (an errno text, an OpenSSL error, a format error). Never carries secrets.
public struct KeychainError: Error, Equatable, Sendable, CustomStringConvertible {
    public let status: KeychainStatus
    public let message: String
    public let underlying: String?
    /// The next step, when there is one beyond what `message` says.
    public let remedy: KeychainRemedy?

    public init(_ status: KeychainStatus, _ message: String, underlying: String? = nil, remedy: KeychainRemedy? = nil) {
        self.status = status
        self.message = message
        self.underlying = underlying
        self.remedy = remedy
    }

    /// The raw OSStatus (e.g. -25300).
    public var osStatus: Int32 { status.rawValue }

    /// `<message>; <remedy>: <underlying> (<errSecName> <number>)`, the remedy in the library's terms.
    public var description: String { description(advice: \.advice) }

    /// `description` with the remedy worded by `advice` (the CLI names its commands and options).
    public func description(advice: (KeychainRemedy) -> String) -> String {
        var text = message
        if let remedy { text += "; " + advice(remedy) }
        if let u = underlying, !u.isEmpty { text += ": \(u)" }
        return "\(text) (\(status.name) \(status.rawValue))"
    }

    static func damaged(_ what: String, _ cause: Error) -> KeychainError {
        KeychainError(
            .decode, "\(what) is damaged or has been tampered with", underlying: String(describing: cause),
            remedy: .verifyAndRestore)
    }

    /// Maps a format error to errSecDecode, keeping "newer version" distinct in the message.
    static func fromFormat(_ what: String, _ error: FormatError) -> KeychainError {
        if case .unsupportedVersion(_, let major, let minor) = error {
            return KeychainError(
                .decode,
                "\(what) uses format version \(major).\(minor), which this Latchkey cannot read; upgrade Latchkey")
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
        KeychainError(
            .param,
            "the item is \(size) bytes of attributes and data; an item may hold at most \(limit) bytes (16 MiB less 96, spec/FORMAT.md §6.4); nothing was written; store a larger secret in a file and keep its key in the keychain"
        )
    }

    /// A passcode given for a keychain that has none: never ignored, because a keychain that
    /// lost its passcode unexpectedly may have been replaced (spec/SECURITY.md §2.4).
    package static func passcodeForKeychainWithout(_ path: String) -> KeychainError {
        KeychainError(
            .param, "a passcode was given, but the keychain \(path) has no passcode", remedy: .checkForReplacement)
    }

    /// A keychain path that names a FIFO, socket or device: refused before a byte is read (a
    /// FIFO planted there would otherwise block every command, spec/SECURITY.md §2.2).
    package static func pathIsNotRegularFile(_ path: String) -> KeychainError {
        KeychainError(
            .io,
            "the keychain path \(path) is not a regular file (a FIFO, socket or device is there); nothing was read. Check the path; if you did not put it there, someone who can write its directory did: remove it and restore the keychain from a backup"
        )
    }

    /// A keychain path that names a directory (open and create say so, never "damaged" or
    /// "already exists").
    package static func pathIsDirectory(_ path: String) -> KeychainError {
        KeychainError(
            .param, "the keychain path \(path) is a directory, not a keychain file",
            remedy: .giveKeychainFile(example: (path.hasSuffix("/") ? path : path + "/") + "login.keychain"))
    }

    static func locked(_ pc: ProtectionClass) -> KeychainError {
        KeychainError(
            .interactionNotAllowed,
            "the keychain is locked: items protected \(pc.longName) (\(pc.code)) need the passcode", remedy: .unlock)
    }
}
