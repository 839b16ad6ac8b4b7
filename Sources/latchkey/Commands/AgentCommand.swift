import ArgumentParser
import Dispatch
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import Latchkey
import LatchkeyAgent
#if canImport(Glibc)
    import Glibc
#endif

/// `latchkey agent`: holds unlocked class keys across commands (spec/AGENT.md).
struct AgentCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agent",
        abstract:
            "Run the agent that holds unlocked class keys, so WhenUnlocked and AfterFirstUnlock mean what they mean on iOS.",
        discussion: """
            The agent listens on $XDG_RUNTIME_DIR/latchkey/agent.sock (directory 0700; \
            /tmp/latchkey-UID/ when XDG_RUNTIME_DIR is unset), or on LATCHKEY_AGENT_SOCK, and \
            serves only processes of your own user (SO_PEERCRED). While it answers, every \
            command and LatchkeySecurity use it instead of opening the keychain file \
            themselves (LATCHKEY_AGENT_SOCK=none turns that off). 'latchkey unlock' gives it \
            the passcode once; 'latchkey lock' drops the WhenUnlocked keys (ak, aku, akpu) and \
            keeps the AfterFirstUnlock keys (ck, cku); after --idle-timeout seconds without a \
            request a keychain is locked the same way. Stopping the agent drops every key, as \
            a reboot does. A keychain in a sync circle ('latchkey sync init' or 'join') is \
            synced by the agent a few seconds after a change made through it and every \
            --sync-interval seconds; 'latchkey status' shows how the last sync ended. It runs \
            in the foreground and logs to stderr; --daemon detaches and logs nothing.

            Example:
              eval "$(latchkey agent --daemon)"
              latchkey unlock
              latchkey status
              latchkey agent --stop
            """
    )

    @Flag(
        help:
            "Detach and run in the background; prints LATCHKEY_AGENT_SOCK=…; export LATCHKEY_AGENT_SOCK; for the shell."
    )
    var daemon = false

    @Flag(help: "Stop the running agent (every key it holds is dropped).")
    var stop = false

    @Option(
        name: .customLong("idle-timeout"),
        help: ArgumentHelp(
            "Lock a keychain after this many seconds without a request (0: never).", valueName: "seconds"))
    var idleTimeout: Double = 300

    @Option(
        name: .customLong("sync-interval"),
        help: ArgumentHelp(
            "Sync each keychain in a sync circle this often, and 5 s after a change (0: never by itself).",
            valueName: "seconds"))
    var syncInterval: Double = 300

    /// Internal: the detached child of --daemon, reporting its start on this descriptor.
    @Option(name: .customLong("daemon-child"), help: .hidden)
    var daemonChild: Int32?

    func validate() throws {
        guard CommandLineForms.validating else { return }
        if idleTimeout < 0 || !idleTimeout.isFinite {
            throw ValidationError("--idle-timeout takes a number of seconds, 0 or more")
        }
        if syncInterval < 0 || !syncInterval.isFinite {
            throw ValidationError("--sync-interval takes a number of seconds, 0 or more")
        }
        if stop && daemon { throw ValidationError("--stop and --daemon exclude each other") }
    }

    func run() throws {
        if stop { return try stopAgent() }
        // The agent's writes keep the history its own environment sets (its clients' does not
        // travel): a malformed setting stops it from starting.
        try GlobalSettings.checkHistorySettings()
        if let fd = daemonChild { return runDaemonChild(reportingTo: fd) }
        if daemon { return try spawnDaemon() }
        try runForeground()
    }

    func serverConfiguration(log: (@Sendable (String) -> Void)?) -> AgentServer.Configuration {
        var c = AgentServer.Configuration()
        c.idleTimeout = idleTimeout
        c.syncInterval = syncInterval
        c.log = log
        return c
    }

    func runForeground() throws {
        AgentServer.hardenProcess()
        let server = AgentServer(configuration: serverConfiguration(log: { Output.status("latchkey agent: " + $0) }))
        try server.start()
        AgentCommand.stopOnSignals(server)
        server.wait()
    }

    /// SIGTERM, SIGINT and SIGHUP stop the agent cleanly (socket removed, keys dropped).
    static func stopOnSignals(_ server: AgentServer) {
        for sig in [SIGTERM, SIGINT, SIGHUP] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { server.stop() }
            source.resume()
            signalSources.append(source)
        }
        signal(SIGPIPE, SIG_IGN)
    }
    nonisolated(unsafe) static var signalSources: [DispatchSourceSignal] = []

    func stopAgent() throws {
        let path = AgentSocket.defaultPath()
        guard let client = try AgentClient.connect() else {
            Output.note("no agent answers at \(path)")
            throw ExitCode(1)
        }
        try client.stop()
        // Wait (briefly) until it is gone, so that a following command does not reach it.
        for _ in 0..<100 {
            var st = stat()
            if lstat(path, &st) != 0 { break }
            usleep(20_000)
        }
        Output.progress("stopped the agent at \(path)")
    }

    // MARK: --daemon

    /// Starts a copy of this program with --daemon-child, detached (new session, stdio on
    /// /dev/null), and waits for it to say that it listens (or why it could not).
    ///
    /// When an agent already answers at the socket, prints the same line and exits 0, so
    /// `eval "$(latchkey agent --daemon)"` can sit in a shell profile.
    func spawnDaemon() throws {
        if let running = try? AgentClient.connect(), (try? running.status()) != nil {
            Output.progress("an agent already answers at \(running.socketPath); using it")
            Output.line(AgentCommand.exportLine(running.socketPath))
            return
        }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw KeychainError(
                .io, "cannot create a pipe to start the agent", underlying: String(cString: strerror(errno)))
        }
        // Keep both ends above the descriptors the child's file actions use.
        let readEnd = fcntl(fds[0], F_DUPFD_CLOEXEC, 10), writeEnd = fcntl(fds[1], F_DUPFD_CLOEXEC, 10)
        close(fds[0]); close(fds[1])
        defer { close(readEnd) }

        // The child must not keep any descriptor of ours but the report pipe: whoever waits
        // for this process (a shell's command substitution, a test harness watching a pipe or
        // socket) would otherwise wait for the agent too.
        AgentCommand.closeOnExecAll(except: [0, 1, 2, writeEnd])
        let exe =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let args = [
            exe, "agent", "--idle-timeout", String(idleTimeout), "--sync-interval", String(syncInterval),
            "--daemon-child", "3"
        ]
        var fa = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&fa)
        defer { posix_spawn_file_actions_destroy(&fa) }
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&fa, writeEnd, 3)
        var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        // The agent lives long: it does not need, and must not keep, secrets given to this command.
        let secrets = Set(GlobalSettings.secretVariables)
        var envp: [UnsafeMutablePointer<CChar>?] =
            ProcessInfo.processInfo.environment
            .filter { !secrets.contains($0.key) }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in envp { free(p) } }
        var pid: pid_t = 0
        let r = posix_spawn(&pid, exe, &fa, nil, &argv, &envp)
        close(writeEnd)
        guard r == 0 else {
            throw KeychainError(.io, "cannot start the agent (\(exe))", underlying: String(cString: strerror(r)))
        }

        var report: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            report += buffer[0..<n]
        }
        let text = TextEditing.trimming(String(decoding: report, as: UTF8.self), newlines: true)
        if text.hasPrefix("ok") {
            Output.line(AgentCommand.exportLine(AgentSocket.defaultPath()))
            return
        }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        // "error <OSStatus> <description>"
        let parts = text.split(separator: " ", maxSplits: 2).map(String.init)
        if parts.count == 3, parts[0] == "error", let code = Int32(parts[1]), let s = KeychainStatus(rawValue: code) {
            Output.note(parts[2])
            throw ExitCode(s.exitCode)
        }
        throw KeychainError(.io, "the agent did not start" + (text.isEmpty ? "" : ": \(text)"))
    }

    /// The line `eval "$(latchkey agent --daemon)"` runs: the path in single quotes, as
    /// `latchkey env` quotes values, so that no byte of it (a space, `$(…)`) is the shell's.
    static func exportLine(_ socketPath: String) -> String {
        "LATCHKEY_AGENT_SOCK=" + String(decoding: EnvCommand.shellQuoted(Array(socketPath.utf8)), as: UTF8.self)
            + "; export LATCHKEY_AGENT_SOCK;"
    }

    /// Marks every open descriptor but `keep` close-on-exec.
    static func closeOnExecAll(except keep: Set<Int32>) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return }
        for name in names {
            guard let fd = Int32(name), !keep.contains(fd) else { continue }
            let flags = fcntl(fd, F_GETFD)
            if flags >= 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
        }
    }

    /// The detached agent: a new session, no terminal, no log; tells the parent on `fd`.
    func runDaemonChild(reportingTo fd: Int32) {
        _ = setsid()
        _ = chdir("/")
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        AgentServer.hardenProcess()
        let server = AgentServer(configuration: serverConfiguration(log: nil))
        func report(_ text: String) {
            let bytes = Array((text + "\n").utf8)
            _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        }
        do {
            try server.start()
        } catch let e as KeychainError {
            report("error \(e.status.rawValue) \(e.description)")
            Glibc.exit(e.status.exitCode)
        } catch {
            report("error \(KeychainStatus.internal.rawValue) \(error)")
            Glibc.exit(7)
        }
        AgentCommand.stopOnSignals(server)
        report("ok \(getpid())")
        close(fd)
        server.wait()
        Glibc.exit(0)
    }
}
