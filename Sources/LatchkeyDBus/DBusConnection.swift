import CSystemdBus

#if canImport(Glibc)
    import Glibc
#endif

/// A connection to a message bus through sd-bus (libsystemd): owning a name, answering the
/// method calls to a tree of objects, sending signals. One thread uses it: the one that runs
/// `run(wake:)`.
public final class DBusConnection: @unchecked Sendable {
    private var bus: OpaquePointer?
    private var slots: [OpaquePointer] = []
    private var handlers: [(DBusMessage) -> Bool] = []

    /// The session bus of `DBUS_SESSION_BUS_ADDRESS` (sd-bus falls back to
    /// `$XDG_RUNTIME_DIR/bus`), or the bus at `address`.
    /// - Throws: `DBusError.failed` saying why no bus could be reached.
    public init(address: String? = nil) throws {
        var b: OpaquePointer?
        if let address {
            var r = sd_bus_new(&b)
            if r >= 0 { r = sd_bus_set_address(b, address) }
            if r >= 0 { r = sd_bus_set_bus_client(b, 1) }
            if r >= 0 { r = sd_bus_start(b) }
            guard r >= 0 else {
                if let b { sd_bus_flush_close_unref(b) }
                throw DBusError.failed("cannot connect to the bus at \(address): \(Self.errnoText(r))")
            }
        } else {
            let r = sd_bus_open_user(&b)
            guard r >= 0 else {
                throw DBusError.failed(
                    "cannot connect to the session bus (DBUS_SESSION_BUS_ADDRESS): \(Self.errnoText(r))")
            }
        }
        bus = b
    }

    deinit {
        for s in slots { sd_bus_slot_unref(s) }
        if let bus { sd_bus_flush_close_unref(bus) }
    }

    static func errnoText(_ r: Int32) -> String { String(cString: strerror(-r)) }

    /// The result of asking for a well-known name.
    public enum NameResult: Sendable, Equatable {
        case owned
        /// Another connection owns the name and would not give it up.
        case taken
    }

    /// Asks for `name`, without queueing: taken when another connection owns it (and,
    /// with `replace`, did not allow replacement).
    public func requestName(_ name: String, replace: Bool = false) throws -> NameResult {
        var flags: UInt64 = 0
        if replace { flags |= UInt64(SD_BUS_NAME_REPLACE_EXISTING) }
        let r = sd_bus_request_name(bus, name, flags)
        if r == -EEXIST { return .taken }
        guard r >= 0 else { throw DBusError.failed("cannot own the name \(name) on the bus: \(Self.errnoText(r))") }
        return .owned
    }

    /// The unique name of this connection on the bus (":1.42").
    public var uniqueName: String {
        var p: UnsafePointer<CChar>?
        return sd_bus_get_unique_name(bus, &p) >= 0 ? p.map { String(cString: $0) } ?? "" : ""
    }

    /// Sends every method call to an object at or under `prefix` to `handler`, which answers it
    /// (with `reply` or `replyError`) and returns true, or returns false to let sd-bus answer
    /// that no such method or object exists.
    public func handle(under prefix: String, _ handler: @escaping (DBusMessage) -> Bool) throws {
        handlers.append(handler)
        var slot: OpaquePointer?
        let box = Unmanaged.passUnretained(self).toOpaque()
        // The userdata names the connection, which tries its handlers in order: one C callback
        // serves every prefix.
        let r = sd_bus_add_fallback(
            bus, &slot, prefix,
            { m, userdata, _ in
                guard let m, let userdata else { return 0 }
                let connection = Unmanaged<DBusConnection>.fromOpaque(userdata).takeUnretainedValue()
                return connection.dispatch(DBusMessage(m)) ? 1 : 0
            }, box)
        guard r >= 0, let slot else { throw DBusError.failed("cannot serve \(prefix): \(Self.errnoText(r))") }
        slots.append(slot)
    }

    /// Calls `handler` with the unique name of each connection that leaves the bus (the bus's
    /// NameOwnerChanged signal for a unique name whose new owner is empty).
    public func watchDisconnects(_ handler: @escaping (String) -> Void) throws {
        disconnectHandler = handler
        var slot: OpaquePointer?
        let box = Unmanaged.passUnretained(self).toOpaque()
        let r = sd_bus_match_signal(
            bus, &slot, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged",
            { m, userdata, _ in
                guard let m, let userdata else { return 0 }
                let connection = Unmanaged<DBusConnection>.fromOpaque(userdata).takeUnretainedValue()
                let message = DBusMessage(m)
                if let args = try? message.arguments(), args.count == 3, let name = args[0].stringValue,
                    name.hasPrefix(":"), args[2].stringValue == ""
                {
                    connection.disconnectHandler?(name)
                }
                return 0
            }, box)
        guard r >= 0, let slot else { throw DBusError.failed("cannot watch the bus's clients: \(Self.errnoText(r))") }
        slots.append(slot)
    }

    private var disconnectHandler: ((String) -> Void)?

    private func dispatch(_ message: DBusMessage) -> Bool {
        for h in handlers where h(message) { return true }
        return false
    }

    /// Answers `call` with `values`.
    public func reply(to call: DBusMessage, _ values: [DBusValue]) {
        var m: OpaquePointer?
        guard sd_bus_message_new_method_return(call.raw, &m) >= 0, let m else { return }
        defer { sd_bus_message_unref(m) }
        for v in values where Self.append(v, to: m) < 0 {
            replyError(to: call, .failed("the answer could not be written"))
            return
        }
        sd_bus_send(bus, m, nil)
    }

    /// Answers `call` with an error.
    public func replyError(to call: DBusMessage, _ error: DBusError) {
        error.name.withCString { name in
            error.message.withCString { text in
                var e = sd_bus_error(name: name, message: text, _need_free: 0)
                _ = sd_bus_reply_method_error(call.raw, &e)
            }
        }
    }

    /// Sends the signal `interface.member` from the object at `path`.
    public func emitSignal(path: String, interface: String, member: String, _ values: [DBusValue]) {
        var m: OpaquePointer?
        guard sd_bus_message_new_signal(bus, &m, path, interface, member) >= 0, let m else { return }
        defer { sd_bus_message_unref(m) }
        for v in values where Self.append(v, to: m) < 0 { return }
        sd_bus_send(bus, m, nil)
    }

    /// Answers calls and sends what is queued until the connection ends (returns then), calling
    /// `onWake` whenever `wake` (a pipe's read end, or -1) becomes readable, after draining it.
    public func run(wake: Int32 = -1, onWake: () -> Void = {}) throws {
        while true {
            while true {
                let r = sd_bus_process(bus, nil)
                if r < 0 {
                    if r == -ECONNRESET || r == -ENOTCONN { return }
                    throw DBusError.failed("the bus connection failed: \(Self.errnoText(r))")
                }
                if r == 0 { break }
            }
            let fd = sd_bus_get_fd(bus)
            guard fd >= 0 else { return }
            var fds = [
                pollfd(fd: fd, events: Int16(truncatingIfNeeded: sd_bus_get_events(bus)), revents: 0),
                pollfd(fd: wake, events: Int16(POLLIN), revents: 0)
            ]
            var until: UInt64 = 0
            var timeout: Int32 = -1
            if sd_bus_get_timeout(bus, &until) >= 0, until != UInt64.max {
                var now = timespec()
                clock_gettime(CLOCK_MONOTONIC, &now)
                let nowUsec = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
                timeout = until <= nowUsec ? 0 : Int32(min((until - nowUsec + 999) / 1000, 60_000))
            }
            let n = poll(&fds, nfds_t(wake >= 0 ? 2 : 1), timeout)
            if n < 0 && errno != EINTR { throw DBusError.failed("poll failed: \(String(cString: strerror(errno)))") }
            if wake >= 0, fds[1].revents & Int16(POLLIN) != 0 {
                var buffer = [UInt8](repeating: 0, count: 64)
                _ = read(wake, &buffer, buffer.count)
                onWake()
            }
            if fds[0].revents & Int16(POLLHUP | POLLERR) != 0 && fds[0].revents & Int16(POLLIN) == 0 { return }
        }
    }

    /// Writes `value` into `m`; sd-bus's result (negative: failed).
    static func append(_ value: DBusValue, to m: OpaquePointer) -> Int32 {
        func basic<T>(_ type: UInt8, _ v: T) -> Int32 {
            var v = v
            return sd_bus_message_append_basic(m, CChar(bitPattern: type), &v)
        }
        func container(_ type: UInt8, _ contents: String, _ body: () -> Int32) -> Int32 {
            var r = sd_bus_message_open_container(m, CChar(bitPattern: type), contents)
            guard r >= 0 else { return r }
            r = body()
            guard r >= 0 else { return r }
            return sd_bus_message_close_container(m)
        }
        switch value {
        case .byte(let v): return basic(UInt8(ascii: "y"), v)
        case .bool(let v): return basic(UInt8(ascii: "b"), Int32(v ? 1 : 0))
        case .int32(let v): return basic(UInt8(ascii: "i"), v)
        case .uint32(let v): return basic(UInt8(ascii: "u"), v)
        case .int64(let v): return basic(UInt8(ascii: "x"), v)
        case .uint64(let v): return basic(UInt8(ascii: "t"), v)
        case .double(let v): return basic(UInt8(ascii: "d"), v)
        case .string(let s), .objectPath(let s), .signature(let s):
            let type: UInt8 =
                switch value {
                case .string: UInt8(ascii: "s")
                case .objectPath: UInt8(ascii: "o")
                default: UInt8(ascii: "g")
                }
            // D-Bus strings hold no NUL; one would end the string early, so it is refused.
            guard !s.utf8.contains(0) else { return -EINVAL }
            return s.withCString { sd_bus_message_append_basic(m, CChar(bitPattern: type), $0) }
        case .bytes(let b):
            return b.withUnsafeBytes {
                sd_bus_message_append_array(m, CChar(UInt8(ascii: "y")), $0.baseAddress, b.count)
            }
        case .array(let element, let items):
            return container(UInt8(ascii: "a"), element) {
                for v in items {
                    let r = append(v, to: m)
                    if r < 0 { return r }
                }
                return 0
            }
        case .dict(let k, let v, let entries):
            return container(UInt8(ascii: "a"), "{" + k + v + "}") {
                for (key, val) in entries {
                    let r = container(UInt8(ascii: "e"), k + v) {
                        let r = append(key, to: m)
                        return r < 0 ? r : append(val, to: m)
                    }
                    if r < 0 { return r }
                }
                return 0
            }
        case .structure(let fields):
            return container(UInt8(ascii: "r"), fields.map(\.signature).joined()) {
                for f in fields {
                    let r = append(f, to: m)
                    if r < 0 { return r }
                }
                return 0
            }
        case .variant(let inner):
            return container(UInt8(ascii: "v"), inner.signature) { append(inner, to: m) }
        }
    }
}
