import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Latchkey
import LatchkeyFormat

/// How an option's text becomes an attribute value.
enum ValueSyntax: Sendable {
    /// The text as a string.
    case text
    /// A whole number.
    case number
    /// A number, or a code kept as a string (Apple's kSecAttrProtocolHTTPS is the string "htps").
    case code
    /// yes/no (also true/false, 1/0) → 1/0.
    case flag
    /// Bytes written in hex (`0a1b…`; `0x` prefix, spaces and colons allowed).
    case hex
    /// An ISO 8601 date (`2026-01-31` or `2026-01-31T12:00:00Z`).
    case date
    /// kSecAttrKeyType: rsa, dsa, ec, ed25519, x25519, or the number.
    case keyType
    /// kSecAttrKeyClass: public, private, symmetric, or 0/1/2.
    case keyClass

    /// A few words for `<value>` in help.
    var valueName: String {
        switch self {
        case .text: return "text"
        case .number: return "number"
        case .code: return "code"
        case .flag: return "yes|no"
        case .hex: return "hex"
        case .date: return "date"
        case .keyType: return "type"
        case .keyClass: return "class"
        }
    }
}

/// One attribute reachable from the command line: its option name, Apple's 4-character code,
/// how its value is written, and the classes that have it (ItemSchema). ITEM/QUERY options
/// (`--account`) and `update`'s new values (`--set-account`) are both built from this table.
struct AttributeOption: Sendable, Hashable {
    /// The option without dashes: `account`.
    let flag: String
    /// Apple's attribute code: `acct`.
    let code: String
    let syntax: ValueSyntax
    let classes: Set<ItemClass>
    /// Apple's constant, for help: `kSecAttrAccount`.
    let constant: String
    let abstract: String
    /// The keychain derives it from the item's data (certificates): queries only.
    var derived = false

    static func == (a: AttributeOption, b: AttributeOption) -> Bool { a.code == b.code && a.flag == b.flag }
    func hash(into hasher: inout Hasher) { hasher.combine(flag) }

    /// `--account-hex` for `--account`: the same attribute given as bytes in hex, for every
    /// text option whose attribute can hold data (kind `blob` in each of its classes: a query
    /// compares the bytes, so `--account-hex 616c696365` finds the account "alice"). Arguments
    /// must be UTF-8 (Support/RawInput.swift); this is how other bytes are given. Nil for the
    /// others.
    var bytesOption: AttributeOption? {
        guard syntax == .text, !flag.hasSuffix("-hex"),
              classes.allSatisfy({ ItemSchema.kind(code, in: $0) == .blob }) else { return nil }
        let head = abstract.prefix { !":,;".contains($0) }
        return AttributeOption(flag: flag + "-hex", code: code, syntax: .hex, classes: classes, constant: constant,
                               abstract: "\(head) as bytes in hex, for a value that is not UTF-8 text", derived: derived)
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
        case .flag:
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
}

extension AttributeOption {
    private static let all4: Set<ItemClass> = [.genericPassword, .internetPassword, .certificate, .key]
    private static let passwords: Set<ItemClass> = [.genericPassword, .internetPassword]

    // Every class.
    static let label = AttributeOption(flag: "label", code: "labl", syntax: .text, classes: all4, constant: "kSecAttrLabel", abstract: "User-visible label")
    static let accessGroup = AttributeOption(flag: "access-group", code: "agrp", syntax: .text, classes: all4, constant: "kSecAttrAccessGroup",
                                             abstract: "Access group; add defaults to the caller's first group, queries see all of the caller's groups")
    static let alias = AttributeOption(flag: "alias", code: "alis", syntax: .text, classes: all4, constant: "kSecAttrAlias", abstract: "Alias, e.g. an e-mail address")
    static let syncViewHint = AttributeOption(flag: "sync-view-hint", code: "vwht", syntax: .text, classes: all4, constant: "kSecAttrSyncViewHint", abstract: "Sync view hint")
    static let tokenID = AttributeOption(flag: "token-id", code: "tkid", syntax: .text, classes: all4, constant: "kSecAttrTokenID", abstract: "Token identifier")

    // Passwords (genp, inet).
    static let account = AttributeOption(flag: "account", code: "acct", syntax: .text, classes: passwords, constant: "kSecAttrAccount", abstract: "Account name")
    static let description = AttributeOption(flag: "description", code: "desc", syntax: .text, classes: passwords, constant: "kSecAttrDescription", abstract: "Description: the kind of item")
    static let comment = AttributeOption(flag: "comment", code: "icmt", syntax: .text, classes: passwords, constant: "kSecAttrComment", abstract: "Comment")
    static let creator = AttributeOption(flag: "creator", code: "crtr", syntax: .code, classes: passwords.union([.key]), constant: "kSecAttrCreator", abstract: "Creator: a number or a 4-character code")
    static let itemType = AttributeOption(flag: "type", code: "type", syntax: .code, classes: passwords, constant: "kSecAttrType", abstract: "Item type: a number or a 4-character code")
    static let isInvisible = AttributeOption(flag: "is-invisible", code: "invi", syntax: .flag, classes: passwords, constant: "kSecAttrIsInvisible", abstract: "Hidden from users")
    static let isNegative = AttributeOption(flag: "is-negative", code: "nega", syntax: .flag, classes: passwords, constant: "kSecAttrIsNegative", abstract: "A placeholder: no valid password exists")
    static let hasCustomIcon = AttributeOption(flag: "has-custom-icon", code: "cusi", syntax: .flag, classes: passwords, constant: "kSecAttrHasCustomIcon", abstract: "Has a custom icon")
    static let protected = AttributeOption(flag: "protected", code: "prot", syntax: .text, classes: passwords, constant: "kSecAttrProtected", abstract: "Protected-data attribute")
    static let scriptCode = AttributeOption(flag: "script-code", code: "scrp", syntax: .number, classes: passwords, constant: "kSecAttrScriptCode", abstract: "Script code")

    // Generic passwords.
    static let service = AttributeOption(flag: "service", code: "svce", syntax: .text, classes: [.genericPassword], constant: "kSecAttrService", abstract: "Service name")
    static let generic = AttributeOption(flag: "generic", code: "gena", syntax: .text, classes: [.genericPassword], constant: "kSecAttrGeneric", abstract: "Application-defined generic attribute")

    // Internet passwords.
    static let securityDomain = AttributeOption(flag: "security-domain", code: "sdmn", syntax: .text, classes: [.internetPassword], constant: "kSecAttrSecurityDomain", abstract: "Security domain or realm")
    static let server = AttributeOption(flag: "server", code: "srvr", syntax: .text, classes: [.internetPassword], constant: "kSecAttrServer", abstract: "Server host name")
    static let `protocol` = AttributeOption(flag: "protocol", code: "ptcl", syntax: .code, classes: [.internetPassword], constant: "kSecAttrProtocol", abstract: "Protocol: a number or a code such as htps, http, ftp, ssh, imap")
    static let authenticationType = AttributeOption(flag: "authentication-type", code: "atyp", syntax: .text, classes: [.internetPassword], constant: "kSecAttrAuthenticationType", abstract: "Authentication type: a code such as form, http, dflt")
    static let port = AttributeOption(flag: "port", code: "port", syntax: .number, classes: [.internetPassword], constant: "kSecAttrPort", abstract: "Port number")
    static let path = AttributeOption(flag: "path", code: "path", syntax: .text, classes: [.internetPassword], constant: "kSecAttrPath", abstract: "Path on the server")

    // Certificates: derived from the DER by the keychain; queries only.
    static let certificateType = AttributeOption(flag: "certificate-type", code: "ctyp", syntax: .number, classes: [.certificate], constant: "kSecAttrCertificateType", abstract: "X.509 version: 1, 2 or 3", derived: true)
    static let certificateEncoding = AttributeOption(flag: "certificate-encoding", code: "cenc", syntax: .number, classes: [.certificate], constant: "kSecAttrCertificateEncoding", abstract: "Encoding: 3 (DER)", derived: true)
    static let subject = AttributeOption(flag: "subject", code: "subj", syntax: .hex, classes: [.certificate], constant: "kSecAttrSubject", abstract: "Subject name, DER in hex", derived: true)
    static let issuer = AttributeOption(flag: "issuer", code: "issr", syntax: .hex, classes: [.certificate], constant: "kSecAttrIssuer", abstract: "Issuer name, DER in hex", derived: true)
    static let serialNumber = AttributeOption(flag: "serial-number", code: "slnr", syntax: .hex, classes: [.certificate], constant: "kSecAttrSerialNumber", abstract: "Serial number in hex", derived: true)
    static let subjectKeyID = AttributeOption(flag: "subject-key-id", code: "skid", syntax: .hex, classes: [.certificate], constant: "kSecAttrSubjectKeyID", abstract: "Subject key identifier in hex", derived: true)
    static let publicKeyHash = AttributeOption(flag: "public-key-hash", code: "pkhh", syntax: .hex, classes: [.certificate], constant: "kSecAttrPublicKeyHash", abstract: "SHA-1 of the public key in hex", derived: true)

    // Keys.
    static let keyClass = AttributeOption(flag: "key-class", code: "kcls", syntax: .keyClass, classes: [.key], constant: "kSecAttrKeyClass", abstract: "Key class: public, private or symmetric")
    static let applicationLabel = AttributeOption(flag: "application-label", code: "klbl", syntax: .hex, classes: [.key], constant: "kSecAttrApplicationLabel", abstract: "Application label in hex (for asymmetric keys, SHA-1 of the public key)")
    static let applicationTag = AttributeOption(flag: "application-tag", code: "atag", syntax: .text, classes: [.key], constant: "kSecAttrApplicationTag", abstract: "Application tag, e.g. com.example.keys.signing")
    static let keyType = AttributeOption(flag: "key-type", code: "type", syntax: .keyType, classes: [.key], constant: "kSecAttrKeyType", abstract: "Key type: rsa, dsa, ec, ed25519, x25519 or a number")
    static let keySizeInBits = AttributeOption(flag: "key-size-in-bits", code: "bsiz", syntax: .number, classes: [.key], constant: "kSecAttrKeySizeInBits", abstract: "Key size in bits")
    static let effectiveKeySize = AttributeOption(flag: "effective-key-size", code: "esiz", syntax: .number, classes: [.key], constant: "kSecAttrEffectiveKeySize", abstract: "Effective key size in bits")
    static let startDate = AttributeOption(flag: "start-date", code: "sdat", syntax: .date, classes: [.key], constant: "kSecAttrStartDate", abstract: "Start of validity, ISO 8601")
    static let endDate = AttributeOption(flag: "end-date", code: "edat", syntax: .date, classes: [.key], constant: "kSecAttrEndDate", abstract: "End of validity, ISO 8601")
    static let isPermanent = AttributeOption(flag: "is-permanent", code: "perm", syntax: .flag, classes: [.key], constant: "kSecAttrIsPermanent", abstract: "Permanent key")
    static let isPrivate = AttributeOption(flag: "is-private", code: "priv", syntax: .flag, classes: [.key], constant: "kSecAttrIsPrivate", abstract: "Private key")
    static let isModifiable = AttributeOption(flag: "is-modifiable", code: "modi", syntax: .flag, classes: [.key], constant: "kSecAttrIsModifiable", abstract: "Modifiable")
    static let isSensitive = AttributeOption(flag: "is-sensitive", code: "sens", syntax: .flag, classes: [.key], constant: "kSecAttrIsSensitive", abstract: "Sensitive")
    static let wasAlwaysSensitive = AttributeOption(flag: "was-always-sensitive", code: "asen", syntax: .flag, classes: [.key], constant: "kSecAttrWasAlwaysSensitive", abstract: "Always was sensitive")
    static let isExtractable = AttributeOption(flag: "is-extractable", code: "extr", syntax: .flag, classes: [.key], constant: "kSecAttrIsExtractable", abstract: "Extractable")
    static let wasNeverExtractable = AttributeOption(flag: "was-never-extractable", code: "next", syntax: .flag, classes: [.key], constant: "kSecAttrWasNeverExtractable", abstract: "Never was extractable")
    static let canEncrypt = AttributeOption(flag: "can-encrypt", code: "encr", syntax: .flag, classes: [.key], constant: "kSecAttrCanEncrypt", abstract: "Usable to encrypt")
    static let canDecrypt = AttributeOption(flag: "can-decrypt", code: "decr", syntax: .flag, classes: [.key], constant: "kSecAttrCanDecrypt", abstract: "Usable to decrypt")
    static let canDerive = AttributeOption(flag: "can-derive", code: "drve", syntax: .flag, classes: [.key], constant: "kSecAttrCanDerive", abstract: "Usable to derive keys")
    static let canSign = AttributeOption(flag: "can-sign", code: "sign", syntax: .flag, classes: [.key], constant: "kSecAttrCanSign", abstract: "Usable to sign")
    static let canVerify = AttributeOption(flag: "can-verify", code: "vrfy", syntax: .flag, classes: [.key], constant: "kSecAttrCanVerify", abstract: "Usable to verify")
    static let canWrap = AttributeOption(flag: "can-wrap", code: "wrap", syntax: .flag, classes: [.key], constant: "kSecAttrCanWrap", abstract: "Usable to wrap keys")
    static let canUnwrap = AttributeOption(flag: "can-unwrap", code: "unwp", syntax: .flag, classes: [.key], constant: "kSecAttrCanUnwrap", abstract: "Usable to unwrap keys")
    static let canSignRecover = AttributeOption(flag: "can-sign-recover", code: "snrc", syntax: .flag, classes: [.key], constant: "kSecAttrCanSignRecover", abstract: "Usable to sign with recovery")
    static let canVerifyRecover = AttributeOption(flag: "can-verify-recover", code: "vyrc", syntax: .flag, classes: [.key], constant: "kSecAttrCanVerifyRecover", abstract: "Usable to verify with recovery")

    /// Every attribute option, in help order.
    static let all: [AttributeOption] = [
        label, accessGroup, alias, syncViewHint, tokenID,
        account, description, comment, creator, itemType, isInvisible, isNegative, hasCustomIcon, protected, scriptCode,
        service, generic,
        securityDomain, server, `protocol`, authenticationType, port, path,
        certificateType, certificateEncoding, subject, issuer, serialNumber, subjectKeyID, publicKeyHash,
        keyClass, applicationLabel, applicationTag, keyType, keySizeInBits, effectiveKeySize, startDate, endDate,
        isPermanent, isPrivate, isModifiable, isSensitive, wasAlwaysSensitive, isExtractable, wasNeverExtractable,
        canEncrypt, canDecrypt, canDerive, canSign, canVerify, canWrap, canUnwrap, canSignRecover, canVerifyRecover,
    ]

    /// The hex forms (`bytesOption`) of the options of `all` that have one.
    static let allBytes: [AttributeOption] = all.compactMap(\.bytesOption)

    // The hex forms, for the option groups.
    static let labelBytes = label.bytesOption!
    static let aliasBytes = alias.bytesOption!
    static let accountBytes = account.bytesOption!
    static let descriptionBytes = description.bytesOption!
    static let commentBytes = comment.bytesOption!
    static let protectedBytes = protected.bytesOption!
    static let serviceBytes = service.bytesOption!
    static let genericBytes = generic.bytesOption!
    static let securityDomainBytes = securityDomain.bytesOption!
    static let serverBytes = server.bytesOption!
    static let authenticationTypeBytes = authenticationType.bytesOption!
    static let pathBytes = path.bytesOption!
    static let applicationTagBytes = applicationTag.bytesOption!
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
