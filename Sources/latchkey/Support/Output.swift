#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import Latchkey
import LatchkeyFormat

/// Data goes to stdout, diagnostics to stderr (STYLE.md "CLI"). Both are written unbuffered
/// with write(2), so raw secret bytes and text never interleave out of order. Colour and bold
/// only through `Style`, which honours `NO_COLOR`.
enum Output {
    static func data(_ bytes: [UInt8]) { Terminal.writeAll(STDOUT_FILENO, bytes) }
    static func line(_ text: String) { data(Array((text + "\n").utf8)) }

    /// One diagnostic line on stderr, prefixed with `latchkey: `. Messages can quote attribute
    /// values and file contents: control characters in them are shown as escapes
    /// (`TerminalText.sanitized`).
    static func note(_ text: String) {
        Terminal.writeAll(STDERR_FILENO, Array("latchkey: \(TerminalText.sanitized(text))\n".utf8))
    }
    /// One plain line on stderr (sizes, counts), sanitized as `note` is.
    static func status(_ text: String) {
        Terminal.writeAll(STDERR_FILENO, Array((TerminalText.sanitized(text) + "\n").utf8))
    }
    /// Progress and counts: only when stderr is a terminal, so scripts see nothing.
    static func progress(_ text: String) { if Terminal.stderrIsTerminal { status(text) } }

    /// A table on stdout, fitted to the terminal and styled when stdout is one.
    static func table(_ table: Table) {
        for line in table.render(width: Terminal.columns(STDOUT_FILENO), style: .stdout) { self.line(line) }
    }

    /// Pretty-printed JSON with sorted keys and a final newline.
    static func json<T: Encodable>(encoding value: T) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        data(Array(try encoder.encode(value)) + [UInt8(ascii: "\n")])
    }
}

/// JSON form of items: Apple's 4-character keys plus `class`; dates as ISO 8601 (UTC, with
/// fractional seconds); data-valued attributes as base64; the secret under `v_Data` (base64)
/// only when asked for.
enum ItemJSON {
    /// The items as `Output.json` would print the object of each (an array when `asArray`),
    /// pretty-printed with sorted keys, but written directly: JSONSerialization's
    /// `.sortedKeys` compares keys through a new CFLocale per comparison, which with the `Any`
    /// casts makes a large `dump --json` take seconds. Keys are ranked once with the same
    /// Foundation comparison (`JSONText.keyOrder`); `ItemJSONTests` compare the bytes with
    /// what JSONSerialization writes for the same objects.
    /// One item as one line of JSON Lines: `text`'s object with the layout's line breaks and
    /// indentation taken out (JSON strings hold no raw line break, so only layout is removed).
    static func line(_ item: Item, includeData: Bool) -> [UInt8] {
        let pretty = text([item], includeData: includeData, asArray: false)
        var out: [UInt8] = []
        out.reserveCapacity(pretty.count)
        var i = 0
        while i < pretty.count {
            if pretty[i] == UInt8(ascii: "\n") {
                i += 1
                while i < pretty.count, pretty[i] == UInt8(ascii: " ") { i += 1 }
                continue
            }
            out.append(pretty[i])
            i += 1
        }
        out.append(UInt8(ascii: "\n"))
        return out
    }

    static func text(_ items: [Item], includeData: Bool, asArray: Bool) -> [UInt8] {
        var keys: Set<String> = ["class"]
        if includeData { keys.insert("v_Data") }
        for item in items { keys.formUnion(item.attributes.keys) }
        var stream = Stream(includeData: includeData, asArray: asArray, keys: keys)
        for item in items { stream.append(item) }
        return stream.finish()
    }

    /// The same bytes as `text`, produced an item at a time (`dump --json` writes them as it
    /// reads): `append` each item, take what is ready with `take()` now and then, and the
    /// rest from `finish()`. The key order is the same for every subset of keys, so ranking
    /// the keys met so far gives the bytes `text` gives.
    struct Stream {
        let includeData: Bool
        let asArray: Bool
        private var keys: Set<String>
        private var rank: [String: Int]
        private var w = JSONText()
        private var count = 0

        init(includeData: Bool, asArray: Bool, keys: Set<String> = ["class"]) {
            self.includeData = includeData
            self.asArray = asArray
            var keys = keys
            keys.insert("class")
            if includeData { keys.insert("v_Data") }
            self.keys = keys
            rank = JSONText.keyOrder(keys)
            if asArray { w.open("[") }
        }

        mutating func append(_ item: Item) {
            if !item.attributes.keys.allSatisfy({ rank[$0] != nil }) {
                keys.formUnion(item.attributes.keys)
                rank = JSONText.keyOrder(keys)
            }
            if asArray { w.element(first: count == 0) }
            count += 1
            var fields: [(String, JSONText.Scalar)] = [("class", .string(item.itemClass.rawValue))]
            for (key, value) in item.attributes {
                switch value {
                case .string(let s): fields.append((key, .string(s)))
                case .data(let d): fields.append((key, .string(Data(d).base64EncodedString())))
                case .integer(let i): fields.append((key, .integer(i)))
                case .date(let t): fields.append((key, .string(ISODate.format(t))))
                }
            }
            if includeData { fields.append(("v_Data", .string(Data(item.data).base64EncodedString()))) }
            fields.sort { rank[$0.0]! < rank[$1.0]! }
            w.object(fields)
        }

        /// The bytes written so far, removed from the stream.
        mutating func take() -> [UInt8] { w.take() }

        /// How many bytes `take()` would return.
        var buffered: Int { w.bytes.count }

        /// The rest of the bytes, the closing bracket and newline included.
        mutating func finish() -> [UInt8] {
            if asArray { w.close("]") }
            w.bytes.append(UInt8(ascii: "\n"))
            return w.take()
        }
    }
}

/// Pretty-printed JSON as JSONSerialization writes it with `.prettyPrinted`, `.sortedKeys` and
/// `.withoutEscapingSlashes`: two-space indents, `"key" : value`, a newline after `{` / `[`
/// and before the closing one.
struct JSONText {
    enum Scalar {
        case string(String)
        case integer(Int64)
    }

    var bytes: [UInt8] = []
    private var depth = 0

    /// The order `.sortedKeys` gives these keys: JSONSerialization's comparison (numeric,
    /// case-insensitive, forced ordering), run once per pair of distinct keys.
    static func keyOrder(_ keys: Set<String>) -> [String: Int] {
        let sorted = keys.sorted { keyPrecedes($0, $1) }
        return Dictionary(uniqueKeysWithValues: sorted.enumerated().map { ($1, $0) })
    }

    /// Foundation's `compare(_:options: [.numeric, .caseInsensitive, .forcedOrdering])` for
    /// the keys the CLI writes (ASCII attribute codes): letters compared without case, runs of
    /// digits by their value; keys equal that way are ordered by their first difference (the
    /// lower-case letter first, the shorter run of digits first), else by their bytes.
    /// `TextEditingTests` and `ItemJSONTests` check the order against Foundation's.
    static func keyPrecedes(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
        func folded(_ c: UInt8) -> UInt8 { c >= 0x41 && c <= 0x5A ? c + 0x20 : c }
        var tie: Bool?  // the forced ordering's answer, from the first difference that compared equal
        var i = 0, j = 0
        while i < x.count && j < y.count {
            if isDigit(x[i]) && isDigit(y[j]) {
                var ei = i, ej = j
                while ei < x.count && isDigit(x[ei]) { ei += 1 }
                while ej < y.count && isDigit(y[ej]) { ej += 1 }
                let da = x[i..<ei].drop { $0 == 0x30 }, db = y[j..<ej].drop { $0 == 0x30 }
                if da.count != db.count { return da.count < db.count }
                if !da.elementsEqual(db) { return da.lexicographicallyPrecedes(db) }
                if tie == nil && ei - i != ej - j { tie = ei - i < ej - j }
                i = ei; j = ej
                continue
            }
            let fa = folded(x[i]), fb = folded(y[j])
            if fa != fb { return fa < fb }
            if tie == nil && x[i] != y[j] { tie = x[i] > y[j] }  // lower case (the larger byte) first
            i += 1; j += 1
        }
        if (x.count - i) != (y.count - j) { return (x.count - i) < (y.count - j) }
        return tie ?? x.lexicographicallyPrecedes(y)
    }

    /// The bytes so far, leaving the writer empty at the same depth.
    mutating func take() -> [UInt8] {
        defer { bytes.removeAll(keepingCapacity: true) }
        return bytes
    }

    mutating func open(_ bracket: String) {
        bytes.append(contentsOf: bracket.utf8)
        bytes.append(UInt8(ascii: "\n"))
        depth += 1
    }

    mutating func close(_ bracket: String) {
        bytes.append(UInt8(ascii: "\n"))
        depth -= 1
        indent()
        bytes.append(contentsOf: bracket.utf8)
    }

    /// Before an element of an array or a member of an object.
    mutating func element(first: Bool) {
        if !first { bytes.append(contentsOf: ",\n".utf8) }
        indent()
    }

    mutating func object(_ fields: [(String, Scalar)]) {
        open("{")
        for (n, (key, value)) in fields.enumerated() {
            element(first: n == 0)
            string(key)
            bytes.append(contentsOf: " : ".utf8)
            switch value {
            case .string(let s): string(s)
            case .integer(let i): bytes.append(contentsOf: String(i).utf8)
            }
        }
        close("}")
    }

    private mutating func indent() {
        bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * depth))
    }

    /// A JSON string literal. Beyond what JSON requires (`"`, `\\` and U+0000–U+001F), DEL,
    /// the C1 controls, the bidirectional formatting characters and U+2028/U+2029 are written
    /// as `\uXXXX` (`TerminalText.isUnsafe`): JSON on a terminal cannot control it, and the
    /// value read back is the same.
    mutating func string(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        let hex = Array("0123456789abcdef".utf8)
        func unicodeEscape(_ v: UInt32) {
            bytes.append(contentsOf: "\\u".utf8)
            for shift in [12, 8, 4, 0] { bytes.append(hex[Int((v >> UInt32(shift)) & 0xF)]) }
        }
        var s = s
        s.withUTF8 { u in
            var i = 0
            while i < u.count {
                let b = u[i]
                switch b {
                case UInt8(ascii: "\""): bytes.append(contentsOf: "\\\"".utf8)
                case UInt8(ascii: "\\"): bytes.append(contentsOf: "\\\\".utf8)
                case 0x08: bytes.append(contentsOf: "\\b".utf8)
                case 0x0C: bytes.append(contentsOf: "\\f".utf8)
                case 0x0A: bytes.append(contentsOf: "\\n".utf8)
                case 0x0D: bytes.append(contentsOf: "\\r".utf8)
                case 0x09: bytes.append(contentsOf: "\\t".utf8)
                case 0..<0x20, 0x7F: unicodeEscape(UInt32(b))
                case 0xC2, 0xD8, 0xE2:
                    // The lead bytes of every unsafe scalar above DEL: U+0080–U+009F (C2 80–9F),
                    // U+061C (D8 9C), U+2000–U+2FFF (E2 ..). The string is valid UTF-8.
                    let width = b == 0xE2 ? 3 : 2
                    var v = UInt32(b & (width == 3 ? 0x0F : 0x1F))
                    for k in 1..<width { v = v << 6 | UInt32(u[i + k] & 0x3F) }
                    if TerminalText.isUnsafe(v) {
                        unicodeEscape(v)
                    } else {
                        bytes.append(contentsOf: u[i..<(i + width)])
                    }
                    i += width
                    continue
                default: bytes.append(b)
                }
                i += 1
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

/// ANSI bold and colour for human output, only when the stream is a terminal, `NO_COLOR` is
/// unset or empty (no-color.org) and `TERM` is not `dumb`.
struct Style: Sendable {
    var enabled: Bool

    static let plain = Style(enabled: false)
    /// Styling for stdout.
    static let stdout = Style(
        enabled: Style.allowed(isTerminal: Terminal.stdoutIsTerminal, environment: ProcessInfo.processInfo.environment))

    static func allowed(isTerminal: Bool, environment: [String: String]) -> Bool {
        guard isTerminal else { return false }
        if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return false }
        return environment["TERM"] != "dumb"
    }

    func bold(_ text: String) -> String { wrap(text, "1") }
    func green(_ text: String) -> String { wrap(text, "32") }
    func red(_ text: String) -> String { wrap(text, "31") }

    private func wrap(_ text: String, _ code: String) -> String {
        enabled ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }
}

/// Bytes for stdout gathered into writes of about 64 KiB, for commands that print one line per
/// item of a keychain of any size (dump, backup-list).
struct StdoutBuffer {
    private var pending: [UInt8] = []

    mutating func append(_ bytes: [UInt8]) {
        pending += bytes
        if pending.count >= 1 << 16 { flush() }
    }

    mutating func flush() {
        guard !pending.isEmpty else { return }
        Output.data(pending)
        pending.removeAll(keepingCapacity: true)
    }
}
