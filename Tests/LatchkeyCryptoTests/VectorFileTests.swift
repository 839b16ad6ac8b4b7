import Foundation
import Testing

/// The vector-file parser itself, so a known-answer test cannot pass on a misread fixture.
@Suite struct VectorFileTests {
    @Test func parse_readsHexStringsIntegersAndContinuationLines() throws {
        let file = try VectorFile.parse(
            """
            # header
            [a]
            # comment inside a vector
            Key Data = 0x0001 0203
                       0405
            P = "pass word"
            N = 1024
            empty =

            [b]
            x = AB cd
            """, name: "test")
        #expect(file.vectors.map(\.id) == ["a", "b"])
        let a = try file.vector("a")
        #expect(a.keys == ["Key Data", "P", "N", "empty"])
        #expect(try a.bytes("Key Data") == [0, 1, 2, 3, 4, 5])
        #expect(try a.bytes("P") == Array("pass word".utf8))
        #expect(try a.int("N") == 1024)
        #expect(try a.bytes("empty") == [])
        #expect(try file.vector("b").bytes("x") == [0xAB, 0xCD])
    }

    @Test(arguments: [
        "x = 00",  // field before any [id]
        "[a]\nx = 00\nx = 01",  // duplicate field
        "[a]\n[a]",  // duplicate vector
        "[a]\n  00",  // continuation without a field
        "[a]\nno equals sign",  // not key = value
        "[a\nx = 00"  // malformed header
    ])
    func parse_malformedFile_throws(text: String) {
        #expect(throws: VectorFileError.self) { try VectorFile.parse(text, name: "bad") }
    }

    @Test(arguments: ["0", "abc", "zz", "0x0g", "12 3"])
    func bytes_malformedHex_throws(value: String) throws {
        let v = try VectorFile.parse("[a]\nx = \(value)", name: "bad").vector("a")
        #expect(throws: VectorFileError.self) { try v.bytes("x") }
    }

    @Test func bytes_missingField_throws() throws {
        let v = try VectorFile.parse("[a]\nx = 00", name: "t").vector("a")
        #expect(throws: VectorFileError.self) { try v.bytes("y") }
    }

    /// Every vector file starts with a comment header naming where its values come from.
    @Test func everyVectorFile_startsWithASourceHeader() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Fixtures.vectorsDirectory.path)
            .filter { $0.hasSuffix(".txt") }.sorted()
        #expect(
            Set(names).isSuperset(of: [
                "fips180.txt", "gcm-nist.txt", "rfc3394.txt", "rfc4231.txt",
                "rfc5869.txt", "rfc7914.txt"
            ]))
        for name in names {
            let text = try String(contentsOf: Fixtures.vectorsDirectory.appendingPathComponent(name), encoding: .utf8)
            let first = try #require(text.split(separator: "\n").first)
            #expect(first.hasPrefix("# Source: "), "\(name)")
            #expect(["RFC", "FIPS", "Galois/Counter Mode"].contains { first.contains($0) }, "\(name)")
            #expect(try !VectorFile.load(name).vectors.isEmpty, "\(name)")
        }
    }
}
