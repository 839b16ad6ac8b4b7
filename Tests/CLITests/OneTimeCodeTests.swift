import Foundation
import LatchkeyCrypto
import Testing

@testable import latchkey

/// The otpauth:// URI and the codes it makes (Support/OneTimeCode.swift), against the test
/// vectors of RFC 4226 Appendix D and RFC 6238 Appendix B, copied verbatim.
@Suite struct OneTimeCodeTests {
    /// RFC 4226 Appendix D and RFC 6238 Appendix B: the ASCII secrets, base32-encoded here.
    static let sha1Secret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"  // "12345678901234567890"
    static let sha256Secret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZA===="  // 32 bytes, padded
    static let sha512Secret =
        "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNA="

    static func parse(_ uri: String) throws -> OneTimeCode { try OneTimeCode(parsing: Array(uri.utf8)) }

    /// RFC 4226 Appendix D: Count and HOTP, for the secret "12345678901234567890".
    static let rfc4226: [(count: UInt64, hotp: String)] = [
        (0, "755224"), (1, "287082"), (2, "359152"), (3, "969429"), (4, "338314"), (5, "254676"), (6, "287922"),
        (7, "162583"), (8, "399871"), (9, "520489")
    ]

    @Test func hotp_rfc4226AppendixD() throws {
        #expect(
            try Self.parse("otpauth://totp/x?secret=\(Self.sha1Secret)").secret == Array("12345678901234567890".utf8))
        for v in Self.rfc4226 {
            let code = try Self.parse("otpauth://hotp/x?secret=\(Self.sha1Secret)&counter=\(v.count)")
            #expect(code.code(at: 0) == v.hotp, "count \(v.count)")
            #expect(OneTimeCode.hotp(Array("12345678901234567890".utf8), counter: v.count, 6, .sha1) == v.hotp)
        }
    }

    /// RFC 6238 Appendix B: Time (sec), Value of T (hex), TOTP and Mode (8 digits, 30 s).
    static let rfc6238: [(time: Int64, t: String, totp: String, mode: String)] = [
        (59, "0000000000000001", "94287082", "SHA1"),
        (59, "0000000000000001", "46119246", "SHA256"),
        (59, "0000000000000001", "90693936", "SHA512"),
        (1111111109, "00000000023523EC", "07081804", "SHA1"),
        (1111111109, "00000000023523EC", "68084774", "SHA256"),
        (1111111109, "00000000023523EC", "25091201", "SHA512"),
        (1111111111, "00000000023523ED", "14050471", "SHA1"),
        (1111111111, "00000000023523ED", "67062674", "SHA256"),
        (1111111111, "00000000023523ED", "99943326", "SHA512"),
        (1234567890, "000000000273EF07", "89005924", "SHA1"),
        (1234567890, "000000000273EF07", "91819424", "SHA256"),
        (1234567890, "000000000273EF07", "93441116", "SHA512"),
        (2000000000, "0000000003F940AA", "69279037", "SHA1"),
        (2000000000, "0000000003F940AA", "90698825", "SHA256"),
        (2000000000, "0000000003F940AA", "38618901", "SHA512"),
        (20000000000, "0000000027BC86AA", "65353130", "SHA1"),
        (20000000000, "0000000027BC86AA", "77737706", "SHA256"),
        (20000000000, "0000000027BC86AA", "47863826", "SHA512")
    ]

    static func uri(mode: String) -> String {
        let secret = ["SHA1": sha1Secret, "SHA256": sha256Secret, "SHA512": sha512Secret][mode]!
        return "otpauth://totp/x?secret=\(secret)&algorithm=\(mode)&digits=8"
    }

    @Test func totp_rfc6238AppendixB() throws {
        for v in Self.rfc6238 {
            let code = try Self.parse(Self.uri(mode: v.mode))
            #expect(code.algorithm.rawValue == v.mode && code.period == 30 && code.digits == 8)
            let t = String(UInt64(v.time) / 30, radix: 16, uppercase: true)
            #expect(String(repeating: "0", count: 16 - t.count) + t == v.t)
            #expect(code.code(at: v.time) == v.totp, "\(v.mode) at \(v.time)")
        }
        // The secret sizes of the appendix: 20, 32 and 64 bytes.
        #expect(try Self.parse(Self.uri(mode: "SHA256")).secret.count == 32)
        #expect(try Self.parse(Self.uri(mode: "SHA512")).secret.count == 64)
    }

    @Test func oneBitFlipped_inTheSecretOrTheCounter_changesTheCode() throws {
        let code = try Self.parse(Self.uri(mode: "SHA1"))
        #expect(code.code(at: 59) == "94287082")
        for bit in [0, 7, 80, 159] {
            var flipped = code
            flipped.secret[bit / 8] ^= 1 << (bit % 8)
            #expect(flipped.code(at: 59) != "94287082", "bit \(bit) of the secret")
        }
        // T = 1 with its lowest bit flipped is T = 0 (time 0...29), with bit 1 set T = 3.
        #expect(code.code(at: 0) != "94287082" && code.code(at: 90) != "94287082")
        #expect(code.code(at: 30) == "94287082", "the same 30-second step")
    }

    @Test func parse_readsEveryParameter_andDecodesTheLabel() throws {
        let code = try Self.parse(
            "OTPAUTH://TOTP/ACME%20Co:%20alice%40example.com?secret=gezdgnbvgy3tqojqgezdgnbvgy3tqojq"
                + "&issuer=ACME%20Corp&algorithm=sha256&digits=7&period=60&image=https%3A%2F%2Fx%2Fy.png#frag")
        #expect(code.kind == .totp)
        #expect(code.label == "ACME Co: alice@example.com")
        #expect(code.account == "alice@example.com")
        #expect(code.issuer == "ACME Corp", "the parameter wins over the label's prefix")
        #expect(code.secret == Array("12345678901234567890".utf8), "lower case, no padding")
        #expect(code.algorithm == .sha256 && code.digits == 7 && code.period == 60)
        #expect(code.code(at: 0).count == 7)

        let plain = try Self.parse("otpauth://totp/alice?secret=\(Self.sha1Secret)")
        #expect(plain.issuer == nil && plain.account == "alice")
        #expect(plain.algorithm == .sha1 && plain.digits == 6 && plain.period == 30, "the defaults")

        // HOTP: the next URI differs only in the counter's digits.
        let hotp = try Self.parse("otpauth://hotp/Ex:bob?secret=\(Self.sha1Secret)&counter=9&issuer=Ex")
        #expect(hotp.counter == 9 && hotp.code(at: 0) == "520489")
        #expect(
            String(decoding: hotp.withCounter(10), as: UTF8.self)
                == "otpauth://hotp/Ex:bob?secret=\(Self.sha1Secret)&counter=10&issuer=Ex")
        #expect(
            try Self.parse("otpauth://hotp/x?secret=\(Self.sha1Secret)&counter=18446744073709551615").counter == .max)
    }

    @Test(arguments: [
        ("https://example.com/?secret=GEZDGNBV", "otpauth://"),
        ("otpauth://", "otpauth://"),
        ("otpauth:/totp/x?secret=GEZDGNBV", "otpauth://"),
        ("otpauth://totp", "'/'"),
        ("otpauth://motp/x?secret=GEZDGNBV", "totp or hotp"),
        ("otpauth://totp/x", "no secret"),
        ("otpauth://totp/x?secret=", "no secret"),
        ("otpauth://totp/x?issuer=A", "no secret"),
        ("otpauth://totp/x?secret=GEZD1NBV", "position 5 of 8"),
        ("otpauth://totp/x?secret=GEZD%20NBV", "position 5 of 8"),
        ("otpauth://totp/x?secret=GEZDGN", "length"),
        ("otpauth://totp/x?secret=G", "length"),
        ("otpauth://totp/x?secret=GEZDGNBV=", "padding"),
        ("otpauth://totp/x?secret====", "padding"),
        ("otpauth://totp/x?secret=GEZDGNBV&digits=5", "digits"),
        ("otpauth://totp/x?secret=GEZDGNBV&digits=9", "digits"),
        ("otpauth://totp/x?secret=GEZDGNBV&digits=six", "digits"),
        ("otpauth://totp/x?secret=GEZDGNBV&period=0", "period"),
        ("otpauth://totp/x?secret=GEZDGNBV&period=-30", "period"),
        ("otpauth://totp/x?secret=GEZDGNBV&algorithm=MD5", "SHA1, SHA256 or SHA512"),
        ("otpauth://hotp/x?secret=GEZDGNBV", "counter"),
        ("otpauth://hotp/x?secret=GEZDGNBV&counter=18446744073709551616", "counter"),
        ("otpauth://hotp/x?secret=GEZDGNBV&counter=1e3", "counter"),
        ("otpauth://totp/x?secret=GEZDGNBV&secret=GEZDGNBV", "twice"),
        ("otpauth://totp/x?secret=GEZDGNBV&digits", "no '='"),
        ("otpauth://totp/a%G1?secret=GEZDGNBV", "'%'"),
        ("otpauth://totp/a%4?secret=GEZDGNBV", "'%'"),
        ("otpauth://totp/a%FF?secret=GEZDGNBV", "UTF-8")
    ])
    func badURI_isRefused_sayingWhy_withoutTheSecret(_ uri: String, _ reason: String) throws {
        do {
            _ = try Self.parse(uri)
            Issue.record("accepted \(uri)")
        } catch let error as OneTimeCode.Invalid {
            #expect(error.description.contains(reason), "\(uri): \(error)")
            #expect(!error.description.contains("GEZD"), "the message never quotes the secret: \(error)")
        }
    }
}
