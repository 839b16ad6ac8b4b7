import Latchkey
import LatchkeyFormat

/// How a Secret Service item and a collection are kept as keychain items (spec/SECRET-SERVICE.md
/// §2): each is a generic password (`genp`) in the access group of its collection.
enum Mapping {
    /// The access group of a collection: "org.freedesktop.secrets." and the collection's name.
    static let groupPrefix = "org.freedesktop.secrets."
    /// `svce` of an item of a collection.
    static let itemService = "org.freedesktop.Secret.Item"
    /// `svce` of the record that describes a collection (its label), one per collection.
    static let collectionService = "org.freedesktop.Secret.Collection"
    /// `svce` of the record of an alias (`acct`: the alias; `gena`: the collection's name).
    static let aliasService = "org.freedesktop.Secret.Alias"
    /// `svce` of an item's index record (`acct`: the item's id; `gena`: its pair hashes).
    static let indexService = "org.freedesktop.Secret.Index"
    /// `svce` of the record whose data is the key of the pair hashes (in `aliasGroup`).
    static let indexKeyService = "org.freedesktop.Secret.IndexKey"
    /// The group that holds the alias records.
    static let aliasGroup = "org.freedesktop.secrets"
    static let defaultContentType = "text/plain"
    /// Seconds from 1970 to 2001, the epoch of keychain dates.
    static let epoch2001: Double = 978_307_200

    static func group(_ collection: String) -> String { groupPrefix + collection }

    /// A collection name that can be a path element and part of a group: 1 to 64 of
    /// [A-Za-z0-9_].
    static func isValidName(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 64
            && s.utf8.allSatisfy {
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F
            }
    }

    /// Unix seconds of a keychain date attribute (0 when absent).
    static func unixTime(_ v: AttributeValue?) -> UInt64 {
        guard case .date(let d) = v, d.isFinite, d + epoch2001 >= 0 else { return 0 }
        return UInt64(d + epoch2001)
    }
}

/// An index record's `gena`: each pair hash as 16 bytes (spec/SECRET-SERVICE.md §3).
enum IndexRecord {
    static func encode(_ hashes: [CollectionIndex.PairHash]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(hashes.count * 16)
        for h in hashes {
            for w in [h.a, h.b] {
                for i in (0..<8).reversed() { out.append(UInt8(truncatingIfNeeded: w >> (8 * UInt64(i)))) }
            }
        }
        return out
    }

    /// nil when the length is not whole hashes or there are more than an item may have.
    static func decode(_ bytes: [UInt8]) -> [CollectionIndex.PairHash]? {
        guard bytes.count % 16 == 0, bytes.count / 16 <= Limits.attributesPerItem else { return nil }
        func word(_ at: Int) -> UInt64 { bytes[at..<at + 8].reduce(0) { $0 << 8 | UInt64($1) } }
        return stride(from: 0, to: bytes.count, by: 16).map { CollectionIndex.PairHash(a: word($0), b: word($0 + 8)) }
    }
}

/// The limits that keep one client from making the provider hold without bound
/// (spec/SECRET-SERVICE.md §5).
enum Limits {
    static let attributesPerItem = 64
    static let attributeNameBytes = 1024
    static let attributeValueBytes = 16 * 1024
    static let labelBytes = 4096
    static let contentTypeBytes = 256
    static let secretBytes = 1 << 20
    static let sessionsPerClient = 64
    static let sessions = 1024
    static let promptsPerClient = 16
}

/// The attributes and content type of an item, as its `gena` holds them (spec/SECRET-SERVICE.md
/// §2.2).
struct ItemMetadata: Equatable {
    var attributes: [String: String]
    var contentType: String

    static let version: UInt8 = 1

    /// version 1, u32 count, each attribute (sorted by the bytes of its name) as u32 length and
    /// UTF-8 name, u32 length and UTF-8 value; then u32 length and the content type. Big-endian.
    func encoded() -> [UInt8] {
        var out: [UInt8] = [ItemMetadata.version]
        func u32(_ n: Int) {
            out += [UInt8(n >> 24 & 0xFF), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
        }
        func text(_ s: String) {
            u32(s.utf8.count)
            out += Array(s.utf8)
        }
        let names = attributes.keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        u32(names.count)
        for n in names {
            text(n)
            text(attributes[n]!)
        }
        text(contentType)
        return out
    }

    /// Decodes `gena`; nil for bytes that no writer of version 1 writes (a reader then treats the
    /// item as having no attributes and says so: `SecretServiceProvider` logs it).
    init?(decoding bytes: [UInt8]) {
        var i = 0
        func u32() -> Int? {
            guard i + 4 <= bytes.count else { return nil }
            defer { i += 4 }
            return Int(bytes[i]) << 24 | Int(bytes[i + 1]) << 16 | Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
        }
        func text() -> String? {
            guard let n = u32(), n <= bytes.count - i else { return nil }
            defer { i += n }
            return String(validating: bytes[i..<i + n], as: UTF8.self)
        }
        guard bytes.first == ItemMetadata.version else { return nil }
        i = 1
        guard let count = u32(), count <= Limits.attributesPerItem else { return nil }
        var attributes: [String: String] = [:]
        var previous: [UInt8]?
        for _ in 0..<count {
            guard let name = text(), let value = text() else { return nil }
            let nameBytes = Array(name.utf8)
            if let previous, !previous.lexicographicallyPrecedes(nameBytes) { return nil }
            previous = nameBytes
            attributes[name] = value
        }
        guard let contentType = text(), i == bytes.count else { return nil }
        self.attributes = attributes
        self.contentType = contentType
    }

    init(attributes: [String: String], contentType: String) {
        self.attributes = attributes
        self.contentType = contentType
    }
}

/// Standard base64 (RFC 4648 §4, padded), decoding only.
enum Base64 {
    static func decode(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        var acc: UInt32 = 0
        var bits = 0
        var padding = 0
        for c in text.utf8 {
            let v: UInt8
            switch c {
            case 0x41...0x5A: v = c - 0x41
            case 0x61...0x7A: v = c - 0x61 + 26
            case 0x30...0x39: v = c - 0x30 + 52
            case 0x2B: v = 62
            case 0x2F: v = 63
            case 0x3D:
                padding += 1
                continue
            default: return nil
            }
            guard padding == 0 else { return nil }
            acc = acc << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
            }
        }
        guard (text.utf8.count % 4) == 0, padding <= 2 else { return nil }
        return out
    }
}
