import Foundation
import Testing
@testable import latchkey

/// The CLI's stand-ins for the Foundation string functions it no longer links must give what
/// Foundation gives.
@Suite struct TextEditingTests {
    @Test func format_isStringFormat() {
        for v in [0.0, 0.05, 0.25, 1.05, 1.15, 2.5, 9.95, 1023.95, 1e300, -3.25] {
            #expect(TextEditing.format("%.1f", v) == String(format: "%.1f", v), "\(v)")
        }
        for (a, b) in [(0, 0), (1, 5), (59, 59), (1234, 7), (-1, -5)] {
            #expect(TextEditing.format("%d:%02d", a, b) == String(format: "%d:%02d", a, b))
        }
        let long = TextEditing.format("%0300d", 7)
        #expect(long == String(format: "%0300d", 7) && long.count == 300)
    }

    @Test func replacing_isReplacingOccurrences() {
        let cases: [(String, String, String)] = [
            ("T", " ", "2026-01-31T12:00"), ("\\", "\\e", "a\\b\\\\c"), ("-", "\\-", "--x-"),
            ("…", "...", "wait…"), ("—", "\\(em", "a—b—"), ("aa", "b", "aaaaa"), ("x", "y", ""),
            ("-", "\\-", "e\u{301}-é-")
        ]
        for (target, replacement, text) in cases {
            #expect(
                TextEditing.replacing(target, with: replacement, in: text)
                    == text.replacingOccurrences(of: target, with: replacement), "\(text)")
        }
    }

    @Test func trimming_isTrimmingCharacters() {
        for text in ["", " ", "ok\n", "\n\t ok done \r\n", "\u{A0}htps\u{2003}", " a b ", "\u{85}x\u{2028}", "\t"] {
            #expect(
                TextEditing.trimming(text, newlines: true) == text.trimmingCharacters(in: .whitespacesAndNewlines),
                "\(text.debugDescription)")
            #expect(
                TextEditing.trimming(text, newlines: false) == text.trimmingCharacters(in: .whitespaces),
                "\(text.debugDescription)")
        }
    }

    @Test func keyOrder_isCompareNumericCaseInsensitiveForced() {
        let keys = [
            "acct", "Acct", "svce", "v_Data", "class", "a2", "a10", "a02", "A10", "labl", "cdat", "_x", "Z", "z", "a",
            "ab", "aB"
        ]
        for a in keys {
            for b in keys where a != b {
                let foundation =
                    a.compare(
                        b, options: [.numeric, .caseInsensitive, .forcedOrdering], range: a.startIndex..<a.endIndex,
                        locale: NSLocale.system) == .orderedAscending
                #expect(JSONText.keyPrecedes(a, b) == foundation, "\(a) < \(b)")
            }
        }
    }
}
