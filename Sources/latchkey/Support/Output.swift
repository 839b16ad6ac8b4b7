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
/// with write(2), so raw secret bytes and text never interleave out of order. No colour is
/// ever used, so `NO_COLOR` is respected trivially.
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
        case .date(let t): return iso8601(t)
        }
    }

    /// `2025-01-02T03:04:05.678Z` for a CFAbsoluteTime.
    static func iso8601(_ absolute: Double) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSinceReferenceDate: absolute))
    }
}
