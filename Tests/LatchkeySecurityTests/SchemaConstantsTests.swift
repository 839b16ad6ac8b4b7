import Foundation
import Latchkey
import LatchkeySecurity
import LatchkeyTestSupport
import Testing

/// The `kSecAttr…` constants of stored attributes have the codes of `AttributeSchema`:
/// each row has its constant, and each such constant its row.
@Suite struct SchemaConstantsTests {
    @Test func everyRowHasItsConstant_andEveryConstantItsRow() throws {
        let folder = GeneratedFile.packageRoot(of: #filePath).appendingPathComponent("Sources/LatchkeySecurity")
        let made = try String(
            contentsOfFile: folder.appendingPathComponent("SecItemConstants+Attributes.swift").path, encoding: .utf8)
        let pattern = try NSRegularExpression(pattern: #"public let (kSecAttr\w+): CFString = "(\w+)"\n"#)
        let declared = pattern.matches(in: made, range: NSRange(made.startIndex..., in: made)).map { m in
            (String(made[Range(m.range(at: 1), in: made)!]), String(made[Range(m.range(at: 2), in: made)!]))
        }
        for (name, code) in declared {
            #expect(
                AttributeSchema.all.first { $0.constant == name || $0.otherConstants.contains(name) }?.code == code,
                "\(name) is \(code)")
        }
        let source = try String(
            contentsOfFile: folder.appendingPathComponent("SecItemConstants.swift").path, encoding: .utf8)
        let rows = Set(AttributeSchema.all.flatMap { [$0.constant] + $0.otherConstants })
        #expect(Set(declared.map(\.0)) == rows, "\(rows.symmetricDifference(declared.map(\.0)).sorted())")
        #expect(declared.count == rows.count)
        // A kSecAttr attribute key with a literal value is one Latchkey does not store.
        let literal = try NSRegularExpression(pattern: #"public let (kSecAttr\w+): CFString = "(\w+)"\n"#)
        for m in literal.matches(in: source, range: NSRange(source.startIndex..., in: source)) {
            let code = String(source[Range(m.range(at: 2), in: source)!])
            #expect(
                AttributeSchema.all.allSatisfy { $0.code != code } || code.utf8.count != 4
                    || Self.valueConstant(source, m),
                "\(source[Range(m.range(at: 1), in: source)!]) = \(code) is a stored attribute: declare it by a row of AttributeSchema and make generate"
            )
        }
        #expect(
            kSecAttrAccount as String == "acct" && kSecAttrKeyCreator as String == "crtr"
                && kSecAttrProtected as String == "prot")
    }

    /// Whether the constant is a value (kSecAttrProtocolHTTP = "http") rather than a key.
    static func valueConstant(_ source: String, _ m: NSTextCheckingResult) -> Bool {
        let name = String(source[Range(m.range(at: 1), in: source)!])
        return [
            "kSecAttrProtocol", "kSecAttrAuthenticationType", "kSecAttrAccessible", "kSecAttrKeyClass",
            "kSecAttrKeyType",
            "kSecAttrSynchronizable", "kSecAttrAccessGroup"
        ].contains { name.hasPrefix($0) && name != $0 }
    }
}
