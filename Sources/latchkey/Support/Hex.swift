import LatchkeyFormat

/// Hex input and output for data-valued attributes.
enum Hex {
    /// `0a1b2c`, `0x0A1B2C`, `0a:1b:2c` or `0a 1b 2c`; nil when not whole bytes of hex. The
    /// format's codec (`bytesFromHex`) after the prefix and separators are taken off.
    static func decode(_ text: String) -> [UInt8]? {
        var s = Substring(text)
        if s.hasPrefix("0x") || s.hasPrefix("0X") { s = s.dropFirst(2) }
        return bytesFromHex(String(s.filter { $0 != ":" }))
    }

    static func encode(_ bytes: [UInt8]) -> String { hexString(bytes) }
}
