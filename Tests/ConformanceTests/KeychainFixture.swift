import Foundation
import Latchkey
import LatchkeyFormat

/// The package root, found from this file's path (Tests/ConformanceTests/<file>).
let packageRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// One directory of fixtures/keychain/, as written by tools/FixtureGenerator.
struct KeychainFixture: Sendable, CustomStringConvertible {
    static let root = packageRoot.appendingPathComponent("fixtures/keychain")

    /// Every fixture directory, found when the tests are discovered.
    static let all: [KeychainFixture] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        return names.sorted().compactMap { name in
            let dir = root.appendingPathComponent(name)
            guard FileManager.default.fileExists(atPath: dir.appendingPathComponent("FIXTURE.txt").path) else {
                return nil
            }
            return KeychainFixture(name: name, directory: dir)
        }
    }()

    /// Success, or an outcome of spec/FORMAT.md §1.4, spelled as the spec names it.
    enum Expectation: String, Sendable {
        case success
        case notALatchkeyFile = "not-a-latchkey-file"
        case unsupportedVersion = "unsupported-version"
        case integrityError = "integrity-error"
        case authenticationError = "authentication-error"
        case rolledBack = "rolled-back"
    }

    let name: String
    let directory: URL
    var description: String { name }

    /// FIXTURE.txt's `key: value` lines.
    func header() throws -> [String: String] {
        try fixtureHeader(in: directory)
    }

    func expectation() throws -> Expectation {
        let raw = try header()["expect"] ?? ""
        guard let e = Expectation(rawValue: raw) else {
            throw FixtureProblem("\(name): FIXTURE.txt has expect '\(raw)'")
        }
        return e
    }

    /// passcode.txt's bytes (a trailing newline, should an editor add one, is not part of it).
    func passcode() throws -> [UInt8]? {
        let url = directory.appendingPathComponent("passcode.txt")
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        var bytes = [UInt8](try Data(contentsOf: url))
        if bytes.last == 0x0a { bytes.removeLast() }
        return bytes
    }

    /// The items of expected.json.
    func expectedItems() throws -> [ExpectedItem] {
        let data = try Data(contentsOf: directory.appendingPathComponent("expected.json"))
        guard let top = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let items = top["items"] as? [[String: Any]]
        else {
            throw FixtureProblem("\(name): expected.json has no items array")
        }
        return try items.map { try ExpectedItem($0, fixture: name) }
    }

    /// expected-history.json: the time it is computed at (Unix seconds) and the versions a
    /// reader lists then, in file order.
    func expectedHistory() throws -> (now: UInt64, versions: [ExpectedVersion]) {
        let data = try Data(contentsOf: directory.appendingPathComponent("expected-history.json"))
        guard let top = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let now = (top["now"] as? NSNumber)?.uint64Value, let versions = top["versions"] as? [[String: Any]]
        else {
            throw FixtureProblem("\(name): expected-history.json has no now or no versions array")
        }
        return (now, try versions.map { try ExpectedVersion($0, fixture: name) })
    }

    /// Copies the fixture into a fresh temporary directory and restores what git does not
    /// keep: mode 0600 on the device secret, and the state directory (0700).
    func workspace() throws -> Workspace {
        let fm = FileManager.default
        let base = fm.temporaryDirectory.appendingPathComponent("latchkey-conformance-\(UUID().uuidString)")
        try fm.createDirectory(at: base, withIntermediateDirectories: true)
        let dir = base.appendingPathComponent(name)
        try fm.copyItem(at: directory, to: dir)
        let w = Workspace(base: base, directory: dir)
        try fm.setAttributes([.posixPermissions: 0o600], ofItemAtPath: w.devicePath)
        let stateDir = w.devicePath + ".state"
        try fm.createDirectory(atPath: stateDir, withIntermediateDirectories: true)
        try fm.setAttributes([.posixPermissions: 0o700], ofItemAtPath: stateDir)
        for file in try fm.contentsOfDirectory(atPath: stateDir) {
            try fm.setAttributes([.posixPermissions: 0o600], ofItemAtPath: stateDir + "/" + file)
        }
        return w
    }
}

/// A writable copy of a fixture; `remove()` deletes it.
struct Workspace {
    let base: URL
    let directory: URL
    var keychainPath: String { directory.appendingPathComponent("keychain").path }
    var devicePath: String { directory.appendingPathComponent("device.secret").path }
    func remove() { try? FileManager.default.removeItem(at: base) }
}

/// One item of expected.json.
struct ExpectedItem {
    var itemClass: ItemClass
    var uuid: [UInt8]
    var protection: String
    var protectionClass: Int
    /// The item flags byte of its put record (bit 0: user presence).
    var flags: UInt8
    var attributes: [String: AttributeValue]
    var data: [UInt8]

    /// The persistent reference the engine returns: class code ‖ UUID.
    var reference: String { hexString(itemClass.code + uuid) }

    init(_ json: [String: Any], fixture: String) throws {
        func fail(_ what: String) -> FixtureProblem { FixtureProblem("\(fixture): expected.json: \(what)") }
        guard let c = json["class"] as? String, let cls = ItemClass(rawValue: c) else { throw fail("bad class") }
        guard let u = json["uuid"] as? String, let uuid = bytesFromHex(u), uuid.count == 16 else {
            throw fail("bad uuid")
        }
        guard let p = json["protection"] as? String, let pc = json["protectionClass"] as? NSNumber else {
            throw fail("bad protection")
        }
        guard let d = json["data"] as? String, let data = Data(base64Encoded: d) else { throw fail("bad data") }
        guard let f = json["flags"] as? NSNumber, let flagsByte = UInt8(exactly: f.intValue) else {
            throw fail("bad flags")
        }
        guard let attrs = json["attributes"] as? [String: Any] else { throw fail("no attributes") }
        var values: [String: AttributeValue] = [:]
        for (name, raw) in attrs {
            guard let v = raw as? [String: Any], v.count == 1, let (kind, value) = v.first else {
                throw fail("attribute \(name)")
            }
            switch (kind, value) {
            case ("string", let s as String): values[name] = .string(s)
            case ("data", let s as String):
                guard let b = Data(base64Encoded: s) else { throw fail("attribute \(name): bad base64") }
                values[name] = .data([UInt8](b))
            case ("integer", let n as NSNumber): values[name] = .integer(n.int64Value)
            case ("date", let n as NSNumber): values[name] = .date(n.doubleValue)
            default: throw fail("attribute \(name): unknown kind \(kind)")
            }
        }
        itemClass = cls
        self.uuid = uuid
        protection = p
        protectionClass = pc.intValue
        flags = flagsByte
        attributes = values
        self.data = [UInt8](data)
    }
}

/// One version of expected-history.json (spec/FORMAT.md §7.7): its history record's kind and
/// time, and the item as it held it.
struct ExpectedVersion {
    var kind: UInt8
    var supersededAt: UInt64
    var item: ExpectedItem

    init(_ json: [String: Any], fixture: String) throws {
        guard let k = json["kind"] as? NSNumber, let kind = UInt8(exactly: k.intValue),
            let t = (json["supersededAt"] as? NSNumber)?.uint64Value
        else {
            throw FixtureProblem("\(fixture): expected-history.json: bad kind or supersededAt")
        }
        self.kind = kind
        supersededAt = t
        item = try ExpectedItem(json, fixture: fixture)
    }
}

struct FixtureProblem: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// The `key: value` lines of a fixture's FIXTURE.txt (keychain and backup fixtures alike).
func fixtureHeader(in directory: URL) throws -> [String: String] {
    let text = try String(contentsOf: directory.appendingPathComponent("FIXTURE.txt"), encoding: .utf8)
    var fields: [String: String] = [:]
    for line in text.split(separator: "\n") {
        guard let colon = line.firstIndex(of: ":") else { continue }
        fields[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    return fields
}
