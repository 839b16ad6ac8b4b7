import Foundation
@testable import Latchkey
import LatchkeyFormat
import Testing
@testable import latchkey

/// `ItemJSON.text` (what `find` and `dump --json` print) must be byte for byte what
/// JSONSerialization writes for the same objects with the CLI's options.
@Suite struct ItemJSONTests {
    func item(_ c: ItemClass, _ attributes: [String: AttributeValue], data: [UInt8] = []) -> Item {
        Item(itemClass: c, attributes: attributes, data: data, protection: .whenUnlocked, persistentRef: [])
    }

    /// The JSON object of an item as the CLI printed it through JSONSerialization before
    /// `ItemJSON.text`: the reference the fast writer must match.
    func object(_ item: Item, includeData: Bool) -> [String: Any] {
        var out: [String: Any] = ["class": item.itemClass.rawValue]
        for (key, value) in item.attributes {
            switch value {
            case .string(let s): out[key] = s
            case .data(let d): out[key] = Data(d).base64EncodedString()
            case .integer(let i): out[key] = NSNumber(value: i)
            case .date(let t): out[key] = ISODateTests.iso8601DateFormatter(t)
            }
        }
        if includeData { out["v_Data"] = Data(item.data).base64EncodedString() }
        return out
    }

    func foundation(_ items: [Item], includeData: Bool, asArray: Bool) throws -> [UInt8] {
        let objects = items.map { object($0, includeData: includeData) }
        return ItemJSONTests.escapingTerminalControls(
            try ItemJSONTests.jsonSerialization(asArray ? objects as Any : objects[0] as Any))
    }

    /// What the CLI printed through Foundation's JSONSerialization, before it stopped linking
    /// Foundation: the reference for `ItemJSON.text`.
    static func jsonSerialization(_ object: Any) throws -> [UInt8] {
        let bytes = try JSONSerialization.data(
            withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        return Array(bytes) + [UInt8(ascii: "\n")]
    }

    /// JSONSerialization's text with the characters `JSONText` escapes beyond JSON's own
    /// (DEL, C1, bidirectional controls, U+2028/U+2029; see `TerminalText`) written as
    /// `\uXXXX`: outside strings JSON has none of them, so this changes only string contents.
    static func escapingTerminalControls(_ bytes: [UInt8]) -> [UInt8] {
        var out = String.UnicodeScalarView()
        for scalar in String(decoding: bytes, as: UTF8.self).unicodeScalars {
            if scalar.value >= 0x20, TerminalText.isUnsafe(scalar.value) {
                out.append(contentsOf: String(format: "\\u%04x", scalar.value).unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return Array(String(out).utf8)
    }

    static let awkward = [
        "plain", "", "quote \" and backslash \\ and slash /", "tab\tnew\nline\r\u{8}\u{c}",
        "\u{1}\u{1f}\u{7f}", "é e\u{301} 日本語 𝄞 \u{2028}\u{2029}", "{\"json\": [1, 2]}", "12", "-0", "a//b",
        "C1 \u{80}\u{85}\u{9B}\u{9F} bidi \u{202E}gpj\u{202A}\u{2066}\u{2069}\u{61C}\u{200E}\u{200F}",
        "neighbours \u{A0}\u{7E}\u{2027}\u{202F}\u{2065}\u{206A}\u{61B}\u{200D}\u{2000}\u{2FFF}\u{C0}"
    ]

    @Test func everyAttributeOfEveryClass_andAwkwardStrings_printAsJSONSerializationDoes() throws {
        var items: [Item] = []
        var n = 0
        for c in ItemClass.allCases {
            for s in ItemJSONTests.awkward {
                var attributes: [String: AttributeValue] = [:]
                for (code, kind) in ItemSchema.attributes(of: c) {
                    n += 1
                    switch kind {
                    case .number: attributes[code] = .integer(n % 3 == 0 ? -Int64(n) * 1_000_003 : Int64(n))
                    case .date: attributes[code] = .date(Double(n) * 86_400.125)
                    case .blob, .data: attributes[code] = n % 2 == 0 ? .data(Array(s.utf8) + [0xFF, 0x00]) : .string(s)
                    default: attributes[code] = .string(s + String(n))
                    }
                }
                items.append(item(c, attributes, data: Array(s.utf8)))
            }
        }
        for includeData in [false, true] {
            #expect(
                ItemJSON.text(items, includeData: includeData, asArray: true)
                    == (try foundation(items, includeData: includeData, asArray: true)))
            for one in items.prefix(12) {
                #expect(
                    ItemJSON.text([one], includeData: includeData, asArray: false)
                        == (try foundation([one], includeData: includeData, asArray: false)))
            }
        }
    }

    @Test func emptyArray_andAnItemWithoutAttributes() throws {
        #expect(ItemJSON.text([], includeData: false, asArray: true) == (try ItemJSONTests.jsonSerialization([Any]())))
        let bare = item(.genericPassword, [:])
        #expect(
            ItemJSON.text([bare], includeData: false, asArray: false)
                == (try foundation([bare], includeData: false, asArray: false)))
    }
}
