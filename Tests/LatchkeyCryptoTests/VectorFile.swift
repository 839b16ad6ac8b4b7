import Foundation
import LatchkeyCrypto
import Testing

/// A known-answer vector file under `fixtures/vectors/`.
///
/// The format is line-oriented so the published values can be pasted verbatim:
///
///     # comment (the file starts with a header naming its source)
///     [id]                  starts a vector
///     key = value           sets a field (keys are case-sensitive and may contain spaces)
///           more value      an indented line continues the previous field
///
/// A value is read as hex (whitespace ignored, optional `0x` prefix), as an ASCII/UTF-8
/// string when written in double quotes (`P = "password"`), or as a decimal integer.
/// An empty value is zero bytes.
struct VectorFile {
    let name: String
    let vectors: [TestVector]

    /// The vector with `id`; a test that names a missing vector fails.
    func vector(_ id: String) throws -> TestVector {
        try #require(vectors.first { $0.id == id }, "\(name) has no vector [\(id)]")
    }

    /// Loads `fixtures/vectors/<name>`.
    static func load(_ name: String) throws -> VectorFile {
        let url = Fixtures.vectorsDirectory.appendingPathComponent(name)
        let text = try String(contentsOf: url, encoding: .utf8)
        return try parse(text, name: name)
    }

    static func parse(_ text: String, name: String) throws -> VectorFile {
        var vectors: [TestVector] = []
        var lastKey: String?
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let lineNumber = index + 1
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine[...]
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            func fail(_ message: String) -> VectorFileError {
                VectorFileError(file: name, line: lineNumber, message: message)
            }
            if trimmed.isEmpty || trimmed.hasPrefix("#") {
                continue
            }
            if line.first == " " || line.first == "\t" {
                guard let key = lastKey, !vectors.isEmpty else { throw fail("continuation line without a field") }
                vectors[vectors.count - 1].append(trimmed, to: key)
                continue
            }
            if trimmed.hasPrefix("[") {
                guard trimmed.hasSuffix("]"), trimmed.count > 2 else { throw fail("malformed vector header") }
                let id = String(trimmed.dropFirst().dropLast())
                guard !vectors.contains(where: { $0.id == id }) else { throw fail("duplicate vector [\(id)]") }
                vectors.append(TestVector(id: id, file: name, line: lineNumber))
                lastKey = nil
                continue
            }
            guard let eq = trimmed.firstIndex(of: "=") else { throw fail("expected `key = value`") }
            let key = trimmed[..<eq].trimmingCharacters(in: .whitespaces)
            let value = trimmed[trimmed.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            guard !key.isEmpty else { throw fail("empty key") }
            guard !vectors.isEmpty else { throw fail("field `\(key)` before the first [id]") }
            guard vectors[vectors.count - 1].value(ifPresent: key) == nil else {
                throw fail("duplicate field `\(key)`")
            }
            vectors[vectors.count - 1].set(key, value)
            lastKey = key
        }
        return VectorFile(name: name, vectors: vectors)
    }
}

/// One `[id]` block of a vector file.
struct TestVector: CustomStringConvertible {
    let id: String
    let file: String
    let line: Int
    private var fields: [(key: String, value: String)] = []

    init(id: String, file: String, line: Int) {
        self.id = id
        self.file = file
        self.line = line
    }

    var description: String { "\(file) [\(id)]" }
    var keys: [String] { fields.map(\.key) }

    fileprivate mutating func set(_ key: String, _ value: String) { fields.append((key, value)) }

    fileprivate mutating func append(_ more: String, to key: String) {
        let i = fields.lastIndex { $0.key == key }!
        fields[i].value += fields[i].value.isEmpty ? more : " " + more
    }

    func value(ifPresent key: String) -> String? { fields.first { $0.key == key }?.value }

    /// The raw text of field `key`.
    func value(_ key: String) throws -> String {
        guard let v = value(ifPresent: key) else {
            throw VectorFileError(file: file, line: line, message: "[\(id)] has no field `\(key)`")
        }
        return v
    }

    /// Field `key` as bytes: a quoted string's UTF-8, otherwise hex.
    func bytes(_ key: String) throws -> [UInt8] {
        let v = try value(key)
        if v.count >= 2, v.hasPrefix("\""), v.hasSuffix("\"") {
            return Array(v.dropFirst().dropLast().utf8)
        }
        guard let bytes = [UInt8](hex: v) else {
            throw VectorFileError(file: file, line: line, message: "[\(id)] field `\(key)` is not hex: \(v)")
        }
        return bytes
    }

    /// Field `key` as a decimal integer.
    func int<T: FixedWidthInteger>(_ key: String, as _: T.Type = Int.self) throws -> T {
        let v = try value(key)
        guard let n = T(v) else {
            throw VectorFileError(file: file, line: line, message: "[\(id)] field `\(key)` is not an integer: \(v)")
        }
        return n
    }
}

struct VectorFileError: Error, CustomStringConvertible {
    let file: String
    let line: Int
    let message: String
    var description: String { "\(file):\(line): \(message)" }
}

/// Locates the package's fixtures from this source file's path, so tests run from any
/// working directory.
enum Fixtures {
    static let packageRoot: URL = {
        var dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while dir.path != "/" {
            if FileManager.default.fileExists(atPath: dir.appendingPathComponent("Package.swift").path) {
                return dir
            }
            dir = dir.deletingLastPathComponent()
        }
        fatalError("no Package.swift above \(#filePath)")
    }()

    static var vectorsDirectory: URL {
        packageRoot.appendingPathComponent("fixtures").appendingPathComponent("vectors")
    }
}

extension Array where Element == UInt8 {
    /// Parses hex, ignoring whitespace and an optional leading `0x`; nil when malformed.
    init?(hex: String) {
        var digits = hex.unicodeScalars.filter { !$0.properties.isWhitespace }.map(Character.init)
        if digits.count >= 2, digits[0] == "0", digits[1] == "x" || digits[1] == "X" {
            digits.removeFirst(2)
        }
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var i = 0
        while i < digits.count {
            guard let hi = digits[i].hexDigitValue, let lo = digits[i + 1].hexDigitValue else { return nil }
            out.append(UInt8(hi << 4 | lo))
            i += 2
        }
        self = out
    }

    /// Lower-case hex.
    var hex: String {
        let digits: [Character] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f"]
        var s = ""
        s.reserveCapacity(count * 2)
        for b in self {
            s.append(digits[Int(b >> 4)])
            s.append(digits[Int(b & 0xF)])
        }
        return s
    }

    /// A copy with bit `bit` flipped (bit 0 is the low bit of the first byte).
    func flippingBit(_ bit: Int) -> [UInt8] {
        var copy = self
        copy[bit / 8] ^= 1 << UInt8(bit % 8)
        return copy
    }

    /// The first, a middle and the last bit position: where a one-bit flip is checked when
    /// flipping every bit would be needlessly slow.
    var sampleBitPositions: [Int] {
        let bits = count * 8
        guard bits > 0 else { return [] }
        let positions: Set<Int> = [0, Swift.min(bits / 2 + 3, bits - 1), bits - 1]
        return positions.sorted()
    }
}

extension CryptoError {
    var isIntegrityCheckFailed: Bool {
        if case .integrityCheckFailed = self { return true }
        return false
    }

    var isInvalidArgument: Bool {
        if case .invalidArgument = self { return true }
        return false
    }

    var isFailed: Bool {
        if case .failed = self { return true }
        return false
    }
}
