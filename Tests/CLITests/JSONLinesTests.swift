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
        let label = try other.run(["find", "--account", "alice", "--service", "mail", "--return", "attributes", "--json"])
        #expect(label.out.contains(#""two\n  lines""#), "\(label.out)")

        #expect(try sb.run(["find", "--service", "mail", "--jsonl"]).status == 2, "--jsonl needs --return attributes or all")
    }
}
