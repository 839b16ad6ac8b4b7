import Foundation
import Testing
@testable import Latchkey
import LatchkeyFormat

/// The seam between the `Keychain` facade and its backends: a closed keychain has no backend
/// and every operation refuses with one error; the file is a capability only a local backend
/// has; and nothing below the facade names it.
@Suite struct SeamTests {
    @Test func closedKeychain_everyOperationRefuses_withTheSameError() throws {
        let kc = try createKeychain(on: try makeDisk())
        try kc.unlock(passcode: TestEnv.passcode)
        kc.close()
        #expect(kc.backend == nil && kc.localStore == nil)
        #expect(!kc.hasPasscode && !kc.isAvailable(.always) && kc.recoveredTailBytes == 0)
        #expect(!kc.isServedByAgent && !kc.agentStopped)
        kc.lock()
        #expect(try kc.add(contentsOf: []).isEmpty, "an empty add touches no backend")
        let query = Query(.genericPassword)
        let operations: [(String, () throws -> Void)] = [
            ("unlock", { try kc.unlock(passcode: TestEnv.passcode) }),
            ("add", { _ = try kc.add(.genericPassword, attributes: [:], data: [1]) }),
            ("find", { _ = try kc.find(query) }),
            ("update", { _ = try kc.update(query, attributes: ["labl": .string("x")]) }),
            ("delete", { _ = try kc.delete(query) }),
            ("addIdentity", { _ = try kc.addIdentity(certificate: [], privateKey: []) }),
            ("identities", { _ = try kc.identities() }),
            ("updateIdentities", { _ = try kc.updateIdentities(matching: IdentityQuery(), attributes: [:]) }),
            ("deleteIdentities", { _ = try kc.deleteIdentities() }),
            ("changePasscode", { _ = try kc.changePasscode(old: TestEnv.passcode, new: nil) }),
            ("compact", { _ = try kc.compact() }),
            ("info", { _ = try kc.info() }),
            ("walkItems", { try kc.walkItems(protections: nil, survey: { _ in }, emit: { _ in }) }),
            ("importItems", { try kc.importItems { _ in } }),
            ("agentState", { _ = try kc.agentState() }),
            ("requireLocalStore", { _ = try kc.requireLocalStore() })
        ]
        for (name, operation) in operations {
            let error = #expect(throws: KeychainError.self, "\(name)") { try operation() }
            #expect(error?.status == .notAvailable, "\(name)")
            #expect(error?.message == Keychain.closed.message, "\(name): \(error?.message ?? "")")
        }
        #expect(kc.verify().problems == [Keychain.closed.message])
    }

    @Test func onlyALocalBackend_streams() throws {
        let local = try createKeychain(on: try makeDisk())
        #expect(local.backend is any StreamingBackend)
        #expect(try local.requireLocalStore() === local.localStore)

        let box = try AgentSandbox()
        try box.addAkAndCk()
        try box.startAgent()
        let remote = try box.remote()
        #expect(!(remote.backend is any StreamingBackend) && remote.localStore == nil)
        let error = #expect(throws: KeychainError.self) { _ = try remote.requireLocalStore() }
        #expect(error?.status == .notAvailable)
        #expect(error?.message.contains("served by the agent") == true)
    }

    /// The layers below the facade (Backend/, Store/, Agent/, Query/ and the agent's server)
    /// call down only: no `Keychain.` static, no extension of the facade. The rules they need
    /// are `ItemRules` and `DerivedAttributes`.
    @Test func belowTheFacade_nothingNamesIt() throws {
        var sources = URL(fileURLWithPath: #filePath)
        while sources.path != "/"
            && !FileManager.default.fileExists(atPath: sources.appendingPathComponent("Package.swift").path)
        {
            sources.deleteLastPathComponent()
        }
        sources.appendPathComponent("Sources")
        let folders = ["Latchkey/Backend", "Latchkey/Store", "Latchkey/Agent", "Latchkey/Query", "LatchkeyAgent"]
        let upward = try Regex(#"\bKeychain\.[a-z]"#)
        var found: [String] = []
        for folder in folders {
            let dir = sources.appendingPathComponent(folder)
            for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) where name.hasSuffix(".swift") {
                let text = try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8)
                for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                    if code.contains("extension Keychain ") || code.contains(upward) {
                        found.append("\(folder)/\(name):\(n + 1): \(line.trimmingCharacters(in: .whitespaces))")
                    }
                }
            }
        }
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }
}
