/// A failure inside the crypto core.
///
/// `integrityCheckFailed` is the expected answer to a wrong key or tampered input (key unwrap,
/// GCM tag); `failed` means OpenSSL itself reported an error, with its error string as `detail`.
/// Neither case ever carries key material or plaintext.
public enum CryptoError: Error, Equatable, Sendable, CustomStringConvertible {
    case integrityCheckFailed(operation: String)
    case invalidArgument(operation: String, reason: String)
    case failed(operation: String, detail: String)

    public var description: String {
        switch self {
        case .integrityCheckFailed(let op): return "\(op): integrity check failed"
        case .invalidArgument(let op, let reason): return "\(op): \(reason)"
        case .failed(let op, let detail): return "\(op) failed: \(detail)"
        }
    }
}
