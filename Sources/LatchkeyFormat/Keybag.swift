/// Parameters of the passcode KDF (spec/FORMAT.md §4.1).
public struct KDFParameters: Equatable, Sendable {
    public enum Kind: UInt8, Sendable { case none = 0, scrypt = 1 }

    public var kind: Kind
    /// scrypt cost N = 2^logN.
    public var logN: UInt8
    public var r: UInt32
    public var p: UInt32
    public var salt: [UInt8]

    /// A keychain without a passcode.
    public static let none = KDFParameters(
        kind: .none, logN: 0, r: 0, p: 0, salt: [UInt8](repeating: 0, count: FormatConstants.saltSize))

    /// scrypt cost of new passcodes: N = 2^17, r = 8, p = 1 (128 MiB), OWASP's minimum for
    /// scrypt (spec/SECURITY.md §3). Readers accept any cost within the bounds of §4.1.
    public static let defaultLogN: UInt8 = 17

    public static func scrypt(salt: [UInt8], logN: UInt8 = defaultLogN, r: UInt32 = 8, p: UInt32 = 1) -> KDFParameters {
        KDFParameters(kind: .scrypt, logN: logN, r: r, p: p, salt: salt)
    }

    public var n: UInt64 { UInt64(1) << UInt64(logN) }

    /// Memory scrypt needs for these parameters (128·r·N for V plus 128·r·p for B), and the
    /// explicit ceiling passed to OpenSSL as `maxmem`: that need plus 1 MiB.
    public var maxMemory: UInt64 { 128 * UInt64(r) * n + 128 * UInt64(r) * UInt64(p) + (1 << 20) }

    /// How errors name the fields: the keychain's keybag and a backup's common part hold the
    /// same 32 bytes under their own names.
    public struct FieldNames: Sendable {
        /// Starts every field's name ("keybag " in a keychain header).
        public var prefix: String
        /// What the KDF derives a key from ("passcode", "password").
        public var secret: String

        public static let keychain = FieldNames(prefix: "keybag ", secret: "passcode")
        public static let backup = FieldNames(prefix: "", secret: "password")
    }

    /// The 32 bytes of spec §4.1 (and spec/BACKUP.md §3.1, bytes 72..<104): KDF id, logN, 2
    /// reserved, r, p, 4 reserved, salt.
    public func encode(into w: inout ByteWriter) {
        w.writeInteger(kind.rawValue, as: UInt8.self)
        w.writeInteger(logN, as: UInt8.self)
        w.writeZeros(2)
        w.writeInteger(r, as: UInt32.self)
        w.writeInteger(p, as: UInt32.self)
        w.writeZeros(4)
        w.writeBytes(salt)
    }

    /// Reads and validates the 32 bytes `encode` writes.
    public static func decode(_ r: inout ByteReader, names: FieldNames = .keychain) throws -> KDFParameters {
        let rawKind = try r.readInteger(as: UInt8.self, "\(names.prefix)KDF id")
        guard let kind = Kind(rawValue: rawKind) else {
            throw FormatError.invalidField(field: "\(names.prefix)KDF id", reason: "unknown KDF \(rawKind)")
        }
        let logN = try r.readInteger(as: UInt8.self, "\(names.prefix)scrypt logN")
        try r.readReserved(count: 2, "\(names.prefix)reserved")
        let cost = try r.readInteger(as: UInt32.self, "\(names.prefix)scrypt r")
        let p = try r.readInteger(as: UInt32.self, "\(names.prefix)scrypt p")
        try r.readReserved(count: 4, "\(names.prefix)reserved")
        let salt = try r.readBytes(count: FormatConstants.saltSize, "\(names.prefix)salt")
        let kdf = KDFParameters(kind: kind, logN: logN, r: cost, p: p, salt: salt)
        try kdf.validate(names: names)
        return kdf
    }

    /// Readers refuse parameters beyond these, so a hostile header cannot demand unbounded work
    /// (spec §4.3): logN 10…22, r 1…32, p 1…16, memory at most 1 GiB.
    public func validate(names: FieldNames = .keychain) throws {
        switch kind {
        case .none:
            guard logN == 0, r == 0, p == 0, salt.allSatisfy({ $0 == 0 }) else {
                throw FormatError.invalidField(
                    field: "\(names.prefix)KDF", reason: "parameters must be zero when there is no \(names.secret)")
            }
        case .scrypt:
            guard (10...22).contains(logN), (1...32).contains(r), (1...16).contains(p),
                128 * UInt64(r) * n <= 1 << 30
            else {
                throw FormatError.invalidField(
                    field: "\(names.prefix)KDF",
                    reason: "scrypt parameters out of range (logN 10-22, r 1-32, p 1-16, at most 1 GiB)")
            }
        }
    }
}

/// How a class key is wrapped (spec §4.2).
public enum WrapKind: UInt8, Sendable {
    /// Under the device wrap key alone.
    case device = 1
    /// Under the passcode key (scrypt of the passcode, tangled with the device key).
    case passcode = 2
}

/// One wrapped class key, as a keychain's keybag (spec §4.2) and a backup's keybag
/// (spec/BACKUP.md §3.2) both hold it: u8 protection class, u8 wrap kind, the wrapped key.
/// `Wrap` is the set of wrap kinds the bag allows.
///
/// The type itself puts no requirement on `Wrap`; its extensions do. A generic type with
/// requirements has them checked by the runtime when its metadata is first made, a search of
/// the binary's conformance records that every command opening a keychain would pay.
public struct WrappedClassKey<Wrap> {
    public var protectionClass: ProtectionClass
    public var wrap: Wrap
    /// RFC 3394 wrap of the 32-byte class key: 40 bytes.
    public var wrappedKey: [UInt8]

    public init(protectionClass: ProtectionClass, wrap: Wrap, wrappedKey: [UInt8]) {
        self.protectionClass = protectionClass
        self.wrap = wrap
        self.wrappedKey = wrappedKey
    }
}

extension WrappedClassKey: Equatable where Wrap: Equatable {}
extension WrappedClassKey: Sendable where Wrap: Sendable {}

extension WrappedClassKey where Wrap: RawRepresentable, Wrap.RawValue == UInt8 {
    public func encode(into w: inout ByteWriter) {
        w.writeInteger(protectionClass.rawValue, as: UInt8.self)
        w.writeInteger(wrap.rawValue, as: UInt8.self)
        w.writeBytes(wrappedKey)
    }
}

/// One entry of a keychain's keybag.
public typealias KeybagEntry = WrappedClassKey<WrapKind>

/// The class-key bag: KDF parameters and the wrapped class keys (spec §4).
public struct Keybag: Equatable, Sendable {
    public var kdf: KDFParameters
    public var entries: [KeybagEntry]

    public init(kdf: KDFParameters, entries: [KeybagEntry]) {
        self.kdf = kdf
        self.entries = entries.sorted { $0.protectionClass < $1.protectionClass }
    }

    public var hasPasscode: Bool { kdf.kind == .scrypt }

    public func entry(for pc: ProtectionClass) -> KeybagEntry? { entries.first { $0.protectionClass == pc } }

    public func encode() -> [UInt8] {
        var w = ByteWriter(capacity: FormatConstants.keybagFixedSize + entries.count * FormatConstants.keybagEntrySize)
        kdf.encode(into: &w)
        w.writeInteger(UInt8(entries.count), as: UInt8.self)
        w.writeZeros(1)
        for e in entries { e.encode(into: &w) }
        return w.bytes
    }

    /// Decodes and validates a keybag; every rule of spec §4.3 is checked here.
    public static func decode(_ r: inout ByteReader) throws -> Keybag {
        let kdf = try KDFParameters.decode(&r, names: .keychain)
        let count = Int(try r.readInteger(as: UInt8.self, "keybag entry count"))
        try r.readReserved(count: 1, "keybag reserved")
        var entries: [KeybagEntry] = []
        entries.reserveCapacity(count)
        for _ in 0..<count {
            let rawClass = try r.readInteger(as: UInt8.self, "keybag entry class")
            guard let pc = ProtectionClass(rawValue: rawClass) else {
                throw FormatError.invalidField(
                    field: "keybag entry class", reason: "unknown protection class \(rawClass)")
            }
            guard let wrap = WrapKind(rawValue: try r.readInteger(as: UInt8.self, "keybag entry wrap")) else {
                throw FormatError.invalidField(field: "keybag entry wrap", reason: "unknown wrap kind")
            }
            let wrapped = try r.readBytes(count: FormatConstants.wrappedKeySize, "keybag wrapped key")
            if let last = entries.last, last.protectionClass >= pc {
                throw FormatError.invalidField(
                    field: "keybag entries", reason: "classes must be unique and in ascending order")
            }
            entries.append(KeybagEntry(protectionClass: pc, wrap: wrap, wrappedKey: wrapped))
        }
        let bag = Keybag(kdf: kdf, entries: entries)
        try bag.validateEntries()
        return bag
    }

    public static func decode(_ bytes: [UInt8]) throws -> Keybag {
        var r = ByteReader(bytes)
        let bag = try decode(&r)
        try r.expectEnd("keybag")
        return bag
    }

    /// The class set and wrap kinds must be exactly those of spec §4.2.
    func validateEntries() throws {
        for pc in ProtectionClass.allCases {
            let expected: WrapKind? = {
                if pc == .whenPasscodeSetThisDeviceOnly { return hasPasscode ? .passcode : nil }
                if pc.isAlwaysAvailable { return .device }
                return hasPasscode ? .passcode : .device
            }()
            let actual = entry(for: pc)?.wrap
            guard actual == expected else {
                throw FormatError.invalidField(
                    field: "keybag entries",
                    reason: "class \(pc.code) must be \(expected.map { "wrapped by \($0)" } ?? "absent")")
            }
        }
    }
}
