import Latchkey
import LatchkeyCrypto

/// An `otpauth://` URI (the Key Uri Format that authenticator apps scan from QR codes) and the
/// codes it makes: HOTP (RFC 4226) and TOTP (RFC 6238).
///
/// `otpauth://TYPE/LABEL?secret=BASE32&issuer=…&algorithm=SHA1&digits=6&period=30&counter=N`:
/// TYPE is `totp` or `hotp`; LABEL is `ISSUER:ACCOUNT` or `ACCOUNT`, percent-encoded; the
/// secret is base32 (RFC 4648, either case, padding optional); algorithm SHA1 (the default),
/// SHA256 or SHA512; digits 6 (the default) to 8; period, in seconds, 30 by default (TOTP);
/// counter, required for HOTP. Other parameters (`image`, …) are kept and ignored. Errors say
/// what is wrong and never quote the secret.
struct OneTimeCode {
    enum Kind: String { case totp, hotp }

    var kind: Kind
    /// The label, percent-decoded (`Example:alice@example.com`).
    var label: String
    var issuer: String?
    var account: String
    var secret: [UInt8]
    var algorithm: Crypto.HMACDigest = .sha1
    var digits = 6
    var period = 30
    /// HOTP's counter: the value the next code uses.
    var counter: UInt64?

    /// The URI as given, and where the counter's digits are in it (to write the next value
    /// without touching anything else).
    private(set) var text: [UInt8]
    private var counterRange: Range<Int>?

    /// A bad URI: the message says what is wrong.
    struct Invalid: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Parses `text`, an otpauth URI.
    /// - Throws: `Invalid`, saying what is wrong (never quoting the secret).
    init(parsing text: [UInt8]) throws {
        self.text = text
        let prefix = Array("otpauth://".utf8)
        guard text.count > prefix.count, zip(text, prefix).allSatisfy({ Self.lower($0) == $1 }) else {
            throw Invalid("it does not start with otpauth:// (an authenticator's URI: otpauth://totp/LABEL?secret=...)")
        }
        var i = prefix.count
        guard let slash = text[i...].firstIndex(of: UInt8(ascii: "/")) else {
            throw Invalid("it has no '/' after the type (otpauth://totp/LABEL?secret=...)")
        }
        let type = String(decoding: text[i..<slash].map(Self.lower), as: UTF8.self)
        guard let kind = Kind(rawValue: type) else {
            throw Invalid("the type after otpauth:// must be totp or hotp")
        }
        self.kind = kind
        i = slash + 1
        // Anything after '#' is a fragment, not a parameter.
        let end = text[i...].firstIndex(of: UInt8(ascii: "#")) ?? text.count
        let question = text[i..<end].firstIndex(of: UInt8(ascii: "?")) ?? end
        label = try Self.decodedText(text[i..<question], what: "the label")
        if let colon = label.firstIndex(of: ":") {
            issuer = String(label[..<colon])
            account = String(label[label.index(after: colon)...].drop { $0 == " " })
        } else {
            account = label
        }

        var seen: Set<String> = []
        var secretText: [UInt8]?
        defer { if secretText != nil { Crypto.cleanse(&secretText!) } }
        var components: [(name: String, value: Range<Int>)] = []
        var start = question + 1
        while start <= end && question < end {
            let stop = text[start..<end].firstIndex(of: UInt8(ascii: "&")) ?? end
            if stop > start {
                guard let eq = text[start..<stop].firstIndex(of: UInt8(ascii: "=")) else {
                    throw Invalid(
                        "the parameter '\(String(decoding: text[start..<stop], as: UTF8.self))' has no '=' and no value"
                    )
                }
                let name = String(decoding: text[start..<eq].map(Self.lower), as: UTF8.self)
                guard seen.insert(name).inserted || !Self.known.contains(name) else {
                    throw Invalid("the parameter \(name) is given twice")
                }
                components.append((name, eq + 1..<stop))
            }
            start = stop + 1
        }
        for (name, range) in components {
            let raw = text[range]
            switch name {
            case "secret":
                secretText = try Self.decoded(raw, what: "the secret")
            case "issuer":
                issuer = try Self.decodedText(raw, what: "the issuer")
            case "algorithm":
                let value = try Self.decodedText(raw, what: "the algorithm").uppercased()
                guard let digest = Crypto.HMACDigest(rawValue: value.replacingDash) else {
                    throw Invalid("the algorithm must be SHA1, SHA256 or SHA512")
                }
                algorithm = digest
            case "digits":
                guard let n = Self.number(raw), (6...8).contains(n) else {
                    throw Invalid("digits must be 6, 7 or 8")
                }
                digits = Int(n)
            case "period":
                guard let n = Self.number(raw), (1...86_400).contains(n) else {
                    throw Invalid("period must be a number of seconds from 1 to 86400")
                }
                period = Int(n)
            case "counter":
                guard let n = Self.number(raw) else {
                    throw Invalid("counter must be a whole number from 0 to \(UInt64.max)")
                }
                counter = n
                counterRange = range
            default:
                break
            }
        }
        guard let secretText, !secretText.isEmpty else {
            throw Invalid("it has no secret parameter (secret=BASE32)")
        }
        secret = try Self.base32(secretText)
        if kind == .hotp && counter == nil {
            throw Invalid("an hotp URI needs a counter parameter (counter=0 for a new one)")
        }
    }

    static let known: Set<String> = ["secret", "issuer", "algorithm", "digits", "period", "counter"]

    /// Zeroes the secret and the URI's bytes.
    mutating func cleanse() {
        Crypto.cleanse(&secret)
        Crypto.cleanse(&text)
    }

    /// The code for TOTP at `unixTime` (seconds since 1970), or for HOTP at its counter.
    func code(at unixTime: Int64) -> String {
        switch kind {
        case .totp: return Self.hotp(secret, counter: UInt64(max(0, unixTime)) / UInt64(period), digits, algorithm)
        case .hotp: return Self.hotp(secret, counter: counter ?? 0, digits, algorithm)
        }
    }

    /// HOTP (RFC 4226 §5.3): the HMAC of the counter (8 bytes, big-endian), dynamically
    /// truncated to 31 bits, modulo 10^digits, zero-padded. The truncation's offset is the low
    /// 4 bits of the MAC's last byte, whatever its length (RFC 6238's reference code).
    static func hotp(_ key: [UInt8], counter: UInt64, _ digits: Int, _ digest: Crypto.HMACDigest) -> String {
        let message = (0..<8).map { UInt8(truncatingIfNeeded: counter >> (56 - 8 * UInt64($0))) }
        var mac = Crypto.hmac(digest, key: key, data: message)
        defer { Crypto.cleanse(&mac) }
        let offset = Int(mac[mac.count - 1] & 0x0f)
        let binary =
            UInt32(mac[offset] & 0x7f) << 24 | UInt32(mac[offset + 1]) << 16 | UInt32(mac[offset + 2]) << 8
            | UInt32(mac[offset + 3])
        var power: UInt32 = 1
        for _ in 0..<digits { power *= 10 }
        let value = String(binary % power)
        return String(repeating: "0", count: digits - value.count) + value
    }

    /// The same URI with the counter set to `value` (HOTP): only the counter's digits change.
    func withCounter(_ value: UInt64) -> [UInt8] {
        guard let counterRange else { return text }
        var out = text
        out.replaceSubrange(counterRange, with: Array(String(value).utf8))
        return out
    }

    // MARK: Pieces

    static func lower(_ b: UInt8) -> UInt8 { (0x41...0x5A).contains(b) ? b + 0x20 : b }

    /// A decimal number of at most 20 digits that fits in 64 bits.
    static func number(_ bytes: ArraySlice<UInt8>) -> UInt64? {
        guard !bytes.isEmpty, bytes.count <= 20, bytes.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return UInt64(String(decoding: bytes, as: UTF8.self))
    }

    /// Percent-decoded UTF-8 text.
    static func decodedText(_ bytes: ArraySlice<UInt8>, what: String) throws -> String {
        let out = try decoded(bytes, what: what)
        guard let text = String(validating: out, as: UTF8.self) else {
            throw Invalid("\(what) is not UTF-8 text once percent-decoded")
        }
        return text
    }

    /// Percent-decoded bytes.
    static func decoded(_ bytes: ArraySlice<UInt8>, what: String) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let b = bytes[i]
            if b == UInt8(ascii: "%") {
                guard i + 2 < bytes.endIndex, let hi = hexValue(bytes[i + 1]), let lo = hexValue(bytes[i + 2]) else {
                    throw Invalid("\(what) has a '%' not followed by two hex digits")
                }
                out.append(hi << 4 | lo)
                i += 3
            } else {
                out.append(b)
                i += 1
            }
        }
        return out
    }

    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }

    /// RFC 4648 base32, either case, with or without its `=` padding.
    /// - Throws: `Invalid` naming the position of a character outside the alphabet (never the
    ///   character: it is part of the secret), or a length no encoding has.
    static func base32(_ text: [UInt8]) throws -> [UInt8] {
        var chars = text
        defer { Crypto.cleanse(&chars) }
        var padding = 0
        while chars.last == UInt8(ascii: "=") {
            chars.removeLast()
            padding += 1
        }
        if padding > 0 && ((chars.count + padding) % 8 != 0 || padding > 6) {
            throw Invalid("the secret's '=' padding does not make a multiple of 8 characters")
        }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count * 5 / 8)
        var buffer: UInt64 = 0, bits = 0
        for (position, c) in chars.enumerated() {
            let value: UInt8
            switch c {
            case 0x41...0x5A: value = c - 0x41
            case 0x61...0x7A: value = c - 0x61
            case 0x32...0x37: value = c - 0x32 + 26
            default:
                throw Invalid(
                    "the secret has a character outside base32 (A-Z, 2-7) at position \(position + 1) of \(chars.count)"
                )
            }
            buffer = buffer << 5 | UInt64(value)
            bits += 5
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt64(bits)))
            }
        }
        buffer = 0
        // 8 characters make 5 bytes; 1, 3 or 6 left over are not a whole byte's worth.
        guard [0, 2, 4, 5, 7].contains(chars.count % 8) else {
            Crypto.cleanse(&out)
            throw Invalid("the secret is \(chars.count) base32 characters, a length no whole number of bytes has")
        }
        guard !out.isEmpty else { throw Invalid("the secret is empty") }
        return out
    }
}

extension String {
    /// `SHA-256` as `SHA256`: both spellings of the algorithm are met.
    fileprivate var replacingDash: String { String(unicodeScalars.filter { $0 != "-" }) }
}
