/// Text from a keychain (attribute values, which an imported item or another app may have
/// chosen) made safe to print for people: no character of it can move the cursor, retitle or
/// recolour the terminal, or reorder the text around it.
///
/// The characters treated so are the C0 controls (U+0000–U+001F), DEL, the C1 controls
/// (U+0080–U+009F, which some terminals obey as escape sequences), the bidirectional
/// formatting characters (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069, which can
/// show `exe.txt` for `txt.exe`) and the line and paragraph separators (U+2028, U+2029).
/// JSON output escapes the same characters as `\uXXXX` (`JSONText.string`).
enum TerminalText {
    /// Whether the scalar `v` is one that is never printed as is (see the type's comment).
    static func isUnsafe(_ v: UInt32) -> Bool {
        v < 0x20 || (0x7F...0x9F).contains(v) || v == 0x061C || v == 0x200E || v == 0x200F
            || (0x2028...0x202E).contains(v) || (0x2066...0x2069).contains(v)
    }

    /// A value for a table cell or a message: as it is when it holds no unsafe character and
    /// does not start with `"`; otherwise in double quotes with C escapes (`\\`, `\"`, `\t`,
    /// `\n`, `\r`, `\x1b` for the other C0 controls and DEL, `\u{202e}` for the others), as
    /// git quotes file names. So a value shown in quotes is always the escaped form of
    /// another, and nothing in it reaches the terminal as a control. `--json` gives the exact
    /// value.
    static func quoted(_ s: String) -> String {
        if isPlain(s) && !s.hasPrefix("\"") { return s }
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            default: out += escaped(scalar, inQuotes: true)
            }
        }
        return out + "\""
    }

    /// A diagnostic line: newlines and tabs stay (messages are made of lines); every other
    /// unsafe character becomes its escape (`\x1b`, `\u{202e}`).
    static func sanitized(_ s: String) -> String {
        if isPlain(s, allowing: [0x0A, 0x09]) { return s }
        var out = ""
        for scalar in s.unicodeScalars {
            out += scalar == "\n" || scalar == "\t" ? String(scalar) : escaped(scalar, inQuotes: false)
        }
        return out
    }

    /// True when `s` has no unsafe character other than those in `allowing`; printable ASCII
    /// is checked byte by byte, the rest scalar by scalar.
    static func isPlain(_ s: String, allowing: Set<UInt32> = []) -> Bool {
        var s = s
        let ascii = s.withUTF8 { bytes in
            bytes.allSatisfy { ($0 >= 0x20 && $0 < 0x7F) || allowing.contains(UInt32($0)) }
        }
        if ascii { return true }
        return s.unicodeScalars.allSatisfy { !isUnsafe($0.value) || allowing.contains($0.value) }
    }

    private static func escaped(_ scalar: Unicode.Scalar, inQuotes: Bool) -> String {
        let v = scalar.value
        guard isUnsafe(v) else { return String(scalar) }
        if inQuotes {
            switch v {
            case 0x09: return "\\t"
            case 0x0A: return "\\n"
            case 0x0D: return "\\r"
            default: break
            }
        }
        let digits = String(v, radix: 16)
        if v < 0x20 || v == 0x7F { return "\\x" + (digits.count < 2 ? "0" : "") + digits }
        return "\\u{" + digits + "}"
    }
}
