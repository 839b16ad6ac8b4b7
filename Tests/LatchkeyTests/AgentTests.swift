import Foundation
import Testing
@testable import Latchkey
@testable import LatchkeyAgent
import LatchkeyCrypto
import LatchkeyFormat
#if canImport(Glibc)
    import Glibc
#endif

/// A keychain on disk (passcode, scrypt 2^10) with an agent serving it on a socket of its own.
final class AgentSandbox: @unchecked Sendable {
    let directory: String
    let keychainPath: String
    let devicePath: String
    let socketPath: String
    var server: AgentServer?
    let logLines = LogLines()
    static let caller = CallerIdentity(applicationIdentifier: "com.example.agent-tests")

    final class LogLines: @unchecked Sendable {
        private let mutex = NSLock()
        private var lines: [String] = []
        func append(_ s: String) { mutex.lock(); lines.append(s); mutex.unlock() }
        var all: [String] { mutex.lock(); defer { mutex.unlock() }; return lines }
    }

    init(passcode: [UInt8]? = TestEnv.passcode) throws {
        // Short: sun_path holds 107 bytes.
        directory = "/tmp/lk-agent-" + String(UUID().uuidString.prefix(8))
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        keychainPath = directory + "/login.keychain"
        devicePath = directory + "/device.secret"
        socketPath = directory + "/run/agent.sock"
        _ = try Keychain.create(path: keychainPath, devicePath: devicePath, passcode: passcode, kdfLogN: TestEnv.logN)
    }

    deinit {
        server?.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    func configuration(idleTimeout: Double = 300, frameTimeout: Double = 10) -> AgentServer.Configuration {
        var c = AgentServer.Configuration(socketPath: socketPath, strictDirectory: true)
        c.idleTimeout = idleTimeout
        c.frameTimeout = frameTimeout
        let lines = logLines
        c.log = { lines.append($0) }
        return c
    }

    @discardableResult
    func startAgent(idleTimeout: Double = 300, frameTimeout: Double = 10) throws -> AgentServer {
        let s = AgentServer(configuration: configuration(idleTimeout: idleTimeout, frameTimeout: frameTimeout))
        try s.start()
        server = s
        return s
    }

    func stopAgent() {
        server?.stop()
        server = nil
    }

    /// The keychain through the agent, as a client process would open it.
    func remote() throws -> Keychain {
        guard let kc = try Keychain.openThroughAgent(path: keychainPath, devicePath: devicePath, socketPath: socketPath)
        else {
            throw KeychainError(.notAvailable, "no agent answers at \(socketPath)")
        }
        kc.caller = AgentSandbox.caller
        return kc
    }

    /// The keychain opened directly (a process without the agent), unlocked.
    func direct(unlocked: Bool = true) throws -> Keychain {
        let kc = try Keychain.open(path: keychainPath, devicePath: devicePath)
        kc.caller = AgentSandbox.caller
        if unlocked { try kc.unlock(passcode: TestEnv.passcode) }
        return kc
    }

    /// Adds genp items "ak" and "ck" (service "s") with those protection classes, directly.
    func addAkAndCk() throws {
        let kc = try direct()
        try kc.add(
            .genericPassword, attributes: ["acct": .string("ak"), "svce": .string("s")],
            data: Array("when-unlocked".utf8), protection: .whenUnlocked)
        try kc.add(
            .genericPassword, attributes: ["acct": .string("ck"), "svce": .string("s")],
            data: Array("after-first".utf8), protection: .afterFirstUnlock)
    }

    static func query(_ account: String) -> Query {
        Query(.genericPassword, ["acct": .string(account), "svce": .string("s")])
    }

    /// The status of reading `account` through `kc`: nil on success.
    static func readStatus(_ kc: Keychain, _ account: String) -> Int32? {
        do {
            _ = try kc.find(query(account), limit: 1)
            return nil
        } catch let e as KeychainError {
            return e.osStatus
        } catch {
            return -1
        }
    }

    var fileSize: UInt64 {
        ((try? FileManager.default.attributesOfItem(atPath: keychainPath))?[.size] as? UInt64) ?? 0
    }
}

/// A raw protocol client: frames by hand.
struct RawAgentConnection {
    let fd: Int32

    init(_ path: String) throws {
        guard case .connected(let fd) = try AgentSocket.connect(path) else {
            throw KeychainError(.notAvailable, "nobody at \(path)")
        }
        self.fd = fd
    }

    func close() { Glibc.close(fd) }

    func send(raw bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Sends `payload` in a frame (the length prefix is added).
    func sendFrame(_ payload: [UInt8]) throws { try AgentSocket.writeFrame(fd, payload, deadline: .now() + 5) }

    func send(_ request: AgentMessage.Request) throws {
        try AgentSocket.write(fd, request.encode(), deadline: .now() + 5)
    }

    /// The payload of the next frame.
    func receiveRaw() throws -> [UInt8] {
        try AgentSocket.readFrame(fd, limit: AgentSocket.maxResponseBytes, idleDeadline: .now() + 5, frameTimeout: 5)
    }

    func receive() throws -> AgentMessage.Response {
        try AgentMessage.Response.decode(try receiveRaw()[...])
    }

    /// Whether the agent closed the connection (EOF within the timeout).
    func isClosedByPeer(within seconds: Double = 3) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, Int32(seconds * 1000)) == 1 else { return false }
        var b: UInt8 = 0
        return recv(fd, &b, 1, 0) == 0
    }

    func status() throws -> AgentMessage.Response {
        try send(.status)
        return try receive()
    }
}

extension AgentMessage.Response {
    /// Not an error answer.
    var ok: Bool { failure == nil }
    var failure: KeychainError? {
        if case .error(let e) = self { return e }
        return nil
    }
    var message: String? { failure?.message }
    var status: Int32? { failure?.osStatus }
}

@Suite(.serialized) struct AgentTests {
    // MARK: Lock states

    @Test func unlock_makesWhenUnlockedReadable_lockKeepsAfterFirstUnlock() throws {
        let box = try AgentSandbox()
        try box.addAkAndCk()
        try box.startAgent()
        let kc = try box.remote()
        #expect(kc.isServedByAgent)
        #expect(kc.hasPasscode)
        // A fresh agent is like a device after boot: nothing but dk/dku until the first unlock.
        #expect(AgentSandbox.readStatus(kc, "ak") == -25308)
        #expect(AgentSandbox.readStatus(kc, "ck") == -25308)

        try kc.unlock(passcode: TestEnv.passcode)
        #expect(try kc.find(AgentSandbox.query("ak")).first?.data == Array("when-unlocked".utf8))
        #expect(try kc.find(AgentSandbox.query("ck")).first?.data == Array("after-first".utf8))

        // Another client of the agent (another process) sees the unlocked state too.
        let other = try box.remote()
        #expect(AgentSandbox.readStatus(other, "ak") == nil)

        kc.lock()
        #expect(AgentSandbox.readStatus(kc, "ak") == -25308)
        #expect(AgentSandbox.readStatus(other, "ak") == -25308)
        #expect(try kc.find(AgentSandbox.query("ck")).first?.data == Array("after-first".utf8))
        #expect(!kc.isAvailable(.whenUnlocked))
        #expect(kc.isAvailable(.afterFirstUnlock))

        try kc.unlock(passcode: TestEnv.passcode)
        #expect(AgentSandbox.readStatus(kc, "ak") == nil)
        #expect(throws: KeychainError.self) { try kc.unlock(passcode: TestEnv.wrongPasscode) }
    }

    @Test func restartedAgent_forgetsAfterFirstUnlock_untilTheNextUnlock() throws {
        let box = try AgentSandbox()
        try box.addAkAndCk()
        try box.startAgent()
        let kc = try box.remote()
        try kc.unlock(passcode: TestEnv.passcode)
        kc.lock()
        #expect(AgentSandbox.readStatus(kc, "ck") == nil)

        box.stopAgent()  // the "reboot"
        #expect(!FileManager.default.fileExists(atPath: box.socketPath), "the socket is removed on stop")
        #expect(AgentSandbox.readStatus(kc, "ck") == -25291, "errSecNotAvailable while no agent runs")
        #expect(kc.agentStopped)
        #expect(
            try Keychain.openThroughAgent(
                path: box.keychainPath, devicePath: box.devicePath, socketPath: box.socketPath) == nil)

        try box.startAgent()
        let again = try box.remote()
        #expect(AgentSandbox.readStatus(again, "ck") == -25308)
        #expect(AgentSandbox.readStatus(again, "ak") == -25308)
        try again.unlock(passcode: TestEnv.passcode)
        #expect(AgentSandbox.readStatus(again, "ck") == nil)
        #expect(AgentSandbox.readStatus(again, "ak") == nil)
    }

    @Test func idleTimeout_locksWhenUnlocked_keepsAfterFirstUnlock() throws {
        let box = try AgentSandbox()
        try box.addAkAndCk()
        try box.startAgent(idleTimeout: 1)
        let kc = try box.remote()
        try kc.unlock(passcode: TestEnv.passcode)
        #expect(AgentSandbox.readStatus(kc, "ak") == nil)
        Thread.sleep(forTimeInterval: 2.5)
        #expect(AgentSandbox.readStatus(kc, "ak") == -25308)
        #expect(AgentSandbox.readStatus(kc, "ck") == nil)
        #expect(box.logLines.all.contains { $0.contains("without use") })
    }

    // MARK: The socket

    @Test func staleSocket_isReplaced() throws {
        let box = try AgentSandbox()
        try box.startAgent()
        // Leave a socket file nobody answers on: listen, then close without unlinking.
        box.server?.stop()
        let dir = (box.socketPath as NSString).deletingLastPathComponent
        let fd = try AgentSocket.listen(box.socketPath)
        close(fd)
        #expect(FileManager.default.fileExists(atPath: box.socketPath))
        _ = dir
        try box.startAgent()
        #expect(box.logLines.all.contains { $0.contains("removed a stale socket") })
        #expect(try RawAgentConnection(box.socketPath).status().ok)
    }

    @Test func secondAgent_onALiveSocket_isRefused() throws {
        let box = try AgentSandbox()
        try box.startAgent()
        let second = AgentServer(configuration: box.configuration())
        #expect { try second.start() } throws: { ($0 as? KeychainError)?.message.contains("already answers") == true }
        #expect(try RawAgentConnection(box.socketPath).status().ok, "the first agent still serves")
    }

    @Test func unsafeSocketPaths_areRefused() throws {
        let box = try AgentSandbox()
        let dir = (box.socketPath as NSString).deletingLastPathComponent
        // A regular file where the socket goes.
        try FileManager.default.createDirectory(
            atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        FileManager.default.createFile(atPath: box.socketPath, contents: Data("x".utf8))
        #expect { try AgentServer(configuration: box.configuration()).start() } throws: {
            ($0 as? KeychainError)?.message.contains("is not a socket") == true
        }
        #expect(FileManager.default.contents(atPath: box.socketPath) == Data("x".utf8), "left untouched")
        try FileManager.default.removeItem(atPath: box.socketPath)
        // A directory with group or world permissions.
        chmod(dir, 0o750)
        #expect { try AgentServer(configuration: box.configuration()).start() } throws: {
            ($0 as? KeychainError)?.message.contains("group or world") == true
        }
        chmod(dir, 0o700)
        // A symlink instead of the directory.
        try FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createSymbolicLink(atPath: dir, withDestinationPath: "/tmp")
        #expect { try AgentServer(configuration: box.configuration()).start() } throws: {
            ($0 as? KeychainError)?.message.contains("not a directory") == true
        }
        try FileManager.default.removeItem(atPath: dir)
        if geteuid() == 0 {
            // Another user's directory, and another user's (stale) socket.
            mkdir(dir, 0o700)
            chown(dir, 65534, 65534)
            #expect { try AgentServer(configuration: box.configuration()).start() } throws: {
                ($0 as? KeychainError)?.message.contains("belongs to uid 65534") == true
            }
            chown(dir, 0, 0)
            let fd = try AgentSocket.listen(box.socketPath)
            close(fd)
            chown(box.socketPath, 65534, 65534)
            #expect { try AgentServer(configuration: box.configuration()).start() } throws: {
                ($0 as? KeychainError)?.message.contains("belongs to uid 65534") == true
            }
            #expect(FileManager.default.fileExists(atPath: box.socketPath), "another user's socket is not removed")
            // Clients refuse it too, before connecting.
            #expect(throws: KeychainError.self) { try AgentClient.connect(socketPath: box.socketPath) }
        }
    }

    // MARK: Bad input

    @Test func malformedRequests_getAClearError_andTheAgentKeepsServing() throws {
        let box = try AgentSandbox()
        try box.addAkAndCk()
        try box.startAgent()
        let before = box.fileSize
        let raw = try RawAgentConnection(box.socketPath)
        defer { raw.close() }
        let target = AgentMessage.Target(keychain: box.keychainPath, device: box.devicePath, caller: nil)
        let add = Array(
            AgentMessage.Request.add(target, [NewItem(.genericPassword, attributes: ["acct": .string("x")], data: [1])])
                .encode()[4...])
        var badClass = add
        // data, attrs, presence, protection, class
        let classAt = add.count - 4 - 1 - (2 + 1 + 4 + 1 + 4 + 1) - 1 - 1 - 4
        #expect(Array(badClass[classAt..<classAt + 4]) == Array("genp".utf8))
        badClass[classAt..<classAt + 4] = ArraySlice("zzzz".utf8)
        var badBool = add
        badBool[classAt + 5] = 2
        let cases: [([UInt8], String)] = [
            ([], "empty message"),
            (Array("not a message".utf8), "protocol version 110"),
            ([1, 0x01], "protocol version 1,"),
            ([4, 0x01], "protocol version 4,"),
            ([3, 0x7F], "unknown agent request type 0x7f"),
            ([2, 0x80], "unknown agent request type 0x80"),
            ([3, 0x01, 0x00], "trailing bytes"),
            (
                Array(
                    AgentMessage.Request.find(
                        AgentMessage.Target(keychain: "relative.keychain", device: "d", caller: nil),
                        Query(.genericPassword), AgentMessage.Read()
                    ).encode()[4...]), "absolute keychain and device paths"
            ),
            (
                Array(
                    AgentMessage.Request.open(
                        AgentMessage.Target(
                            keychain: box.keychainPath + "\u{0}x", device: box.devicePath,
                            caller: nil)
                    ).encode()[4...]), "absolute keychain and device paths"
            ),
            (Array(add.dropLast()), "truncated input in data"),
            (badClass, "invalid item class"),
            (badBool, "invalid requiresUserPresence: 2 is not a boolean")
        ]
        for (payload, message) in cases {
            try raw.sendFrame(payload)
            let r = try raw.receive()
            #expect(r.status == -50, "\(hexString(payload.prefix(16)))")
            #expect(r.message?.contains(message) == true, "\(hexString(payload.prefix(16))): \(r.message ?? "")")
        }
        #expect(try raw.status().ok, "the same connection still works")
        #expect(box.fileSize == before, "nothing was written")
    }

    // MARK: Protocol 1 peers (spec/AGENT.md §3)

    /// A client of protocol 1 (JSON; Latchkey 0.2) gets an answer in its own JSON that it
    /// shows as it is: "v":1 (it checks v first), errSecNotAvailable, what to do. The
    /// connection stays usable.
    @Test func protocol1Request_getsAProtocol1Answer_itCanShow() throws {
        let box = try AgentSandbox()
        try box.startAgent()
        let raw = try RawAgentConnection(box.socketPath)
        defer { raw.close() }
        for request in [
            #"{"v":1,"op":"status"}"#,
            #"{"v":1,"op":"find","keychain":"\#(box.keychainPath)","device":"\#(box.devicePath)"}"#
        ] {
            try raw.sendFrame(Array(request.utf8))
            let answer = try raw.receiveRaw()
            let object = try #require(try JSONSerialization.jsonObject(with: Data(answer)) as? [String: Any])
            #expect(object["v"] as? Int == 1)
            #expect(object["ok"] as? Bool == false)
            #expect(object["status"] as? Int == -25291)
            let message = try #require(object["message"] as? String)
            #expect(
                message.contains("agent protocols 2 and 3") && message.contains("protocol 1")
                    && message.contains("latchkey agent --stop"), "\(message)")
        }
        #expect(try raw.status().ok, "the same connection still works")
        #expect(box.logLines.all.contains { $0.contains("protocol 1") })
    }

    // MARK: Protocol 2 peers (spec/AGENT.md §3)

    /// A client of protocol 2 (Latchkey 0.4) is answered in protocol 2: its error answers carry
    /// no remedy, which it could not read; the same request in protocol 3 gets the remedy.
    @Test func protocol2Request_isAnsweredInProtocol2_protocol3GetsTheRemedy() throws {
        let box = try AgentSandbox()
        try box.startAgent()
        let raw = try RawAgentConnection(box.socketPath)
        defer { raw.close() }
        let missing = AgentMessage.Target(
            keychain: box.directory + "/missing.keychain", device: box.devicePath, caller: nil)
        let request = AgentMessage.Request.find(missing, Query(.genericPassword), AgentMessage.Read())
        var remedies: [UInt8: KeychainRemedy?] = [:]
        for version: UInt8 in [2, 3] {
            try AgentSocket.write(raw.fd, request.encode(version: version), deadline: .now() + 5)
            let answer = try raw.receiveRaw()
            #expect(answer.first == version, "answered in the request's version")
            let e = try #require(try AgentMessage.Response.decode(answer[...]).failure)
            #expect(e.message.contains("missing.keychain"))
            remedies[version] = e.remedy
        }
        #expect(remedies[2] == .some(nil), "no remedy in protocol 2")
        #expect(remedies[3] == .some(.createKeychain), "protocol 3 says what to do")
        try AgentSocket.write(raw.fd, AgentMessage.Request.status.encode(version: 2), deadline: .now() + 5)
        let status = try raw.receiveRaw()
        #expect(status.first == 2)
        guard case .agentStatus(let s) = try AgentMessage.Response.decode(status[...]) else {
            Issue.record("not a status"); return
        }
        #expect(s.protocolVersion == 3, "the newest version the agent speaks")
    }

    /// A client of protocol 3 that meets an agent of protocol 2 sends its request again in
    /// protocol 2 on the same connection, and keeps to it there: results as before, errors
    /// without a remedy (version 2 has no room for one).
    @Test func protocol2Agent_getsTheRequestAgainInProtocol2() throws {
        let box = try AgentSandbox()
        let old = try OldAgent.protocol2(path: box.socketPath)
        defer { old.close() }
        AgentClient.closeCachedConnections()
        defer { AgentClient.closeCachedConnections() }
        let client = try #require(try AgentClient.connect(socketPath: box.socketPath))
        #expect(try client.status().protocolVersion == 2)
        #expect(old.versions == [3, 2], "refused in 3, answered in 2")
        #expect(try client.status().pid == 7)
        #expect(old.versions == [3, 2, 2], "the connection keeps to version 2")
        #expect(throws: KeychainError(.itemNotFound, "nothing here")) {
            _ = try Keychain.openThroughAgent(
                path: box.keychainPath, devicePath: box.devicePath, socketPath: box.socketPath)
        }
        #expect(old.versions == [3, 2, 2, 2])
    }

    /// An agent of an older Latchkey, played by `answer`: each request frame's payload in, the
    /// answer's payload out; records the payloads it was sent.
    final class OldAgent: @unchecked Sendable {
        let path: String
        private let fd: Int32
        private let answer: @Sendable ([UInt8]) -> [UInt8]
        private let mutex = NSLock()
        private var received: [[UInt8]] = []
        var payloads: [[UInt8]] { mutex.lock(); defer { mutex.unlock() }; return received }
        var requests: [String] { payloads.map { String(decoding: $0, as: UTF8.self) } }
        var versions: [UInt8] { payloads.map { $0.first ?? 0 } }

        init(path: String, answer: @escaping @Sendable ([UInt8]) -> [UInt8]) throws {
            self.path = path
            self.answer = answer
            try AgentSocket.prepareDirectory(for: path, strict: true)
            fd = try AgentSocket.listen(path)
            let t = Thread { [self] in serve() }
            t.start()
        }

        /// Latchkey 0.2 (protocol 1): answers every frame as it answers one it cannot parse,
        /// and `{"v":1,"op":"stop"}` with ok.
        static func protocol1(path: String) throws -> OldAgent {
            try OldAgent(path: path) { payload in
                Array(
                    (String(decoding: payload, as: UTF8.self) == #"{"v":1,"op":"stop"}"#
                        ? #"{"v":1,"ok":true}"#
                        : #"{"v":1,"ok":false,"status":-50,"message":"malformed agent request: not a protocol 1 JSON object"}"#)
                        .utf8)
            }
        }

        /// Latchkey 0.4 (protocol 2): refuses a frame of version 3 as 0.4 does (an errSecParam
        /// answer in version 2, nothing done); answers `status`, and any other request of
        /// version 2 with an error that has a remedy (which version 2 cannot carry).
        static func protocol2(path: String) throws -> OldAgent {
            try OldAgent(path: path) { payload in
                let answer: AgentMessage.Response
                if payload.first != 2 {
                    answer = .error(
                        KeychainError(
                            .param,
                            "the request is of agent protocol version \(payload.first ?? 0), and this agent speaks version 2; use the agent of the program's Latchkey (stop this one with 'latchkey agent --stop'); nothing was done"
                        ))
                } else if case .status? = try? AgentMessage.Request.decode(payload[...]) {
                    answer = .agentStatus(
                        AgentStatus(
                            pid: 7, socket: path, protocolVersion: 2, idleTimeout: 0, dumpable: nil, keychains: []))
                } else {
                    answer = .error(KeychainError(.itemNotFound, "nothing here", remedy: .createKeychain))
                }
                return Array(answer.encode(version: 2)[AgentMessage.lengthBytes...])
            }
        }

        private func serve() {
            while true {
                let c = accept(fd, nil, nil)
                guard c >= 0 else { return }
                while let payload = try? AgentSocket.readFrame(
                    c, limit: 1 << 20, idleDeadline: .now() + 10, frameTimeout: 5)
                {
                    mutex.lock(); received.append(payload); mutex.unlock()
                    try? AgentSocket.writeFrame(c, answer(payload), deadline: .now() + 5)
                }
                Glibc.close(c)
            }
        }

        func close() {
            shutdown(fd, Int32(SHUT_RDWR))
            Glibc.close(fd)
            unlink(path)
        }
    }

    /// A client of protocol 2 that meets an agent of protocol 1 says so and what to do
    /// (errSecNotAvailable), instead of a parse error; `latchkey agent --stop` (AgentClient.stop)
    /// stops such an agent in its own protocol.
    @Test func protocol1Agent_isNamed_andCanBeStopped() throws {
        let box = try AgentSandbox()
        let old = try OldAgent.protocol1(path: box.socketPath)
        defer { old.close() }
        AgentClient.closeCachedConnections()
        defer { AgentClient.closeCachedConnections() }
        #expect {
            _ = try Keychain.openThroughAgent(
                path: box.keychainPath, devicePath: box.devicePath, socketPath: box.socketPath)
        } throws: {
            guard let e = $0 as? KeychainError else { return false }
            return e.status == .notAvailable && e.message.contains("speaks agent protocol 1")
                && e.message.contains("latchkey agent --stop")
        }
        let client = try #require(try AgentClient.connect(socketPath: box.socketPath))
        try client.stop()
        #expect(old.requests.last == #"{"v":1,"op":"stop"}"#)
        #expect(
            old.requests.first.map { Array($0.utf8.prefix(2)) } == [3, 0x10], "the first request was a protocol 3 open")
    }

    /// `add` answers what the keychain made of each item and never sends the secret back; the
    /// client's `add` still returns the items a direct open returns, data included.
    @Test func add_answersReferences_notTheSecret() throws {
        let box = try AgentSandbox(passcode: nil)
        try box.startAgent()
        let secret = Array("never-echoed-by-the-agent".utf8)
        let raw = try RawAgentConnection(box.socketPath)
        defer { raw.close() }
        try raw.send(
            .add(
                AgentMessage.Target(keychain: box.keychainPath, device: box.devicePath, caller: AgentSandbox.caller),
                [NewItem(.genericPassword, attributes: ["acct": .string("raw")], data: secret)]))
        let answer = try raw.receiveRaw()
        #expect(!answer.contains(subsequence: secret), "the answer holds the secret")
        guard case .added(let refs) = try AgentMessage.Response.decode(answer[...]), let ref = refs.first else {
            Issue.record("not an added answer: \(hexString(answer.prefix(8)))"); return
        }
        #expect(
            ref.attributes["acct"] == .string("raw") && ref.attributes["agrp"] == .string("com.example.agent-tests"))
        #expect(ref.attributes["cdat"] != nil && ref.attributes["pdmn"] == .string("ak"))

        let kc = try box.remote()
        let added = try kc.add(.genericPassword, attributes: ["acct": .string("api")], data: secret)
        let found = try #require(try kc.find(Query(.genericPassword, ["acct": .string("api")])).first)
        #expect(added == found, "add through the agent returns the stored item, data included")
    }

    /// Connections are served by the threads waiting in accept, each serving the one it took:
    /// the limit on connections holds whichever thread takes one (the connection idle longest
    /// makes room for a new one), a connection is served while others stay open, and threads
    /// that finished a connection serve the next ones.
    @Test func connectionLimit_holds_andThreadsServeConnectionAfterConnection() throws {
        let box = try AgentSandbox()
        var configuration = box.configuration()
        configuration.maxConnections = 3
        let server = AgentServer(configuration: configuration)
        try server.start()
        box.server = server
        let held = try (0..<3).map { _ in try RawAgentConnection(box.socketPath) }
        for connection in held { #expect(try connection.status().ok) }
        let fourth = try RawAgentConnection(box.socketPath)
        #expect(try fourth.status().ok, "served: the connection idle longest made room")
        #expect(held[0].isClosedByPeer(), "the connection idle longest was closed")
        held[0].close()
        for connection in held.dropFirst() {
            #expect(try connection.status().ok, "the other connections held all along")
        }
        fourth.close()
        for connection in held.dropFirst() {
            #expect(try connection.status().ok, "the connections held all along")
            connection.close()
        }
        for _ in 0..<50 {
            let next = try RawAgentConnection(box.socketPath)
            #expect(try next.status().ok)
            next.close()
        }
    }

    @Test func oversizedRequest_isRefused_connectionClosed_agentKeepsServing() throws {
        let box = try AgentSandbox()
        try box.startAgent()
        let raw = try RawAgentConnection(box.socketPath)
        defer { raw.close() }
        let n = UInt32(AgentSocket.maxRequestBytes + 1)
        raw.send(raw: [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)])
        let r = try raw.receive()
        #expect(!r.ok)
        #expect(r.status == -50)
        #expect(r.message?.contains("more than the agent accepts") == true)
        #expect(raw.isClosedByPeer())
        #expect(try RawAgentConnection(box.socketPath).status().ok)
    }

    @Test func clientDisconnectingMidRequest_changesNothing() throws {
        let box = try AgentSandbox()
        try box.addAkAndCk()
        try box.startAgent()
        let before = box.fileSize
        let frame = AgentMessage.Request.add(
            AgentMessage.Target(keychain: box.keychainPath, device: box.devicePath, caller: nil),
            [NewItem(.genericPassword, attributes: ["acct": .string("half")], data: [1], protection: .always)]
        ).encode()
        let raw = try RawAgentConnection(box.socketPath)
        raw.send(raw: Array(frame.prefix(frame.count / 2)))
        raw.close()
        Thread.sleep(forTimeInterval: 0.3)
        #expect(box.fileSize == before, "nothing was written")
        #expect(box.logLines.all.contains { $0.contains("disconnected in the middle of a request") })
        let kc = try box.remote()
        #expect(try kc.find(Query(.genericPassword, ["acct": .string("half")], protection: .always)).isEmpty)
    }

    @Test func stalledClient_doesNotBlockOthers_andIsDroppedAfterTheFrameTimeout() throws {
        let box = try AgentSandbox()
        try box.addAkAndCk()
        try box.startAgent(frameTimeout: 1)
        let staller = try RawAgentConnection(box.socketPath)
        defer { staller.close() }
        staller.send(raw: [0, 0, 0, 100, 1, 2, 3])  // a frame that never completes
        let start = Date()
        let kc = try box.remote()
        try kc.unlock(passcode: TestEnv.passcode)
        #expect(AgentSandbox.readStatus(kc, "ak") == nil)
        #expect(Date().timeIntervalSince(start) < 1, "served while the other client stalls")
        #expect(staller.isClosedByPeer(within: 3), "the stalled connection is closed after the frame timeout")
    }

    @Test func peerOfAnotherUser_isRefused() throws {
        #expect(AgentSocket.peerAllowed(peerUID: 1000, agentUID: 1000))
        #expect(!AgentSocket.peerAllowed(peerUID: 1001, agentUID: 1000))
        #expect(!AgentSocket.peerAllowed(peerUID: 0, agentUID: 1000), "not even root")
        #expect(!AgentSocket.peerAllowed(peerUID: 1000, agentUID: 0))
        // A real peer of another user: needs root, setpriv(1) and python3 to connect as nobody.
        let setpriv = "/usr/bin/setpriv", python = "/usr/bin/python3"
        guard geteuid() == 0, FileManager.default.isExecutableFile(atPath: setpriv),
            FileManager.default.isExecutableFile(atPath: python)
        else { return }
        let box = try AgentSandbox()
        // Let uid 65534 reach the socket: a lenient directory and a 0666 socket. Only the
        // SO_PEERCRED check stands in the way then.
        var c = box.configuration()
        c.strictDirectory = false
        chmod(box.directory, 0o755)
        let dir = (box.socketPath as NSString).deletingLastPathComponent
        mkdir(dir, 0o755)
        chmod(dir, 0o755)
        let server = AgentServer(configuration: c)
        try server.start()
        box.server = server
        chmod(box.socketPath, 0o666)
        let script = """
            import socket, struct, sys
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sys.argv[1])
            body = bytes([2, 0x01])   # protocol 2, status
            try:
                s.sendall(struct.pack(">I", len(body)) + body)
            except OSError:
                pass
            data = b""
            while True:
                try:
                    chunk = s.recv(65536)
                except OSError:
                    break
                if not chunk: break
                data += chunk
            print(data[5:6].hex(), data[4:].decode("utf-8", "replace"))
            """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: setpriv)
        p.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", python, "-c", script, box.socketPath]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        p.waitUntilExit()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(p.terminationStatus == 0)
        #expect(text.contains("serves only uid 0"), "\(text)")
        #expect(text.hasPrefix("ff "), "an error answer (0xFF), no status for the other user: \(text)")
        #expect(box.logLines.all.contains { $0.contains("refused a connection from uid 65534") })
        #expect(try RawAgentConnection(box.socketPath).status().ok, "its own user is still served")
    }

    // MARK: Results identical to a direct open

    @Test func resultsAndErrors_matchADirectOpen() throws {
        let box = try AgentSandbox()
        try box.startAgent()
        let remote = try box.remote()
        try remote.unlock(passcode: TestEnv.passcode)
        let direct = try box.direct()

        // Adds through both: the same results (dates aside), and the same errors.
        let a = try remote.add(
            .genericPassword,
            attributes: [
                "acct": .string("r"), "svce": .string("s"), "labl": .string("L"),
                "gena": .data([0, 1, 2])
            ], data: [9, 9], protection: .afterFirstUnlock)
        let b = try direct.add(
            .internetPassword,
            attributes: ["acct": .string("d"), "srvr": .string("example.com"), "port": .integer(443)],
            data: Array("pw".utf8))
        #expect(a.attributes["agrp"] == .string("com.example.agent-tests"))
        func failure(_ body: () throws -> Void) -> KeychainError? {
            do { try body(); return nil } catch { return error as? KeychainError }
        }
        let cases: [(String, (Keychain) throws -> Void)] = [
            (
                "duplicate",
                { try $0.add(.genericPassword, attributes: ["acct": .string("r"), "svce": .string("s")], data: []) }
            ),
            (
                "foreign group",
                { try $0.add(.genericPassword, attributes: ["acct": .string("x"), "agrp": .string("other")], data: []) }
            ),
            ("no such attr", { _ = try $0.find(Query(.genericPassword, ["srvr": .string("x")])) }),
            (
                "not found",
                {
                    _ = try $0.update(
                        Query(.genericPassword, ["acct": .string("none")]), attributes: ["labl": .string("x")])
                }
            ),
            ("delete none", { _ = try $0.delete(Query(.key)) })
        ]
        for (name, body) in cases {
            let r = failure { try body(remote) }
            let d = failure { try body(direct) }
            #expect(r != nil && r == d, "\(name): \(String(describing: r)) vs \(String(describing: d))")
        }
        // Every item through both, compared in full (dates are exact bit patterns).
        for c in [ItemClass.genericPassword, .internetPassword] {
            let viaAgent = try remote.find(Query(c), limit: nil)
            let viaFile = try direct.find(Query(c), limit: nil)
            #expect(viaAgent == viaFile)
            #expect(viaAgent.count == 1)
        }
        #expect(try remote.find(Query(.internetPassword, persistentRef: b.persistentRef)) == [b])
        #expect(try remote.find(Query(.genericPassword), includeData: false).first?.data == [])
        #expect(
            try remote.update(
                Query(.genericPassword, ["acct": .string("r")]), attributes: ["labl": .string("M")], data: [7]) == 1)
        #expect(try direct.find(Query(.genericPassword, ["acct": .string("r")])).first?.data == [7])
        #expect(try remote.info().liveItems == direct.info().liveItems)
        #expect(remote.verify().ok)
        // A caller without groups, and the trusted caller (nil) that sees every group.
        remote.caller = CallerIdentity(applicationIdentifier: nil)
        direct.caller = remote.caller
        let noGroups = failure { _ = try remote.find(Query(.genericPassword)) }
        #expect(noGroups?.status == .missingEntitlement)
        // The whole error, what to do included (protocol 3 carries the remedy).
        #expect(noGroups != nil && noGroups == failure { _ = try direct.find(Query(.genericPassword)) })
        #expect(noGroups?.remedy == .giveCallerIdentity)
        remote.caller = nil
        direct.caller = nil
        #expect(
            try remote.find(Query(.genericPassword), limit: nil) == direct.find(Query(.genericPassword), limit: nil))
        remote.caller = AgentSandbox.caller
        #expect(try remote.delete(Query(.internetPassword)) == 1)
        #expect(try direct.find(Query(.internetPassword), limit: nil).isEmpty == true)
    }

    @Test func userPresence_asksThisProcess_throughTheAgent() throws {
        let box = try AgentSandbox()
        try box.startAgent()
        let kc = try box.remote()
        try kc.unlock(passcode: TestEnv.passcode)
        try kc.add(
            .genericPassword, attributes: ["acct": .string("up"), "svce": .string("s")], data: [42],
            requiresUserPresence: true)
        let q = AgentSandbox.query("up")
        #expect(
            throws: KeychainError(
                .interactionNotAllowed,
                "this item needs user presence (the passcode), and no authentication handler is set")
        ) {
            _ = try kc.find(q)
        }
        let prompts = AgentSandbox.LogLines()
        kc.authenticationHandler = { prompt in
            prompts.append(prompt ?? ""); return nil
        }
        #expect { _ = try kc.find(q, prompt: "why") } throws: { ($0 as? KeychainError)?.status == .userCanceled }
        #expect(prompts.all == ["why"])
        kc.authenticationHandler = { _ in TestEnv.wrongPasscode }
        #expect { _ = try kc.find(q) } throws: { ($0 as? KeychainError)?.status == .authFailed }
        kc.authenticationHandler = { _ in TestEnv.passcode }
        #expect(try kc.find(q).first?.data == [42])
        // Attributes only: no question asked.
        kc.authenticationHandler = nil
        #expect(try kc.find(q, includeData: false).count == 1)
    }

    /// History through the agent (spec/AGENT.md: history, restoreVersion, dropHistory) is what a
    /// direct open gives: the same versions (never their data), the same restores, the same
    /// errors; and a caller of another access group sees none of a group's versions, through
    /// the agent or directly, and can restore none.
    @Test func history_andRestore_throughTheAgent_matchADirectOpen() throws {
        let box = try AgentSandbox()
        try box.startAgent()
        let remote = try box.remote()
        try remote.unlock(passcode: TestEnv.passcode)
        let direct = try box.direct()
        func failure(_ body: () throws -> Void) -> KeychainError? {
            do { try body(); return nil } catch { return error as? KeychainError }
        }
        let q = AgentSandbox.query("h")
        try remote.add(
            .genericPassword, attributes: ["acct": .string("h"), "svce": .string("s"), "labl": .string("v1")],
            data: Array("one".utf8))
        try remote.update(q, attributes: ["labl": .string("v2")], data: Array("two".utf8))
        try direct.update(q, attributes: ["labl": .string("v3")], data: Array("three".utf8))

        let listed = try remote.history(q)
        #expect(listed == (try direct.history(q)))
        #expect(listed.versions.map(\.kind) == [.current, .replaced, .replaced] && listed.locked == 0)
        #expect(listed.versions.map { $0.item.attributes["labl"] } == [.string("v3"), .string("v2"), .string("v1")])
        #expect(listed.versions.allSatisfy { $0.item.data.isEmpty && $0.itemIsLive })

        // The oldest version back through the agent: an update the direct open reads.
        let restored = try remote.restore(listed.versions[2])
        #expect(!restored.asNew && restored.item.data.isEmpty && restored.item.attributes["labl"] == .string("v1"))
        #expect(try direct.find(q).first?.data == Array("one".utf8))
        let after = try remote.history(q)
        #expect(after == (try direct.history(q)) && after.versions.count == 4)

        // A deleted item keeps its versions, and comes back as a new item.
        #expect(try direct.delete(q) == 1)
        let deleted = try remote.history(q)
        #expect(deleted == (try direct.history(q)))
        #expect(deleted.versions.first?.kind == .deleted && deleted.versions.allSatisfy { !$0.itemIsLive })
        let back = try remote.restore(deleted.versions[0])
        #expect(back.asNew && back.item.persistentRef != deleted.versions[0].item.persistentRef)
        #expect(try direct.find(q).first?.data == Array("one".utf8))
        // Again: the new item holds the unique key now; the same error both ways.
        let twice = failure { try remote.restore(deleted.versions[0]) }
        #expect(twice?.status == .duplicateItem && twice == failure { try direct.restore(deleted.versions[0]) })

        // Another access group: nothing listed, nothing restored, through the agent or directly.
        let stranger = CallerIdentity(applicationIdentifier: "com.example.stranger")
        remote.caller = stranger
        direct.caller = stranger
        #expect(
            try remote.history(Query(.genericPassword, synchronizable: .any)) == ItemHistory(versions: [], locked: 0))
        #expect(try direct.history(Query(.genericPassword, synchronizable: .any)).versions.isEmpty)
        #expect(try remote.history(q).versions.isEmpty)
        let refused = failure { try remote.restore(listed.versions[1]) }
        #expect(refused?.status == .itemNotFound && refused == failure { try direct.restore(listed.versions[1]) })
        #expect(try direct.history(Query(.genericPassword)).versions.isEmpty)
        remote.caller = AgentSandbox.caller
        direct.caller = AgentSandbox.caller
        #expect(try direct.find(q).first?.data == Array("one".utf8), "the stranger's restore changed nothing")

        // dropHistory through the agent: only the current versions are left; an old version
        // left the history, errSecItemNotFound both ways.
        _ = try remote.compact(dropHistory: true)
        let dropped = try direct.history(q)
        #expect(dropped == (try remote.history(q)) && dropped.versions.map(\.kind) == [.current])
        let gone = failure { try remote.restore(listed.versions[1]) }
        #expect(gone?.status == .itemNotFound && gone == failure { try direct.restore(listed.versions[1]) })
    }

    @Test func agentAndDirectWriters_loseNothing() throws {
        let box = try AgentSandbox()
        try box.startAgent()
        let remote = try box.remote()
        try remote.unlock(passcode: TestEnv.passcode)
        let direct = try box.direct()
        let n = 30
        DispatchQueue.concurrentPerform(iterations: 3) { worker in
            for i in 0..<n {
                let kc = worker == 2 ? direct : remote
                try? kc.add(
                    .genericPassword, attributes: ["acct": .string("w\(worker)-\(i)"), "svce": .string("s")],
                    data: [UInt8(i)],
                    protection: .always)
            }
        }
        #expect(try remote.find(Query(.genericPassword), limit: nil).count == 3 * n)
        #expect(try direct.find(Query(.genericPassword), limit: nil).count == 3 * n)
        #expect(try box.direct().verify().ok)
    }

    @Test func status_listsKeychainsAndWhatIsUnlocked() throws {
        let box = try AgentSandbox()
        try box.startAgent()
        let client = try #require(try AgentClient.connect(socketPath: box.socketPath))
        #expect(try client.status().keychains.isEmpty)
        let kc = try box.remote()
        var s = try client.status()
        #expect(s.keychains.map(\.keychain) == [box.keychainPath])
        #expect(s.keychains[0].unlocked == ["dk", "dku"])
        #expect(s.keychains[0].unlockedOnce == false)
        try kc.unlock(passcode: TestEnv.passcode)
        s = try client.status()
        #expect(Set(s.keychains[0].unlocked) == Set(ProtectionClass.allCases.map(\.code)))
        try client.lockAll()
        s = try client.status()
        #expect(s.keychains[0].unlocked == ["ck", "dk", "cku", "dku"])
        #expect(s.keychains[0].unlockedOnce)
        #expect(s.pid == getpid())
        try client.stop()
        Thread.sleep(forTimeInterval: 0.2)
        #expect(box.server?.isStopping == true)
        #expect(!FileManager.default.fileExists(atPath: box.socketPath))
    }

    @Test func keychainReplacedOnDisk_isOpenedAgain() throws {
        let box = try AgentSandbox()
        try box.startAgent()
        let kc = try box.remote()
        try kc.unlock(passcode: TestEnv.passcode)
        try kc.add(.genericPassword, attributes: ["acct": .string("old")], data: [1], protection: .always)
        try FileManager.default.removeItem(atPath: box.keychainPath)
        let fresh = try Keychain.create(
            path: box.keychainPath, devicePath: box.devicePath, passcode: TestEnv.passcode, kdfLogN: TestEnv.logN)
        fresh.caller = AgentSandbox.caller
        try fresh.add(.genericPassword, attributes: ["acct": .string("new")], data: [2], protection: .always)
        let found = try kc.find(Query(.genericPassword, protection: .always), limit: nil)
        #expect(found.map { $0.attributes["acct"] } == [.string("new")])
        #expect(!kc.isAvailable(.whenUnlocked), "the new keychain is held locked")
        #expect(box.logLines.all.contains { $0.contains("was replaced by another keychain") })
    }

    @Test func keychainWithoutPasscode_isAvailableAtOnce() throws {
        let box = try AgentSandbox(passcode: nil)
        try box.startAgent()
        let kc = try box.remote()
        #expect(!kc.hasPasscode)
        try kc.add(.genericPassword, attributes: ["acct": .string("x")], data: [1])
        kc.lock()
        #expect(try kc.find(Query(.genericPassword, ["acct": .string("x")])).first?.data == [1])
    }
}
