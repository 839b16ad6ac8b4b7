import Foundation
import Latchkey
import LatchkeyFormat
import Testing

/// `AttributeSchema` is the one table of item attributes; these hold what is derived from it
/// or repeated beside it to the table.
@Suite struct AttributeSchemaTests {
    /// The unique-key and indexed columns say what LatchkeyFormat defines (the on-disk format),
    /// no more and no less, with kinds that give the format's defaults.
    @Test func uniqueKeyAndIndexedColumns_matchTheFormat() {
        for c in ItemClass.allCases {
            let unique = AttributeSchema.all.filter { $0.uniqueIn.contains(c) }
            #expect(
                Set(unique.map(\.code)) == Set(UniqueKey.attributes(for: c).map(\.name)), "unique key of \(c.rawValue)")
            for (name, kind) in UniqueKey.attributes(for: c) {
                let row = unique.first { $0.code == name }
                switch kind {
                case .bytes: #expect([.blob, .data, .string].contains(row?.kind), "\(c.rawValue).\(name)")
                case .integer: #expect(row?.kind == .number, "\(c.rawValue).\(name)")
                case .date: #expect(row?.kind == .date, "\(c.rawValue).\(name)")
                }
            }
            let indexed = AttributeSchema.all.filter { $0.indexedIn.contains(c) }.map(\.code)
            #expect(
                Set(indexed) == Set(AttributeHashRecord.indexedAttributes(for: c)),
                "indexed attributes of \(c.rawValue)")
        }
    }

    /// A class has each code once, a row's unique and indexed classes are among its classes,
    /// and names, constants and flags each name one row.
    @Test func rows_areConsistent() {
        for c in ItemClass.allCases {
            let codes = AttributeSchema.all.filter { $0.classes.contains(c) }.map(\.code)
            #expect(codes.count == Set(codes).count, "\(c.rawValue) has a code twice")
            #expect(ItemSchema.attributes(of: c).count == codes.count)
        }
        for row in AttributeSchema.all {
            #expect(row.code.utf8.count == 4, "\(row.code)")
            #expect(row.uniqueIn.isSubset(of: row.classes) && row.indexedIn.isSubset(of: row.classes), "\(row.code)")
            #expect(
                row.constant.hasPrefix("kSecAttr") && row.otherConstants.allSatisfy { $0.hasPrefix("kSecAttr") },
                "\(row.code)")
            #expect(
                !row.help.isEmpty && !row.help.hasSuffix("."),
                "\(row.code): one line, no full stop (help adds the codes)")
            #expect(!row.isDerived || row.classes == [.certificate], "\(row.code): only certificates derive attributes")
        }
        for column in [
            AttributeSchema.all.compactMap(\.name), AttributeSchema.all.flatMap { [$0.constant] + $0.otherConstants },
            AttributeSchema.all.compactMap(\.flag)
        ] {
            #expect(column.count == Set(column).count, "\(column.filter { n in column.filter { $0 == n }.count > 1 })")
        }
    }

    /// Every `AttributeKey` constant names a row, and every row with a name has its constant
    /// (read from the source: Swift cannot list a type's static members).
    @Test func attributeKeyConstants_areTheNamedRows() throws {
        let source = try String(
            contentsOfFile: Self.sourcePath("Sources/Latchkey/Items/AttributeKey+Schema.swift"), encoding: .utf8)
        let pattern = try NSRegularExpression(
            pattern: #"public static let `?(\w+)`? = AttributeKey\("(\w+)"\)"#)
        let matches = pattern.matches(in: source, range: NSRange(source.startIndex..., in: source))
        let declared = matches.map { m in (Self.group(m, 1, source), Self.group(m, 2, source)) }
        for (property, code) in declared {
            #expect(
                AttributeSchema.all.first { $0.name == property }?.code == code, "AttributeKey.\(property) is \(code)")
        }
        #expect(Set(declared.map(\.0)) == Set(AttributeSchema.all.compactMap(\.name)))
        #expect(declared.count == AttributeSchema.all.compactMap(\.name).count)
        // The values are the rows' codes.
        #expect(
            AttributeKey.account.rawValue == "acct" && AttributeKey.keyType.rawValue == "type"
                && AttributeKey.canUnwrap.rawValue == "unwp")
    }

    /// The path of a file of the package, from this file's.
    static func sourcePath(_ relative: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent(relative).path
    }

    static func group(_ match: NSTextCheckingResult, _ i: Int, _ text: String) -> String {
        String(text[Range(match.range(at: i), in: text)!])
    }
}
