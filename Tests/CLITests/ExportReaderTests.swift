import Latchkey
import Testing

@testable import latchkey

/// The readers under `import --from`: CSV (RFC 4180), the XML subset KeePass writes, the URL
/// of a login as git's credential helper splits it, and a `pass show` output.
@Suite struct ExportReaderTests {
    func records(_ text: String) throws -> [[String]] {
        let reader = CSVReader(ByteStream(bytes: Array(text.utf8), what: "test.csv"))
        var out: [[String]] = []
        while let r = try reader.next() { out.append(r.map { String(decoding: $0, as: UTF8.self) }) }
        return out
    }

    func csvError(_ text: String) -> String? {
        do {
            _ = try records(text)
            return nil
        } catch let e as KeychainError {
            return e.message
        } catch {
            return "\(error)"
        }
    }

    @Test func csv_quotesCommasNewlinesAndCRLF() throws {
        let text = "\u{FEFF}a,b,c\r\n\"x,1\",\"say \"\"hi\"\"\",\"two\nlines\"\r\n,,\n\nlast,\"\",end"
        #expect(
            try records(text) == [
                ["a", "b", "c"], ["x,1", "say \"hi\"", "two\nlines"], ["", "", ""], ["last", "", "end"]
            ])
        // A final CRLF ends the last record and adds none; a lone CR inside a field is data.
        #expect(try records("a\r\nb\r\n") == [["a"], ["b"]])
        #expect(try records("a\rb,c\n") == [["a\rb", "c"]])
        #expect(try records("\"\"\"\"\n") == [["\""]])
    }

    @Test func csv_malformed_namesTheLine() {
        #expect(csvError("a,b\n\"open,c\nd\n")?.hasPrefix("line 2 of the test.csv: a quoted field") == true)
        #expect(csvError("a\nb\"c\n")?.hasPrefix("line 2 of the test.csv: a quote inside a field") == true)
        #expect(
            csvError("a\n\n\"x\"y\n")?.hasPrefix("line 3 of the test.csv: a character after the closing quote") == true)
        #expect(csvError("a\n\"x\"\r\r\n")?.hasPrefix("line 2 of the test.csv: a carriage return") == true)
    }

    @Test func csv_recordLine_isWhereTheRecordBegins() throws {
        let reader = CSVReader(ByteStream(bytes: Array("h\n\"a\nb\nc\"\nd\n".utf8), what: "t"))
        _ = try reader.next()
        #expect(reader.recordLine == 1)
        _ = try reader.next()
        #expect(reader.recordLine == 2)
        _ = try reader.next()
        #expect(reader.recordLine == 5 && reader.record == 3)
    }

    func events(_ text: String, keep: Bool = true) throws -> [XMLReader.Event] {
        let reader = XMLReader(ByteStream(bytes: Array(text.utf8), what: "test.xml"))
        reader.keepText = keep
        var out: [XMLReader.Event] = []
        while let e = try reader.next() {
            if case .text(let t) = e, t.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x09 }) { continue }
            out.append(e)
        }
        return out
    }

    func xmlError(_ text: String) -> String? {
        do {
            _ = try events(text)
            return nil
        } catch let e as KeychainError {
            return e.message
        } catch {
            return "\(error)"
        }
    }

    @Test func xml_elementsAttributesEntitiesCDATAAndComments() throws {
        let text = """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <!-- a comment -->
            <A x="1" y='&lt;2&gt;'>
              <B>a &amp; b &quot;c&quot; &apos;d&apos; &#65;&#x42; &#x1F511;</B>
              <C/>
              <D><![CDATA[<raw> & ]] text]]></D>
            </A>
            """
        #expect(
            try events(text) == [
                .start("A", ["x": "1", "y": "<2>"]), .start("B", [:]),
                .text(Array("a & b \"c\" 'd' AB \u{1F511}".utf8)), .end("B"), .start("C", [:]), .end("C"),
                .start("D", [:]), .text(Array("<raw> & ]] text".utf8)), .end("D"), .end("A")
            ])
        // Text not kept is still read (and checked), and dropped.
        let reader = XMLReader(ByteStream(bytes: Array("<a>secret &amp;</a>".utf8), what: "t"))
        #expect(try reader.next() == .start("a", [:]))
        #expect(try reader.next() == .text([]))
        #expect(try reader.next() == .end("a"))
        #expect(try reader.next() == nil)
    }

    @Test func xml_refusesWhatItDoesNotRead_namingTheLine() {
        #expect(
            xmlError("<a>\n<b></a>")?.hasPrefix("line 2 of the test.xml: the end tag </a> does not close <b>") == true)
        #expect(
            xmlError("<?xml version=\"1.0\"?>\n<!DOCTYPE a [<!ENTITY x \"y\">]>\n<a/>")?.hasPrefix(
                "line 2 of the test.xml: a document type declaration") == true)
        #expect(xmlError("<a>\n\n&bogus;</a>")?.hasPrefix("line 3 of the test.xml: the entity &bogus;") == true)
        #expect(xmlError("<a>\n<b>") == "line 2 of the test.xml: the file ends inside element <b>")
        #expect(xmlError("<a/><b/>")?.contains("a second root element") == true)
        #expect(xmlError("<a x=1/>")?.contains("not in quotes") == true)
        #expect(xmlError("<a>&#0;</a>")?.contains("malformed character reference") == true)
        let deep = String(repeating: "<a>", count: XMLReader.maximumDepth + 1)
        #expect(xmlError(deep)?.contains("nested more than") == true)
    }

    @Test func url_splitAsGitsCredentialHelperSplitsIt() throws {
        func attributes(_ url: String) -> [String: AttributeValue]? { ImportURL(url)?.credential.attributes }
        #expect(
            attributes("https://example.com:8443/login?next=/x#top") == [
                "srvr": .string("example.com"), "ptcl": .string("htps"), "port": .integer(8443),
                "path": .string("login")
            ])
        #expect(attributes("HTTPS://example.com/") == ["srvr": .string("example.com"), "ptcl": .string("htps")])
        #expect(
            attributes("ssh://git@[::1]:2222") == [
                "srvr": .string("[::1]"), "ptcl": .string("ssh "), "port": .integer(2222), "acct": .string("git")
            ])
        #expect(attributes("example.org/a/b") == ["srvr": .string("example.org"), "path": .string("a/b")])
        #expect(
            attributes("androidapp://com.example.app") == [
                "srvr": .string("com.example.app"), "ptcl": .string("androidapp")
            ])
        let withPassword = try #require(ImportURL("https://bob:hunter2@example.com/"))
        #expect(withPassword.hadPassword && withPassword.credential.username == "bob")
        #expect(!"\(withPassword.credential.attributes)".contains("hunter2"))
        #expect(ImportURL("my router") == nil)
        #expect(ImportURL("notes") == nil)
        #expect(ImportURL("https://") == nil)
        #expect(ImportURL("https://example.com:99999/") == nil)
    }

    @Test func passShow_firstLinePassword_userAndURLLines_TOTPLeftOut() throws {
        let output =
            "s3cret\r\nUser: alice\nurl: https://example.com/login\notpauth://totp/x?secret=AAAA\n\nPIN 1234\nlogin: second\n\n"
        let entry = PassSource.entry(name: "web/example", output: Array(output.utf8), keepNotes: true)
        let item = try #require(entry.item)
        #expect(item.itemClass == .internetPassword)
        #expect(item.data == Array("s3cret".utf8))
        #expect(item.attributes["acct"] == .string("alice"))
        #expect(item.attributes["srvr"] == .string("example.com"))
        #expect(item.attributes["labl"] == .string("web/example"))
        #expect(item.attributes["icmt"] == .string("PIN 1234\nlogin: second"))
        #expect(entry.leftOut == ["TOTP (an otpauth:// line)"])

        let plain = try #require(PassSource.entry(name: "mail/bob", output: Array("pw\n".utf8), keepNotes: true).item)
        #expect(
            plain.itemClass == .genericPassword
                && plain.attributes == ["svce": .string("mail/bob"), "labl": .string("mail/bob")])
        let noNotes = PassSource.entry(name: "n", output: Array("pw\nsecret notes\n".utf8), keepNotes: false)
        #expect(noNotes.item?.attributes["icmt"] == nil && noNotes.leftOut == ["notes (--no-notes)"])
        let empty = PassSource.entry(name: "e", output: Array("\nuser: x\n".utf8), keepNotes: true)
        #expect(empty.item == nil && empty.skipReason == "its first line (the password) is empty")
    }
}
