#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Latchkey
import LatchkeyFormat

/// Data goes to stdout, diagnostics to stderr (STYLE.md "CLI"). Both are written unbuffered
/// with write(2), so raw secret bytes and text never interleave out of order. Colour and bold
/// only through `Style`, which honours `NO_COLOR`.
enum Output {
    static func data(_ bytes: [UInt8]) { Terminal.writeAll(STDOUT_FILENO, bytes) }
    static func line(_ text: String) { data(Array((text + "\n").utf8)) }

    /// One diagnostic line on stderr, prefixed with `latchkey: `.
    static func note(_ text: String) { Terminal.writeAll(STDERR_FILENO, Array("latchkey: \(text)\n".utf8)) }
    /// One plain line on stderr (sizes, counts).
    static func status(_ text: String) { Terminal.writeAll(STDERR_FILENO, Array((text + "\n").utf8)) }
    /// Progress and counts: only when stderr is a terminal, so scripts see nothing.
    static func progress(_ text: String) { if Terminal.stderrIsTerminal { status(text) } }

    /// Pretty-printed JSON with sorted keys and a final newline.
    static func json(_ object: Any) throws {
        let bytes = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        data(Array(bytes) + [UInt8(ascii: "\n")])
    }

    /// A table on stdout, fitted to the terminal and styled when stdout is one.
    static func table(_ table: Table) {
        for line in table.render(width: Terminal.columns(STDOUT_FILENO), style: .stdout) { self.line(line) }
    }

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
    static func object(_ item: Item, includeData: Bool) -> [String: Any] {
        var out: [String: Any] = ["class": item.itemClass.rawValue]
        for (key, value) in item.attributes { out[key] = json(value) }
        if includeData { out["v_Data"] = Data(item.data).base64EncodedString() }
        return out
    }

    static func json(_ value: AttributeValue) -> Any {
        switch value {
        case .string(let s): return s
        case .data(let d): return Data(d).base64EncodedString()
        case .integer(let i): return NSNumber(value: i)
        case .date(let t): return ISODate.format(t)
        }
    }
}

/// ANSI bold and colour for human output, only when the stream is a terminal, `NO_COLOR` is
/// unset or empty (no-color.org) and `TERM` is not `dumb`.
struct Style: Sendable {
    var enabled: Bool

    static let plain = Style(enabled: false)
    /// Styling for stdout.
    static let stdout = Style(enabled: Style.allowed(isTerminal: Terminal.stdoutIsTerminal, environment: ProcessInfo.processInfo.environment))

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
