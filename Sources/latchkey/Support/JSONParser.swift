/// A strict reader of one JSON text (RFC 8259) into `JSONValue`, for `import`, which parses a
/// line per item: FoundationEssentials' JSONDecoder spent about a third of an import's time on
/// its Codable machinery. It accepts what that decoder accepted for the lines `import` reads:
/// whitespace around values, a trailing comma before `}` or `]`, duplicate keys (the first one
/// counts), any finite number; it refuses invalid UTF-8, lone surrogates, control characters in
/// strings, numbers out of Double's range, leading zeros, and anything after the value.
struct JSONParser {
    struct Invalid: Error {
        /// The offset of the byte where reading stopped (set by `parse`).
        var offset = 0
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private var at = 0
    private var depth = 0
    /// Nesting deeper than this is refused (JSONDecoder's limit).
    static let maximumDepth = 512

    private init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// The value of the whole of `bytes`. - Throws: `Invalid` when they are not one JSON text.
    static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        try bytes.withUnsafeBufferPointer { buffer in
            var p = JSONParser(buffer)
            do {
                p.skipSpace()
                let value = try p.value()
                p.skipSpace()
                guard p.at == buffer.count else { throw Invalid() }
                return value
            } catch is Invalid {
                throw Invalid(offset: min(p.at, buffer.count))
            }
        }
    }

    private mutating func skipSpace() {
        while at < bytes.count {
            switch bytes[at] {
            case 0x20, 0x09, 0x0A, 0x0D: at += 1
            default: return
            }
        }
    }

    private func peek() throws -> UInt8 {
        guard at < bytes.count else { throw Invalid() }
        return bytes[at]
    }

    private mutating func expect(_ literal: StaticString) throws {
        let n = literal.utf8CodeUnitCount
        guard at + n <= bytes.count else { throw Invalid() }
        for i in 0..<n where bytes[at + i] != literal.utf8Start[i] { throw Invalid() }
        at += n
    }

    private mutating func value() throws -> JSONValue {
        switch try peek() {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        default: return .number(try number())
        }
    }

    private mutating func enter() throws {
        depth += 1
        guard depth <= JSONParser.maximumDepth else { throw Invalid() }
        at += 1
        skipSpace()
    }

    /// After a member or an element: a comma, skipped with the space after it, or the closing
    /// bracket, left for the caller's loop.
    private mutating func separator(closing: UInt8) throws {
        skipSpace()
        if try peek() == UInt8(ascii: ",") {
            at += 1
            skipSpace()
        } else if try peek() != closing {
            throw Invalid()
        }
    }

    private mutating func object() throws -> JSONValue {
        try enter()
        defer { depth -= 1 }
        var members: [String: JSONValue] = [:]
        while try peek() != UInt8(ascii: "}") {
            guard try peek() == UInt8(ascii: "\"") else { throw Invalid() }
            let key = try string()
            skipSpace()
            guard try peek() == UInt8(ascii: ":") else { throw Invalid() }
            at += 1
            skipSpace()
            let v = try value()
            if members[key] == nil { members[key] = v }
            try separator(closing: UInt8(ascii: "}"))
        }
        at += 1
        return .object(members)
    }

    private mutating func array() throws -> JSONValue {
        try enter()
        defer { depth -= 1 }
        var elements: [JSONValue] = []
        while try peek() != UInt8(ascii: "]") {
            elements.append(try value())
            try separator(closing: UInt8(ascii: "]"))
        }
        at += 1
        return .array(elements)
    }

    /// A string from its opening quote. Runs without escapes are taken as they are (validated
    /// as UTF-8); escapes are decoded, a surrogate pair into one scalar.
    private mutating func string() throws -> String {
        at += 1
        let start = at
        // The common case: no escape, plain ASCII.
        var ascii = true
        while at < bytes.count {
            let b = bytes[at]
            if b == UInt8(ascii: "\"") {
                let run = UnsafeBufferPointer(rebasing: bytes[start..<at])
                at += 1
                if ascii { return String(decoding: run, as: UTF8.self) }
                guard let s = String(validating: run, as: UTF8.self) else { throw Invalid() }
                return s
            }
            if b == UInt8(ascii: "\\") { break }
            guard b >= 0x20 else { throw Invalid() }
            if b >= 0x80 { ascii = false }
            at += 1
        }
        guard at < bytes.count else { throw Invalid() }
        // With escapes: collect the UTF-8 bytes, then validate them once.
        var out = Array(bytes[start..<at])
        while true {
            guard at < bytes.count else { throw Invalid() }
            let b = bytes[at]
            if b == UInt8(ascii: "\"") {
                at += 1
                guard let s = String(validating: out, as: UTF8.self) else { throw Invalid() }
                return s
            }
            guard b >= 0x20 else { throw Invalid() }
            if b != UInt8(ascii: "\\") {
                out.append(b)
                at += 1
                continue
            }
            at += 1
            let e = try peek()
            at += 1
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = UInt32(try hex4())
                if (0xD800...0xDBFF).contains(scalar) {
                    try expect("\\u")
                    let low = UInt32(try hex4())
                    guard (0xDC00...0xDFFF).contains(low) else { throw Invalid() }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw Invalid()
                }
                guard let u = Unicode.Scalar(scalar) else { throw Invalid() }
                out.append(contentsOf: UTF8.encode(u)!)
            default:
                throw Invalid()
            }
        }
    }

    private mutating func hex4() throws -> UInt16 {
        guard at + 4 <= bytes.count else { throw Invalid() }
        var v: UInt16 = 0
        for _ in 0..<4 {
            let b = bytes[at]
            let d: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = b - UInt8(ascii: "A") + 10
            default: throw Invalid()
            }
            v = v << 4 | UInt16(d)
            at += 1
        }
        return v
    }

    /// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, finite as a Double.
    private mutating func number() throws -> Double {
        let start = at
        func digits() -> Int {
            let s = at
            while at < bytes.count, bytes[at] >= UInt8(ascii: "0"), bytes[at] <= UInt8(ascii: "9") { at += 1 }
            return at - s
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: "-") { at += 1 }
        guard at < bytes.count else { throw Invalid() }
        if bytes[at] == UInt8(ascii: "0") {
            at += 1
        } else {
            guard digits() > 0 else { throw Invalid() }
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
            at += 1
            guard digits() > 0 else { throw Invalid() }
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
            at += 1
            if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
            guard digits() > 0 else { throw Invalid() }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
        guard let d = Double(text), d.isFinite else { throw Invalid() }
        return d
    }
}
