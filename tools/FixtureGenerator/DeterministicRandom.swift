import LatchkeyCrypto
import LatchkeyFormat

/// Every "random" byte of a fixture comes from here: block i is HMAC-SHA256(seed, u64be(i)),
/// with seed = SHA-256("latchkey fixtures v1 seed: " ‖ label). Each call takes fresh blocks,
/// so the bytes a fixture draws depend only on its label and the order of its draws, never
/// on other fixtures.
struct DeterministicRandom {
    private let seed: [UInt8]
    private var counter: UInt64 = 0

    init(label: String) {
        seed = Crypto.sha256(Array("latchkey fixtures v1 seed: \(label)".utf8))
    }

    mutating func bytes(_ count: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(count + 32)
        while out.count < count {
            var w = ByteWriter(capacity: 8)
            w.writeInteger(counter, as: UInt64.self)
            counter += 1
            out += Crypto.hmacSHA256(key: seed, parts: [w.bytes])
        }
        return Array(out.prefix(count))
    }

    /// 16 bytes with the RFC 4122 version-4 and variant bits set, like the engine's UUIDs.
    mutating func uuid() -> [UInt8] {
        var b = bytes(16)
        b[6] = (b[6] & 0x0f) | 0x40
        b[8] = (b[8] & 0x3f) | 0x80
        return b
    }
}
