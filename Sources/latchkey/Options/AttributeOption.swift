import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Latchkey
import LatchkeyFormat

/// How an option's text becomes an attribute value: the notation of the attribute's row in
/// `AttributeSchema`.
typealias ValueSyntax = AttributeDefinition.Notation

extension ValueSyntax {
    /// A few words for `<value>` in help.
    var valueName: String {
        switch self {
        case .text: return "text"
        case .number: return "number"
        case .code: return "code"
        case .boolean: return "yes|no"
        case .hex: return "hex"
        case .date: return "date"
        case .keyType: return "type"
        case .keyClass: return "class"
        }
    }
}

/// One attribute reachable from the command line: a row of `AttributeSchema` that has a flag,
/// or the hex form of one (`bytesOption`). ITEM/QUERY options (`--account`), `update`'s new
/// values (`--set-account`) and the fast parser's table are all `AttributeOption.all`.
struct AttributeOption: Sendable, Hashable {
    /// The option without dashes: `account`.
    private(set) var flag: String
    /// Apple's attribute code: `acct`.
    let code: String
    private(set) var syntax: ValueSyntax
    /// The attribute's kind (the same in each of its classes).
    let kind: ItemSchema.Kind
    let classes: Set<ItemClass>
    /// Apple's constant, for help: `kSecAttrAccount`.
    let constant: String
    private(set) var abstract: String
    /// The keychain derives it from the item's data (certificates): queries only.
    let derived: Bool
    /// Whether this is the hex form of a text option (`--account-hex`).
    private(set) var isBytesForm = false

    /// The option of a row of the schema; nil for a row without a flag.
    init?(_ row: AttributeDefinition) {
        guard let flag = row.flag else { return nil }
        self.flag = flag
        code = row.code
        syntax = row.notation
        kind = row.kind
        classes = row.classes
        constant = row.constant
        abstract = row.help
        derived = row.isDerived
    }

    static func == (a: AttributeOption, b: AttributeOption) -> Bool { a.code == b.code && a.flag == b.flag }
    func hash(into hasher: inout Hasher) { hasher.combine(flag) }

    /// `--account-hex` for `--account`: the same attribute given as bytes in hex, for every
    /// text option whose attribute can hold data (kind `blob`: a query compares the bytes, so
    /// `--account-hex 616c696365` finds the account "alice"). Arguments must be UTF-8
    /// (Support/RawInput.swift); this is how other bytes are given. Nil for the others.
    var bytesOption: AttributeOption? {
        guard syntax == .text, kind == .blob else { return nil }
        var hex = self
        hex.flag = flag + "-hex"
        hex.syntax = .hex
        hex.abstract = "\(abstract.prefix { !":,;".contains($0) }) as bytes in hex, for a value that is not UTF-8 text"
        hex.isBytesForm = true
        return hex
    }

    /// The attributes whose options `--help` shows; the others are under `--help-all`.
    static let shownInShortHelp: Set<String> = ["account", "service", "label"]

    private var visibility: ArgumentVisibility {
        AttributeOption.shownInShortHelp.contains(flag) ? .default : CommandLineForms.secondary
    }

    /// Help for the ITEM/QUERY option.
    var help: ArgumentHelp {
        ArgumentHelp("\(abstract) (\(constant), \(code)).", valueName: syntax.valueName, visibility: visibility)
    }

    /// Help for `update --set-X`.
    var setHelp: ArgumentHelp {
        ArgumentHelp("New \(abstract.prefix(1).lowercased() + abstract.dropFirst()) (\(code)).", valueName: syntax.valueName,
                     visibility: visibility)
    }

    /// Parses the option's text. - Throws: `UsageError` naming the option and what it takes.
    func value(_ text: String, option: String, command: String) throws -> AttributeValue {
        func bad(_ what: String) -> UsageError {
            UsageError("\(option) takes \(what), not '\(text)'", command: command)
        }
        switch syntax {
        case .text:
            return .string(text)
        case .number:
            guard let i = Int64(text) else { throw bad("a whole number") }
            return .integer(i)
        case .code:
            if let i = Int64(text) { return .integer(i) }
            guard !text.isEmpty else { throw bad("a number or a code such as htps") }
            return .string(text)
        case .boolean:
            switch text.lowercased() {
            case "yes", "true", "1", "on": return .integer(1)
            case "no", "false", "0", "off": return .integer(0)
            default: throw bad("yes or no")
            }
        case .hex:
            guard let bytes = Hex.decode(text) else { throw bad("bytes in hex (e.g. 0a1b2c)") }
            return .data(bytes)
        case .date:
            guard let t = ISODate.parse(text) else { throw bad("an ISO 8601 date such as 2026-01-31 or 2026-01-31T12:00:00Z") }
            return .date(t)
        case .keyType:
            if let i = Int64(text) { return .integer(i) }
            guard let code = AttributeOption.keyTypes[text.lowercased()] else {
                throw bad("rsa, dsa, ec, ed25519, x25519 or a number")
            }
            return .integer(code)
        case .keyClass:
            if let i = Int64(text) { return .integer(i) }
            guard let code = AttributeOption.keyClasses[text.lowercased()] else { throw bad("public, private, symmetric or 0, 1, 2") }
            return .integer(code)
        }
    }

    /// kSecAttrKeyType values (reference §1.6).
    static let keyTypes: [String: Int64] = [
        "rsa": 42, "dsa": 43, "ec": 73, "ecsecprimerandom": 73, "ed25519": 105, "x25519": 106,
    ]
    /// kSecAttrKeyClass values.
    static let keyClasses: [String: Int64] = ["public": 0, "private": 1, "symmetric": 2]

    /// Every attribute option, in help order: the rows of `AttributeSchema` that have a flag.
    static let all: [AttributeOption] = AttributeSchema.all.compactMap(AttributeOption.init)

    /// The hex forms (`bytesOption`) of the options of `all` that have one.
    static let allBytes: [AttributeOption] = all.compactMap(\.bytesOption)

    /// The option of that name (`account`, `account-hex`), or nil.
    static func named(_ flag: String) -> AttributeOption? {
        if let option = all.first(where: { $0.flag == flag }) { return option }
        guard flag.hasSuffix("-hex"), let base = all.first(where: { $0.flag + "-hex" == flag }) else { return nil }
        return base.bytesOption
    }
}

/// `--class`: the stored item classes by Apple's kSecClass value.
enum ClassArgument: String, ExpressibleByArgument, CaseIterable {
    case genp, inet, cert, keys

    var itemClass: ItemClass { ItemClass(rawValue: rawValue)! }

    static var allValueDescriptions: [String: String] {
        ["genp": "generic password", "inet": "internet password", "cert": "certificate (DER)", "keys": "cryptographic key"]
    }
}

/// `--accessible`: a pdmn code (ak … akpu) or a long name (WhenUnlocked, …), with or without
/// the `kSecAttrAccessible` prefix.
struct AccessibleArgument: ExpressibleByArgument {
    var protection: ProtectionClass

    init?(argument: String) {
        var name = argument
        if name.hasPrefix("kSecAttrAccessible") { name.removeFirst("kSecAttrAccessible".count) }
        guard let pc = ProtectionClass(code: name) else { return nil }
        protection = pc
    }

    static var allValueStrings: [String] { ProtectionClass.allCases.map(\.code) }
    static var defaultCompletionKind: CompletionKind { .list(allValueStrings + ProtectionClass.allCases.map(\.longName)) }
}

/// `--synchronizable yes|no|any` (kSecAttrSynchronizable; any = kSecAttrSynchronizableAny).
enum SynchronizableArgument: String, ExpressibleByArgument, CaseIterable {
    case yes, no, any

    /// The `sync` an item is given: 1 or 0; nil for `any`, which only a query can mean.
    var storedValue: AttributeValue? {
        switch self {
        case .yes: return .integer(1)
        case .no: return .integer(0)
        case .any: return nil
        }
    }

    var filter: SyncFilter {
        switch self {
        case .yes: return .synchronizable
        case .no: return .notSynchronizable
        case .any: return .any
        }
    }
}

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

/// ISO 8601 dates ↔ CFAbsoluteTime (seconds since 2001-01-01 UTC), as the keychain keeps them.
enum ISODate {
    /// `2026-01-31`, `2026-01-31T12:00:00Z`, with fractional seconds or an offset: what
    /// ISO8601DateFormatter read with `[.withInternetDateTime, .withFractionalSeconds]`,
    /// `[.withInternetDateTime]` and then `[.withFullDate]`, here through FoundationEssentials'
    /// ISO8601FormatStyle with ICU's habits kept: fractional seconds cut to the millisecond, a
    /// time field out of range (`T25:00`) leaves only the date, leading spaces are skipped before a
    /// date alone. `ISODateTests` compare the two on a corpus.
    static func parse(_ text: String) -> Double? {
        if timeFieldsInRange(text) {
            for style in [Date.ISO8601FormatStyle(includingFractionalSeconds: true), Date.ISO8601FormatStyle()] {
                guard let date = try? style.parse(text) else { continue }
                let millis = ((date.timeIntervalSince1970 * 1_000_000).rounded() / 1000).rounded(.down)
                return millis / 1000 - 978_307_200
            }
        }
        let date = String(text.drop { $0 == " " })
        return (try? Date.ISO8601FormatStyle().year().month().day().parse(date))?.timeIntervalSinceReferenceDate
    }

    /// Whether the hour, minute and second of `YYYY-MM-DDTHH:MM:SS…` are in range (ICU refuses
    /// `T25:00:00`; ISO8601FormatStyle carries it into the next day).
    static func timeFieldsInRange(_ text: String) -> Bool {
        let u = Array(text.utf8)
        guard u.count >= 19, u[10] == UInt8(ascii: "T") else { return true }
        func field(_ at: Int) -> Int? {
            guard (0x30...0x39).contains(u[at]), (0x30...0x39).contains(u[at + 1]) else { return nil }
            return Int(u[at] - 0x30) * 10 + Int(u[at + 1] - 0x30)
        }
        guard let h = field(11), let m = field(14), let s = field(17) else { return true }
        return h <= 23 && m <= 59 && s <= 59
    }

    /// `2025-01-02T03:04:05.678Z` (to the nearest millisecond, halves up), exactly as
    /// ISO8601DateFormatter with `[.withInternetDateTime, .withFractionalSeconds]` in UTC printed
    /// it (ICU's calendar), written out: a new formatter per date (two per item) was 60 % of
    /// `dump` at 10,000 items, and the CLI does not link Foundation. So, as ICU: the Julian
    /// calendar before 1582-10-15, years before 1 as era years (1 BC is `0001`), times clamped to
    /// ICU's range (±5.8 million years, which infinities reach), NaN as an empty string.
    /// `ISODateTests` compare the two.
    static func format(_ absolute: Double) -> String {
        guard !absolute.isNaN else { return "" }
        // ICU's GregorianCalendar limits, in milliseconds since 1970.
        let unixMillis = min(max((absolute + 978_307_200) * 1000, -184_303_902_528_000_000), 183_882_168_921_600_000)
        let millis = Int64((unixMillis + 0.5).rounded(.down))
        func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }
        let days = floorDiv(millis, 86_400_000)
        let ms = millis - days * 86_400_000
        var year: Int64, month: Int64, day: Int64
        if millis >= -12_219_292_800_000 {
            // Gregorian, from 1582-10-15: civil date from days since 1970-01-01 (H. Hinnant,
            // "chrono-Compatible Low-Level Date Algorithms", days_from_civil inverted).
            let z = days + 719_468
            let era = floorDiv(z, 146_097)
            let doe = z - era * 146_097
            let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
            let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
            let mp = (5 * doy + 2) / 153
            day = doy - (153 * mp + 2) / 5 + 1
            month = mp < 10 ? mp + 3 : mp - 9
            year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        } else {
            // Julian, from the Julian day number (Richards' algorithm).
            let c = days + 2_440_588 + 32_082
            let d = floorDiv(4 * c + 3, 1461)
            let e = c - floorDiv(1461 * d, 4)
            let m = floorDiv(5 * e + 2, 153)
            day = e - floorDiv(153 * m + 2, 5) + 1
            month = m + 3 - 12 * floorDiv(m, 10)
            year = d - 4800 + floorDiv(m, 10)
        }
        if year <= 0 { year = 1 - year }   // era year: 0 is 1 BC
        func pad(_ v: Int64, _ width: Int) -> String {
            let digits = String(v)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T" + pad(ms / 3_600_000, 2) + ":"
            + pad(ms / 60_000 % 60, 2) + ":" + pad(ms / 1000 % 60, 2) + "." + pad(ms % 1000, 3) + "Z"
    }
}
