import Foundation
import Testing
@testable import latchkey

/// Issue 14 point 7: attribute values can come from anywhere (an imported file, another app),
/// and none of their bytes may reach a terminal as a control: tables and messages show
/// control characters as escapes, JSON writes them as \u escapes.
@Suite struct HumanOutputTests {
    /// An OSC title change, a colour, a C1 CSI, a right-to-left override, a line separator.
    static let hostile = "evil\u{1B}]0;pwned\u{07}\u{1B}[31mred\u{9B}2J\u{202E}gpj.exe\u{2028}x"

    /// Bytes a terminal could obey: C0 but newline and tab, DEL, and (as UTF-8) C1, bidi
    /// controls, line and paragraph separators.
    static func controls(in bytes: [UInt8], allowingLines: Bool) -> [String] {
        String(decoding: bytes, as: UTF8.self).unicodeScalars.filter { scalar in
            if allowingLines, scalar == "\n" || scalar == "\t" { return false }
            return TerminalText.isUnsafe(scalar.value)
        }.map { String(format: "U+%04X", $0.value) }
    }

    func sandboxWithHostileItem() throws -> CLISandbox {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let line = try JSONSerialization.data(withJSONObject: [
            "class": "genp", "acct": Self.hostile, "svce": "mail",
            "labl": "\u{85}label\u{7F}", "v_Data": "c2VjcmV0"
        ])
        let imported = try sandbox.run(["import", "-"], stdin: Array(line) + [0x0A])
        #expect(imported.status == 0, "\(imported.stderr)")
        return sandbox
    }

    @Test func dump_table_showsControlCharactersAsEscapes() throws {
        let sandbox = try sandboxWithHostileItem()
        let dump = try sandbox.run(["dump"])
        #expect(dump.status == 0)
        #expect(
            Self.controls(in: dump.stdout, allowingLines: true).isEmpty,
            "\(Self.controls(in: dump.stdout, allowingLines: true))")
        #expect(dump.out.contains(#""evil\x1b]0;pwned\x07\x1b[31mred\u{9b}2J\u{202e}gpj.exe\u{2028}x""#), "\(dump.out)")
        #expect(dump.out.contains(#""\u{85}label\x7f""#), "\(dump.out)")
        // The same on a terminal (where the table is also cut to the width).
        if let terminal = try sandbox.runOnTerminal(["dump"], env: ["NO_COLOR": "1"]) {
            #expect(terminal.status == 0)
            #expect(terminal.out.contains("evil"))
            // The terminal ends its lines with CR LF.
            #expect(
                Self.controls(in: terminal.stdout, allowingLines: true).filter { $0 != "U+000D" }.isEmpty,
                "\(Self.controls(in: terminal.stdout, allowingLines: true))")
        }
        // delete --dry-run lists with the same table.
        let dryRun = try sandbox.run(["delete", "--service", "mail", "--dry-run"])
        #expect(dryRun.status == 0, "\(dryRun.stderr)")
        #expect(Self.controls(in: dryRun.stdout, allowingLines: true).isEmpty)
        #expect(!dryRun.out.contains("secret"))
    }

    @Test func json_escapesEveryControl_andReadsBackTheExactValue() throws {
        let sandbox = try sandboxWithHostileItem()
        for args in [
            ["dump", "--json"], ["find", "--service", "mail", "--return", "attributes"],
            ["find", "--service", "mail", "--return", "all", "--limit", "all"]
        ] {
            let result = try sandbox.run(args)
            #expect(result.status == 0, "\(args): \(result.stderr)")
            #expect(
                Self.controls(in: result.stdout, allowingLines: true).isEmpty,
                "\(args): \(Self.controls(in: result.stdout, allowingLines: true))")
            #expect(
                result.out.contains("\\u001b]0;pwned\\u0007") && result.out.contains("\\u009b")
                    && result.out.contains("\\u202e")
                    && result.out.contains("\\u2028") && result.out.contains("\\u0085label\\u007f"), "\(result.out)")
            let json = try result.json()
            let object = try #require((json as? [[String: Any]])?.first ?? json as? [String: Any])
            #expect(object["acct"] as? String == Self.hostile, "the value reads back exactly")
            #expect(object["labl"] as? String == "\u{85}label\u{7F}")
        }
    }

    @Test func errorMessages_showControlCharactersAsEscapes() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let line = try JSONSerialization.data(withJSONObject: [
            "class": "genp", "acct": "a", "agrp": "g\u{1B}[2J\u{202E}x"
        ])
        let result = try sandbox.run(["import", "-"], stdin: Array(line) + [0x0A])
        #expect(result.status == 6, "\(result.stderr)")
        #expect(Self.controls(in: Array(result.stderr.utf8), allowingLines: true).isEmpty, "\(result.stderr)")
        #expect(result.stderr.contains(#"g\x1b[2J\u{202e}x"#), "\(result.stderr)")
    }

    @Test func quoted_leavesPlainTextAlone_andQuotesTheRest() {
        for plain in ["", "alice", "DOMAIN\\user", "日本語 𝄞 e\u{301}", "a\"b", "👩‍👩‍👧 zero-width joiners stay"] {
            #expect(TerminalText.quoted(plain) == plain)
        }
        #expect(
            TerminalText.quoted("\"quoted\"") == #""\"quoted\"""#,
            "a value that starts with a quote is quoted, so quotes mean escapes")
        #expect(TerminalText.quoted("a\tb\nc\r\u{0}\u{7F}\\") == #""a\tb\nc\r\x00\x7f\\""#)
        #expect(
            TerminalText.quoted("\u{200E}\u{200F}\u{202A}\u{2066}\u{2069}\u{061C}\u{2029}")
                == #""\u{200e}\u{200f}\u{202a}\u{2066}\u{2069}\u{61c}\u{2029}""#)
        #expect(TerminalText.sanitized("line one\n  line\ttwo\u{1B}[0m") == "line one\n  line\ttwo\\x1b[0m")
    }
}
