import Foundation
import Latchkey
import LatchkeyCrypto
import LatchkeyFormat
import Testing

@testable import LatchkeySync

/// fixtures/sync/ (spec/SYNC.md): each remote, synced by a member that pinned only the
/// founding statement (the circle's recovery key, whose secret the README gives), reaches the
/// items and warnings of its expected.json, or stops.
@Suite(.serialized) struct SyncFixtureTests {
    static let root = packageRoot.appendingPathComponent("fixtures/sync")
    static let names = [
        "three_machines", "tampered_segment", "replayed_segment", "forged_member", "removed_member_later_segment",
        "rolled_back", "compacted", "tampered_base"
    ]

    struct Expected: Decodable {
        struct Item: Decodable, Equatable {
            let acct: String
            let svce: String
            let data: String
            let pdmn: String
        }
        let outcome: String
        let after: String?
        let warnings: [String]
        let items: [Item]
    }

    /// A reader: a keychain of its own holding the recovery key's identity, a state that pins
    /// the founding statement, and the fixture's remote copied into a shared folder.
    final class Reader {
        let dir: URL
        let keychain: Keychain
        let engine: SyncEngine
        let folder: URL

        init(first: String) throws {
            dir = FileManager.default.temporaryDirectory.appendingPathComponent(
                "lk-syncfx-\(UUID().uuidString.prefix(8))")
            folder = dir.appendingPathComponent("remote")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            try Reader.copy(first, to: folder)
            keychain = try Keychain.create(
                path: dir.appendingPathComponent("k").path, devicePath: dir.appendingPathComponent("d").path,
                passcode: nil, kdfLogN: 10)
            let secret = try #require(bytesFromHex(String(decoding: try Reader.readmeSecret(), as: UTF8.self)))
            let identity = try SyncIdentity.recovery(SecretKey(copying: secret))
            try identity.store(in: keychain)
            engine = try SyncEngine(keychain: keychain)
            // The founding statement, pinned as a joiner pins it (§4.3).
            let tree = RemoteTree(root: folder.path)
            let circle = try Circle.verify(tree, circle: nil, pinned: [])
            try engine.locked {
                var state = SyncState(
                    remote: "dir:" + folder.path, circle: circle.head.circle, device: identity.device,
                    chain: [circle.statements[0].hash])
                try engine.save(&state)
            }
        }

        static func readmeSecret() throws -> [UInt8] {
            let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
            let line = try #require(
                readme.split(separator: "\n").first {
                    $0.hasPrefix("    ") && $0.trimmingCharacters(in: .whitespaces).count == 64
                })
            return Array(line.trimmingCharacters(in: .whitespaces).utf8)
        }

        static func copy(_ name: String, to folder: URL) throws {
            try? FileManager.default.removeItem(at: folder)
            try FileManager.default.copyItem(
                at: root.appendingPathComponent(name).appendingPathComponent("remote"), to: folder)
        }

        func items() throws -> [Expected.Item] {
            try keychain.find(Query(.genericPassword, ["svce": .string("fixture")], synchronizable: .synchronizable))
                .map {
                    guard case .string(let a)? = $0.attributes["acct"] else {
                        return Expected.Item(acct: "", svce: "", data: "", pdmn: "")
                    }
                    return Expected.Item(
                        acct: a, svce: "fixture", data: String(decoding: $0.data, as: UTF8.self),
                        pdmn: $0.protection.code)
                }.sorted { $0.acct < $1.acct }
        }

        deinit { try? FileManager.default.removeItem(at: dir) }
    }

    @Test(arguments: names)
    func fixtureReachesItsExpectedOutcome(name: String) throws {
        let expected = try JSONDecoder().decode(
            Expected.self,
            from: Data(contentsOf: Self.root.appendingPathComponent(name).appendingPathComponent("expected.json")))
        let reader = try Reader(first: expected.after ?? name)
        if let after = expected.after {
            try reader.engine.sync()
            try Reader.copy(name, to: reader.folder)
        }
        switch expected.outcome {
        case "success":
            let report = try reader.engine.sync()
            #expect(try reader.items() == expected.items)
            for w in expected.warnings {
                #expect(report.warnings.contains { $0.contains(w) }, "no warning contains \(w): \(report.warnings)")
            }
            if expected.warnings.isEmpty { #expect(report.warnings.isEmpty) }
        default:
            #expect(throws: KeychainError.self) { try reader.engine.sync() }
            #expect(try reader.items() == expected.items)
        }
    }

    @Test func everyFixtureIsListed() throws {
        let dirs = try FileManager.default.contentsOfDirectory(atPath: Self.root.path).filter { $0 != "README.md" }
        #expect(Set(dirs) == Set(Self.names))
    }
}
