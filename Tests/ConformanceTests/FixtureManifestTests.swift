import Foundation
import Testing

/// fixtures/manifest.json (spec/CONFORMANCE.md) is what another implementation's test runner
/// reads: it must name every fixture exactly once, with the outcome, inputs and counts of its
/// directory. The engine's outcome for each directory is checked by KeychainFixtureTests and
/// BackupFixtureTests; these tests tie the manifest to those same directories.
@Suite struct FixtureManifestTests {
    static let root = packageRoot.appendingPathComponent("fixtures")

    static func manifest() throws -> [String: Any] {
        let data = try Data(contentsOf: root.appendingPathComponent("manifest.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    static func entries() throws -> [[String: Any]] {
        try #require(try manifest()["fixtures"] as? [[String: Any]], "manifest.json has no fixtures array")
    }

    static func fixtureDirectories(_ format: String) -> Set<String> {
        let dir = root.appendingPathComponent(format)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        let marker = format == "sync" ? "expected.json" : "FIXTURE.txt"
        return Set(
            names.filter {
                FileManager.default.fileExists(atPath: dir.appendingPathComponent("\($0)/\(marker)").path)
            })
    }

    @Test func manifest_namesItsSchema() throws {
        let m = try Self.manifest()
        #expect(m["schema"] as? String == "latchkey-fixtures-manifest 1.2")
        #expect(m["spec"] as? String == "spec/CONFORMANCE.md")
    }

    @Test func manifest_listsEveryFixtureDirectoryExactlyOnce() throws {
        let entries = try Self.entries()
        for format in ["keychain", "backup", "sync"] {
            let listed = entries.filter { $0["format"] as? String == format }.compactMap { $0["name"] as? String }
            #expect(listed.count == Set(listed).count, "\(format): a fixture listed twice")
            #expect(Set(listed) == Self.fixtureDirectories(format), "\(format): manifest and directories differ")
            #expect(!listed.isEmpty)
        }
        #expect(entries.allSatisfy { ["keychain", "backup", "sync"].contains($0["format"] as? String ?? "") })
    }

    /// Each entry says what the directory's FIXTURE.txt says, and every file it names exists.
    @Test func manifest_agreesWithEachFixtureDirectory() throws {
        let outcomes: Set<String> = [
            "success", "not-a-latchkey-file", "unsupported-version", "integrity-error",
            "authentication-error", "rolled-back"
        ]
        for entry in try Self.entries() {
            let name = try #require(entry["name"] as? String)
            let format = try #require(entry["format"] as? String)
            let path = try #require(entry["path"] as? String)
            #expect(path == "\(format)/\(name)")
            let dir = Self.root.appendingPathComponent(path)
            if format == "sync" {
                try checkSyncEntry(entry, dir)
                continue
            }
            let header = try fixtureHeader(in: dir)
            let expect = try #require(entry["expect"] as? String)
            #expect(outcomes.contains(expect), "\(name): unknown outcome \(expect)")
            #expect(
                header["expect"] == expect,
                "\(name): manifest says \(expect), FIXTURE.txt \(header["expect"] ?? "nothing")")
            #expect(header["description"] == entry["description"] as? String, "\(name): description")
            #expect(header["defect"] == entry["defect"] as? String, "\(name): defect")
            #expect(header["feature"] == entry["feature"] as? String, "\(name): feature")
            let inputs = try #require(entry["inputs"] as? [String: Any], "\(name): no inputs")
            for case let (_, file as String) in inputs {
                #expect(
                    FileManager.default.fileExists(atPath: dir.appendingPathComponent(file).path),
                    "\(name): \(file) is missing")
            }
            if format == "keychain" {
                #expect(entry["operation"] as? String == "open")
                #expect(
                    (inputs["passcode"] is String)
                        == FileManager.default.fileExists(atPath: dir.appendingPathComponent("passcode.txt").path))
                #expect(
                    (inputs["index"] is String)
                        == FileManager.default.fileExists(atPath: dir.appendingPathComponent("keychain.index").path))
                if let use = entry["indexUse"] as? String {
                    #expect(["used", "not-used"].contains(use))
                    #expect(
                        header["index"]?.hasPrefix(use == "used" ? "used" : "not used") == true,
                        "\(name): indexUse \(use)")
                }
                #expect(
                    (entry["indexUse"] != nil) == (inputs["index"] is String),
                    "\(name): indexUse exactly when there is an index")
                if let wrong = entry["wrongPasscodes"] as? [String] {
                    #expect(wrong == [header["old-passcode-must-fail"] ?? ""], "\(name): wrongPasscodes")
                }
                if expect == "success" {
                    #expect(entry["items"] as? String == "expected.json")
                    let count = try itemCount(dir.appendingPathComponent("expected.json"), key: "items")
                    #expect(entry["itemCount"] as? Int == count, "\(name): itemCount")
                    #expect(
                        entry["recoveredTailBytes"] as? Int == Int(header["recovered-tail-bytes"] ?? ""),
                        "\(name): recoveredTailBytes")
                } else {
                    #expect(entry["items"] == nil && entry["itemCount"] == nil)
                }
                try checkHistory(entry, header, dir)
            } else {
                #expect(entry["operation"] as? String == "restore")
                #expect((inputs["password"] is String) == (header["password"] == "password.txt"), "\(name): password")
                let restores = try #require(entry["restores"] as? [[String: Any]], "\(name): no restores")
                #expect(!restores.isEmpty)
                for r in restores {
                    let rexpect = try #require(r["expect"] as? String)
                    #expect(outcomes.contains(rexpect))
                    if let items = r["items"] as? String {
                        #expect(rexpect == "success")
                        let key = items.replacingOccurrences(of: "expected-", with: "").replacingOccurrences(
                            of: ".json", with: "")
                        #expect(header[key] == items, "\(name): FIXTURE.txt \(key)")
                        let count = try itemCount(dir.appendingPathComponent(items), key: "restored")
                        #expect(r["itemCount"] as? Int == count, "\(name): \(items) itemCount")
                    } else if expect == "success" {
                        let key = r["device"] as? String == "source-device.secret" ? "same-device" : "other-device"
                        #expect(header[key] == rexpect, "\(name): \(key)")
                    } else {
                        #expect(rexpect == expect)
                    }
                }
            }
        }
    }

    /// A keychain entry's history expectation (spec/CONFORMANCE.md §2, since 1.2): present
    /// exactly when FIXTURE.txt names expected-history.json, only on a success fixture, with the
    /// `now` and the count of that file.
    func checkHistory(_ entry: [String: Any], _ header: [String: String], _ dir: URL) throws {
        let name = entry["name"] as? String ?? "?"
        guard let file = entry["history"] as? String else {
            #expect(header["history"] == nil, "\(name): FIXTURE.txt names a history the manifest does not")
            #expect(entry["historyCount"] == nil && entry["historyNow"] == nil, "\(name)")
            return
        }
        #expect(entry["expect"] as? String == "success", "\(name): a history expectation on a failing fixture")
        #expect(entry["feature"] as? String == "history", "\(name): feature")
        #expect(file == "expected-history.json" && header["history"] == file, "\(name): history")
        let top = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent(file))) as? [String: Any]
        )
        let now = try #require(entry["historyNow"] as? Int, "\(name): historyNow")
        #expect(top["now"] as? Int == now, "\(name): expected-history.json's now")
        #expect(header["history-now"]?.hasPrefix("\(now) ") == true, "\(name): FIXTURE.txt history-now")
        #expect(entry["historyCount"] as? Int == (top["versions"] as? [Any])?.count, "\(name): historyCount")
    }

    /// A sync entry says what its expected.json says (spec/CONFORMANCE.md §5).
    func checkSyncEntry(_ entry: [String: Any], _ dir: URL) throws {
        let name = try #require(entry["name"] as? String)
        let file = dir.appendingPathComponent("expected.json")
        let expected = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
        #expect(entry["operation"] as? String == "sync")
        #expect(entry["expect"] as? String == expected["outcome"] as? String, "\(name): expect")
        #expect(["success", "stop"].contains(entry["expect"] as? String ?? ""))
        #expect(entry["description"] as? String == expected["description"] as? String, "\(name): description")
        #expect(entry["after"] as? String == expected["after"] as? String, "\(name): after")
        #expect(entry["warnings"] as? [String] == expected["warnings"] as? [String], "\(name): warnings")
        let inputs = try #require(entry["inputs"] as? [String: String], "\(name): no inputs")
        #expect(inputs == ["remote": "remote", "expected": "expected.json"])
        var isDirectory: ObjCBool = false
        #expect(
            FileManager.default.fileExists(atPath: dir.appendingPathComponent("remote").path, isDirectory: &isDirectory)
        )
        #expect(isDirectory.boolValue, "\(name): remote/ is missing")
        let readme = try String(
            contentsOf: dir.deletingLastPathComponent().appendingPathComponent("README.md"), encoding: .utf8)
        let secret = try #require(entry["readerSecret"] as? String)
        #expect(secret.count == 64 && readme.contains(secret), "\(name): readerSecret is not the README's")
        if entry["expect"] as? String == "success" {
            #expect(entry["items"] as? String == "expected.json")
            #expect(entry["itemCount"] as? Int == (expected["items"] as? [Any])?.count, "\(name): itemCount")
        } else {
            #expect(entry["items"] == nil && entry["itemCount"] == nil)
        }
    }

    func itemCount(_ file: URL, key: String) throws -> Int {
        let top = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
        return try #require(top[key] as? [Any], "\(file.lastPathComponent) has no \(key) array").count
    }

    @Test(.enabled(if: FixtureGeneratorTests.binary != nil, "latchkey-fixtures is not built beside the tests"))
    func committedManifest_matchesAFreshGeneration() throws {
        let root = try FixtureGeneratorTests.generateRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let fresh = try Data(contentsOf: root.appendingPathComponent("manifest.json"))
        let committed = try Data(contentsOf: Self.root.appendingPathComponent("manifest.json"))
        #expect(fresh == committed, "fixtures/manifest.json is stale or hand-edited; run 'make fixtures'")
    }
}
