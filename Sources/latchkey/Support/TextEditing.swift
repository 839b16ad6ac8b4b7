#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The few Foundation string functions the CLI used, written out: the CLI imports
/// FoundationEssentials only, which has neither `String(format:)` nor the NSString methods
/// (a process that links Foundation pays for ICU at every start).
enum TextEditing {
    /// printf-style formatting through vsnprintf(3) in the C locale, as `String(format:)`
    /// formats these conversions (`%d`, `%02d`, `%.1f`, `%04x`).
    static func format(_ format: String, _ arguments: CVarArg...) -> String {
        withVaList(arguments) { list in
            var buffer = [CChar](repeating: 0, count: 128)
            let n = Int(vsnprintf(&buffer, buffer.count, format, list))
            if n >= buffer.count {
                buffer = [CChar](repeating: 0, count: n + 1)
                _ = withVaList(arguments) { vsnprintf(&buffer, buffer.count, format, $0) }
            }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// Every occurrence of `target` replaced by `replacement`, left to right, comparing bytes
    /// (NSString's literal `replacingOccurrences(of:with:)`).
    static func replacing(_ target: String, with replacement: String, in text: String) -> String {
        let t = Array(target.utf8), bytes = Array(text.utf8)
        guard !t.isEmpty, bytes.count >= t.count else { return text }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == t[0], i + t.count <= bytes.count, bytes[i..<(i + t.count)].elementsEqual(t) {
                out.append(contentsOf: replacement.utf8)
                i += t.count
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `text` without leading and trailing white space: the Unicode White_Space characters
    /// with `newlines` (CharacterSet.whitespacesAndNewlines), else tab and the space
    /// separators only (CharacterSet.whitespaces).
    static func trimming(_ text: String, newlines: Bool) -> String {
        func isSpace(_ s: Unicode.Scalar) -> Bool {
            newlines ? s.properties.isWhitespace : (s == "\t" || s.properties.generalCategory == .spaceSeparator)
        }
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !isSpace($0) }) else { return "" }
        let last = scalars.lastIndex(where: { !isSpace($0) })!
        return String(scalars[first...last])
    }
}
