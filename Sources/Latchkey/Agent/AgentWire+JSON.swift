#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LatchkeyFormat

// Requests and answers written and read by hand: the Codable path (even with AgentJSON's own
// coders) spends tens of microseconds per message in dynamic casts and containers. The JSON is
// the same one the Codable conformances in AgentWire.swift describe; AgentJSONTests compare
// the two. Rare payloads (status, info, verify) still go through Codable.

extension JSONWriter {
    mutating func begin() { out.append(UInt8(ascii: "{")) }
    mutating func end() { out.append(UInt8(ascii: "}")) }

    /// A member name; `first` tracks the comma.
    mutating func key(_ name: String, _ first: inout Bool) {
        if !first { out.append(UInt8(ascii: ",")) }
        first = false
        string(name)
        out.append(UInt8(ascii: ":"))
    }

    mutating func bytes(_ d: Data) { string(d.base64EncodedString()) }
    mutating func bytes(_ d: [UInt8]) { string(Data(d).base64EncodedString()) }

    /// A Codable value through AgentJSON's encoder.
    mutating func encodable<T: Encodable>(_ v: T) throws { out.append(contentsOf: try AgentJSONEncoder().encode(v)) }
}

/// Reads members of a JSON object, with the errors of a malformed request.
struct JSONObject {
    let m: [String: JSONValue]
    let what: String

    init(_ v: JSONValue, _ what: String) throws {
        guard case .object(let m) = v else { throw JSONObject.bad("\(what) is not an object") }
        self.m = m
        self.what = what
    }

    static func bad(_ s: String) -> DecodingError { .dataCorrupted(.init(codingPath: [], debugDescription: s)) }

    func has(_ k: String) -> Bool {
        if let v = m[k], case .null = v { return false }
        return m[k] != nil
    }

    func string(_ k: String) throws -> String? {
        guard has(k) else { return nil }
        guard case .string(let s) = m[k]! else { throw JSONObject.bad("\(what).\(k) is not a string") }
        return s
    }

    func bool(_ k: String) throws -> Bool? {
        guard has(k) else { return nil }
        guard case .bool(let b) = m[k]! else { throw JSONObject.bad("\(what).\(k) is not a boolean") }
        return b
    }

    func number<T: LosslessStringConvertible>(_ k: String, _ t: T.Type) throws -> T? {
        guard has(k) else { return nil }
        guard case .number(let s) = m[k]!, let v = T(s) else { throw JSONObject.bad("\(what).\(k) is not a \(t)") }
        return v
    }

    func data(_ k: String) throws -> Data? {
        guard let s = try string(k) else { return nil }
        guard let d = Data(base64Encoded: s) else { throw JSONObject.bad("\(what).\(k) is not base64") }
        return d
    }

    func object(_ k: String) throws -> JSONObject? {
        guard has(k) else { return nil }
        return try JSONObject(m[k]!, "\(what).\(k)")
    }

    func array(_ k: String) throws -> [JSONValue]? {
        guard has(k) else { return nil }
        guard case .array(let a) = m[k]! else { throw JSONObject.bad("\(what).\(k) is not an array") }
        return a
    }

    func need<T>(_ v: T?, _ k: String) throws -> T {
        guard let v else { throw JSONObject.bad("\(what) has no '\(k)'") }
        return v
    }

    /// A Codable value through AgentJSON's decoder.
    func decodable<T: Decodable>(_ k: String, _ t: T.Type) throws -> T? {
        guard has(k) else { return nil }
        return try AgentJSONDecoder().decode(t, from: m[k]!)
    }
}

extension AgentJSONDecoder {
    func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        var w = JSONWriter()
        w.value(value)
        return try decode(type, from: w.out)
    }
}

extension JSONWriter {
    /// Writes a parsed value back (for the rare Codable payloads).
    mutating func value(_ v: JSONValue) {
        switch v {
        case .null: raw("null")
        case .bool(let b): raw(b ? "true" : "false")
        case .number(let n): raw(n)
        case .string(let s): string(s)
        case .array(let a):
            out.append(UInt8(ascii: "["))
            for (i, x) in a.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                value(x)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let m):
            begin()
            var first = true
            for (k, x) in m {
                key(k, &first)
                value(x)
            }
            end()
        }
    }
}

// MARK: Pieces

extension WireValue {
    func write(_ w: inout JSONWriter) {
        w.begin()
        var first = true
        switch value {
        case .string(let s): w.key("s", &first); w.string(s)
        case .data(let d): w.key("d", &first); w.bytes(d)
        case .integer(let i): w.key("i", &first); w.raw(String(i))
        case .date(let t): w.key("t", &first); w.raw(String(t.bitPattern))
        }
        w.end()
    }

    init(json: JSONValue) throws {
        let o = try JSONObject(json, "an attribute value")
        guard o.m.count == 1, let (k, _) = o.m.first else {
            throw JSONObject.bad("an attribute value is an object with exactly one of s, d, i, t")
        }
        switch k {
        case "s": value = .string(try o.need(try o.string("s"), "s"))
        case "d": value = .data([UInt8](try o.need(try o.data("d"), "d")))
        case "i": value = .integer(try o.need(try o.number("i", Int64.self), "i"))
        case "t": value = .date(Double(bitPattern: try o.need(try o.number("t", UInt64.self), "t")))
        default: throw JSONObject.bad("an attribute value is an object with exactly one of s, d, i, t")
        }
    }
}

func writeAttributes(_ a: WireAttributes, _ w: inout JSONWriter) {
    w.begin()
    var first = true
    for (k, v) in a {
        w.key(k, &first)
        v.write(&w)
    }
    w.end()
}

func readAttributes(_ v: JSONValue?) throws -> WireAttributes? {
    guard let v else { return nil }
    if case .null = v { return nil }
    let o = try JSONObject(v, "attributes")
    var out: WireAttributes = [:]
    out.reserveCapacity(o.m.count)
    for (k, x) in o.m { out[k] = try WireValue(json: x) }
    return out
}

extension WireCaller {
    func write(_ w: inout JSONWriter) {
        w.begin()
        var first = true
        if let a = applicationIdentifier { w.key("applicationIdentifier", &first); w.string(a) }
        w.key("keychainAccessGroups", &first)
        w.out.append(UInt8(ascii: "["))
        for (i, g) in keychainAccessGroups.enumerated() {
            if i > 0 { w.out.append(UInt8(ascii: ",")) }
            w.string(g)
        }
        w.out.append(UInt8(ascii: "]"))
        if !applicationGroups.isEmpty {
            w.key("applicationGroups", &first)
            w.out.append(UInt8(ascii: "["))
            for (i, g) in applicationGroups.enumerated() {
                if i > 0 { w.out.append(UInt8(ascii: ",")) }
                w.string(g)
            }
            w.out.append(UInt8(ascii: "]"))
        }
        w.end()
    }

    init(json: JSONObject) throws {
        func strings(_ name: String) throws -> [String] {
            try (json.array(name) ?? []).map {
                guard case .string(let s) = $0 else { throw JSONObject.bad("\(name) holds strings") }
                return s
            }
        }
        applicationIdentifier = try json.string("applicationIdentifier")
        keychainAccessGroups = try strings("keychainAccessGroups")
        applicationGroups = try strings("applicationGroups")
    }
}

extension WireQuery {
    func write(_ w: inout JSONWriter) {
        w.begin()
        var first = true
        w.key("itemClass", &first); w.string(itemClass)
        w.key("attributes", &first); writeAttributes(attributes, &w)
        if let p = protection { w.key("protection", &first); w.string(p) }
        if let c = caseInsensitive { w.key("caseInsensitive", &first); w.raw(c ? "true" : "false") }
        if let s = synchronizable { w.key("synchronizable", &first); w.string(s) }
        if let r = persistentRef { w.key("persistentRef", &first); w.bytes(r) }
        w.end()
    }

    init(json o: JSONObject) throws {
        itemClass = try o.need(try o.string("itemClass"), "itemClass")
        attributes = try o.need(try readAttributes(o.m["attributes"]), "attributes")
        protection = try o.string("protection")
        caseInsensitive = try o.bool("caseInsensitive")
        synchronizable = try o.string("synchronizable")
        persistentRef = try o.data("persistentRef")
    }
}

extension WireIdentityQuery {
    func write(_ w: inout JSONWriter) {
        w.begin()
        var first = true
        w.key("attributes", &first); writeAttributes(attributes, &w)
        if let p = protection { w.key("protection", &first); w.string(p) }
        if let c = caseInsensitive { w.key("caseInsensitive", &first); w.raw(c ? "true" : "false") }
        if let s = synchronizable { w.key("synchronizable", &first); w.string(s) }
        if let r = persistentRef { w.key("persistentRef", &first); w.bytes(r) }
        w.end()
    }

    init(json o: JSONObject) throws {
        attributes = try o.need(try readAttributes(o.m["attributes"]), "attributes")
        protection = try o.string("protection")
        caseInsensitive = try o.bool("caseInsensitive")
        synchronizable = try o.string("synchronizable")
        persistentRef = try o.data("persistentRef")
    }
}

extension WireNewItem {
    func write(_ w: inout JSONWriter) {
        w.begin()
        var first = true
        w.key("itemClass", &first); w.string(itemClass)
        w.key("attributes", &first); writeAttributes(attributes, &w)
        w.key("data", &first); w.bytes(data)
        if let p = protection { w.key("protection", &first); w.string(p) }
        if let u = requiresUserPresence { w.key("requiresUserPresence", &first); w.raw(u ? "true" : "false") }
        w.end()
    }

    init(json o: JSONObject) throws {
        itemClass = try o.need(try o.string("itemClass"), "itemClass")
        attributes = try o.need(try readAttributes(o.m["attributes"]), "attributes")
        data = try o.need(try o.data("data"), "data")
        protection = try o.string("protection")
        requiresUserPresence = try o.bool("requiresUserPresence")
    }
}

extension WireItem {
    func write(_ w: inout JSONWriter) {
        w.begin()
        var first = true
        w.key("itemClass", &first); w.string(itemClass)
        w.key("attributes", &first); writeAttributes(attributes, &w)
        w.key("data", &first); w.bytes(data)
        w.key("protection", &first); w.string(protection)
        w.key("persistentRef", &first); w.bytes(persistentRef)
        if let u = requiresUserPresence { w.key("requiresUserPresence", &first); w.raw(u ? "true" : "false") }
        w.end()
    }

    init(json o: JSONObject) throws {
        itemClass = try o.need(try o.string("itemClass"), "itemClass")
        attributes = try o.need(try readAttributes(o.m["attributes"]), "attributes")
        data = try o.need(try o.data("data"), "data")
        protection = try o.need(try o.string("protection"), "protection")
        persistentRef = try o.need(try o.data("persistentRef"), "persistentRef")
        requiresUserPresence = try o.bool("requiresUserPresence")
    }
}

extension WireIdentity {
    func write(_ w: inout JSONWriter) {
        w.begin()
        var first = true
        w.key("certificate", &first); certificate.write(&w)
        w.key("privateKey", &first); privateKey.write(&w)
        w.end()
    }

    init(json o: JSONObject) throws {
        certificate = try WireItem(json: try o.need(try o.object("certificate"), "certificate"))
        privateKey = try WireItem(json: try o.need(try o.object("privateKey"), "privateKey"))
    }
}

func writeList<T>(_ xs: [T], _ w: inout JSONWriter, _ each: (T, inout JSONWriter) -> Void) {
    w.out.append(UInt8(ascii: "["))
    for (i, x) in xs.enumerated() {
        if i > 0 { w.out.append(UInt8(ascii: ",")) }
        each(x, &w)
    }
    w.out.append(UInt8(ascii: "]"))
}

func readList<T>(_ a: [JSONValue]?, _ what: String, _ each: (JSONObject) throws -> T) throws -> [T]? {
    try a.map { try $0.map { try each(try JSONObject($0, what)) } }
}

// MARK: Messages

extension AgentRequest {
    func encoded() throws -> [UInt8] {
        var w = JSONWriter()
        w.begin()
        var f = true
        w.key("v", &f); w.raw(String(v))
        w.key("op", &f); w.string(op)
        if let x = keychain { w.key("keychain", &f); w.string(x) }
        if let x = device { w.key("device", &f); w.string(x) }
        if let x = caller { w.key("caller", &f); x.write(&w) }
        if let x = query { w.key("query", &f); x.write(&w) }
        if let x = identityQuery { w.key("identityQuery", &f); x.write(&w) }
        if let x = items { w.key("items", &f); writeList(x, &w) { $0.write(&$1) } }
        if let x = attributes { w.key("attributes", &f); writeAttributes(x, &w) }
        if let x = data { w.key("data", &f); w.bytes(x) }
        if let x = protection { w.key("protection", &f); w.string(x) }
        if let x = limit { w.key("limit", &f); w.raw(String(x)) }
        if let x = includeData { w.key("includeData", &f); w.raw(x ? "true" : "false") }
        if let x = prompt { w.key("prompt", &f); w.string(x) }
        if let x = passcode { w.key("passcode", &f); w.bytes(x) }
        if let x = newPasscode { w.key("newPasscode", &f); w.bytes(x) }
        if let x = kdfLogN { w.key("kdfLogN", &f); w.raw(String(x)) }
        if let x = certificate { w.key("certificate", &f); w.bytes(x) }
        if let x = privateKey { w.key("privateKey", &f); w.bytes(x) }
        if let x = requiresUserPresence { w.key("requiresUserPresence", &f); w.raw(x ? "true" : "false") }
        if let x = all { w.key("all", &f); w.raw(x ? "true" : "false") }
        if let x = interactive { w.key("interactive", &f); w.raw(x ? "true" : "false") }
        if let x = authenticationPasscode { w.key("authenticationPasscode", &f); w.bytes(x) }
        w.end()
        return w.out
    }

    init(json bytes: [UInt8]) throws {
        let o = try JSONObject(try JSONParser.parse(bytes), "the request")
        self.init(op: try o.need(try o.string("op"), "op"))
        v = try o.need(try o.number("v", Int.self), "v")
        keychain = try o.string("keychain")
        device = try o.string("device")
        caller = try o.object("caller").map(WireCaller.init(json:))
        query = try o.object("query").map(WireQuery.init(json:))
        identityQuery = try o.object("identityQuery").map(WireIdentityQuery.init(json:))
        items = try readList(try o.array("items"), "an item", WireNewItem.init(json:))
        attributes = try readAttributes(o.m["attributes"])
        data = try o.data("data")
        protection = try o.string("protection")
        limit = try o.number("limit", Int.self)
        includeData = try o.bool("includeData")
        prompt = try o.string("prompt")
        passcode = try o.data("passcode")
        newPasscode = try o.data("newPasscode")
        kdfLogN = try o.number("kdfLogN", UInt8.self)
        certificate = try o.data("certificate")
        privateKey = try o.data("privateKey")
        requiresUserPresence = try o.bool("requiresUserPresence")
        all = try o.bool("all")
        interactive = try o.bool("interactive")
        authenticationPasscode = try o.data("authenticationPasscode")
    }
}

extension AgentResponse {
    func encoded() throws -> [UInt8] {
        var w = JSONWriter()
        w.begin()
        var f = true
        w.key("v", &f); w.raw(String(v))
        w.key("ok", &f); w.raw(ok ? "true" : "false")
        if let x = status { w.key("status", &f); w.raw(String(x)) }
        if let x = message { w.key("message", &f); w.string(x) }
        if let x = underlying { w.key("underlying", &f); w.string(x) }
        if let x = needsAuthentication { w.key("needsAuthentication", &f); w.raw(x ? "true" : "false") }
        if let x = prompt { w.key("prompt", &f); w.string(x) }
        if let x = items { w.key("items", &f); writeList(x, &w) { $0.write(&$1) } }
        if let x = identities { w.key("identities", &f); writeList(x, &w) { $0.write(&$1) } }
        if let x = identity { w.key("identity", &f); x.write(&w) }
        if let x = count { w.key("count", &f); w.raw(String(x)) }
        if let x = state { w.key("state", &f); try w.encodable(x) }
        if let x = agent { w.key("agent", &f); try w.encodable(x) }
        if let x = info { w.key("info", &f); try w.encodable(x) }
        if let x = verify { w.key("verify", &f); try w.encodable(x) }
        if let x = before { w.key("before", &f); w.raw(String(x)) }
        if let x = after { w.key("after", &f); w.raw(String(x)) }
        w.end()
        return w.out
    }

    init(json bytes: [UInt8]) throws {
        let o = try JSONObject(try JSONParser.parse(bytes), "the answer")
        self.init(ok: try o.need(try o.bool("ok"), "ok"))
        v = try o.need(try o.number("v", Int.self), "v")
        status = try o.number("status", Int32.self)
        message = try o.string("message")
        underlying = try o.string("underlying")
        needsAuthentication = try o.bool("needsAuthentication")
        prompt = try o.string("prompt")
        items = try readList(try o.array("items"), "an item", WireItem.init(json:))
        identities = try readList(try o.array("identities"), "an identity", WireIdentity.init(json:))
        identity = try o.object("identity").map(WireIdentity.init(json:))
        count = try o.number("count", Int.self)
        state = try o.decodable("state", AgentKeychainState.self)
        agent = try o.decodable("agent", AgentStatus.self)
        info = try o.decodable("info", KeychainInfo.self)
        verify = try o.decodable("verify", VerifyReport.self)
        before = try o.number("before", UInt64.self)
        after = try o.number("after", UInt64.self)
    }
}

extension AgentCoding {
    static func encode(_ r: AgentRequest) throws -> [UInt8] { try r.encoded() }
    static func encode(_ r: AgentResponse) throws -> [UInt8] { try r.encoded() }
    static func decode(_ t: AgentRequest.Type, _ bytes: [UInt8]) throws -> AgentRequest { try AgentRequest(json: bytes) }
    static func decode(_ t: AgentResponse.Type, _ bytes: [UInt8]) throws -> AgentResponse { try AgentResponse(json: bytes) }
}
