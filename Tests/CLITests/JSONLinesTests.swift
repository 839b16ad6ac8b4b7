import Foundation
import Testing

/// `find --jsonl`: one object per line, which `import` reads back as is (issue 18 §2).
@Suite struct JSONLinesTests {
    @Test func findJSONL_isOneObjectPerLine_andImportReadsItBack() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        try sb.add(account: "alice", data: Array("s3cret".utf8), ["--label", "two\n  lines"])
        try sb.add(account: "bob", data: Array("other".utf8))
        let r = try sb.run(["find", "--service", "mail", "--limit", "all", "--return", "all", "--jsonl"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.out.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 3 && lines.last == "", "two lines, each ended: \(r.out)")
        for line in lines.dropLast() {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["class"] as? String == "genp", "\(line)")
        }
        #expect(r.out.contains(#""two\n  lines""#), "string contents keep their escaped newline and spaces: \(r.out)")

        let file = try sb.writeFile("items.jsonl", r.stdout)
        let other = try CLISandbox()
        try other.initKeychain()
        let imported = try other.run(["import", file])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(try other.run(["find", "--account", "alice", "--service", "mail"]).out == "s3cret")
        let label = try other.run([
            "find", "--account", "alice", "--service", "mail", "--return", "attributes", "--json"
        ])
        #expect(label.out.contains(#""two\n  lines""#), "\(label.out)")

        #expect(
            try sb.run(["find", "--service", "mail", "--jsonl"]).status == 2, "--jsonl needs --return attributes or all"
        )
    }
}

/// `dump --jsonl` (issue 18 §2): every item the caller reaches as one object per line, without
/// secrets, which `import` reads back as is.
@Suite struct DumpJSONLinesTests {
    static func objects(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
    }

    /// The objects without what an import sets anew (dates) and sorted, for comparison.
    static func comparable(_ objects: [[String: Any]]) throws -> [String] {
        try objects.map { o in
            var o = o
            o["cdat"] = nil; o["mdat"] = nil
            return String(
                decoding: try JSONSerialization.data(withJSONObject: o, options: [.sortedKeys]), as: UTF8.self)
        }.sorted()
    }

    @Test func dumpJSONL_roundTripsThroughImport_withoutSecrets() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        try sb.add(account: "alice", data: Array("s3cret".utf8), ["--label", "two\n  lines"])
        let inet = try sb.run(
            [
                "add", "--class", "inet", "--server", "example.com", "--port", "8443", "--protocol", "htps",
                "--account", "bob", "--accessible", "ck"
            ], stdin: Array("pw".utf8))
        #expect(inet.status == 0, "\(inet.stderr)")
        let dump = try sb.run(["dump", "--jsonl"])
        #expect(dump.status == 0, "\(dump.stderr)")
        #expect(dump.out.hasSuffix("\n") && dump.out.split(separator: "\n").count == 2, "\(dump.out)")
        #expect(!dump.out.contains("v_Data") && !dump.out.contains("s3cret"), "never a secret: \(dump.out)")
        let objects = try Self.objects(dump.out)
        #expect(Set(objects.compactMap { $0["class"] as? String }) == ["genp", "inet"], "\(dump.out)")

        let file = try sb.writeFile("dump.jsonl", dump.stdout)
        let other = try CLISandbox()
        try other.initKeychain()
        let imported = try other.run(["import", file])
        #expect(imported.status == 0, "\(imported.stderr)")
        let again = try other.run(["dump", "--jsonl"])
        #expect(try Self.comparable(Self.objects(again.out)) == Self.comparable(objects), "\(again.out)")
        let secret = try other.run(["find", "--account", "alice", "--service", "mail"])
        #expect(secret.status == 0 && secret.stdout.isEmpty, "the imported item has an empty secret")

        #expect(try sb.run(["dump", "--json", "--jsonl"]).status == 2)
    }
}
