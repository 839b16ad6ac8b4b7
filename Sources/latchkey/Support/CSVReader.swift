import Latchkey

/// The records of a CSV file (RFC 4180), one at a time as the file streams: fields separated
/// by commas, records by LF or CRLF; a field in double quotes may hold commas, line breaks and
/// quotes (doubled). A UTF-8 byte order mark at the start is skipped, and so are empty lines.
/// Strict where a lenient reader would guess: a quote inside an unquoted field, anything but a
/// separator after a closing quote, and a quoted field still open at the end are errors that
/// name the line, so a damaged export is refused rather than imported shifted by a column.
final class CSVReader {
    let stream: ByteStream
    /// Records returned so far (the header counts).
    private(set) var record = 0
    /// The line on which the record returned last begins.
    private(set) var recordLine = 0
    /// A field longer than this is refused: an item holds at most 16 MiB.
    static let maximumFieldSize = 16 << 20 + 4096
    static let maximumFields = 4096
    private var started = false

    init(_ stream: ByteStream) { self.stream = stream }

    func bad(_ line: Int, _ what: String) -> KeychainError {
        KeychainError(.param, "line \(line) of the \(stream.named): \(what)")
    }

    /// The fields of the next record; nil at the end of the input.
    /// - Throws: errSecParam naming the line for malformed CSV; errSecIO when reading fails.
    func next() throws -> [[UInt8]]? {
        if !started {
            started = true
            if try stream.peek() == 0xEF {
                for expected: UInt8 in [0xEF, 0xBB, 0xBF] {
                    guard try stream.next() == expected else {
                        throw bad(1, "it starts with bytes that are not UTF-8 text")
                    }
                }
            }
        }
        // Empty lines between records are skipped.
        while true {
            let b = try stream.peek()
            if b == 0x0A {
                _ = try stream.next()
            } else if b == 0x0D {
                _ = try stream.next()
                guard try stream.next() == 0x0A else { throw bad(stream.line, "a carriage return without a line feed") }
            } else {
                break
            }
        }
        guard try stream.peek() != nil else { return nil }
        recordLine = stream.line
        record += 1
        var fields: [[UInt8]] = []
        while true {
            guard fields.count < CSVReader.maximumFields else {
                throw bad(recordLine, "more than \(CSVReader.maximumFields) fields in one record")
            }
            let (field, last) = try self.field()
            fields.append(field)
            if last { return fields }
        }
    }

    /// One field, and whether it ends the record.
    private func field() throws -> ([UInt8], Bool) {
        var out: [UInt8] = []
        if try stream.peek() == UInt8(ascii: "\"") {
            let opened = stream.line
            _ = try stream.next()
            while true {
                guard let b = try stream.next() else {
                    throw bad(opened, "a quoted field that begins on this line is not closed at the end of the file")
                }
                if b == UInt8(ascii: "\"") {
                    if try stream.peek() == UInt8(ascii: "\"") {
                        _ = try stream.next()
                        out.append(b)
                        continue
                    }
                    break
                }
                out.append(b)
                guard out.count <= CSVReader.maximumFieldSize else {
                    throw bad(opened, "a field longer than \(CSVReader.maximumFieldSize) bytes")
                }
            }
            switch try stream.next() {
            case nil: return (out, true)
            case UInt8(ascii: ","): return (out, false)
            case 0x0A: return (out, true)
            case 0x0D:
                guard try stream.next() == 0x0A else { throw bad(stream.line, "a carriage return without a line feed") }
                return (out, true)
            default:
                throw bad(stream.line, "a character after the closing quote of a field (a quote in a field is doubled)")
            }
        }
        while true {
            guard let b = try stream.next() else { return (out, true) }
            switch b {
            case UInt8(ascii: ","): return (out, false)
            case 0x0A: return (out, true)
            case 0x0D:
                if try stream.peek() == 0x0A {
                    _ = try stream.next()
                    return (out, true)
                }
                out.append(b)
            case UInt8(ascii: "\""):
                throw bad(
                    stream.line,
                    "a quote inside a field that does not begin with one (RFC 4180: such a field is quoted)")
            default:
                out.append(b)
                guard out.count <= CSVReader.maximumFieldSize else {
                    throw bad(stream.line, "a field longer than \(CSVReader.maximumFieldSize) bytes")
                }
            }
        }
    }
}
