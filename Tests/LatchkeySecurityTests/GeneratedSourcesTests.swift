import Foundation
import Latchkey
import LatchkeyFormat
import LatchkeyTestSupport
import Testing

/// The sources made from `AttributeSchema`: `AttributeKey`'s constants and LatchkeySecurity's
/// `kSecAttr…` attribute keys. Adding a row and running `make generate` declares both; a row
/// added without it fails here.
@Suite struct GeneratedSourcesTests {
    @Test func attributeKeyConstants_areWhatTheSchemaGives() throws {
        let file = AttributeSources.attributeKeys()
        let problem = try file.mismatch(packageRoot: GeneratedFile.packageRoot(of: #filePath))
        #expect(problem == nil, Comment(rawValue: problem ?? ""))
    }

    @Test func secAttrConstants_areWhatTheSchemaGives() throws {
        let file = AttributeSources.secAttrConstants()
        let problem = try file.mismatch(packageRoot: GeneratedFile.packageRoot(of: #filePath))
        #expect(problem == nil, Comment(rawValue: problem ?? ""))
    }

    /// The documentation of a constant fits the layout `make format-check` holds sources to.
    @Test func documentation_wrapsWithinTheLineLength() {
        for row in AttributeSchema.all {
            for line in AttributeSources.documentation(row, constant: row.constant, indent: "    ") {
                #expect(line.count <= AttributeSources.lineLength, "\(line)")
            }
        }
    }
}

/// Renders the sources made from `AttributeSchema`.
enum AttributeSources {
    static let lineLength = 120
    static let banner =
        "// Made from AttributeSchema (Sources/Latchkey/Items/AttributeSchema.swift) by `make generate`:\n"
        + "// add or change a row there, never here. GeneratedSourcesTests check that this file is current.\n"

    static func attributeKeys() -> GeneratedFile {
        var out = banner + "\nextension AttributeKey {\n"
        var section: String?
        for row in AttributeSchema.all {
            guard let name = row.name else { continue }
            if section != nil { out += "\n" }
            let heading = classes(row.classes)
            if heading != section {
                out += "    // MARK: \(heading)\n\n"
                section = heading
            }
            for line in documentation(row, constant: row.constant, indent: "    ") { out += line + "\n" }
            out += "    public static let \(identifier(name)) = AttributeKey(\"\(row.code)\")\n"
        }
        out += "}\n"
        return GeneratedFile("Sources/Latchkey/Items/AttributeKey+Schema.swift", out)
    }

    static func secAttrConstants() -> GeneratedFile {
        var out = "import Foundation\nimport Latchkey\n\n" + banner
        out += "//\n// The attribute keys of the attributes Latchkey stores, with Apple's codes; the other `kSec…`\n"
        out += "// constants, and why they are `nonisolated(unsafe)`, are in SecItemConstants.swift.\n"
        var section: String?
        for row in AttributeSchema.all {
            let heading = classes(row.classes)
            if heading != section {
                out += "\n// MARK: Attribute keys: \(heading.prefix(1).lowercased() + heading.dropFirst())\n"
                section = heading
            }
            for constant in [row.constant] + row.otherConstants {
                out += "\n"
                for line in documentation(row, constant: constant, indent: "") { out += line + "\n" }
                out += "nonisolated(unsafe) public let \(constant): CFString = \"\(row.code)\"\n"
            }
        }
        return GeneratedFile("Sources/LatchkeySecurity/SecItemConstants+Attributes.swift", out)
    }

    /// The doc comment of a constant of `row`, wrapped to the line length.
    static func documentation(_ row: AttributeDefinition, constant: String, indent: String) -> [String] {
        // The help speaks of the command line, where bytes are written in hex; the API takes bytes.
        let help = row.notation == .hex ? row.help.replacingOccurrences(of: " in hex", with: "") : row.help
        var sentences = ["`\(constant)` (`\(row.code)`): \(help)."]
        if constant != row.constant { sentences.append("Apple's other name of `\(row.constant)`.") }
        sentences.append("In \(classes(row.classes).lowercased()).")
        var facts: [String] = []
        if !row.uniqueIn.isEmpty {
            facts.append(
                row.uniqueIn == row.classes
                    ? "part of the unique key" : "part of the unique key of \(classes(row.uniqueIn).lowercased())")
        }
        if !row.indexedIn.isEmpty {
            facts.append(row.indexedIn == row.classes ? "indexed" : "indexed in \(classes(row.indexedIn).lowercased())")
        }
        if row.isDerived { facts.append("set by the keychain from the certificate, so queries only") }
        if let first = facts.first {
            sentences.append(
                ([first.prefix(1).uppercased() + first.dropFirst()] + facts.dropFirst()).joined(separator: "; ") + ".")
        }
        if let note = row.note { sentences.append(note) }
        return wrap(sentences.joined(separator: " "), prefix: indent + "/// ")
    }

    /// The classes of a row as words: "Every class", "Generic and internet passwords", "Keys".
    static func classes(_ set: Set<ItemClass>) -> String {
        if set.count == ItemClass.allCases.count { return "Every class" }
        var words: [String] = []
        if set.isSuperset(of: [.genericPassword, .internetPassword]) {
            words.append("generic and internet passwords")
        } else if set.contains(.genericPassword) {
            words.append("generic passwords")
        } else if set.contains(.internetPassword) {
            words.append("internet passwords")
        }
        if set.contains(.certificate) { words.append("certificates") }
        if set.contains(.key) { words.append("keys") }
        let text = words.count == 1 ? words[0] : words.dropLast().joined(separator: ", ") + " and " + words.last!
        return text.prefix(1).uppercased() + text.dropFirst()
    }

    static func identifier(_ name: String) -> String {
        ["protocol", "class", "default", "self", "Type", "init", "extension", "internal"].contains(name)
            ? "`\(name)`" : name
    }

    static func wrap(_ text: String, prefix: String) -> [String] {
        var lines: [String] = []
        var line = prefix
        for word in text.split(separator: " ") {
            if line.count > prefix.count, line.count + 1 + word.count > lineLength {
                lines.append(line)
                line = prefix
            }
            line += (line.count > prefix.count ? " " : "") + word
        }
        lines.append(line)
        return lines
    }
}
