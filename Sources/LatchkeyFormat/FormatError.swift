/// Why bytes could not be decoded. Never carries secret bytes.
public enum FormatError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The input ended inside `field`.
    case truncated(field: String)
    /// The magic number is not Latchkey's (`what` names the structure).
    case badMagic(what: String)
    /// A major version this reader does not know; refuse the whole structure.
    case unsupportedVersion(what: String, major: UInt16, minor: UInt16)
    /// A field that must be zero, or a value outside its allowed set.
    case invalidField(field: String, reason: String)
    /// A checksum or MAC did not verify.
    case checksumMismatch(what: String)
    /// A writer was asked to encode `what` at `size` bytes, over the format's `limit`.
    case tooLarge(what: String, size: Int, limit: Int)

    public var description: String {
        switch self {
        case .truncated(let f): return "truncated input in \(f)"
        case .badMagic(let w): return "not a \(w) (bad magic number)"
        case .unsupportedVersion(let w, let major, let minor):
            return "\(w) has format version \(major).\(minor), which this version of Latchkey cannot read"
        case .invalidField(let f, let r): return "invalid \(f): \(r)"
        case .checksumMismatch(let w): return "\(w) failed its integrity check"
        case .tooLarge(let w, let size, let limit): return "\(w) is \(size) bytes; the format allows at most \(limit)"
        }
    }
}
