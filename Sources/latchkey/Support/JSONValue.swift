#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A JSON value as `import` reads one line, through FoundationEssentials' JSONDecoder (the CLI
/// does not link Foundation's JSONSerialization). Numbers are kept as Double, as
/// JSONSerialization's NSNumber gave them to `import` (`doubleValue`); true and false are
/// `bool`, never numbers.
enum JSONValue: Decodable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null; return }
        if let b = try? c.decode(Bool.self) { self = .bool(b); return }
        if let d = try? c.decode(Double.self) { self = .number(d); return }
        if let s = try? c.decode(String.self) { self = .string(s); return }
        if let a = try? c.decode([JSONValue].self) { self = .array(a); return }
        self = .object(try c.decode([String: JSONValue].self))
    }

    /// One JSON text whose top level is an object or an array (JSONSerialization's rule
    /// without `.fragmentsAllowed`). - Throws: when the bytes are not such a text.
    static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        let value = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
        switch value {
        case .object, .array: return value
        default: throw NotAContainer()
        }
    }

    struct NotAContainer: Error {}
}
