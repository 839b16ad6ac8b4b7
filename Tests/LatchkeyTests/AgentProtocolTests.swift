import Foundation
import LatchkeyFormat
import Testing
@testable import Latchkey

/// The binary agent protocol, versions 2 and 3 (spec/AGENT.md §3–§5), on raw bytes: every
/// message round-trips in both, every truncation and every non-canonical byte is refused, the
/// spec's worked example is what the codec writes.
@Suite struct AgentProtocolTests {
    typealias Message = AgentMessage
    typealias Request = AgentMessage.Request
    typealias Response = AgentMessage.Response

    // MARK: Samples: one of every message

    static let target = Message.Target(
        keychain: "/k/login.keychain", device: "/k/device",
        caller: CallerIdentity(
            applicationIdentifier: "TEAM.app", keychainAccessGroups: ["TEAM.shared"],
            applicationGroups: ["group.example"]))
    static let trusted = Message.Target(keychain: "/k/é ü.keychain", device: "/d", caller: nil)
    static let attributes: [String: AttributeValue] = [
        "acct": .string("alice"), "gena": .data([0, 0xFF]), "port": .integer(-443), "cdat": .date(7.25e8),
        // The protocol carries any name the caller gave (the agent's keychain refuses it as a
        // direct open would): empty, long, non-ASCII.
        "": .string(""), "ünïcode": .string("x"), String(repeating: "n", count: 255): .integer(0),
        // Dates travel as bit patterns: −0 and a NaN with a payload survive.
        "mdat": .date(-0.0), "nan": .date(Double(bitPattern: 0x7FF8_0000_0000_1234))
    ]
    static let query = Query(
        .internetPassword, attributes, protection: .afterFirstUnlock, caseInsensitive: true,
        synchronizable: .any, persistentRef: Array("inet".utf8) + [UInt8](repeating: 7, count: 16))
    static let identityQuery = IdentityQuery(["labl": .string("me")], synchronizable: .synchronizable)
    static let item = Item(
        itemClass: .genericPassword, attributes: ["acct": .string("a"), "pdmn": .string("ak")],
        data: Array("secret".utf8), protection: .whenUnlocked,
        persistentRef: Array("genp".utf8) + [UInt8](repeating: 1, count: 16), requiresUserPresence: true)
    static let key = Item(
        itemClass: .key, attributes: [:], data: [9, 9, 9], protection: .alwaysThisDeviceOnly,
        persistentRef: Array("keys".utf8) + [UInt8](repeating: 2, count: 16))

    static let requests: [Request] = [
        .status, .stop, .lockAll,
        .open(target), .open(trusted), .lock(target), .compact(target), .info(target), .verify(target),
        .unlock(target, passcode: Array("1234".utf8)),
        .changePasscode(target, old: Array("old".utf8), new: Array("new".utf8), kdfLogN: 17),
        .changePasscode(trusted, old: nil, new: [], kdfLogN: 10),
        .removePasscode(target, old: Array("old".utf8)), .removePasscode(target, old: nil),
        .add(
            target,
            [
                NewItem(.genericPassword, attributes: ["acct": .string("a")], data: Array("pw".utf8)),
                NewItem(
                    .key, attributes: attributes, data: [], protection: .whenPasscodeSetThisDeviceOnly,
                    requiresUserPresence: true)
            ]),
        .add(target, []),
        .find(target, query, Message.Read()),
        .find(
            trusted, Query(.certificate),
            Message.Read(limit: 1, includeData: false, prompt: "Unlock «mail»", authentication: .interactive)),
        .find(target, Query(.genericPassword), Message.Read(limit: 0, authentication: .passcode(Array("1234".utf8)))),
        .update(
            target, query, attributes: ["labl": .string("new")], data: Array("new secret".utf8), protection: .always),
        .update(target, Query(.genericPassword), attributes: [:], data: nil, protection: nil),
        .delete(target, query),
        .addIdentity(
            target, certificate: [0x30, 0x82], privateKey: [0x30, 0x81, 1], attributes: ["labl": .string("me")],
            protection: .afterFirstUnlockThisDeviceOnly, requiresUserPresence: true),
        .identities(target, identityQuery, Message.Read(limit: 5)),
        .updateIdentities(target, identityQuery, attributes: ["labl": .string("you")], protection: nil),
        .deleteIdentities(trusted, IdentityQuery()),
        .dropHistory(target),
        .history(target, query), .history(trusted, Query(.genericPassword)),
        .restoreVersion(target, uuid: [UInt8](repeating: 3, count: 16), sequence: 42),
        .restoreVersion(trusted, uuid: [], sequence: .max)
    ]

    /// Versions as a history answers them: no data (the item's reference and attributes).
    static func version(_ kind: ItemVersion.Kind, _ date: Double, _ sequence: UInt64, live: Bool) -> ItemVersion {
        var i = item
        i.data = []
        i.attributes["labl"] = .string("v\(sequence)")
        return ItemVersion(item: i, kind: kind, date: date, sequence: sequence, itemIsLive: live)
    }
    static let history = ItemHistory(
        versions: [
            version(.current, 1.7e9, 0, live: true), version(.replaced, 1.6e9, 77, live: true),
            version(.deleted, -0.0, .max, live: false)
        ], locked: 3)

    static let state = AgentKeychainState(
        keychain: "/k/login.keychain", device: "/k/device", hasPasscode: true,
        unlocked: ["ak", "ck", "dk", "akpu"], unlockedOnce: true, idleSeconds: 12.5)

    static let responses: [Response] = [
        .ok,
        .state(state),
        .agentStatus(
            AgentStatus(
                pid: 4242, socket: "/run/user/1000/latchkey/agent.sock", protocolVersion: 2, idleTimeout: 300,
                dumpable: false, keychains: [state, state])),
        .agentStatus(
            AgentStatus(pid: -1, socket: "", protocolVersion: 2, idleTimeout: 0, dumpable: nil, keychains: [])),
        .items([item, key]), .items([]),
        .added([Message.Reference(item), Message.Reference(key)]),
        .identities([Identity(certificate: item, privateKey: key)]),
        .identityAdded(certificate: Message.Reference(item), privateKey: Message.Reference(key)),
        .count(3), .compacted(before: 1 << 40, after: 96),
        .info(
            KeychainInfo(
                path: "/k", formatVersion: "1.0", fileUUID: "ab", deviceUUID: "cd", hasPasscode: true,
                kdf: "scrypt N=2^17 r=8 p=1", fileSize: 4096, records: 7, liveItems: 5,
                itemsByClass: ["genp": 3, "keys": 2, "locked": 1], itemsByProtection: ["ak": 4, "dk": 1],
                unlockedClasses: ["ck", "dk"])),
        .verifyReport(
            {
                var v = VerifyReport(); v.problems = ["damage at byte 9"]; v.fileSize = 10; v.records = 2;
                v.liveItems = 1
                v.checkedItems = 1; v.lockedItems = 0; v.recoveredTailBytes = 3; return v
            }()),
        .history(history), .history(ItemHistory(versions: [], locked: 0)),
        .restored(version(.replaced, 0, 0, live: true).item, asNew: true),
        .restored(
            {
                var k = key; k.data = []; return k
            }(), asNew: false),
        .needsAuthentication(prompt: "Use «mail»"), .needsAuthentication(prompt: nil),
        .error(KeychainError(.interactionNotAllowed, "the keychain is locked", underlying: "class ak")),
        .error(KeychainError(.param, "bad")),
        .error(
            KeychainError(.interactionNotAllowed, "the keychain is locked", underlying: "class ak", remedy: .unlock)),
        .error(KeychainError(.param, "a directory", remedy: .giveKeychainFile(example: "/k/é/login.keychain")))
    ]

    // MARK: Round trips

    @Test func everyRequest_roundTripsToTheSameBytes() throws {
        for r in Self.requests {
            let frame = r.encode()
            let back = try Request.decode(frame: frame)
            #expect(back.type == r.type)
            #expect(back.encode() == frame, "\(r.name)")
            #expect(ByteReader(frame).getInteger(at: 0, as: UInt32.self)! == UInt32(frame.count - 4))
            #expect(frame[4] == 3, "version byte")
            #expect(frame[5] == r.type)
            // Version 2: the same fields after another version byte.
            let v2 = r.encode(version: 2)
            #expect(v2[4] == 2 && Array(v2[5...]) == Array(frame[5...]), "\(r.name) in version 2")
            #expect(try Request.decode(frame: v2).encode(version: 2) == v2)
        }
        #expect(Set(Self.requests.map(\.type)).count == 22, "one type per operation")
    }

    @Test func everyResponse_roundTripsToTheSameBytes() throws {
        for r in Self.responses {
            for version: UInt8 in [2, 3] {
                let frame = r.encode(version: version)
                #expect(frame[4] == version)
                let back = try Response.decode(frame: frame)
                #expect(back.type == r.type)
                #expect(back.encode(version: version) == frame, "\(r) in version \(version)")
            }
        }
    }

    /// Version 3's error carries the remedy (one byte of presence, the code, code 5's example);
    /// version 2's is the same error without it, byte for byte what Latchkey 0.4 wrote.
    @Test func errorRemedy_travelsInVersion3_andIsLeftOutOfVersion2() throws {
        let remedies: [KeychainRemedy] = [
            .repairOrRestore, .adoptRollback, .createKeychain, .useExistingOrChooseAnother,
            .giveKeychainFile(example: "/k/login.keychain"),
            .setPasscode, .unlock, .verifyAndRestore, .compactAgain, .checkForReplacement, .giveCallerIdentity,
            .giveDeviceSecret,
            .createOrGiveDeviceSecret, .findKeychainsDeviceSecret, .mergeOrChooseAnotherKeychain, .giveBackupPassword,
            .chooseBackupPassword, .chooseBackupOutput
        ]
        let withoutRemedy =
            [0xFF] + Self.u32(UInt32(bitPattern: Int32(-25300))) + Self.string("m") + [1] + Self.string("u")
        for (i, remedy) in remedies.enumerated() {
            let e = KeychainError(.itemNotFound, "m", underlying: "u", remedy: remedy)
            let v3 = Response.error(e).encode(version: 3)
            var fields = withoutRemedy + [1, UInt8(i + 1)]
            if case .giveKeychainFile(let example) = remedy { fields += Self.string(example) }
            #expect(Array(v3[4...]) == [3] + fields, "remedy code \(i + 1)")
            guard case .error(let back) = try Response.decode(frame: v3) else { Issue.record("not an error"); return }
            #expect(back == e && back.remedy == remedy)
            let v2 = Response.error(e).encode(version: 2)
            #expect(Array(v2[4...]) == [2] + withoutRemedy, "version 2 has no remedy")
            guard case .error(let old) = try Response.decode(frame: v2) else { Issue.record("not an error"); return }
            #expect(old.remedy == nil && old.message == "m" && old.underlying == "u")
        }
        #expect(Set(remedies.map { AgentMessage.remedyCode($0) }) == Set(1...18), "one code per remedy")
        // Codes outside the table are refused, as is a remedy field in version 2 (trailing bytes).
        for code: UInt8 in [0, 19, 0xFF] {
            Self.expectMalformed([3] + withoutRemedy + [1, code], response: true, "remedy code \(code)")
        }
        Self.expectMalformed([3] + withoutRemedy + [2], response: true, "remedy presence 2")
        Self.expectMalformed([3] + withoutRemedy + [1, 5], response: true, "code 5 without its example")
        Self.expectMalformed([2] + withoutRemedy + [1, 3], response: true, "a remedy in version 2")
    }

    @Test func decodedValues_areTheEncodedOnes() throws {
        guard
            case .find(let t, let q, let read) = try Request.decode(
                frame: Request.find(
                    Self.target, Self.query,
                    Message.Read(
                        limit: 2, includeData: false, prompt: "p", authentication: .passcode([1, 2]))
                ).encode())
        else {
            Issue.record("not a find"); return
        }
        #expect(t == Self.target)
        #expect(q.itemClass == .internetPassword && q.protection == .afterFirstUnlock)
        #expect(q.attributes.filter { $0.key != "nan" } == Self.attributes.filter { $0.key != "nan" })
        guard case .date(let nan) = q.attributes["nan"], case .date(let zero) = q.attributes["mdat"] else {
            Issue.record("dates"); return
        }
        #expect(nan.bitPattern == 0x7FF8_0000_0000_1234 && zero.bitPattern == (-0.0).bitPattern)
        #expect(q.caseInsensitive && q.synchronizable == .any && q.persistentRef == Self.query.persistentRef)
        #expect(read == Message.Read(limit: 2, includeData: false, prompt: "p", authentication: .passcode([1, 2])))

        guard case .items(let items) = try Response.decode(frame: Response.items([Self.item, Self.key]).encode()) else {
            Issue.record("not items"); return
        }
        #expect(items == [Self.item, Self.key])

        guard
            case .error(let e) = try Response.decode(
                frame: Response.error(KeychainError(.authFailed, "m", underlying: "u")).encode())
        else {
            Issue.record("not an error"); return
        }
        #expect(e == KeychainError(.authFailed, "m", underlying: "u"))
    }

    /// `add` answers what the keychain made of each item, never the data that was sent.
    @Test func addAnswer_carriesNoData() throws {
        let secret = Array("do-not-echo-this-secret".utf8)
        var stored = Self.item
        stored.data = secret
        let frame = Response.added([Message.Reference(stored)]).encode()
        #expect(!frame.contains(subsequence: secret))
        guard case .added(let refs) = try Response.decode(frame: frame), let ref = refs.first else {
            Issue.record("not added"); return
        }
        #expect(ref.item(.genericPassword, data: secret) == stored)
    }

    /// The history requests and answers carry what their tables say (spec/AGENT.md §4.5, §5.1),
    /// and a version has no field for data: a secret given to the encoder never reaches the
    /// frame, and every decoded version's data is empty.
    @Test func historyMessages_carryTheirFields_andNoData() throws {
        guard
            case .restoreVersion(let t, let uuid, let sequence) = try Request.decode(
                frame: Request.restoreVersion(Self.target, uuid: [7, 7], sequence: 1 << 40).encode())
        else {
            Issue.record("not restoreVersion"); return
        }
        #expect(t == Self.target && uuid == [7, 7] && sequence == 1 << 40)
        // restoreVersion: target, then bytes UUID, then u64 sequence, and nothing after.
        let frame = Request.restoreVersion(Self.trusted, uuid: [0xAA], sequence: 5).encode()
        #expect(Array(frame.suffix(13)) == [0, 0, 0, 1, 0xAA, 0, 0, 0, 0, 0, 0, 0, 5])
        guard case .history(_, let q) = try Request.decode(frame: Request.history(Self.target, Self.query).encode())
        else {
            Issue.record("not history"); return
        }
        #expect(q.itemClass == Self.query.itemClass && q.synchronizable == .any && q.caseInsensitive)

        guard case .history(let h) = try Response.decode(frame: Response.history(Self.history).encode()) else {
            Issue.record("not a history answer"); return
        }
        #expect(h == Self.history)
        #expect(h.versions.map(\.kind) == [.current, .replaced, .deleted] && h.locked == 3)

        let secret = Array("do-not-send-this-version".utf8)
        var leaky = Self.history
        for i in leaky.versions.indices { leaky.versions[i].item.data = secret }
        let leakyFrame = Response.history(leaky).encode()
        #expect(!leakyFrame.contains(subsequence: secret))
        #expect(leakyFrame == Response.history(Self.history).encode(), "the data is not encoded at all")
        guard case .history(let back) = try Response.decode(frame: leakyFrame) else {
            Issue.record("not a history answer"); return
        }
        #expect(back.versions.allSatisfy { $0.item.data.isEmpty })
        var restoredItem = Self.item
        restoredItem.data = secret
        let restored = Response.restored(restoredItem, asNew: true).encode()
        #expect(!restored.contains(subsequence: secret))
        guard case .restored(let item, let asNew) = try Response.decode(frame: restored) else {
            Issue.record("not restored"); return
        }
        #expect(asNew && item.data.isEmpty && item.persistentRef == Self.item.persistentRef)
        #expect(item.attributes == Self.item.attributes && item.requiresUserPresence)

        // A version's kind is 0, 1 or 2: the byte after its attributes (then f64, u64, bool).
        let one = Array(Response.history(ItemHistory(versions: [Self.history.versions[0]], locked: 0)).encode()[4...])
        let kindOffset = one.count - 8 - 1 - 8 - 8 - 1
        #expect(one[kindOffset] == 0)
        for bad: UInt8 in [3, 0xFF] {
            var p = one
            p[kindOffset] = bad
            Self.expectMalformed(p, response: true, "version kind \(bad)")
        }
        var live = one
        live[one.count - 9] = 2
        Self.expectMalformed(live, response: true, "itemIsLive 2")
    }

    /// A status this Latchkey does not know (from a newer agent) is errSecInternal, with the
    /// agent's message kept.
    @Test func unknownStatus_isInternal() throws {
        var w = ByteWriter()
        w.writeInteger(UInt32(bitPattern: -99999), as: UInt32.self)
        w.writeInteger(3, as: UInt32.self); w.writeBytes(Array("new".utf8))
        w.writeInteger(0, as: UInt8.self)  // no underlying cause
        w.writeInteger(0, as: UInt8.self)  // no remedy
        guard case .error(let e) = try Response.decode(Self.payload(0xFF, w.bytes)[...]) else {
            Issue.record("not an error"); return
        }
        #expect(e.status == .internal && e.message == "new")
    }

    // MARK: Refusals

    static func payload(_ type: UInt8, _ fields: [UInt8]) -> [UInt8] { [3, type] + fields }

    static func expectMalformed(
        _ payload: [UInt8], response: Bool = false, _ comment: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        do {
            if response { _ = try Response.decode(payload[...]) } else { _ = try Request.decode(payload[...]) }
            Issue.record("accepted: \(comment ?? hexString(payload))", sourceLocation: sourceLocation)
        } catch let e as Message.DecodeError {
            if case .malformed = e {
            } else {
                Issue.record("\(e), not malformed: \(comment ?? "")", sourceLocation: sourceLocation)
            }
        } catch {
            Issue.record("\(error) is not a DecodeError", sourceLocation: sourceLocation)
        }
    }

    /// Every proper prefix of every message's payload is refused (and never crashes), and so is
    /// every frame whose length prefix does not match its bytes.
    @Test func everyTruncation_isRefused() throws {
        for frame in Self.requests.map({ $0.encode() }) + Self.responses.map({ $0.encode() }) {
            let payload = Array(frame[4...])
            let isResponse = payload[1] >= 0x80
            for n in 2..<payload.count {
                Self.expectMalformed(
                    Array(payload.prefix(n)), response: isResponse, "prefix \(n) of \(hexString(payload.prefix(8)))…")
            }
            for n in 0..<frame.count {
                #expect(throws: Message.DecodeError.self) { _ = try Request.decode(frame: Array(frame.prefix(n))) }
                #expect(throws: Message.DecodeError.self) { _ = try Response.decode(frame: Array(frame.prefix(n))) }
            }
        }
        #expect(throws: Message.DecodeError.malformed("empty message (no version byte)")) {
            _ = try Request.decode([][...])
        }
        #expect(throws: Message.DecodeError.malformed("truncated input in message type")) {
            _ = try Request.decode([2][...])
        }
    }

    @Test func trailingBytes_areRefused() {
        for r in Self.requests {
            Self.expectMalformed(Array(r.encode()[4...]) + [0], r.name)
        }
        for r in Self.responses {
            Self.expectMalformed(Array(r.encode()[4...]) + [0], response: true, "\(r)")
        }
    }

    @Test func lengthPrefix_mustMatch() {
        let frame = Request.status.encode()
        #expect(throws: Message.DecodeError.length(declared: 3, actual: 2)) {
            _ = try Request.decode(frame: [0, 0, 0, 3] + frame[4...])
        }
        #expect(throws: Message.DecodeError.length(declared: 0xFFFF_FFFF, actual: 2)) {
            _ = try Request.decode(frame: [0xFF, 0xFF, 0xFF, 0xFF] + frame[4...])
        }
    }

    /// A length or count inside a field that is larger than what follows is refused before
    /// anything of that size is allocated.
    @Test func oversizeFieldLengths_areRefusedWithoutAllocating() {
        // unlock: keychain path of 4 GiB − 1 bytes.
        Self.expectMalformed(Self.payload(0x11, [0xFF, 0xFF, 0xFF, 0xFF, 0x2F]))
        // add: 2^32 − 1 items in a few bytes.
        var w = ByteWriter()
        Self.writeTarget(&w)
        w.writeInteger(0xFFFF_FFFF, as: UInt32.self)
        Self.expectMalformed(Self.payload(0x20, w.bytes))
        // items answer: 2^32 − 1 items; counts of an info answer; an attribute value of 4 GiB.
        Self.expectMalformed(Self.payload(0x83, [0xFF, 0xFF, 0xFF, 0xFF]), response: true)
        var a = ByteWriter()
        a.writeInteger(1, as: UInt32.self)
        a.writeBytes(Array("genp".utf8)); a.writeInteger(6, as: UInt8.self); a.writeInteger(0, as: UInt8.self);
        a.writeInteger(0, as: UInt32.self)
        a.writeInteger(1, as: UInt16.self); a.writeInteger(4, as: UInt8.self); a.writeBytes(Array("acct".utf8));
        a.writeInteger(2, as: UInt8.self); a.writeInteger(0xFFFF_FFF0, as: UInt32.self)
        Self.expectMalformed(Self.payload(0x83, a.bytes), response: true)
    }

    @Test func unknownTypes_areRefused() {
        let requestTypes = Set(Self.requests.map(\.type)), responseTypes = Set(Self.responses.map(\.type))
        for t in UInt8.min...UInt8.max {
            if !requestTypes.contains(t) {
                #expect(throws: Message.DecodeError.unknownType(t)) { _ = try Request.decode([2, t][...]) }
            }
            if !responseTypes.contains(t) {
                #expect(throws: Message.DecodeError.unknownType(t)) { _ = try Response.decode([2, t][...]) }
            }
        }
        #expect(requestTypes.isDisjoint(with: responseTypes), "an answer is never taken for a request")
    }

    @Test func otherVersions_areRefused_andProtocol1IsRecognized() throws {
        for v: UInt8 in [2, 3] {
            _ = try Request.decode([v, 0x01][...])
            _ = try Response.decode([v, 0x80][...])
        }
        for v: UInt8 in [0, 1, 4, 0x7A, 0x7C, 0xFF] {
            #expect(throws: Message.DecodeError.version(v)) { _ = try Request.decode([v, 0x01][...]) }
            #expect(throws: Message.DecodeError.version(v)) { _ = try Response.decode([v, 0x80][...]) }
        }
        let v1 = Array(#"{"v":1,"op":"status"}"#.utf8)
        #expect(throws: Message.DecodeError.protocol1) { _ = try Request.decode(v1[...]) }
        #expect(throws: Message.DecodeError.protocol1) {
            _ = try Response.decode(Array(#"{"v":1,"ok":true}"#.utf8)[...])
        }
    }

    /// Only the one encoding the codec writes is read: every other value of a flag, presence,
    /// class or filter byte is refused (so `encode(decode(x)) == x` for every accepted x).
    @Test func nonCanonicalBytes_areRefused() throws {
        let find = Array(Request.find(Self.trusted, Query(.genericPassword), Message.Read()).encode()[4...])
        // The offsets of the single-byte fields of this find, from its layout (spec/AGENT.md §4.3).
        let afterTarget = 2 + 4 + Self.trusted.keychain.utf8.count + 4 + 2 + 1
        let callerPresence = afterTarget - 1
        let protection = afterTarget + 4 + 2, caseInsensitive = protection + 1, sync = protection + 2
        let refPresence = protection + 3, limitPresence = protection + 4, includeData = protection + 5
        let promptPresence = protection + 6, authentication = protection + 7
        #expect(authentication == find.count - 1)
        for (offset, bad, what) in [
            (callerPresence, 2, "caller presence"), (protection, 5, "protection 5"), (protection, 13, "protection 13"),
            (caseInsensitive, 2, "boolean 2"), (sync, 3, "sync 3"), (refPresence, 0xFF, "presence 255"),
            (limitPresence, 2, "presence 2"), (includeData, 0x80, "boolean 128"),
            (promptPresence, 7, "presence 7"), (authentication, 3, "authentication 3")
        ] as [(Int, UInt8, String)] {
            var p = find
            p[offset] = bad
            Self.expectMalformed(p, what)
        }
        var badClass = find
        badClass[afterTarget..<afterTarget + 4] = ArraySlice("idnt".utf8)
        Self.expectMalformed(badClass, "class idnt")

        // Attribute lists: unsorted, duplicate, invalid UTF-8 names and values; numbers of 7 bytes.
        func attrs(_ entries: [([UInt8], UInt8, [UInt8])]) -> [UInt8] {
            var w = ByteWriter()
            w.writeInteger(0, as: UInt32.self)  // keychain path ""
            w.writeInteger(0, as: UInt32.self)  // device path ""
            w.writeInteger(0, as: UInt8.self)  // trusted caller
            w.writeBytes(Array("genp".utf8))
            w.writeInteger(UInt16(entries.count), as: UInt16.self)
            for (name, type, value) in entries {
                w.writeInteger(UInt8(name.count), as: UInt8.self); w.writeBytes(name);
                w.writeInteger(type, as: UInt8.self); w.writeInteger(UInt32(value.count), as: UInt32.self);
                w.writeBytes(value)
            }
            w.writeBytes([0, 0, 0, 0])  // protection, caseInsensitive, sync, no ref
            return Self.payload(0x23, w.bytes)
        }
        _ = try Request.decode(
            attrs([(Array("a".utf8), 1, []), (Array("b".utf8), 3, [UInt8](repeating: 0, count: 8))])[...])
        Self.expectMalformed(attrs([(Array("b".utf8), 1, []), (Array("a".utf8), 1, [])]), "unsorted")
        Self.expectMalformed(attrs([(Array("a".utf8), 1, []), (Array("a".utf8), 1, [])]), "duplicate")
        Self.expectMalformed(
            attrs([(Array("\u{E9}".utf8), 1, []), (Array("e\u{301}".utf8), 1, [])]), "canonically equivalent names")
        Self.expectMalformed(attrs([([0xC3], 1, [])]), "invalid UTF-8 name")
        Self.expectMalformed(attrs([(Array("a".utf8), 1, [0xFF])]), "invalid UTF-8 string")
        Self.expectMalformed(attrs([(Array("a".utf8), 3, [0, 0, 0, 0, 0, 0, 0])]), "integer of 7 bytes")
        Self.expectMalformed(attrs([(Array("a".utf8), 5, [])]), "type 5")
    }

    // MARK: Secrets

    @Test func cleanse_zeroesTheSecretsOfAMessage() throws {
        let secret: [UInt8] = [0x53, 0x45, 0x43, 0x52, 0x45, 0x54]
        let decoded = try Request.decode(
            frame: Request.add(Self.target, [NewItem(.genericPassword, attributes: [:], data: secret)]).encode())
        var r = decoded
        r.cleanse()
        guard case .add(_, let items) = r else { Issue.record("not add"); return }
        #expect(items[0].data == [0, 0, 0, 0, 0, 0])

        var unlock = Request.unlock(Self.target, passcode: secret)
        unlock.cleanse()
        guard case .unlock(_, let p) = unlock else { Issue.record("not unlock"); return }
        #expect(p == [0, 0, 0, 0, 0, 0])

        var read = Message.Read(authentication: .passcode(secret))
        read.cleanse()
        #expect(read.authentication == .passcode([0, 0, 0, 0, 0, 0]))

        var answer = Response.items([Self.item])
        answer.cleanse()
        guard case .items(let out) = answer else { Issue.record("not items"); return }
        #expect(out[0].data.allSatisfy { $0 == 0 })
        #expect(Self.item.data == Array("secret".utf8), "a buffer the message shares with its caller is the caller's")
    }

    /// Printing or dumping a message shows its kind, never a passcode or item data.
    @Test func description_showsNoSecret() {
        let messages: [Any] = [
            Request.unlock(Self.target, passcode: Array("PASSCODE-X".utf8)),
            Request.find(
                Self.target, Query(.genericPassword), Message.Read(authentication: .passcode(Array("PASSCODE-X".utf8)))),
            Response.items([
                Item(
                    itemClass: .genericPassword, attributes: [:], data: Array("PASSCODE-X".utf8), protection: .always,
                    persistentRef: [])
            ]),
            Message.Authentication.passcode(Array("PASSCODE-X".utf8))
        ]
        for m in messages {
            var dumped = ""
            dump(m, to: &dumped)
            for text in ["\(m)", String(reflecting: m), dumped] {
                // Neither as text nor as the run of its byte values, however they are laid out.
                let numbers = text.split(whereSeparator: { !$0.isNumber }).compactMap { UInt8($0) }
                #expect(
                    !text.contains("PASSCODE-X") && !numbers.contains(subsequence: Array("PASSCODE-X".utf8)), "\(text)")
            }
        }
    }

    // MARK: The worked example of spec/AGENT.md §6

    static var root: URL {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
        }
        return url
    }

    /// The target of the example: writes it field by field, as the tables of §4.1 say.
    static func writeTarget(_ w: inout ByteWriter) {
        w.writeInteger(17, as: UInt32.self); w.writeBytes(Array("/k/login.keychain".utf8))
        w.writeInteger(9, as: UInt32.self); w.writeBytes(Array("/k/device".utf8))
        w.writeInteger(0, as: UInt8.self)
    }

    /// One field of an annotated dump.
    typealias Field = (label: String, bytes: [UInt8])

    static func u32(_ v: UInt32) -> [UInt8] { var w = ByteWriter(); w.writeInteger(v, as: UInt32.self); return w.bytes }
    static func u64(_ v: UInt64) -> [UInt8] { var w = ByteWriter(); w.writeInteger(v, as: UInt64.self); return w.bytes }
    static func string(_ s: String) -> [UInt8] { u32(UInt32(s.utf8.count)) + Array(s.utf8) }
    static func attribute(_ name: String, _ type: UInt8, _ value: [UInt8]) -> [UInt8] {
        [UInt8(name.utf8.count)] + Array(name.utf8) + [type] + u32(UInt32(value.count)) + value
    }

    /// `latchkey find --account alice --service mail --limit 1` by app TEAM.app, field by field.
    static let exampleRequest: [Field] = [
        ("version 3", [3]),
        ("type 0x21: find", [0x21]),
        ("keychain: string \"/k/login.keychain\"", string("/k/login.keychain")),
        ("device: string \"/k/device\"", string("/k/device")),
        ("caller: present", [1]),
        ("  applicationIdentifier: present, \"TEAM.app\"", [1] + string("TEAM.app")),
        ("  keychainAccessGroups: 1 string", u32(1) + string("TEAM.shared")),
        ("  applicationGroups: none", u32(0)),
        ("query class: genp", Array("genp".utf8)),
        ("attributes: 2 (FORMAT.md §8.1)", [0, 2]),
        ("  acct, string, \"alice\"", attribute("acct", 1, Array("alice".utf8))),
        ("  svce, string, \"mail\"", attribute("svce", 1, Array("mail".utf8))),
        ("protection: any", [0]),
        ("caseInsensitive: no", [0]),
        ("synchronizable: no (sync = 0)", [0]),
        ("persistentRef: absent", [0]),
        ("limit: present, 1", [1] + u32(1)),
        ("includeData: yes", [1]),
        ("prompt: absent", [0]),
        ("authentication: none", [0])
    ]

    static let exampleUUID: [UInt8] = [
        0x5B, 0x2F, 0x0C, 0x1E, 0x8A, 0x41, 0x4D, 0x3C, 0x9F, 0x06, 0x21, 0x7D, 0xE4, 0x90, 0xB3, 0x58
    ]
    static let exampleDate = 786_000_000.0

    static let exampleAnswer: [Field] = [
        ("version 3", [3]),
        ("type 0x83: items", [0x83]),
        ("count: 1", u32(1)),
        ("class: genp", Array("genp".utf8)),
        ("protection: 6 (ak, WhenUnlocked)", [6]),
        ("requiresUserPresence: no", [0]),
        ("persistentRef: 20 bytes, class ‖ item UUID", u32(20) + Array("genp".utf8) + exampleUUID),
        ("attributes: 7", [0, 7]),
        ("  acct, string, \"alice\"", attribute("acct", 1, Array("alice".utf8))),
        ("  agrp, string, \"TEAM.shared\"", attribute("agrp", 1, Array("TEAM.shared".utf8))),
        ("  cdat, date, 786000000.0", attribute("cdat", 4, u64(exampleDate.bitPattern))),
        ("  mdat, date, 786000000.0", attribute("mdat", 4, u64(exampleDate.bitPattern))),
        ("  pdmn, string, \"ak\"", attribute("pdmn", 1, Array("ak".utf8))),
        ("  svce, string, \"mail\"", attribute("svce", 1, Array("mail".utf8))),
        ("  sync, integer, 0", attribute("sync", 3, u64(0))),
        ("data: 7 bytes \"hunter2\"", u32(7) + Array("hunter2".utf8))
    ]

    /// The fields with the length prefix in front, as an annotated hex dump: each field's bytes
    /// (16 a line), its meaning on its first line.
    static func annotated(_ fields: [Field]) -> (bytes: [UInt8], text: String) {
        let body = fields.flatMap(\.bytes)
        var text = ""
        for (label, bytes) in [("length: \(body.count) bytes follow", u32(UInt32(body.count)))] + fields {
            for (i, start) in stride(from: 0, to: bytes.count, by: 16).enumerated() {
                let hex = bytes[start..<min(start + 16, bytes.count)].map { hexString([$0]) }.joined(separator: " ")
                text +=
                    i == 0 ? hex.padding(toLength: 48, withPad: " ", startingAt: 0) + "  " + label + "\n" : hex + "\n"
            }
        }
        return (u32(UInt32(body.count)) + body, text)
    }

    @Test func specWorkedExample_isWhatTheCodecWrites() throws {
        let request = Request.find(
            Message.Target(
                keychain: "/k/login.keychain", device: "/k/device",
                caller: CallerIdentity(applicationIdentifier: "TEAM.app", keychainAccessGroups: ["TEAM.shared"])),
            Query(.genericPassword, ["acct": .string("alice"), "svce": .string("mail")]),
            Message.Read(limit: 1))
        let answer = Response.items([
            Item(
                itemClass: .genericPassword,
                attributes: [
                    "acct": .string("alice"), "svce": .string("mail"), "agrp": .string("TEAM.shared"),
                    "pdmn": .string("ak"),
                    "sync": .integer(0), "cdat": .date(Self.exampleDate), "mdat": .date(Self.exampleDate)
                ],
                data: Array("hunter2".utf8), protection: .whenUnlocked,
                persistentRef: Array("genp".utf8) + Self.exampleUUID)
        ])
        let (requestBytes, requestText) = Self.annotated(Self.exampleRequest)
        let (answerBytes, answerText) = Self.annotated(Self.exampleAnswer)
        #expect(request.encode() == requestBytes, "the field-by-field request is the codec's")
        #expect(answer.encode() == answerBytes, "the field-by-field answer is the codec's")
        #expect(try Request.decode(frame: requestBytes).encode() == requestBytes)

        let generated = "Request:\n\n```text\n" + requestText + "```\n\nAnswer:\n\n```text\n" + answerText + "```\n"
        let spec = try String(contentsOf: Self.root.appendingPathComponent("spec/AGENT.md"), encoding: .utf8)
        let begin = try #require(spec.range(of: "<!-- BEGIN find example: AgentProtocolTests -->\n"))
        let end = try #require(spec.range(of: "<!-- END find example -->"))
        #expect(
            String(spec[begin.upperBound..<end.lowerBound]) == generated, "spec/AGENT.md §6 should read:\n\(generated)")
    }
}

extension Array where Element == UInt8 {
    func contains(subsequence s: [UInt8]) -> Bool {
        guard !s.isEmpty, s.count <= count else { return s.isEmpty }
        return (0...(count - s.count)).contains { self[$0..<$0 + s.count].elementsEqual(s) }
    }
}
