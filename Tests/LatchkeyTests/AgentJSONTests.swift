import Foundation
import Testing
@testable import Latchkey
import LatchkeyFormat

/// The agent's own JSON coders (AgentJSON.swift): the same text Foundation reads and writes.
@Suite struct AgentJSONTests {
    struct Sample: Codable, Equatable {
        var s: String
        var i: Int64
        var u: UInt64
        var d: Double
        var b: Bool
        var data: Data
        var list: [String]
        var map: [String: Int32]
        var opt: String?
        var nested: [Sample]?
    }

    static let sample = Sample(s: "quote \" backslash \\ slash / tab \t nl \n nul \u{0} é 日本 😀", i: Int64.min, u: UInt64.max,
                               d: 785_000_000.123456, b: true, data: Data([0, 1, 2, 255]), list: ["", "a"], map: ["k": -1],
                               opt: nil, nested: [Sample(s: "x", i: 1, u: 2, d: -0.5, b: false, data: Data(), list: [], map: [:], opt: "o", nested: nil)])

    @Test func roundTrip_andFoundationReadsIt() throws {
        let bytes = try AgentCoding.encode(AgentJSONTests.sample)
        #expect(try AgentCoding.decode(Sample.self, bytes) == AgentJSONTests.sample)
        #expect(try JSONDecoder().decode(Sample.self, from: Data(bytes)) == AgentJSONTests.sample)
        let foundation = try JSONEncoder().encode(AgentJSONTests.sample)
        #expect(try AgentCoding.decode(Sample.self, [UInt8](foundation)) == AgentJSONTests.sample)
    }

    @Test func wireValues_roundTripExactly() throws {
        let attrs: [String: AttributeValue] = ["a": .string("x"), "b": .data([9, 8]), "c": .integer(Int64.max), "d": .date(-0.0),
                                               "e": .date(Double.leastNonzeroMagnitude), "f": .date(.nan)]
        let back = try AgentCoding.decode(WireAttributes.self, try AgentCoding.encode(attrs.wire)).attributes
        for (k, v) in attrs {
            if case .date(let x) = v, case .date(let y)? = back[k] { #expect(x.bitPattern == y.bitPattern, "\(k)") } else { #expect(back[k] == v, "\(k)") }
        }
    }

    @Test(arguments: ["", "{", "{\"a\":}", "[1,]", "01", "1.", "\"\\x\"", "\"\\ud800\"", "\"a", "{\"a\":1} x", "nul", "-",
                      String(repeating: "[", count: 100) + String(repeating: "]", count: 100)])
    func malformed_isRefused(_ text: String) {
        #expect(throws: (any Error).self) { _ = try JSONParser.parse(Array(text.utf8)) }
    }

    @Test func escapes_andUnicode_areRead() throws {
        let v = try JSONParser.parse(Array(#"{"k":"\u00e9\ud83d\ude00\n\/"}"#.utf8))
        guard case .object(let m) = v, case .string(let s)? = m["k"] else { Issue.record("not an object"); return }
        #expect(s == "é😀\n/")
        #expect(throws: (any Error).self) { _ = try JSONParser.parse([0x22, 0xFF, 0x22]) }
    }
}
