import CSystemdBus

/// A message received on the bus: a method call to answer, read by sd-bus.
public final class DBusMessage: @unchecked Sendable {
    let raw: OpaquePointer

    init(_ raw: OpaquePointer) {
        self.raw = raw
        sd_bus_message_ref(raw)
    }

    deinit { sd_bus_message_unref(raw) }

    public var path: String { sd_bus_message_get_path(raw).map { String(cString: $0) } ?? "" }
    public var interface: String? { sd_bus_message_get_interface(raw).map { String(cString: $0) } }
    public var member: String { sd_bus_message_get_member(raw).map { String(cString: $0) } ?? "" }
    public var sender: String? { sd_bus_message_get_sender(raw).map { String(cString: $0) } }
    public var signature: String { sd_bus_message_get_signature(raw, 1).map { String(cString: $0) } ?? "" }

    /// Whether this is a method call (signals and replies are not answered).
    public var isMethodCall: Bool {
        var type: UInt8 = 0
        return sd_bus_message_get_type(raw, &type) >= 0 && type == UInt8(SD_BUS_MESSAGE_METHOD_CALL)
    }

    /// The effective user id of the process that sent the message, as the bus knows it.
    public func senderUID() -> uid_t? {
        var creds: OpaquePointer?
        guard sd_bus_query_sender_creds(raw, UInt64(SD_BUS_CREDS_EUID), &creds) >= 0, let creds else {
            return nil
        }
        defer { sd_bus_creds_unref(creds) }
        var uid: uid_t = 0
        return sd_bus_creds_get_euid(creds, &uid) >= 0 ? uid : nil
    }

    /// Every argument of the message, in order.
    /// - Throws: `DBusError.invalidArgs` for a type this binding does not take (a file
    ///   descriptor) or a message sd-bus cannot read.
    public func arguments() throws -> [DBusValue] {
        sd_bus_message_rewind(raw, 1)
        var out: [DBusValue] = []
        while let v = try readNext(depth: 0) { out.append(v) }
        return out
    }

    /// The next value at the current level, or nil at its end.
    private func readNext(depth: Int) throws -> DBusValue? {
        // D-Bus itself limits nesting to 64 (32 arrays and 32 structures); sd-bus checks it on
        // receipt. This bound only keeps the recursion here finite whatever happens.
        guard depth < 80 else { throw DBusError.invalidArgs("the message nests too deeply") }
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        let r = sd_bus_message_peek_type(raw, &type, &contents)
        guard r > 0 else {
            if r < 0 { throw DBusError.invalidArgs("the message cannot be read (\(r))") }
            return nil
        }
        let inner = contents.map { String(cString: $0) } ?? ""
        switch UInt8(bitPattern: type) {
        case UInt8(ascii: "y"):
            var v: UInt8 = 0
            try check(sd_bus_message_read_basic(raw, type, &v))
            return .byte(v)
        case UInt8(ascii: "b"):
            var v: Int32 = 0
            try check(sd_bus_message_read_basic(raw, type, &v))
            return .bool(v != 0)
        case UInt8(ascii: "n"):
            var v: Int16 = 0
            try check(sd_bus_message_read_basic(raw, type, &v))
            return .int32(Int32(v))
        case UInt8(ascii: "q"):
            var v: UInt16 = 0
            try check(sd_bus_message_read_basic(raw, type, &v))
            return .uint32(UInt32(v))
        case UInt8(ascii: "i"):
            var v: Int32 = 0
            try check(sd_bus_message_read_basic(raw, type, &v))
            return .int32(v)
        case UInt8(ascii: "u"):
            var v: UInt32 = 0
            try check(sd_bus_message_read_basic(raw, type, &v))
            return .uint32(v)
        case UInt8(ascii: "x"):
            var v: Int64 = 0
            try check(sd_bus_message_read_basic(raw, type, &v))
            return .int64(v)
        case UInt8(ascii: "t"):
            var v: UInt64 = 0
            try check(sd_bus_message_read_basic(raw, type, &v))
            return .uint64(v)
        case UInt8(ascii: "d"):
            var v: Double = 0
            try check(sd_bus_message_read_basic(raw, type, &v))
            return .double(v)
        case UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"):
            var p: UnsafePointer<CChar>?
            try check(sd_bus_message_read_basic(raw, type, &p))
            let s = p.map { String(cString: $0) } ?? ""
            switch UInt8(bitPattern: type) {
            case UInt8(ascii: "s"): return .string(s)
            case UInt8(ascii: "o"): return .objectPath(s)
            default: return .signature(s)
            }
        case UInt8(ascii: "a"):
            if inner == "y" {
                var p: UnsafeRawPointer?
                var size = 0
                try check(sd_bus_message_read_array(raw, CChar(UInt8(ascii: "y")), &p, &size))
                guard let p, size > 0 else { return .bytes([]) }
                return .bytes(Array(UnsafeRawBufferPointer(start: p, count: size)))
            }
            try check(sd_bus_message_enter_container(raw, type, inner))
            defer { sd_bus_message_exit_container(raw) }
            if inner.hasPrefix("{") {
                let entry = String(inner.dropFirst().dropLast())
                let key = String(entry.prefix(1))
                var entries: [(DBusValue, DBusValue)] = []
                while true {
                    let e = sd_bus_message_enter_container(raw, CChar(UInt8(ascii: "e")), entry)
                    if e == 0 { break }
                    try check(e)
                    guard let k = try readNext(depth: depth + 1), let v = try readNext(depth: depth + 1) else {
                        throw DBusError.invalidArgs("a dictionary entry is incomplete")
                    }
                    try check(sd_bus_message_exit_container(raw))
                    entries.append((k, v))
                }
                return .dict(key: key, value: String(entry.dropFirst()), entries)
            }
            var items: [DBusValue] = []
            while let v = try readNext(depth: depth + 1) { items.append(v) }
            return .array(element: inner, items)
        case UInt8(ascii: "r"):
            try check(sd_bus_message_enter_container(raw, type, inner))
            defer { sd_bus_message_exit_container(raw) }
            var fields: [DBusValue] = []
            while let v = try readNext(depth: depth + 1) { fields.append(v) }
            return .structure(fields)
        case UInt8(ascii: "v"):
            try check(sd_bus_message_enter_container(raw, type, inner))
            defer { sd_bus_message_exit_container(raw) }
            guard let v = try readNext(depth: depth + 1) else { throw DBusError.invalidArgs("an empty variant") }
            return .variant(v)
        default:
            throw DBusError.invalidArgs(
                "arguments of type '\(Character(UnicodeScalar(UInt8(bitPattern: type))))' are not taken")
        }
    }

    private func check(_ r: Int32) throws {
        if r < 0 { throw DBusError.invalidArgs("the message cannot be read (\(r))") }
    }
}

/// An error to answer a method call with: a D-Bus error name and a message for a person.
public struct DBusError: Error, Sendable, CustomStringConvertible {
    public var name: String
    public var message: String

    public init(_ name: String, _ message: String) {
        self.name = name
        self.message = message
    }

    public var description: String { "\(name): \(message)" }

    public static func invalidArgs(_ message: String) -> DBusError {
        DBusError("org.freedesktop.DBus.Error.InvalidArgs", message)
    }
    public static func failed(_ message: String) -> DBusError {
        DBusError("org.freedesktop.DBus.Error.Failed", message)
    }
    public static func unknownMethod(_ message: String) -> DBusError {
        DBusError("org.freedesktop.DBus.Error.UnknownMethod", message)
    }
    public static func unknownObject(_ message: String) -> DBusError {
        DBusError("org.freedesktop.DBus.Error.UnknownObject", message)
    }
    public static func notSupported(_ message: String) -> DBusError {
        DBusError("org.freedesktop.DBus.Error.NotSupported", message)
    }
    public static func accessDenied(_ message: String) -> DBusError {
        DBusError("org.freedesktop.DBus.Error.AccessDenied", message)
    }
    public static func limitsExceeded(_ message: String) -> DBusError {
        DBusError("org.freedesktop.DBus.Error.LimitsExceeded", message)
    }
}
