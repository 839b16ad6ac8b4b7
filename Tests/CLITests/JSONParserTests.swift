import Foundation
import Testing
@testable import latchkey

/// `import` reads each line with its own JSON parser (Support/JSONParser.swift) instead of
/// FoundationEssentials' JSONDecoder: it must accept and refuse the same lines and give the same
/// values.
@Suite struct JSONParserTests {
    /// What `import` got from JSONDecoder before.
    struct Decoded: Decodable, Equatable {
        var value: JSONValue
        init(from decoder: Decoder) throws {
            let c = try decoder.singleValueContainer()
            if c.decodeNil() { value = .null; return }
            if let b = try? c.decode(Bool.self) { value = .bool(b); return }
            if let d = try? c.decode(Double.self) { value = .number(d); return }
            if let s = try? c.decode(String.self) { value = .string(s); return }
            if let a = try? c.decode([Decoded].self) { value = .array(a.map(\.value)); return }
            value = .object(try c.decode([String: Decoded].self).mapValues(\.value))
        }
    }

    static let lines: [[UInt8]] =
        [
            #"{"class":"genp","acct":"alice","v_Data":"aHVudGVyMg=="}"#,
            #"  {"class" : "genp" , "acct":"a"}  "#,
            #"{"class":"genp",}"#, #"[1,2,]"#, #"{"a":[1,]}"#, #"{,}"#, #"{"a":1,,}"#, #"[,]"#,
            #"{"acct":"a","acct":"b"}"#,
            #"{"s":"a\ud83d\ude00b"}"#, #"{"s":"\ud83d"}"#, #"{"s":"\ude00"}"#, #"{"s":"\ud83d\u0041"}"#,
            #"{"s":"\u0000\u001f\"\\\/\b\f\n\r\t"}"#, #"{"s":"\x"}"#, #"{"s":"\u12"}"#, #"{"s":"\u12G4"}"#,
            #"{"s":"é 日本"}"#, "{\"s\":\"tab\tinside\"}",
            #"{"n":-0}"#, #"{"n":0.5}"#, #"{"n":1e400}"#, #"{"n":-1E-3}"#, #"{"n":01}"#, #"{"n":1.}"#, #"{"n":.5}"#,
            #"{"n":+1}"#, #"{"n":-}"#, #"{"n":1e}"#, #"{"n":12345678901234567890}"#, #"{"n":NaN}"#,
            #"{"b":true,"f":false,"z":null}"#, #"{"b":tru}"#, #"{"b":True}"#,
            #"{"o":{"p":[{"q":[]}]}}"#, #"[]"#, #"{}"#, #""x""#, #"1"#, #"null"#,
            #"{"a":1} x"#, #"{"a":1}{"b":2}"#, #"{"a":1"#, #"{"a"}"#, #"{a:1}"#, #"{'a':1}"#, ""
        ].map { Array($0.utf8) } + [
            [0x7B, 0x22, 0x73, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D],  // {"s":"\xff"}
            [0x7B, 0x22, 0x73, 0x22, 0x3A, 0x22, 0xC3, 0x22, 0x7D],  // a cut UTF-8 sequence
            Array(repeating: UInt8(ascii: "["), count: 600) + Array(repeating: UInt8(ascii: "]"), count: 600)
        ]

    @Test func acceptsAndRefuses_asJSONDecoderDid() {
        for line in Self.lines {
            let old = try? JSONDecoder().decode(Decoded.self, from: Data(line)).value
            let new = try? JSONParser.parse(line)
            #expect(old == new, "\(String(decoding: line.prefix(60), as: UTF8.self))")
        }
    }
}
