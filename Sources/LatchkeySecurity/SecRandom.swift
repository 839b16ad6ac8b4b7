import Foundation
import LatchkeyCrypto

/// `SecRandomRef`: which generator `SecRandomCopyBytes` uses. On Apple platforms the only one
/// is `kSecRandomDefault` (NULL); so here.
public typealias SecRandomRef = OpaquePointer

/// `kSecRandomDefault`: the default cryptographically secure generator (nil, as Apple's NULL).
nonisolated(unsafe) public let kSecRandomDefault: SecRandomRef? = nil

/// Fills `bytes` with `count` cryptographically secure random bytes, as Apple's
/// `SecRandomCopyBytes`. The bytes come from OpenSSL's CSPRNG (RAND_bytes, seeded by the
/// operating system) through LatchkeyCrypto, the generator Latchkey's own keys come from.
///
/// ```swift
/// var key = [UInt8](repeating: 0, count: 32)
/// let status = SecRandomCopyBytes(kSecRandomDefault, key.count, &key)
/// guard status == errSecSuccess else { … }
/// ```
/// - Parameters:
///   - rnd: `kSecRandomDefault` (nil); any other generator is errSecParam, as on Apple platforms.
///   - count: how many bytes to write (0 writes nothing).
///   - bytes: where to write them; it must hold `count` bytes.
/// - Returns: errSecSuccess, errSecParam (−50) for another generator or a negative count, or
///   errSecInternalComponent (−2070) when OpenSSL's generator fails (then the buffer's content
///   is unspecified and must not be used).
@discardableResult
public func SecRandomCopyBytes(_ rnd: SecRandomRef?, _ count: Int, _ bytes: UnsafeMutableRawPointer) -> Int32 {
    guard rnd == nil, count >= 0 else { return errSecParam }
    let buffer = UnsafeMutableRawBufferPointer(start: bytes, count: count)
    return Crypto.fillRandom(buffer) ? errSecSuccess : errSecInternalComponent
}
