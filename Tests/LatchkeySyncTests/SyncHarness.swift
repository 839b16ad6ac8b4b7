import Foundation
import Latchkey
import LatchkeyFormat
import Testing

@testable import LatchkeySync

/// Machines with their own keychain and device secret, and a bare git repository on disk as
/// the remote: real git, nothing simulated but the machines' separation.
final class SyncLab {
    let root: String
    let remote: String
    static let gitEnvironment = ["GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"]

    init() throws {
        root =
            FileManager.default.temporaryDirectory.appendingPathComponent("lk-sync-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        remote = root + "/remote.git"
        try Self.run(["git", "init", "-q", "--bare", remote])
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    func machine(_ name: String, passcode: [UInt8]? = nil) throws -> Machine {
        try Machine(name: name, dir: root + "/" + name, passcode: passcode)
    }

    /// A founded circle of `names.count` machines, the first the founder.
    func circle(_ names: [String]) throws -> [Machine] {
        let ms = try names.map { try machine($0) }
        _ = try ms[0].engine.initialize(remote: remote, name: names[0])
        for m in ms.dropFirst() {
            let code = try m.engine.join(remote: remote, name: m.name)
            _ = try ms[0].engine.approve(code: code)
        }
        for m in ms { try m.engine.sync() }
        return ms
    }

    @discardableResult
    static func run(_ args: [String], in dir: String? = nil) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = args
        if let dir { p.currentDirectoryURL = URL(fileURLWithPath: dir) }
        var env = ProcessInfo.processInfo.environment
        for (k, v) in gitEnvironment { env[k] = v }
        p.environment = env
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw LabError("\(args.joined(separator: " ")) failed") }
        return String(decoding: data, as: UTF8.self)
    }

    /// Every object in the remote, decompressed (git stores them zlib-compressed).
    func remoteObjects() throws -> [UInt8] {
        Array(try Self.run(["git", "--git-dir", remote, "cat-file", "--batch-all-objects", "--batch"]).utf8)
    }

    /// A working clone of the remote for playing the hostile host.
    func hostileClone() throws -> String {
        let dir = root + "/hostile-\(UUID().uuidString.prefix(6))"
        try Self.run(["git", "clone", "-q", "-b", "latchkey", remote, dir])
        return dir
    }

    func hostilePush(_ dir: String, force: Bool = false) throws {
        try Self.run(["git", "-C", dir, "add", "-A"])
        try Self.run(["git", "-C", dir, "-c", "user.name=evil", "-c", "user.email=e@x", "commit", "-q", "-m", "evil"])
        try Self.run(["git", "-C", dir, "push", "-q"] + (force ? ["-f"] : []) + ["origin", "HEAD:latchkey"])
    }
}

struct LabError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

final class Machine {
    let name: String
    let dir: String
    let keychain: Keychain
    let engine: SyncEngine

    init(name: String, dir: String, passcode: [UInt8]?) throws {
        self.name = name
        self.dir = dir
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        keychain = try Keychain.create(
            path: dir + "/login.keychain", devicePath: dir + "/device", passcode: passcode, kdfLogN: 10)
        if let passcode { try keychain.unlock(passcode: passcode) }
        engine = try SyncEngine(keychain: keychain)
        engine.gitEnvironment = SyncLab.gitEnvironment
        // Bases and pruning (§7.5) after every few segments, so that every scenario meets them.
        engine.compactEvery = Machine.compactEvery
        engine.acknowledgeEvery = 0
    }

    static let compactEvery = 2

    /// The synchronizable generic passwords: account → secret.
    func synced() throws -> [String: String] {
        var out: [String: String] = [:]
        for i in try keychain.find(Query(.genericPassword, ["svce": .string("web")], synchronizable: .synchronizable)) {
            if case .string(let a)? = i.attributes["acct"] { out[a] = String(decoding: i.data, as: UTF8.self) }
        }
        return out
    }

    func put(_ account: String, _ secret: String, protection: ProtectionClass = .whenUnlocked) throws {
        let q = Query(
            .genericPassword, ["svce": .string("web"), "acct": .string(account)], synchronizable: .synchronizable)
        if try keychain.find(q, includeData: false).isEmpty {
            try keychain.add(
                .genericPassword,
                attributes: ["svce": .string("web"), "acct": .string(account), "sync": .integer(1)],
                data: Array(secret.utf8), protection: protection)
        } else {
            try keychain.update(q, attributes: [:], data: Array(secret.utf8))
        }
    }

    func remove(_ account: String) throws {
        _ = try keychain.delete(
            Query(.genericPassword, ["svce": .string("web"), "acct": .string(account)], synchronizable: .synchronizable)
        )
    }
}
