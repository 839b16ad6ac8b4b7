#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// A small JSON reader and writer with Codable coders for the agent protocol: Foundation's
// JSONEncoder and JSONDecoder cost about 140 µs per request and answer together, most of a
// round trip through the agent; these cost a few. Same text on the wire (RFC 8259 JSON; byte
// strings as base64, like JSONEncoder's default for Data).

/// A parsed JSON value. Numbers keep their text, so 64-bit integers round-trip exactly.
enum JSONValue {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
}

struct JSONSyntaxError: Error, CustomStringConvertible {
    var offset: Int
    var reason: String
    var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

/// RFC 8259 parser over UTF-8 bytes (nesting limited to 64 levels).
struct JSONParser {
    private let b: UnsafeBufferPointer<UInt8>
    private var i = 0
    private var depth = 0

    static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        try bytes.withUnsafeBufferPointer { buf in
            var p = JSONParser(b: buf)
            p.skipSpace()
            let v = try p.value()
            p.skipSpace()
            guard p.i == buf.count else { throw JSONSyntaxError(offset: p.i, reason: "data after the value") }
            return v
        }
    }

    private init(b: UnsafeBufferPointer<UInt8>) { self.b = b }

    private func fail(_ reason: String) -> JSONSyntaxError { JSONSyntaxError(offset: i, reason: reason) }

    private mutating func skipSpace() {
        while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 }
    }

    private mutating func literal(_ word: StaticString, _ v: JSONValue) throws -> JSONValue {
        let n = word.utf8CodeUnitCount
        guard i + n <= b.count else { throw fail("unexpected end") }
        for k in 0..<n where b[i + k] != word.utf8Start[k] { throw fail("unexpected character") }
        i += n
        return v
    }

    private mutating func value() throws -> JSONValue {
        guard i < b.count else { throw fail("unexpected end") }
        switch b[i] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw fail("unexpected character")
        }
    }

    private mutating func enter() throws {
        depth += 1
        if depth > 64 { throw fail("nested too deeply") }
    }

    private mutating func object() throws -> JSONValue {
        try enter()
        defer { depth -= 1 }
        i += 1
        // Members are collected first and the dictionary made at its size: growing it member
        // by member (rehashing at 1, 2, 4, 8) was a sixth of a 10,000-item `dump` through the
        // agent (perf). A repeated name keeps its last value, as before.
        var members: [(String, JSONValue)] = []
        func made() -> JSONValue {
            var out = [String: JSONValue](minimumCapacity: members.count)
            for (key, value) in members { out[key] = value }
            return .object(out)
        }
        skipSpace()
        if i < b.count, b[i] == UInt8(ascii: "}") { i += 1; return .object([:]) }
        members.reserveCapacity(16)
        while true {
            skipSpace()
            guard i < b.count, b[i] == UInt8(ascii: "\"") else { throw fail("expected a member name") }
            let key = try string()
            skipSpace()
            guard i < b.count, b[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            i += 1
            skipSpace()
            members.append((key, try value()))
            skipSpace()
            guard i < b.count else { throw fail("unexpected end") }
            if b[i] == UInt8(ascii: ",") { i += 1; continue }
            if b[i] == UInt8(ascii: "}") { i += 1; return made() }
            throw fail("expected ',' or '}'")
        }
    }

    private mutating func array() throws -> JSONValue {
        try enter()
        defer { depth -= 1 }
        i += 1
        var out: [JSONValue] = []
        skipSpace()
        if i < b.count, b[i] == UInt8(ascii: "]") { i += 1; return .array(out) }
        while true {
            skipSpace()
            out.append(try value())
            skipSpace()
            guard i < b.count else { throw fail("unexpected end") }
            if b[i] == UInt8(ascii: ",") { i += 1; continue }
            if b[i] == UInt8(ascii: "]") { i += 1; return .array(out) }
            throw fail("expected ',' or ']'")
        }
    }

    private mutating func number() throws -> JSONValue {
        let start = i
        if b[i] == UInt8(ascii: "-") { i += 1 }
        func digits(_ p: inout JSONParser) -> Int {
            let s = p.i
            while p.i < p.b.count, p.b[p.i] >= 0x30 && p.b[p.i] <= 0x39 { p.i += 1 }
            return p.i - s
        }
        let intDigits = digits(&self)
        guard intDigits > 0 else { throw fail("expected a digit") }
        if intDigits > 1 && b[i - intDigits] == UInt8(ascii: "0") { throw fail("leading zero") }
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            guard digits(&self) > 0 else { throw fail("expected a digit") }
        }
        if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
            i += 1
            if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
            guard digits(&self) > 0 else { throw fail("expected a digit") }
        }
        return .number(String(decoding: UnsafeBufferPointer(rebasing: b[start..<i]), as: UTF8.self))
    }

    private mutating func hex4() throws -> UInt32 {
        guard i + 4 <= b.count else { throw fail("unexpected end") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = b[i]
            let d: UInt32
            switch c {
            case 0x30...0x39: d = UInt32(c - 0x30)
            case 0x41...0x46: d = UInt32(c - 0x41 + 10)
            case 0x61...0x66: d = UInt32(c - 0x61 + 10)
            default: throw fail("bad \\u escape")
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }

    private mutating func string() throws -> String {
        i += 1
        let start = i
        // Fast path: no escapes.
        while i < b.count, b[i] != UInt8(ascii: "\""), b[i] != UInt8(ascii: "\\"), b[i] >= 0x20 { i += 1 }
        guard i < b.count else { throw fail("unterminated string") }
        if b[i] == UInt8(ascii: "\"") {
            guard let s = String(validating: UnsafeBufferPointer(rebasing: b[start..<i]), as: UTF8.self) else { throw fail("invalid UTF-8") }
            i += 1
            return s
        }
        var bytes = Array(b[start..<i])
        while true {
            guard i < b.count else { throw fail("unterminated string") }
            let c = b[i]
            if c == UInt8(ascii: "\"") { i += 1; break }
            if c < 0x20 { throw fail("control character in a string") }
            if c != UInt8(ascii: "\\") { bytes.append(c); i += 1; continue }
            i += 1
            guard i < b.count else { throw fail("unterminated string") }
            let e = b[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): bytes.append(0x22)
            case UInt8(ascii: "\\"): bytes.append(0x5C)
            case UInt8(ascii: "/"): bytes.append(0x2F)
            case UInt8(ascii: "b"): bytes.append(0x08)
            case UInt8(ascii: "f"): bytes.append(0x0C)
            case UInt8(ascii: "n"): bytes.append(0x0A)
            case UInt8(ascii: "r"): bytes.append(0x0D)
            case UInt8(ascii: "t"): bytes.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if scalar >= 0xD800 && scalar < 0xDC00 {
                    guard i + 2 <= b.count, b[i] == UInt8(ascii: "\\"), b[i + 1] == UInt8(ascii: "u") else { throw fail("lone surrogate") }
                    i += 2
                    let low = try hex4()
                    guard low >= 0xDC00 && low < 0xE000 else { throw fail("lone surrogate") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if scalar >= 0xDC00 && scalar < 0xE000 {
                    throw fail("lone surrogate")
                }
                bytes.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
            default: throw fail("bad escape")
            }
        }
        guard let s = String(validating: bytes, as: UTF8.self) else { throw fail("invalid UTF-8") }
        return s
    }
}

// MARK: Writing

/// Appends JSON text to a byte buffer.
struct JSONWriter {
    var out: [UInt8] = []

    init() { out.reserveCapacity(512) }

    mutating func string(_ s: String) {
        out.append(0x22)
        for c in s.utf8 {
            switch c {
            case 0x22: out.append(0x5C); out.append(0x22)
            case 0x5C: out.append(0x5C); out.append(0x5C)
            case 0x00..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(c >> 4)], hex[Int(c & 0xF)]])
            default: out.append(c)
            }
        }
        out.append(0x22)
    }

    mutating func raw(_ s: String) { out.append(contentsOf: s.utf8) }
}

/// What an encoder builds before it is written out.
final class JSONNode {
    enum Kind {
        case scalar(String)     // JSON text of a number, string, bool or null
        case object([(String, JSONNode)])
        case array([JSONNode])
        case empty
    }
    var kind: Kind = .empty

    func write(_ w: inout JSONWriter) {
        switch kind {
        case .scalar(let text): w.raw(text)
        case .empty: w.raw("{}")
        case .object(let members):
            w.out.append(UInt8(ascii: "{"))
            for (k, (name, node)) in members.enumerated() {
                if k > 0 { w.out.append(UInt8(ascii: ",")) }
                w.string(name)
                w.out.append(UInt8(ascii: ":"))
                node.write(&w)
            }
            w.out.append(UInt8(ascii: "}"))
        case .array(let items):
            w.out.append(UInt8(ascii: "["))
            for (k, node) in items.enumerated() {
                if k > 0 { w.out.append(UInt8(ascii: ",")) }
                node.write(&w)
            }
            w.out.append(UInt8(ascii: "]"))
        }
    }

    func set(_ name: String, _ node: JSONNode) {
        if case .object(var m) = kind {
            kind = .empty
            m.append((name, node))
            kind = .object(m)
        } else {
            kind = .object([(name, node)])
        }
    }

    func append(_ node: JSONNode) {
        if case .array(var a) = kind {
            kind = .empty
            a.append(node)
            kind = .array(a)
        } else {
            kind = .array([node])
        }
    }

    static func quoted(_ s: String) -> JSONNode {
        var w = JSONWriter()
        w.string(s)
        let n = JSONNode()
        n.kind = .scalar(String(decoding: w.out, as: UTF8.self))
        return n
    }

    static func scalar(_ text: String) -> JSONNode {
        let n = JSONNode()
        n.kind = .scalar(text)
        return n
    }
}

// MARK: Encoder

struct AgentJSONEncoder {
    func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let root = JSONNode()
        try NodeEncoder(node: root, codingPath: []).encodeValue(value)
        var w = JSONWriter()
        root.write(&w)
        return w.out
    }
}

private struct NodeEncoder: Encoder {
    let node: JSONNode
    var codingPath: [CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .empty = node.kind { node.kind = .object([]) }
        return KeyedEncodingContainer(KeyedNodeEncoder<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> UnkeyedEncodingContainer {
        if case .empty = node.kind { node.kind = .array([]) }
        return UnkeyedNodeEncoder(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> SingleValueEncodingContainer { SingleNodeEncoder(node: node, codingPath: codingPath) }

    /// Data as base64 (as JSONEncoder does); everything else through its own encode(to:).
    func encodeValue<T: Encodable>(_ value: T) throws {
        if let d = value as? Data {
            node.kind = JSONNode.quoted(d.base64EncodedString()).kind
        } else {
            try value.encode(to: self)
        }
    }

    static func scalar(_ v: Double) throws -> JSONNode {
        guard v.isFinite else { throw EncodingError.invalidValue(v, .init(codingPath: [], debugDescription: "not a finite number")) }
        return .scalar("\(v)")
    }
}

private struct KeyedNodeEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: JSONNode
    var codingPath: [CodingKey]

    func put(_ key: Key, _ n: JSONNode) { node.set(key.stringValue, n) }

    mutating func encodeNil(forKey key: Key) throws { put(key, .scalar("null")) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { put(key, .scalar(value ? "true" : "false")) }
    mutating func encode(_ value: String, forKey key: Key) throws { put(key, .quoted(value)) }
    mutating func encode(_ value: Double, forKey key: Key) throws { put(key, try NodeEncoder.scalar(value)) }
    mutating func encode(_ value: Float, forKey key: Key) throws { put(key, try NodeEncoder.scalar(Double(value))) }
    mutating func encode(_ value: Int, forKey key: Key) throws { put(key, .scalar(String(value))) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { put(key, .scalar(String(value))) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { put(key, .scalar(String(value))) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { put(key, .scalar(String(value))) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { put(key, .scalar(String(value))) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { put(key, .scalar(String(value))) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { put(key, .scalar(String(value))) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { put(key, .scalar(String(value))) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { put(key, .scalar(String(value))) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { put(key, .scalar(String(value))) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        let child = JSONNode()
        try NodeEncoder(node: child, codingPath: codingPath + [key]).encodeValue(value)
        put(key, child)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let child = JSONNode()
        child.kind = .object([])
        put(key, child)
        return KeyedEncodingContainer(KeyedNodeEncoder<NestedKey>(node: child, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> UnkeyedEncodingContainer {
        let child = JSONNode()
        child.kind = .array([])
        put(key, child)
        return UnkeyedNodeEncoder(node: child, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> Encoder { superEncoder(forKey: Key(stringValue: "super")!) }

    mutating func superEncoder(forKey key: Key) -> Encoder {
        let child = JSONNode()
        put(key, child)
        return NodeEncoder(node: child, codingPath: codingPath + [key])
    }
}

private struct IndexKey: CodingKey {
    var stringValue: String { String(intValue!) }
    var intValue: Int?
    init(_ i: Int) { intValue = i }
    init?(stringValue: String) { guard let i = Int(stringValue) else { return nil }; intValue = i }
    init?(intValue: Int) { self.intValue = intValue }
}

private struct UnkeyedNodeEncoder: UnkeyedEncodingContainer {
    let node: JSONNode
    var codingPath: [CodingKey]
    var count: Int {
        if case .array(let a) = node.kind { return a.count }
        return 0
    }

    mutating func encodeNil() throws { node.append(.scalar("null")) }
    mutating func encode(_ value: Bool) throws { node.append(.scalar(value ? "true" : "false")) }
    mutating func encode(_ value: String) throws { node.append(.quoted(value)) }
    mutating func encode(_ value: Double) throws { node.append(try NodeEncoder.scalar(value)) }
    mutating func encode(_ value: Int) throws { node.append(.scalar(String(value))) }
    mutating func encode(_ value: Int64) throws { node.append(.scalar(String(value))) }
    mutating func encode(_ value: UInt64) throws { node.append(.scalar(String(value))) }
    mutating func encode(_ value: UInt8) throws { node.append(.scalar(String(value))) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        let child = JSONNode()
        try NodeEncoder(node: child, codingPath: codingPath + [IndexKey(count)]).encodeValue(value)
        node.append(child)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let child = JSONNode()
        child.kind = .object([])
        node.append(child)
        return KeyedEncodingContainer(KeyedNodeEncoder<NestedKey>(node: child, codingPath: codingPath + [IndexKey(count - 1)]))
    }

    mutating func nestedUnkeyedContainer() -> UnkeyedEncodingContainer {
        let child = JSONNode()
        child.kind = .array([])
        node.append(child)
        return UnkeyedNodeEncoder(node: child, codingPath: codingPath + [IndexKey(count - 1)])
    }

    mutating func superEncoder() -> Encoder {
        let child = JSONNode()
        node.append(child)
        return NodeEncoder(node: child, codingPath: codingPath + [IndexKey(count - 1)])
    }
}

private struct SingleNodeEncoder: SingleValueEncodingContainer {
    let node: JSONNode
    var codingPath: [CodingKey]

    mutating func encodeNil() throws { node.kind = .scalar("null") }
    mutating func encode(_ value: Bool) throws { node.kind = .scalar(value ? "true" : "false") }
    mutating func encode(_ value: String) throws { node.kind = JSONNode.quoted(value).kind }
    mutating func encode(_ value: Double) throws { node.kind = try NodeEncoder.scalar(value).kind }
    mutating func encode(_ value: Int) throws { node.kind = .scalar(String(value)) }
    mutating func encode(_ value: Int64) throws { node.kind = .scalar(String(value)) }
    mutating func encode(_ value: UInt64) throws { node.kind = .scalar(String(value)) }
    mutating func encode(_ value: Int32) throws { node.kind = .scalar(String(value)) }
    mutating func encode(_ value: UInt32) throws { node.kind = .scalar(String(value)) }
    mutating func encode(_ value: UInt8) throws { node.kind = .scalar(String(value)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try NodeEncoder(node: node, codingPath: codingPath).encodeValue(value)
    }
}

// MARK: Decoder

struct AgentJSONDecoder {
    func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try ValueDecoder(value: try JSONParser.parse(bytes), codingPath: []).decodeValue(type)
    }
}

private func mismatch<T>(_ type: T.Type, _ path: [CodingKey], _ value: JSONValue) -> DecodingError {
    .typeMismatch(type, .init(codingPath: path, debugDescription: "expected \(type), found \(value)"))
}

private func number<T: LosslessStringConvertible>(_ type: T.Type, _ value: JSONValue, _ path: [CodingKey]) throws -> T {
    guard case .number(let text) = value else { throw mismatch(type, path, value) }
    guard let v = T(text) else {
        throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "\(text) does not fit \(type)"))
    }
    return v
}

private func scalar<T: Decodable>(_ type: T.Type, _ value: JSONValue, _ path: [CodingKey]) throws -> T? {
    switch type {
    case is String.Type:
        guard case .string(let s) = value else { throw mismatch(type, path, value) }
        return (s as! T)
    case is Bool.Type:
        guard case .bool(let b) = value else { throw mismatch(type, path, value) }
        return (b as! T)
    case is Int.Type: return (try number(Int.self, value, path) as! T)
    case is Int64.Type: return (try number(Int64.self, value, path) as! T)
    case is Int32.Type: return (try number(Int32.self, value, path) as! T)
    case is UInt64.Type: return (try number(UInt64.self, value, path) as! T)
    case is UInt32.Type: return (try number(UInt32.self, value, path) as! T)
    case is UInt8.Type: return (try number(UInt8.self, value, path) as! T)
    case is Double.Type: return (try number(Double.self, value, path) as! T)
    case is Data.Type:
        guard case .string(let s) = value, let d = Data(base64Encoded: s) else {
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "expected a base64 string"))
        }
        return (d as! T)
    default: return nil
    }
}

private struct ValueDecoder: Decoder {
    let value: JSONValue
    var codingPath: [CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        if let v = try scalar(type, value, codingPath) { return v }
        return try T(from: self)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else { throw mismatch([String: Any].self, codingPath, value) }
        return KeyedDecodingContainer(KeyedValueDecoder<Key>(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> UnkeyedDecodingContainer {
        guard case .array(let items) = value else { throw mismatch([Any].self, codingPath, value) }
        return UnkeyedValueDecoder(items: items, codingPath: codingPath)
    }

    func singleValueContainer() throws -> SingleValueDecodingContainer { SingleValueDecoder(value: value, codingPath: codingPath) }
}

private struct KeyedValueDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    var codingPath: [CodingKey]
    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    func member(_ key: Key) throws -> JSONValue {
        guard let v = members[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no member '\(key.stringValue)'"))
        }
        return v
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        if case .null = try member(key) { return true }
        return false
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try ValueDecoder(value: try member(key), codingPath: codingPath + [key]).decodeValue(type)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try ValueDecoder(value: try member(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> UnkeyedDecodingContainer {
        try ValueDecoder(value: try member(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> Decoder { ValueDecoder(value: members["super"] ?? .null, codingPath: codingPath) }
    func superDecoder(forKey key: Key) throws -> Decoder { ValueDecoder(value: members[key.stringValue] ?? .null, codingPath: codingPath + [key]) }
}

private struct UnkeyedValueDecoder: UnkeyedDecodingContainer {
    let items: [JSONValue]
    var codingPath: [CodingKey]
    var currentIndex = 0
    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    init(items: [JSONValue], codingPath: [CodingKey]) {
        self.items = items
        self.codingPath = codingPath
    }

    mutating func next() throws -> JSONValue {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "the array has no more elements"))
        }
        defer { currentIndex += 1 }
        return items[currentIndex]
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else { return false }
        if case .null = items[currentIndex] { currentIndex += 1; return true }
        return false
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let path = codingPath + [IndexKey(currentIndex)]
        return try ValueDecoder(value: try next(), codingPath: path).decodeValue(type)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let path = codingPath + [IndexKey(currentIndex)]
        return try ValueDecoder(value: try next(), codingPath: path).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> UnkeyedDecodingContainer {
        let path = codingPath + [IndexKey(currentIndex)]
        return try ValueDecoder(value: try next(), codingPath: path).unkeyedContainer()
    }

    mutating func superDecoder() throws -> Decoder {
        let path = codingPath + [IndexKey(currentIndex)]
        return ValueDecoder(value: try next(), codingPath: path)
    }
}

private struct SingleValueDecoder: SingleValueDecodingContainer {
    let value: JSONValue
    var codingPath: [CodingKey]

    func decodeNil() -> Bool {
        if case .null = value { return true }
        return false
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try ValueDecoder(value: value, codingPath: codingPath).decodeValue(type)
    }
}
