import Latchkey

/// A small pull reader of XML 1.0 as password managers export it (KeePass's XML): elements,
/// attributes, character data, the five predefined entities and character references,
/// CDATA sections, comments and processing instructions. The CLI links FoundationEssentials
/// only, which has no XMLParser; this reads the file as it streams (`ByteStream`), one event
/// at a time, with every size bounded: a name of 256 bytes, 64 attributes, 256 levels of
/// nesting, and a text kept (`keepText`) of 16 MiB. A document type declaration is refused
/// (KeePass writes none, and its entities are what XML bombs are made of), as is any entity
/// other than the predefined ones, a mismatched end tag, and anything after the root element
/// but space, comments and processing instructions. Every error names its line.
///
/// Well-formedness is checked as far as the exports need: names are not checked against
/// XML's name characters, and text is not checked for UTF-8 here (the caller does, where it
/// keeps text).
final class XMLReader {
    enum Event: Equatable {
        /// A start tag (an empty-element tag is a start event followed by an end event).
        case start(String, [String: String])
        case end(String)
        /// Character data (entities resolved); empty unless `keepText` was true while read.
        case text([UInt8])
    }

    let stream: ByteStream
    /// Whether character data is kept (the caller sets it for the elements it reads); when
    /// false it is checked and dropped, so a large attachment costs no memory.
    var keepText = false
    static let maximumName = 256
    static let maximumAttributes = 64
    static let maximumDepth = 256
    static let maximumText = 16 << 20 + 4096

    private var open: [String] = []
    private var pendingEnd: String?
    private var sawRoot = false
    private var started = false

    /// The open elements, outermost first.
    var path: [String] { open }

    init(_ stream: ByteStream) { self.stream = stream }

    func bad(_ what: String, line: Int? = nil) -> KeychainError {
        KeychainError(.param, "line \(line ?? stream.line) of the \(stream.named): \(what)")
    }

    /// The next event; nil after the root element has ended and the input with it.
    /// - Throws: errSecParam naming the line for XML it does not read; errSecIO.
    func next() throws -> Event? {
        if let name = pendingEnd {
            pendingEnd = nil
            open.removeLast()
            return .end(name)
        }
        if !started {
            started = true
            if try stream.peek() == 0xEF {
                for expected: UInt8 in [0xEF, 0xBB, 0xBF] {
                    guard try stream.next() == expected else {
                        throw bad("it starts with bytes that are not UTF-8 text")
                    }
                }
            }
        }
        while true {
            guard let b = try stream.peek() else {
                if !open.isEmpty { throw bad("the file ends inside element <\(open.last!)>") }
                if !sawRoot { throw bad("no root element: this is not an XML document") }
                return nil
            }
            if b != UInt8(ascii: "<") {
                if open.isEmpty {
                    // Outside the root: only space.
                    guard b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D else {
                        throw bad(sawRoot ? "text after the root element" : "text before the root element")
                    }
                    _ = try stream.next()
                    continue
                }
                return .text(try text())
            }
            _ = try stream.next()
            switch try stream.peek() {
            case UInt8(ascii: "?"):
                try skip(until: Array("?>".utf8), what: "processing instruction")
            case UInt8(ascii: "!"):
                _ = try stream.next()
                if try stream.peek() == UInt8(ascii: "-") {
                    try expect("--", what: "comment")
                    try skip(until: Array("-->".utf8), what: "comment")
                } else if try stream.peek() == UInt8(ascii: "[") {
                    try expect("[CDATA[", what: "CDATA section")
                    guard !open.isEmpty else { throw bad("a CDATA section outside the root element") }
                    return .text(try cdata())
                } else {
                    throw bad("a document type declaration (<!DOCTYPE or <!ENTITY), which is refused")
                }
            case UInt8(ascii: "/"):
                _ = try stream.next()
                let name = try self.name()
                try skipSpace()
                guard try stream.next() == UInt8(ascii: ">") else { throw bad("a malformed end tag </\(name)") }
                guard let top = open.last else { throw bad("an end tag </\(name)> without a start tag") }
                guard top == name else { throw bad("the end tag </\(name)> does not close <\(top)>") }
                open.removeLast()
                return .end(name)
            default:
                guard !(open.isEmpty && sawRoot) else { throw bad("a second root element") }
                let name = try self.name()
                var attributes: [String: String] = [:]
                var empty = false
                while true {
                    let spaced = try skipSpace()
                    guard let c = try stream.peek() else { throw bad("the file ends inside the tag <\(name)") }
                    if c == UInt8(ascii: ">") {
                        _ = try stream.next()
                        break
                    }
                    if c == UInt8(ascii: "/") {
                        _ = try stream.next()
                        guard try stream.next() == UInt8(ascii: ">") else { throw bad("a malformed tag <\(name)") }
                        empty = true
                        break
                    }
                    guard spaced else { throw bad("a malformed tag <\(name)") }
                    guard attributes.count < XMLReader.maximumAttributes else {
                        throw bad("more than \(XMLReader.maximumAttributes) attributes in <\(name)>")
                    }
                    let key = try self.name()
                    try skipSpace()
                    guard try stream.next() == UInt8(ascii: "=") else {
                        throw bad("attribute \(key) of <\(name)> has no value")
                    }
                    try skipSpace()
                    let value = try attributeValue()
                    guard attributes[key] == nil else { throw bad("attribute \(key) repeats in <\(name)>") }
                    attributes[key] = value
                }
                guard open.count < XMLReader.maximumDepth else {
                    throw bad("elements nested more than \(XMLReader.maximumDepth) deep")
                }
                open.append(name)
                sawRoot = true
                if empty { pendingEnd = name }
                return .start(name, attributes)
            }
        }
    }

    /// Skips the content of the element whose start was returned last, to its end (which is
    /// consumed too).
    func skipElement() throws {
        let depth = open.count
        let kept = keepText
        keepText = false
        defer { keepText = kept }
        while open.count >= depth {
            guard try next() != nil else { return }
        }
    }

    private static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }

    @discardableResult
    private func skipSpace() throws -> Bool {
        var any = false
        while let b = try stream.peek(), XMLReader.isSpace(b) {
            _ = try stream.next()
            any = true
        }
        return any
    }

    private func expect(_ literal: String, what: String) throws {
        for c in literal.utf8 {
            guard try stream.next() == c else { throw bad("a malformed \(what)") }
        }
    }

    /// Skips to just after `terminator`.
    private func skip(until terminator: [UInt8], what: String) throws {
        let line = stream.line
        var matched = 0
        while matched < terminator.count {
            guard let b = try stream.next() else { throw bad("a \(what) that begins here is not closed", line: line) }
            if b == terminator[matched] {
                matched += 1
            } else {
                matched = b == terminator[0] ? 1 : 0
            }
        }
    }

    private func name() throws -> String {
        var bytes: [UInt8] = []
        while let b = try stream.peek(),
            !XMLReader.isSpace(b), b != UInt8(ascii: ">"), b != UInt8(ascii: "/"), b != UInt8(ascii: "="),
            b != UInt8(ascii: "<"), b != UInt8(ascii: "\""), b != UInt8(ascii: "'"), b != UInt8(ascii: "&")
        {
            _ = try stream.next()
            bytes.append(b)
            guard bytes.count <= XMLReader.maximumName else {
                throw bad("a name longer than \(XMLReader.maximumName) bytes")
            }
        }
        guard !bytes.isEmpty, let name = String(validating: bytes, as: UTF8.self) else { throw bad("a malformed tag") }
        return name
    }

    private func attributeValue() throws -> String {
        guard let quote = try stream.next(), quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") else {
            throw bad("an attribute value not in quotes")
        }
        var bytes: [UInt8] = []
        while true {
            guard let b = try stream.next() else { throw bad("the file ends inside an attribute value") }
            if b == quote { break }
            switch b {
            case UInt8(ascii: "<"): throw bad("a '<' inside an attribute value")
            case UInt8(ascii: "&"): bytes += try entity()
            default: bytes.append(b)
            }
            guard bytes.count <= XMLReader.maximumText else { throw bad("an attribute value that is too long") }
        }
        guard let value = String(validating: bytes, as: UTF8.self) else {
            throw bad("an attribute value that is not UTF-8")
        }
        return value
    }

    /// Character data up to the next `<` (or the end, which `next` then reports).
    private func text() throws -> [UInt8] {
        var out: [UInt8] = []
        let line = stream.line
        while let b = try stream.peek(), b != UInt8(ascii: "<") {
            _ = try stream.next()
            let piece: [UInt8]
            if b == UInt8(ascii: "&") {
                piece = try entity()
            } else if b == UInt8(ascii: ">"), out.suffix(2) == [UInt8(ascii: "]"), UInt8(ascii: "]")] {
                throw bad("']]>' in text")
            } else {
                piece = [b]
            }
            if keepText {
                out += piece
                guard out.count <= XMLReader.maximumText else {
                    throw bad("a text longer than \(XMLReader.maximumText) bytes", line: line)
                }
            }
        }
        return out
    }

    private func cdata() throws -> [UInt8] {
        var out: [UInt8] = []
        let line = stream.line
        var brackets = 0
        while true {
            guard let b = try stream.next() else {
                throw bad("a CDATA section that begins here is not closed", line: line)
            }
            if b == UInt8(ascii: ">"), brackets >= 2 {
                if keepText { out.removeLast(2) }
                return out
            }
            brackets = b == UInt8(ascii: "]") ? brackets + 1 : 0
            if keepText {
                out.append(b)
                guard out.count <= XMLReader.maximumText + 2 else {
                    throw bad("a text longer than \(XMLReader.maximumText) bytes", line: line)
                }
            }
        }
    }

    /// The bytes of an entity or character reference whose `&` was read.
    private func entity() throws -> [UInt8] {
        var name: [UInt8] = []
        while true {
            guard let b = try stream.next() else { throw bad("the file ends inside an entity reference") }
            if b == UInt8(ascii: ";") { break }
            name.append(b)
            guard name.count <= 12 else { throw bad("a '&' that does not begin an entity reference (write &amp;)") }
        }
        switch String(decoding: name, as: UTF8.self) {
        case "lt": return [UInt8(ascii: "<")]
        case "gt": return [UInt8(ascii: ">")]
        case "amp": return [UInt8(ascii: "&")]
        case "quot": return [UInt8(ascii: "\"")]
        case "apos": return [UInt8(ascii: "'")]
        default: break
        }
        guard name.first == UInt8(ascii: "#") else {
            throw bad("the entity &\(String(decoding: name, as: UTF8.self)); (only XML's five and &#...; are read)")
        }
        let digits = String(decoding: name.dropFirst(), as: UTF8.self)
        let value: UInt32? =
            digits.hasPrefix("x") ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits, radix: 10)
        guard let value, value != 0, let scalar = Unicode.Scalar(value) else {
            throw bad("a malformed character reference &\(String(decoding: name, as: UTF8.self));")
        }
        return Array(String(Character(scalar)).utf8)
    }
}
