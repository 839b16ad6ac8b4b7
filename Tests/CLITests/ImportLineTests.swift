import Foundation
import Latchkey
import LatchkeyFormat
import LatchkeyTestSupport
import Testing
@testable import latchkey

/// `import` reads the common line form through `ImportLine` and every other line through the
/// general JSON path (`ImportCommand.parsedItem`): the fast reader must give exactly the general
/// path's item for every line it takes, and take no line the general path refuses.
@Suite struct ImportLineTests {
    static let secret = "Y29ycmVjdCBob3JzZSBiYXR0ZXJ5IHN0YXBsZSAwMTIzNDU2Nzg5"

    static let lines: [String] = [
        #"{"class":"genp","acct":"user0","svce":"bench","labl":"group 0","v_Data":"\#(secret)"}"#,
        #"{"class":"genp","acct":"alice","v_Data":"aHVudGVyMg=="}"#,
        #"{"class":"genp","acct":"alice","v_Data":"aHVudGVyMg="}"#,  // short: general path decides
        #"{"class":"genp","acct":"alice","v_Data":"aHVudGVyMh=="}"#,  // non-zero padding bits
        #"{"class":"genp","acct":"alice","v_Data":"aHVudGVy"}"#,
        #"{"class":"genp","acct":"alice","v_Data":"aHVu dGVy"}"#,
        #"{"class":"genp","acct":"alice","v_Data":"aHVudGVy===="}"#,
        #"{"class":"genp","acct":"alice","v_Data":"a=VudGVy"}"#,
        #"{"class":"genp","acct":"alice","v_Data":"-_VudGVy"}"#,
        #"{"class":"genp","acct":"alice","v_Data":""}"#,
        #"{"class":"genp","acct":"alice","v_Data":"QQ=="}"#, #"{"class":"genp","v_Data":"QUI="}"#,
        #"{"class":"genp","acct":"alice","v_Data":"QR=="}"#, #"{"class":"genp","v_Data":"QUJ="}"#,
        #"  {"class" : "genp" , "acct":"a" ,}  "#, "{\t\"class\":\"genp\",\r\n\"acct\":\"a\"}\r",
        #"{"class":"genp","acct":"a",}"#, #"{"class":"genp",,"acct":"a"}"#, #"{,"class":"genp"}"#,
        #"{"class":"genp","acct":"a","acct":"b"}"#, #"{"acct":"a","class":"genp","class":"inet"}"#,
        #"{"class":"genp","acct":"a"} x"#, #"{"class":"genp","acct":"a""#, #"{"class":"genp","acct"}"#,
        #"{"class":"genp","acct":"a\"b"}"#, #"{"class":"genp","acct":"a\u0041"}"#, #"{"class":"genp","acct":"é"}"#,
        #"{"class":"genp","acct":"a","crtr":1234}"#, #"{"class":"genp","acct":"a","crtr":"1234"}"#,
        #"{"class":"genp","acct":"a","crtr":"12x"}"#, #"{"class":"genp","acct":"a","sync":true}"#,
        #"{"class":"genp","acct":"a","sync":"1"}"#, #"{"class":"genp","acct":"a","invi":"-7"}"#,
        #"{"class":"genp","acct":"a","pdmn":"ck"}"#, #"{"class":"genp","acct":"a","pdmn":"akpu"}"#,
        #"{"class":"genp","acct":"a","pdmn":"xx"}"#, #"{"class":"genp","acct":"a","pdmn":1}"#,
        #"{"class":"genp","acct":"a","cdat":"2020-01-01T00:00:00Z","mdat":"nonsense"}"#,
        #"{"class":"genp","acct":"a","cdat":5}"#,
        #"{"class":"genp","acct":"a","srvr":"example.com"}"#, #"{"class":"genp","acct":"a","bogus":"x"}"#,
        #"{"class":"genp","acct":"a","agrp":"team.app"}"#, #"{"class":"genp","acct":"a","vwht":"v","tkid":"t"}"#,
        #"{"class":"inet","acct":"a","srvr":"example.com","ptcl":"htps","port":"443","path":"/x"}"#,
        #"{"class":"inet","acct":"a","srvr":"example.com","port":443}"#,
        #"{"class":"keys","klbl":"AAECAw==","atag":"tag","kcls":"2","sdat":"2026-01-31T12:00:00Z"}"#,
        #"{"class":"keys","klbl":"not base64!","atag":"tag"}"#, #"{"class":"keys","sdat":"yesterday"}"#,
        #"{"class":"keys","kcls":"2","v_Data":"AAECAwQFBgcICQoLDA0ODw=="}"#,
        #"{"class":"cert","v_Data":"AAECAw=="}"#, #"{"class":"cert","labl":"x"}"#,
        #"{"class":"nope","acct":"a"}"#, #"{"class":"GENP","acct":"a"}"#, #"{"acct":"a"}"#, #"{"class":1}"#,
        #"{"class":"genp","acct":["a"]}"#, #"{"class":"genp","acct":null}"#, #"{"class":"genp","o":{}}"#,
        #"[{"class":"genp"}]"#, #"{}"#, #"{"#, #"}"#, "", "   ", #""class""#, #"{"class":"genp"}"#,
        #"{"class":"genp","acct":"a","labl":"x\ty"}"#, "{\"class\":\"genp\",\"acct\":\"a\u{7F}\"}",
        #"{"class":"genp","subj":"AAEC"}"#, #"{"class":"genp","acctx":"a"}"#, #"{"class":"genp","":"a"}"#,
        #"{"class":"genp","acct":"\u0000"}"#
    ]

    static func same(_ a: NewItem, _ b: NewItem) -> Bool {
        a.itemClass == b.itemClass && a.attributes == b.attributes && a.data == b.data
            && a.protection == b.protection && a.requiresUserPresence == b.requiresUserPresence
    }

    @Test func givesTheGeneralPathsItem_andTakesNoLineItRefuses() {
        var taken = 0
        for text in Self.lines {
            let line = Array(text.utf8)
            let general = try? ImportCommand.parsedItem(line, line: 1)
            guard let fast = ImportLine.item(line) else { continue }
            taken += 1
            #expect(general != nil, "the fast reader took a line the general path refuses: \(text)")
            if let general { #expect(Self.same(fast, general), "\(text)") }
        }
        // The common forms do take the fast path (else this test compares nothing).
        #expect(taken >= 20)
        #expect(ImportLine.item(Array(Self.lines[0].utf8)) != nil)
    }

    /// Every base64 text of one group over a small alphabet (padding and a stray character
    /// included), and seeded longer ones: the fast decoder either declines or decodes exactly
    /// as Foundation does.
    @Test func base64_decodesAsFoundationDoes() {
        let alphabet: [UInt8] = Array("AQgw/+9=-z".utf8)
        var texts: [[UInt8]] = []
        for a in alphabet {
            for b in alphabet { for c in alphabet { for d in alphabet { texts.append([a, b, c, d]) } } }
        }
        var rng = SplitMix(seed: 0xba5e_64)
        for _ in 0..<20_000 {
            let length = 4 * (2 + Int(rng.next() % 3)) - (rng.next() % 8 == 0 ? 1 : 0)
            var text = (0..<length).map { _ in alphabet[Int(rng.next() % 6)] }  // no '=' or strays inside
            if rng.next() % 2 == 0 { text[length - 1] = UInt8(ascii: "=") }
            if rng.next() % 4 == 0 { text[length - 2] = UInt8(ascii: "=") }
            texts.append(text)
        }
        var checked = 0
        for text in texts {
            guard let fast = text.withUnsafeBufferPointer({ ImportLine.base64($0, 0..<text.count) }) else { continue }
            #expect(
                Data(base64Encoded: Data(text)).map { [UInt8]($0) } == fast, "\(String(decoding: text, as: UTF8.self))")
            checked += 1
        }
        #expect(checked > 5000)
    }

    /// The table of keys seen: every digest inserted is found with its line, through growth,
    /// and digests never inserted are not.
    @Test func seenKeys_findsWhatWasInserted() {
        var seen = ImportRun.SeenKeys()
        var rng = SystemRandomNumberGenerator()
        var digests: [ImportRun.KeyDigest] = []
        for line in 1...5000 {
            var d = ImportRun.KeyDigest(
                UniqueKey(itemClass: .genericPassword, attributes: ["acct": .string("user\(line)")]))
            if line % 7 == 0 { d.high = rng.next() }  // some digests from elsewhere
            #expect(seen.line(of: d) == nil)
            seen.insert(d, line: line)
            digests.append(d)
        }
        for (i, d) in digests.enumerated() { #expect(seen.line(of: d) == i + 1) }
        let absent = ImportRun.KeyDigest(
            UniqueKey(itemClass: .genericPassword, attributes: ["acct": .string("nobody")]))
        #expect(seen.line(of: absent) == nil)
    }
}
