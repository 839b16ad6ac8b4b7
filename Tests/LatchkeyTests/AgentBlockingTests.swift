import Foundation
import Testing
@testable import Latchkey
@testable import LatchkeyAgent
import LatchkeyCrypto
import LatchkeyFormat
#if canImport(Glibc)
    import Glibc
#endif

/// A request that blocks (an open that never returns: a FIFO planted at a keychain's path) and
/// connections that are never used: neither keeps anyone else from the agent, nor the agent
/// from stopping (issue 27 §2 and §7).
@Suite(.serialized) struct AgentBlockingTests {
    /// An agent whose open of `blockedPath` blocks until `release()`.
    final class BlockingOpen: @unchecked Sendable {
        let blockedPath: String
        let entered = DispatchSemaphore(value: 0)
        private let gate = DispatchSemaphore(value: 0)

        init(_ path: String) { blockedPath = path }

        func open(_ path: String, _ device: String) throws -> LocalBackend {
            if path == blockedPath {
                entered.signal()
                gate.wait()
                gate.signal()
            }
            return try LocalBackend.open(path: path, devicePath: device)
        }

        func release() { gate.signal() }
    }

    static func start(_ box: AgentSandbox, _ blocking: BlockingOpen, maxConnections: Int = 64) throws -> AgentServer {
        var c = box.configuration()
        c.maxConnections = maxConnections
        c.stopGrace = 1
        c.openKeychain = { try blocking.open($0, $1) }
        let server = AgentServer(configuration: c)
        try server.start()
        box.server = server
        return server
    }

    final class Box<T>: @unchecked Sendable { var value: T?; init() {} }

    /// Runs `body` on a thread of its own: what it returned, or nil when it had not returned
    /// within `seconds`.
    static func within<T>(_ seconds: Double, _ body: @escaping @Sendable () -> T) -> T? {
        let done = DispatchSemaphore(value: 0), box = Box<T>()
        Thread.detachNewThread {
            box.value = body(); done.signal()
        }
        return done.wait(timeout: .now() + seconds) == .success ? box.value : nil
    }

    static func returns(within seconds: Double, _ body: @escaping @Sendable () -> Void) -> Bool {
        within(seconds, body) != nil
    }

    /// Sends an `open` of `path` that the agent answers only once `blocking` is released.
    static func blockedRequest(_ box: AgentSandbox, _ path: String) throws -> RawAgentConnection {
        let raw = try RawAgentConnection(box.socketPath)
        try raw.send(.open(AgentMessage.Target(keychain: path, device: box.devicePath, caller: nil)))
        return raw
    }

    @Test func blockedOpen_delaysOnlyItsKeychain_statusLockAllAndStopAnswer() throws {
        let box = try AgentSandbox()
        try box.addAkAndCk()
        let blockedPath = box.directory + "/blocked.keychain"
        _ = try Keychain.create(
            path: blockedPath, devicePath: box.devicePath, passcode: TestEnv.passcode, kdfLogN: TestEnv.logN)
        let blocking = BlockingOpen(blockedPath)
        defer { blocking.release() }
        let server = try AgentBlockingTests.start(box, blocking)
        let kc = try box.remote()
        try kc.unlock(passcode: TestEnv.passcode)

        let blocked = try AgentBlockingTests.blockedRequest(box, blockedPath)
        defer { blocked.close() }
        #expect(blocking.entered.wait(timeout: .now() + 10) == .success, "the open of the blocked keychain started")
        let second = try AgentBlockingTests.blockedRequest(box, blockedPath)
        defer { second.close() }

        let socket = box.socketPath, keychainPath = box.keychainPath
        // status: answers, and lists the keychain it holds (not the one being opened).
        let listed = AgentBlockingTests.within(5) {
            (try? AgentClient.connect(socketPath: socket)?.status())?.keychains.map(\.keychain)
        }
        #expect(listed == .some([keychainPath]), "status answers while an open blocks")
        // Another keychain: served.
        let read = AgentBlockingTests.within(5) { AgentSandbox.readStatus(kc, "ak") }
        #expect(read == .some(nil), "a request for another keychain is served while an open blocks")
        // lockAll: answers and locks the other keychain.
        let lockAll = try RawAgentConnection(socket)
        defer { lockAll.close() }
        let locked = AgentBlockingTests.within(5) { () -> Bool in
            try? lockAll.send(.lockAll)
            return (try? lockAll.receive())?.ok == true
        }
        #expect(locked == true, "lockAll answers while an open blocks")
        #expect(AgentSandbox.readStatus(kc, "ak") == -25308, "locked by lockAll")
        #expect(AgentSandbox.readStatus(kc, "ck") == nil)

        // stop: answers, and the agent stops (the blocked open's keys would go with the process).
        let stopper = try RawAgentConnection(socket)
        defer { stopper.close() }
        let stopped = AgentBlockingTests.within(5) { () -> Bool in
            try? stopper.send(.stop)
            return (try? stopper.receive())?.ok == true
        }
        #expect(stopped == true, "stop answers while an open blocks")
        #expect(AgentBlockingTests.returns(within: 5) { server.wait() }, "the agent stops while an open blocks")
        #expect(!FileManager.default.fileExists(atPath: socket))
        #expect(
            box.logLines.all.contains {
                $0.contains("still in a request") && $0.contains("blocked.keychain") && !$0.contains("login.keychain")
            },
            "\(box.logLines.all)")

        // The clients of the blocked keychain are told: their connections are closed.
        for raw in [blocked, second] { #expect(raw.isClosedByPeer(within: 3)) }
        blocking.release()
    }

    /// A request waiting for a keychain in use keeps its place; the idle lock and status do not
    /// wait for it.
    @Test func statusDuringARequest_reportsTheLastState() throws {
        let box = try AgentSandbox()
        let blockedPath = box.directory + "/blocked.keychain"
        _ = try Keychain.create(
            path: blockedPath, devicePath: box.devicePath, passcode: TestEnv.passcode, kdfLogN: TestEnv.logN)
        let blocking = BlockingOpen(blockedPath)
        defer { blocking.release() }
        _ = try AgentBlockingTests.start(box, blocking)
        let blocked = try AgentBlockingTests.blockedRequest(box, blockedPath)
        defer { blocked.close() }
        #expect(blocking.entered.wait(timeout: .now() + 10) == .success)
        blocking.release()
        let r = try blocked.receive()
        guard case .state(let state) = r else { Issue.record("\(r)"); return }
        #expect(state.keychain == blockedPath)
        #expect(state.unlocked == ["dk", "dku"])
        let status = try #require(try AgentClient.connect(socketPath: box.socketPath)).status()
        #expect(status.keychains.map(\.keychain) == [blockedPath])
    }

    /// Idle connections never shut anyone out: at the limit, the connection that waited longest
    /// for a request is closed to make room, and its client reconnects for its next request.
    @Test func idleConnectionsAtTheLimit_makeRoom_andTheirClientsReconnect() throws {
        let box = try AgentSandbox()
        try box.addAkAndCk()
        let blocking = BlockingOpen("/nowhere")
        let server = try AgentBlockingTests.start(box, blocking, maxConnections: 4)
        _ = server
        // A client of the library whose connection will be the oldest.
        let kc = try box.remote()
        try kc.unlock(passcode: TestEnv.passcode)
        Thread.sleep(forTimeInterval: 0.05)
        let idle = try (0..<10).map { _ in try RawAgentConnection(box.socketPath) }
        defer { for c in idle { c.close() } }
        let client = try #require(try AgentClient.connect(socketPath: box.socketPath))
        let answered = AgentBlockingTests.within(5) { (try? client.status()) != nil }
        #expect(answered == true, "status answers with more idle connections open than the limit")
        let read = AgentBlockingTests.within(5) { AgentSandbox.readStatus(kc, "ak") }
        #expect(read == .some(nil), "the library's client reconnects after its connection made room")
        let locked = AgentBlockingTests.within(5) { (try? client.lockAll()) != nil }
        #expect(locked == true)
        #expect(AgentSandbox.readStatus(kc, "ak") == -25308)
        #expect(idle.filter { $0.isClosedByPeer(within: 1) }.count >= 6, "the oldest idle connections were closed")
        #expect(box.logLines.all.contains { $0.contains("idle longest") })
    }

    /// When every connection is in the middle of a request, a new one is still answered for
    /// status, lockAll and stop; any other request is refused, nothing done.
    @Test func everyConnectionBusy_agentWideRequestsAreAnswered_othersRefused() throws {
        let box = try AgentSandbox()
        try box.addAkAndCk()
        let blockedPath = box.directory + "/blocked.keychain"
        _ = try Keychain.create(
            path: blockedPath, devicePath: box.devicePath, passcode: TestEnv.passcode, kdfLogN: TestEnv.logN)
        let blocking = BlockingOpen(blockedPath)
        defer { blocking.release() }
        let server = try AgentBlockingTests.start(box, blocking, maxConnections: 3)
        let blocked = try (0..<3).map { _ in try AgentBlockingTests.blockedRequest(box, blockedPath) }
        defer { for c in blocked { c.close() } }
        #expect(blocking.entered.wait(timeout: .now() + 10) == .success)
        Thread.sleep(forTimeInterval: 0.2)  // the other two wait for the open

        let status = try RawAgentConnection(box.socketPath)
        defer { status.close() }
        #expect(try status.status().ok, "status over the limit")
        let find = try RawAgentConnection(box.socketPath)
        defer { find.close() }
        try find.send(.open(AgentMessage.Target(keychain: box.keychainPath, device: box.devicePath, caller: nil)))
        let refused = try find.receive()
        #expect(refused.status == -25291)
        #expect(refused.message?.contains("the agent is busy") == true, "\(refused)")
        #expect(refused.message?.contains("LATCHKEY_AGENT_SOCK=none") == true, "\(refused)")
        let stop = try RawAgentConnection(box.socketPath)
        defer { stop.close() }
        try stop.send(.stop)
        #expect(try stop.receive().ok)
        #expect(AgentBlockingTests.returns(within: 5) { server.wait() }, "stopped over the limit")
    }
}
