import Foundation
import Latchkey
import LatchkeyFormat
import LatchkeyTestSupport
import Testing
@testable import latchkey

/// docs/CLI.md lists every attribute option: the section between the markers is the table
/// below, made from `AttributeSchema`, so a new row shows up in the docs or fails here.
@Suite struct AttributeTableTests {
    static let begin = "<!-- BEGIN attribute table: made from AttributeSchema; AttributeTableTests check it -->"
    static let end = "<!-- END attribute table -->"

    /// The markdown table of the attribute options, in help order.
    static func table() -> String {
        func classes(_ set: Set<ItemClass>) -> String {
            set.count == ItemClass.allCases.count
                ? "all" : ItemClass.allCases.filter(set.contains).map(\.rawValue).joined(separator: ", ")
        }
        var lines = ["| option | Apple's constant | code | classes | value | |", "|---|---|---|---|---|---|"]
        for row in AttributeSchema.all {
            guard let option = AttributeOption(row) else { continue }
            let flags = ["`--\(option.flag)`"] + (option.bytesOption.map { ["`--\($0.flag)`"] } ?? [])
            var notes: [String] = []
            if !row.uniqueIn.isEmpty {
                notes.append(row.uniqueIn == row.classes ? "unique key" : "unique key of \(classes(row.uniqueIn))")
            }
            if !row.indexedIn.isEmpty {
                notes.append(row.indexedIn == row.classes ? "indexed" : "indexed in \(classes(row.indexedIn))")
            }
            if row.isDerived { notes.append("derived from the certificate: queries only") }
            let value = option.syntax.valueName.replacingOccurrences(of: "|", with: "\\|")
            lines.append(
                "| \(flags.joined(separator: ", ")) | `\(row.constant)` | `\(row.code)` | \(classes(row.classes)) | \(value) | "
                    + "\(notes.joined(separator: "; ")) |")
        }
        return lines.joined(separator: "\n")
    }

    @Test func cliDoc_listsEveryAttributeOption_asTheSchemaHasThem() throws {
        let root = GeneratedFile.packageRoot(of: #filePath)
        let doc = try String(contentsOf: root.appendingPathComponent("docs/CLI.md"), encoding: .utf8)
        let start = try #require(doc.range(of: Self.begin), "docs/CLI.md lacks \(Self.begin)")
        let stop = try #require(doc.range(of: Self.end, range: start.upperBound..<doc.endIndex))
        // The document with the table between the markers made again: `make generate` writes it.
        let made = doc[..<start.upperBound] + "\n" + Self.table() + "\n" + doc[stop.lowerBound...]
        let problem = try GeneratedFile("docs/CLI.md", String(made)).mismatch(packageRoot: root)
        #expect(problem == nil, Comment(rawValue: problem ?? ""))
    }
}
