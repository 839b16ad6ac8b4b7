/// A JSON value as `import` reads one line (`JSONParser`). Numbers are kept as Double, as
/// JSONSerialization's NSNumber gave them to `import` (`doubleValue`); true and false are
/// `bool`, never numbers.
enum JSONValue: Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// One JSON text whose top level is an object or an array (JSONSerialization's rule
    /// without `.fragmentsAllowed`). - Throws: when the bytes are not such a text.
    static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        let value = try JSONParser.parse(bytes)
        switch value {
        case .object, .array: return value
        default: throw NotAContainer()
        }
    }

    struct NotAContainer: Error {}
}
