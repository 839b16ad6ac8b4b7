import Foundation
import Testing
@testable import Latchkey
import LatchkeyFormat

/// The agent's own JSON coders (AgentJSON.swift): the same text Foundation reads and writes.
@Suite struct AgentJSONTests {
    struct Sample: Codable, Equatable {
        var s: String
        var i: Int64
        var u: UInt64
        var d: Double
        var b: Bool
        var data: Data
        var list: [String]
        var map: [String: Int32]
        var opt: String?
        var nested: [Sample]?
    }

    static let sample = Sample(s: "quote \" backslash \\ slash / tab \t nl \n nul \u{0} é 日本 😀", i: Int64.min, u: UInt64.max,
                               d: 785_000_000.123456, b: true, data: Data([0, 1, 2, 255]), list: ["", "a"], map: ["k": -1],
                               opt: nil, nested: [Sample(s: "x", i: 1, u: 2, d: -0.5, b: false, data: Data(), list: [], map: [:], opt: "o", nested: nil)])

    @Test func roundTrip_andFoundationReadsIt() throws {
        let bytes = try AgentCoding.encode(AgentJSONTests.sample)
        #expect(try AgentCoding.decode(Sample.self, bytes) == AgentJSONTests.sample)
        #expect(try JSONDecoder().decode(Sample.self, from: Data(bytes)) == AgentJSONTests.sample)
        let foundation = try JSONEncoder().encode(AgentJSONTests.sample)
        #expect(try AgentCoding.decode(Sample.self, [UInt8](foundation)) == AgentJSONTests.sample)
    }

    @Test func wireValues_roundTripExactly() throws {
        let attrs: [String: AttributeValue] = ["a": .string("x"), "b": .data([9, 8]), "c": .integer(Int64.max), "d": .date(-0.0),
                                               "e": .date(Double.leastNonzeroMagnitude), "f": .date(.nan)]
        let back = try AgentCoding.decode(WireAttributes.self, try AgentCoding.encode(attrs.wire)).attributes
        for (k, v) in attrs {
            if case .date(let x) = v, case .date(let y)? = back[k] { #expect(x.bitPattern == y.bitPattern, "\(k)") } else { #expect(back[k] == v, "\(k)") }
        }
    }

    @Test(arguments: ["", "{", "{\"a\":}", "[1,]", "01", "1.", "\"\\x\"", "\"\\ud800\"", "\"a", "{\"a\":1} x", "nul", "-",
                      String(repeating: "[", count: 100) + String(repeating: "]", count: 100)])
    func malformed_isRefused(_ text: String) {
        #expect(throws: (any Error).self) { _ = try JSONParser.parse(Array(text.utf8)) }
    }

    /// The hand-written request and answer coders write what the Codable conformances describe.
    @Test func messages_matchTheirCodableForm() throws {
        var req = AgentRequest(op: "find")
        req.keychain = "/k"; req.device = "/d"
        req.caller = WireCaller(CallerIdentity(applicationIdentifier: "app", keychainAccessGroups: ["g1", "g\"2"],
                                               applicationGroups: ["group.x"]))
        req.query = WireQuery(Query(.internetPassword, ["srvr": .string("é"), "port": .integer(443), "cdat": .date(1.5)],
                                    protection: .afterFirstUnlock, caseInsensitive: true, synchronizable: .any, persistentRef: [1, 2]))
        req.identityQuery = WireIdentityQuery(IdentityQuery(["labl": .data([0])]))
        req.items = [WireNewItem(NewItem(.key, attributes: ["atag": .data([7])], data: [1, 2, 3], protection: .always, requiresUserPresence: true))]
        req.attributes = ["labl": WireValue(.string("x"))]
        req.data = Data([0, 255]); req.protection = "ak"; req.limit = 3; req.includeData = false; req.prompt = "why"
        req.passcode = Data("p".utf8); req.newPasscode = Data("n".utf8); req.kdfLogN = 10
        req.certificate = Data([3]); req.privateKey = Data([4]); req.requiresUserPresence = true; req.all = true
        req.interactive = true; req.authenticationPasscode = Data("a".utf8)
        var resp = AgentResponse(ok: false)
        resp.status = -25308; resp.message = "m"; resp.underlying = "u"; resp.needsAuthentication = true; resp.prompt = "p"
        let item = Item(itemClass: .genericPassword, attributes: ["acct": .string("a"), "mdat": .date(785_000_000.25)], data: [9],
                        protection: .whenUnlocked, persistentRef: Array(repeating: 1, count: 20), requiresUserPresence: true)
        resp.items = [WireItem(item)]
        resp.identities = [WireIdentity(Identity(certificate: item, privateKey: item))]
        resp.identity = resp.identities?.first
        resp.count = 2; resp.before = 10; resp.after = 5
        resp.state = AgentKeychainState(keychain: "/k", device: "/d", hasPasscode: true, unlocked: ["ck"], unlockedOnce: true, idleSeconds: 0.5)
        resp.verify = VerifyReport()

        func same(_ a: [UInt8], _ b: Data) throws -> Bool {
            let x = try JSONSerialization.jsonObject(with: Data(a)) as! NSDictionary
            let y = try JSONSerialization.jsonObject(with: b) as! NSDictionary
            return x.isEqual(y)
        }
        let foundation = JSONEncoder()
        #expect(try same(AgentCoding.encode(req), foundation.encode(req)))
        #expect(try same(AgentCoding.encode(resp), foundation.encode(resp)))
        // Each side reads what the other writes.
        #expect(try same(AgentCoding.encode(AgentRequest(json: [UInt8](foundation.encode(req)))), foundation.encode(req)))
        #expect(try same(AgentCoding.encode(AgentResponse(json: [UInt8](foundation.encode(resp)))), foundation.encode(resp)))
        let back = try JSONDecoder().decode(AgentResponse.self, from: Data(AgentCoding.encode(resp)))
        #expect(try back.items?.first?.item() == item)
    }

    @Test func escapes_andUnicode_areRead() throws {
        let v = try JSONParser.parse(Array(#"{"k":"\u00e9\ud83d\ude00\n\/"}"#.utf8))
        guard case .object(let m) = v, case .string(let s)? = m["k"] else { Issue.record("not an object"); return }
        #expect(s == "é😀\n/")
        #expect(throws: (any Error).self) { _ = try JSONParser.parse([0x22, 0xFF, 0x22]) }
    }

    /// Objects of every size read back whole; a repeated member name keeps its last value;
    /// empty objects and nesting survive.
    @Test func objects_keepEveryMember_andTheLastOfARepeatedName() throws {
        for n in [0, 1, 2, 7, 16, 17, 40] {
            let text = "{" + (0..<n).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + "}"
            guard case .object(let m) = try JSONParser.parse(Array(text.utf8)) else { Issue.record("not an object"); continue }
            #expect(m.count == n)
            for k in 0..<n { if case .number(let v)? = m["k\(k)"] { #expect(v == "\(k)") } else { Issue.record("k\(k) missing") } }
        }
        guard case .object(let m) = try JSONParser.parse(Array(#"{"a":1,"b":{},"a":{"c":[{}]},"b":2}"#.utf8)) else {
            Issue.record("not an object"); return
        }
        #expect(m.count == 2)
        if case .number(let b)? = m["b"] { #expect(b == "2") } else { Issue.record("b is not 2") }
        guard case .object(let a)? = m["a"], case .array(let c)? = a["c"], case .object(let inner)? = c.first else {
            Issue.record("a is not the last value"); return
        }
        #expect(inner.isEmpty)
    }
}

