import Foundation
import Testing
#if canImport(Glibc)
    import Glibc
#endif

/// Which requests a CLI command sends the agent (spec/AGENT.md §7), seen on the socket: the
/// command talks to an `AgentRecorder`, which relays every frame to a real agent and notes
/// each request's type.
@Suite(.serialized) struct AgentRequestTests {
    /// The sandbox of AgentCLITests with an agent unlocked and one item, and a recorder in
    /// front of the agent.
    static func recorded(_ body: (CLISandbox, AgentRecorder) throws -> Void) throws {
        let sb = try AgentCLITests.sandbox()
        try sb.add(account: "alice", data: Array("s3cret".utf8))
        let agent = try AgentCLITests.startAgent(sb)
        defer { AgentCLITests.stop(agent) }
        #expect(try sb.run(["unlock"]).status == 0)
        let recorder = try AgentRecorder(
            relayingTo: sb.environment["LATCHKEY_AGENT_SOCK"]!,
            at: sb.directory.appendingPathComponent("r/agent.sock").path)
        defer { recorder.stop() }
        try body(sb, recorder)
    }

    /// Through the recorder, with no passcode given: the agent holds the keys.
    static func env(_ recorder: AgentRecorder) -> [String: String?] {
        ["LATCHKEY_AGENT_SOCK": recorder.path, "LATCHKEY_PASSCODE": nil]
    }

    /// find, add, update and delete given no passcode start with their own request, which
    /// opens the keychain in the agent: no `open` (0x10) before it, so a find is one round
    /// trip instead of two (update and delete find what they change first).
    @Test func singleItemCommands_sendOneRequest() throws {
        try AgentRequestTests.recorded { sb, recorder in
            let env = AgentRequestTests.env(recorder)
            let found = try sb.run(["find", "--account", "alice", "--service", "mail"], env: env)
            #expect(found.status == 0, "\(found.stderr)")
            #expect(found.stdout == Array("s3cret".utf8))
            #expect(recorder.takeRequests() == [[0x21]], "find")

            let added = try sb.run(["add", "--account", "bob", "--service", "mail"], stdin: Array("pw".utf8), env: env)
            #expect(added.status == 0, "\(added.stderr)")
            #expect(recorder.takeRequests() == [[0x20]], "add")

            let updated = try sb.run(
                ["update", "--account", "bob", "--service", "mail", "--set-label", "Bob"], env: env)
            #expect(updated.status == 0, "\(updated.stderr)")
            // As delete: what it would change first, so that several matches are never changed
            // without a --yes (issue 31).
            #expect(recorder.takeRequests() == [[0x21, 0x22]], "update: what it changes, then the update")

            let deleted = try sb.run(["delete", "--account", "bob", "--service", "mail"], env: env)
            #expect(deleted.status == 0, "\(deleted.stderr)")
            #expect(recorder.takeRequests() == [[0x21, 0x23]], "delete: what it deletes, then the delete")
        }
    }

    /// The first request, opening the keychain, fails as `open` did: a keychain that is not
    /// there gives the error, the advice (protocol 3 carries the remedy) and the exit status of
    /// a direct open, and a locked class errSecInteractionNotAllowed.
    @Test func singleRequest_failsAsOpeningDid() throws {
        try AgentRequestTests.recorded { sb, recorder in
            var env = AgentRequestTests.env(recorder)
            let missing = sb.directory.appendingPathComponent("missing.keychain").path
            env["LATCHKEY_KEYCHAIN"] = missing
            let served = try sb.run(["find", "--account", "alice", "--service", "mail"], env: env)
            env["LATCHKEY_AGENT_SOCK"] = "none"
            let direct = try sb.run(["find", "--account", "alice", "--service", "mail"], env: env)
            #expect(direct.status == 7, "\(direct.stderr)")
            #expect(served.status == direct.status)
            #expect(served.stderr == direct.stderr)
            #expect(
                direct.stderr.hasPrefix("latchkey: no keychain at \(missing); create one with 'latchkey init'"),
                "\(direct.stderr)")
            #expect(recorder.takeRequests() == [[0x21]])

            #expect(try sb.run(["lock"]).status == 0)
            let locked = try sb.run(
                ["find", "--account", "alice", "--service", "mail"], env: AgentRequestTests.env(recorder))
            #expect(locked.status == 4, "\(locked.stderr)")
            #expect(locked.stderr.contains("errSecInteractionNotAllowed"), "\(locked.stderr)")
        }
    }

    /// A passcode given to a command is still checked against the keychain first (a keychain
    /// without one refuses it, spec/SECURITY.md §2.4): then the command asks for the state.
    @Test func givenPasscode_stillAsksForTheState() throws {
        try AgentRequestTests.recorded { sb, recorder in
            var env = AgentRequestTests.env(recorder)
            env["LATCHKEY_PASSCODE"] = CLISandbox.passcode
            let found = try sb.run(["find", "--account", "alice", "--service", "mail"], env: env)
            #expect(found.status == 0, "\(found.stderr)")
            #expect(recorder.takeRequests().first?.first == 0x10, "open first")
        }
    }
}

/// A Unix socket that relays each connection, frame by frame, to the agent at `target` and
/// records the type byte (spec/AGENT.md §3) of every request it passes on, by connection.
final class AgentRecorder: @unchecked Sendable {
    let path: String
    private let target: String
    private let listener: Int32
    private let mutex = NSLock()
    private var requests: [[UInt8]] = []

    init(relayingTo target: String, at path: String) throws {
        self.path = path
        self.target = target
        let directory = (path as NSString).deletingLastPathComponent
        guard mkdir(directory, 0o700) == 0 else { throw CLITestError("cannot create \(directory)") }
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0, AgentRecorder.withAddress(path, { bind(listener, $0, $1) }) == 0, listen(listener, 8) == 0
        else {
            throw CLITestError("cannot listen at \(path): \(String(cString: strerror(errno)))")
        }
        chmod(path, 0o600)
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// The requests' types since the last call, one list a connection, in order.
    func takeRequests() -> [[UInt8]] {
        mutex.lock(); defer { mutex.unlock() }
        let taken = requests
        requests = []
        return taken
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        unlink(path)
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { if errno == EINTR { continue }; return }
            mutex.lock()
            requests.append([])
            let index = requests.count - 1
            mutex.unlock()
            Thread.detachNewThread { [self] in relay(client, index) }
        }
    }

    private func relay(_ client: Int32, _ index: Int) {
        defer { close(client) }
        let agent = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(agent) }
        guard AgentRecorder.withAddress(target, { connect(agent, $0, $1) }) == 0 else { return }
        while let request = AgentRecorder.readFrame(client) {
            mutex.lock()
            if index < requests.count, request.count > 5 { requests[index].append(request[5]) }
            mutex.unlock()
            guard AgentRecorder.writeAll(agent, request), let answer = AgentRecorder.readFrame(agent),
                AgentRecorder.writeAll(client, answer)
            else { return }
        }
    }

    /// One whole frame, its length prefix included; nil at the end of the stream.
    static func readFrame(_ fd: Int32) -> [UInt8]? {
        guard let header = readExactly(fd, 4) else { return nil }
        let length = header.reduce(0) { $0 << 8 | Int($1) }
        guard let payload = readExactly(fd, length) else { return nil }
        return header + payload
    }

    static func readExactly(_ fd: Int32, _ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = bytes.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + got, count - got, 0) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            got += n
        }
        return bytes
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            sent += n
        }
        return true
    }

    static func withAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes.prefix(raw.count - 1))
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}
