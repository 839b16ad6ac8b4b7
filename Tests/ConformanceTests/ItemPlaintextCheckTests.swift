import LatchkeyCrypto
import LatchkeyFormat
import LatchkeyTestSupport
import Testing

/// `verify` checks plaintexts with `ItemPlaintext.check`, `FileKeys.attributeHashes(ofEncoded:)`
/// and `FileKeys.uniqueKeyHash(ofEncoded:scratch:into:)` instead of decoding them: each must accept exactly
/// what `ItemPlaintext.decode` accepts and give the hashes the decoded plaintext gives. Compared here over
/// every item of the fixtures, plaintexts written by hand to break each rule of spec §8.3,
/// every truncation and many byte mutations of them all, and seeded random plaintexts.
@Suite struct ItemPlaintextCheckTests {
    static let keys = try! FileKeys(
        device: DeviceSecret(
            uuid: [UInt8](repeating: 0xA1, count: 16),
            secret: SecretKey(copying: [UInt8](repeating: 0x5A, count: 32))),
        fileUUID: [UInt8](repeating: 0x10, count: 16))

    /// One attribute as bytes, so that a test can write what no encoder would.
    typealias Attribute = (name: [UInt8], type: UInt8, value: [UInt8])

    static func encode(
        version: UInt8 = 1, classCode: String = "genp", count: Int? = nil, _ attributes: [Attribute],
        data: [UInt8] = [1, 2, 3], trailing: [UInt8] = []
    ) -> [UInt8] {
        var w = ByteWriter()
        w.writeInteger(version, as: UInt8.self)
        w.writeBytes(Array(classCode.utf8))
        w.writeInteger(UInt16(count ?? attributes.count), as: UInt16.self)
        for a in attributes {
            w.writeInteger(UInt8(truncatingIfNeeded: a.name.count), as: UInt8.self)
            w.writeBytes(a.name)
            w.writeInteger(a.type, as: UInt8.self)
            w.writeInteger(UInt32(a.value.count), as: UInt32.self)
            w.writeBytes(a.value)
        }
        w.writeInteger(UInt32(data.count), as: UInt32.self)
        w.writeBytes(data)
        w.writeBytes(trailing)
        return w.bytes
    }

    static func s(_ name: String, _ value: [UInt8]) -> Attribute { (Array(name.utf8), 1, value) }
    static func s(_ name: String, _ value: String) -> Attribute { (Array(name.utf8), 1, Array(value.utf8)) }
    static func d(_ name: String, _ value: [UInt8]) -> Attribute { (Array(name.utf8), 2, value) }
    static func i(_ name: String, _ bits: UInt64) -> Attribute {
        (Array(name.utf8), 3, (0..<8).map { UInt8(truncatingIfNeeded: bits >> (56 - 8 * $0)) })
    }
    static func t(_ name: String, _ bits: UInt64) -> Attribute {
        (Array(name.utf8), 4, (0..<8).map { UInt8(truncatingIfNeeded: bits >> (56 - 8 * $0)) })
    }

    /// Plaintexts that keep or break each rule (spec §8.3), for every class.
    static let handWritten: [[UInt8]] = {
        var out: [[UInt8]] = []
        for c in ["genp", "inet", "cert", "keys", "genq", "GENP", "gen", "\u{212A}ey"] {
            out.append(encode(classCode: c, []))
            out.append(encode(classCode: c, [s("acct", "alice"), s("labl", "group 1"), s("svce", "bench")]))
            out.append(
                encode(
                    classCode: c,
                    [
                        d("acct", [0xff, 0]), i("atag", 7), s("gena", ""), t("klbl", 0x41d0_0000_0000_0000),
                        s("labl", "例え"), i("port", UInt64(bitPattern: -443)), d("sdmn", []), s("srvr", "e\u{301}"),
                        s("svce", "é"), t("zzzz", 0x7ff8_0000_0000_0001)
                    ]))
            out.append(
                encode(
                    classCode: c,
                    [i("acct", 1), i("issr", 2), t("labl", 3), d("pkhh", [1]), d("skid", [2]), d("subj", [3])]))
        }
        // Names: lengths 0, 1, 32, 33; non-printable bytes; order and repeats.
        out.append(encode([(Array(), 1, [0x61])]))
        out.append(encode([s("a", "x")]))
        out.append(encode([s(String(repeating: "n", count: 32), "x")]))
        out.append(encode([s(String(repeating: "n", count: 33), "x")]))
        out.append(encode([(Array("a b".utf8), 1, [0x61])]))
        out.append(encode([([0x61, 0x7f], 1, [0x61])]))
        out.append(encode([([0x61, 0x20], 1, [0x61])]))
        out.append(encode([([0xc3, 0xa9], 1, [0x61])]))
        out.append(encode([s("b", "x"), s("a", "y")]))
        out.append(encode([s("a", "x"), s("a", "y")]))
        out.append(encode([s("a", "x"), s("ab", "y"), s("b", "z")]))
        out.append(encode([s("ab", "x"), s("a", "y")]))
        out.append(encode([s("B", "x"), s("a", "y")]))
        // Values: UTF-8 (valid, overlong, surrogate, beyond U+10FFFF, cut), types and lengths.
        for bad in [
            [0xc0, 0x80], [0xe0, 0x80, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xf5, 0x80, 0x80, 0x80],
            [0xe2, 0x82], [0x80], [0xff], [0x61, 0xe2], [0xef, 0xbf, 0xbf], [0xf0, 0x9f, 0x98, 0x80],
            [0xed, 0x9f, 0xbf], [0x00]
        ] as [[UInt8]] {
            out.append(encode([s("acct", bad)]))
            out.append(encode([d("acct", bad)]))
        }
        for type: UInt8 in [0, 3, 4, 5, 0xff] {
            for length in [0, 7, 8, 9] {
                out.append(encode([(Array("acct".utf8), type, [UInt8](repeating: 0x11, count: length))]))
            }
        }
        // Counts, data and the end.
        out.append(encode(count: 2, [s("a", "x")]))
        out.append(encode(count: 0, [s("a", "x")]))
        out.append(encode([s("a", "x")], data: []))
        out.append(encode([s("a", "x")], trailing: [0]))
        out.append(encode(version: 2, [s("a", "x")]))
        out.append(encode(version: 0, []))
        out.append([])
        out.append([1])
        return out
    }()

    /// The plaintext of every item in the fixtures (expected.json gives each item's class,
    /// attributes and data; the encoding is canonical, so these are the bytes sealed there).
    static func fixturePlaintexts() throws -> [[UInt8]] {
        var out: [[UInt8]] = []
        for fixture in KeychainFixture.all {
            guard (try? fixture.expectation()) == .success else { continue }
            for item in try fixture.expectedItems() {
                out.append(
                    ItemPlaintext(itemClass: item.itemClass, attributes: item.attributes, data: item.data).encode())
            }
        }
        return out
    }

    /// Whether the fast check and the decoder agree on `bytes`: accept or refuse alike, and
    /// when they accept, the same class, the same attributes seen, and the same hashes. The
    /// decoder is the one that reads field by field (`decodeReading`); `decode`, which builds
    /// the plaintext while `check` walks it, must give what that one gives.
    static func agree(_ bytes: [UInt8]) -> Bool {
        let decoded = try? ItemPlaintext.decodeReading(bytes[...])
        // (Compared encoded: a NaN date is not equal to itself.)
        guard (try? ItemPlaintext.decode(bytes))?.encode() == decoded?.encode() else { return false }
        var seen: [String: (UInt8, [UInt8])] = [:]
        var hashes: [UInt64] = []
        var scratch: [UInt8] = []
        let (checked, hashed, unique) = bytes.withUnsafeBytes { b in
            (
                ItemPlaintext.check(b) { name, type, value in
                    seen[String(decoding: name, as: UTF8.self)] = (type, Array(value))
                },
                keys.attributeHashes(ofEncoded: b, into: &hashes),
                withUnsafeTemporaryAllocation(byteCount: 16, alignment: 8) { h in
                    keys.uniqueKeyHash(ofEncoded: b, scratch: &scratch, into: h)
                        ? Array(UnsafeRawBufferPointer(h)) : nil
                }
            )
        }
        guard let decoded else { return checked == nil && hashed == nil && unique == nil }
        guard checked == decoded.itemClass, hashed == decoded.itemClass, seen.count == decoded.attributes.count else {
            return false
        }
        // spec §8.4: the unique-key hash a verification computes from the bytes is the decoded item's.
        guard unique == keys.uniqueKeyHash(UniqueKey(itemClass: decoded.itemClass, attributes: decoded.attributes))
        else { return false }
        for (name, value) in decoded.attributes {
            guard let (type, raw) = seen[name], type == value.typeCode, raw == value.keyBytes else { return false }
        }
        let want = keys.attributeHashes(for: decoded)
        return Set(hashes) == Set(want) && hashes.count == want.count
    }

    /// Each truncation, and each byte replaced by a few values that cross the rules' limits.
    static func mutations(_ bytes: [UInt8]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        for n in 0..<bytes.count { out.append(Array(bytes[0..<n])) }
        for i in bytes.indices {
            for v: UInt8 in [
                0, 1, 0x20, 0x21, 0x7e, 0x7f, 0x80, 0xc3, 0xed, 0xff, bytes[i] ^ 1, bytes[i] &+ 1, bytes[i] &- 1
            ] where v != bytes[i] {
                var m = bytes
                m[i] = v
                out.append(m)
            }
        }
        out.append(bytes + [0])
        return out
    }

    @Test func fixtures_eachItemAgreesWithDecode() throws {
        let plaintexts = try Self.fixturePlaintexts()
        #expect(plaintexts.count >= 10, "the fixtures hold items")
        for p in plaintexts {
            #expect(Self.agree(p), "\(p)")
            #expect((try? ItemPlaintext.decode(p)) != nil)
        }
    }

    @Test func handWrittenAndTheirMutations_agreeWithDecode() throws {
        var accepted = 0, refused = 0
        for p in try Self.handWritten + Self.fixturePlaintexts() {
            for m in [p] + Self.mutations(p) {
                #expect(Self.agree(m), "\(m)")
                if (try? ItemPlaintext.decode(m)) == nil { refused += 1 } else { accepted += 1 }
            }
        }
        // Both outcomes are exercised in quantity, or the comparison would show little.
        #expect(accepted > 1000 && refused > 10_000, "\(accepted) accepted, \(refused) refused")
    }

    /// Seeded random plaintexts: names, types, lengths and values drawn near the rules' limits,
    /// so that about half are valid.
    @Test func random_agreeWithDecode() {
        var rng = SplitMix(seed: 0x1a7c_4e11)
        let alphabet = Array("acdegiklnprstvyABZ_~!".utf8)
        let pieces: [[UInt8]] = [
            [0x61], [0xc3, 0xa9], [0xe4, 0xbe, 0x8b], [0xf0, 0x9f, 0x98, 0x80], [0xed, 0xa0, 0x80], [0xc0], [0x80], [0]
        ]
        var accepted = 0
        for _ in 0..<20_000 {
            let n = Int(rng.next() % 6)
            var names = Set<[UInt8]>()
            for _ in 0..<n {
                let length = rng.next() % 16 == 0 ? Int(rng.next() % 40) : 1 + Int(rng.next() % 5)
                names.insert(
                    (0..<length).map { _ in
                        rng.next() % 50 == 0
                            ? UInt8(truncatingIfNeeded: rng.next()) : alphabet[Int(rng.next() % UInt64(alphabet.count))]
                    })
            }
            var list = names.sorted { $0.lexicographicallyPrecedes($1) }
            if rng.next() % 10 == 0 { list.shuffle(using: &rng) }
            let attributes: [Attribute] = list.map { name in
                let type = rng.next() % 12 == 0 ? UInt8(rng.next() % 6) : UInt8(1 + rng.next() % 4)
                var value: [UInt8] = []
                switch type {
                case 3, 4:
                    value = (0..<(rng.next() % 10 == 0 ? Int(rng.next() % 10) : 8)).map { _ in
                        UInt8(truncatingIfNeeded: rng.next())
                    }
                default:
                    for _ in 0..<Int(rng.next() % 5) {
                        value += rng.next() % 8 == 0 ? pieces[Int(rng.next() % UInt64(pieces.count))] : pieces[0]
                    }
                }
                return (name, type, value)
            }
            let classes = ["genp", "inet", "cert", "keys", "kets"]
            var bytes = Self.encode(
                classCode: classes[Int(rng.next() % UInt64(classes.count))], attributes,
                data: (0..<Int(rng.next() % 4)).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
            if rng.next() % 8 == 0 {
                bytes[Int(rng.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: rng.next())
            }
            if rng.next() % 16 == 0 { bytes.removeLast(Int(rng.next() % UInt64(bytes.count))) }
            #expect(Self.agree(bytes), "\(bytes)")
            if (try? ItemPlaintext.decode(bytes)) != nil { accepted += 1 }
        }
        #expect(accepted > 5000 && accepted < 15_000, "\(accepted) of 20,000 valid")
    }
}
