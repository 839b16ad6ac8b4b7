import Foundation
import Testing

/// spec/FORMAT.md §14 embeds the generator's annotated hex dump; the two must not drift.
@Suite struct SpecExampleTests {
    static var root: URL {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
        }
        return url
    }

    @Test func formatSpecWorkedExample_equalsGeneratedHexDump() throws {
        let spec = try String(contentsOf: Self.root.appendingPathComponent("spec/FORMAT.md"), encoding: .utf8)
        let dump = try String(
            contentsOf: Self.root.appendingPathComponent("fixtures/keychain/golden_small/hexdump.txt"), encoding: .utf8)
        let begin = try #require(spec.range(of: "<!-- BEGIN hexdump.txt -->\n```text\n"))
        let end = try #require(spec.range(of: "```\n<!-- END hexdump.txt -->"))
        #expect(String(spec[begin.upperBound..<end.lowerBound]) == dump)
    }

    /// §7.7's worked example is the history fixture's annotated history record.
    @Test func historyWorkedExample_equalsGeneratedHexDump() throws {
        let spec = try String(contentsOf: Self.root.appendingPathComponent("spec/FORMAT.md"), encoding: .utf8)
        let dump = try String(
            contentsOf: Self.root.appendingPathComponent("fixtures/keychain/history/hexdump.txt"), encoding: .utf8)
        let begin = try #require(spec.range(of: "<!-- BEGIN history/hexdump.txt -->\n```text\n"))
        let end = try #require(spec.range(of: "```\n<!-- END history/hexdump.txt -->"))
        #expect(String(spec[begin.upperBound..<end.lowerBound]) == dump)
        let section = try #require(spec.range(of: "### §7.7 History record"))
        let next = try #require(spec.range(of: "\n## §8 ", range: section.upperBound..<spec.endIndex))
        #expect(begin.lowerBound > section.upperBound && end.upperBound < next.lowerBound, "the example is in §7.7")
    }
}
