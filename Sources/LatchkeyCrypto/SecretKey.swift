import CLatchkeyCrypto
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Key material held outside Swift's copy-on-write arrays: page-locked where the system allows
/// (`mlock`), zeroed with `OPENSSL_cleanse` when the last reference goes away, and never printed.
public final class SecretKey: @unchecked Sendable, CustomStringConvertible {
    private let storage: UnsafeMutableRawBufferPointer
    private let locked: Bool

    /// The number of key bytes.
    public var count: Int { countStored }

    /// Takes a copy of `bytes`; the caller should cleanse its own buffer afterwards.
    public init<Bytes: Collection>(copying bytes: Bytes) where Bytes.Element == UInt8 {
        storage = .allocate(byteCount: Swift.max(bytes.count, 1), alignment: 16)
        locked = mlock(storage.baseAddress!, storage.count) == 0
        UnsafeMutableRawBufferPointer(rebasing: storage[0..<bytes.count]).copyBytes(from: bytes)
        if bytes.isEmpty { storage.storeBytes(of: 0, as: UInt8.self) }
        countStored = bytes.count
    }

    private let countStored: Int

    /// Moves `bytes` into a key and zeroes the array it came from.
    public convenience init(consuming bytes: inout [UInt8]) {
        self.init(copying: bytes)
        Crypto.cleanse(&bytes)
    }

    /// A fresh random key of `count` bytes from the CSPRNG.
    public static func random(count: Int = 32) throws -> SecretKey {
        var bytes = try Crypto.randomBytes(count)
        return SecretKey(consuming: &bytes)
    }

    /// A pre-keyed HMAC-SHA256 context under this key, made on first use.
    public var hmacContext: HMACContext {
        hmacLock.lock(); defer { hmacLock.unlock() }
        if let c = cachedHMAC { return c }
        let c = withUnsafeBytes { HMACContext(key: $0) }
        cachedHMAC = c
        return c
    }
    private var cachedHMAC: HMACContext?
    private let hmacLock = NSLockLite()

    /// This key's AES key schedule for unwrapping keys wrapped under it (RFC 3394), made on
    /// first use; nil when the key is not an AES key (16, 24 or 32 bytes).
    var unwrapContext: KeyUnwrapContext? {
        hmacLock.lock(); defer { hmacLock.unlock() }
        if let c = cachedUnwrap { return c }
        let c = withUnsafeBytes { KeyUnwrapContext(kek: $0) }
        cachedUnwrap = c
        return c
    }
    private var cachedUnwrap: KeyUnwrapContext?

    deinit {
        lk_cleanse(storage.baseAddress, storage.count)
        if locked { munlock(storage.baseAddress!, storage.count) }
        storage.deallocate()
    }

    /// Calls `body` with the key bytes; do not let the pointer escape.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<countStored]))
    }

    /// A copy of the key bytes as an array (for encoding into the format). Cleanse it after use.
    public func copyBytes() -> [UInt8] {
        withUnsafeBytes { Array($0) }
    }

    public var description: String { "SecretKey(<redacted>, \(countStored) bytes)" }
}

/// A keyed HMAC-SHA256 template (OpenSSL EVP_MAC_CTX), duplicated for each MAC, so the digest
/// fetch and key schedule are paid once per key rather than once per MAC.
public final class HMACContext: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer

    init(key: UnsafeRawBufferPointer) {
        guard let h = lk_hmac_sha256_key_new(key.baseAddress?.assumingMemoryBound(to: UInt8.self), key.count) else {
            preconditionFailure("OpenSSL could not create an HMAC-SHA256 context")
        }
        handle = h
    }

    deinit { lk_hmac_sha256_key_free(handle) }
}

/// An AES key schedule (OpenSSL EVP_CIPHER_CTX, AES-ECB decryption) for RFC 3394 key unwrap
/// under one KEK, so that unwrapping an item key does not expand the class key again. Its
/// lock serializes the threads that share the key; OpenSSL clears the schedule when it goes.
final class KeyUnwrapContext: @unchecked Sendable {
    private let handle: UnsafeMutableRawPointer
    private let lock = NSLockLite()

    init?(kek: UnsafeRawBufferPointer) {
        guard let h = lk_kw_unwrap_ctx_new(kek.baseAddress?.assumingMemoryBound(to: UInt8.self), kek.count) else {
            return nil
        }
        handle = h
    }

    deinit { lk_kw_unwrap_ctx_free(handle) }

    /// RFC 3394 unwrap of `wrapped` into `out` (`wrapped.count` − 8 bytes); false when the
    /// integrity check fails (`out` is then zeroed) or a length is wrong.
    func unwrap(_ wrapped: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Bool {
        guard wrapped.count >= 24, wrapped.count % 8 == 0, out.count >= wrapped.count - 8 else { return false }
        lock.lock(); defer { lock.unlock() }
        return lk_aes_kw_unwrap_ctx(
            handle, wrapped.baseAddress?.assumingMemoryBound(to: UInt8.self), wrapped.count,
            out.baseAddress?.assumingMemoryBound(to: UInt8.self)) == 1
    }
}

/// An AES-GCM cipher context (OpenSSL EVP_CIPHER_CTX) that one thread reuses message after
/// message (`Crypto.aesGCMOpen(context:...)`): not for concurrent use.
package final class GCMContext {
    let handle: UnsafeMutableRawPointer

    package init() {
        guard let h = lk_gcm_ctx_new() else { preconditionFailure("OpenSSL could not create a cipher context") }
        handle = h
    }

    deinit { lk_gcm_ctx_free(handle) }
}

/// A minimal mutex over pthread_mutex_t (this module does not import Foundation).
final class NSLockLite: @unchecked Sendable {
    private var m = pthread_mutex_t()
    init() { pthread_mutex_init(&m, nil) }
    deinit { pthread_mutex_destroy(&m) }
    func lock() { pthread_mutex_lock(&m) }
    func unlock() { pthread_mutex_unlock(&m) }
}
