import Foundation
import Synchronization
import Testing
@testable import Latchkey
import LatchkeyFormat

/// Each call carries its own caller (CallContext): one open keychain serves several callers at
/// once, from several threads, and none of them ever acts as another (issue 15 §1).
@Suite struct CallContextTests {
    static let apps = (0..<4).map { CallerIdentity(applicationIdentifier: "app.\($0)") }

    @Test func concurrentCallers_eachSeeOnlyTheirOwnItems() throws {
        let kc = try createKeychain(on: try makeDisk(), passcode: nil)
        let views = Self.apps.map { kc.with(CallContext(caller: $0)) }
        for (i, view) in views.enumerated() {
            try view.add(
                .genericPassword, attributes: ["acct": .string("shared-name"), "svce": .string("s")],
                data: Array("secret of \(i)".utf8))
        }
        let wrong = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 400) { n in
            let i = n % views.count
            let query = Query(.genericPassword, ["acct": .string("shared-name")])
            let found = (try? views[i].find(query)) ?? []
            if found.count != 1 || found.first?.data != Array("secret of \(i)".utf8)
                || found.first?.attributes["agrp"] != .string("app.\(i)")
            {
                wrong.withLock { $0 += 1 }
            }
        }
        #expect(wrong.withLock { $0 } == 0)
        // The keychain itself keeps its own (absent) caller: a trusted tool sees all four.
        #expect(try kc.find(Query(.genericPassword, ["acct": .string("shared-name")])).count == 4)
    }

    @Test func contextIsUsedForUserPresence_notTheKeychainsHandler() throws {
        let kc = try createKeychain(on: try makeDisk())
        try kc.unlock(passcode: TestEnv.passcode)
        try kc.add(
            .genericPassword, attributes: ["acct": .string("a"), "svce": .string("s")], data: [1],
            requiresUserPresence: true)
        kc.authenticationHandler = { _ in TestEnv.wrongPasscode }
        let right = kc.with(CallContext(authenticate: { _ in TestEnv.passcode }))
        #expect(try right.find(Query(.genericPassword, ["acct": .string("a")])).first?.data == [1])
        expectKeychainError(.authFailed) { try kc.find(Query(.genericPassword, ["acct": .string("a")])) }
    }
}
