// `latchkey-bench --agent [--items N] [--runs R] [--cli PATH]`: the agent benchmark of issue 7.
//
// With `latchkey agent` running and unlocked on an N-item keychain (default 10,000):
//  - a CLI `find` by unique key, end to end (spawn, connect, find, print, exit): goal ≤ 15 ms;
//  - SecItemCopyMatching by unique key through the agent, in process: goal ≤ 200 µs;
// and, for comparison, the same without the agent (the CLI opens the file and runs the KDF;
// SecItem keeps its own open keychain). Medians; the `latchkey` binary is taken from beside
// this one (build both: `swift build -c release --product latchkey --product latchkey-bench`).
import Foundation
import Latchkey
import LatchkeySecurity

#if canImport(Glibc)
    import Glibc
#endif

func runAgentBench(arguments: [String]) throws {
    var items = 10_000, runs = 41
    var cliOption: String?
    var it = arguments.dropFirst().makeIterator()
    while let a = it.next() {
        if a == "--items", let v = it.next(), let n = Int(v) { items = n }
        if a == "--runs", let v = it.next(), let n = Int(v) { runs = n }
        if a == "--cli", let v = it.next() { cliOption = v }
    }
    let binDir = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().path
    let cli = cliOption ?? binDir + "/latchkey"
    guard FileManager.default.isExecutableFile(atPath: cli) else {
        print(
            "latchkey-bench --agent needs the latchkey binary beside it (\(cli)); build it with the same configuration")
        exit(2)
    }
    let dir = "/tmp/lk-agent-bench-\(getpid())"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let path = dir + "/bench.keychain", devicePath = dir + "/device.secret", socket = dir + "/run/agent.sock"
    let passcode = "bench passcode"

    // An N-item keychain, every item WhenUnlocked (so the agent must be unlocked to read).
    let kc = try Keychain.create(path: path, devicePath: devicePath, passcode: Array(passcode.utf8))
    var next = 0
    while next < items {
        let batch = (next..<min(items, next + 1000)).map {
            NewItem(
                .genericPassword,
                attributes: [
                    "acct": .string("user\($0)@example.com"), "svce": .string("service-\($0 % 10)"),
                    "agrp": .string("bench.app"), "labl": .string("Bench item \($0)")
                ],
                data: Array("secret \($0)".utf8), protection: .whenUnlocked)
        }
        try kc.add(contentsOf: batch)
        next += batch.count
    }

    var env = ProcessInfo.processInfo.environment
    env["LATCHKEY_KEYCHAIN"] = path
    env["LATCHKEY_DEVICE"] = devicePath
    env["LATCHKEY_AGENT_SOCK"] = socket
    env["LATCHKEY_APP_ID"] = "bench.app"
    env["LATCHKEY_PASSCODE"] = nil

    /// Runs the CLI and returns (exit status, wall seconds).
    func spawn(_ args: [String], _ env: [String: String], wait: Bool = true) -> (Int32, Double, pid_t) {
        var fa = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&fa)
        defer { posix_spawn_file_actions_destroy(&fa) }
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0)
        var argv: [UnsafeMutablePointer<CChar>?] = ([cli] + args).map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in argv + envp { free(p) } }
        var pid: pid_t = 0
        let t = now()
        guard posix_spawn(&pid, cli, &fa, nil, &argv, &envp) == 0 else { return (-1, 0, 0) }
        guard wait else { return (0, 0, pid) }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        return ((status >> 8) & 0xff, now() - t, pid)
    }

    let (_, _, agentPID) = spawn(["agent", "--idle-timeout", "0"], env, wait: false)
    defer {
        kill(agentPID, SIGTERM)
        var s: Int32 = 0
        waitpid(agentPID, &s, 0)
    }
    var up = false
    for _ in 0..<400 where !up {
        up = spawn(["status"], env).0 == 0
        if !up { usleep(25_000) }
    }
    guard up else { print("the agent did not start"); exit(1) }
    var unlockEnv = env
    unlockEnv["LATCHKEY_PASSCODE"] = passcode
    let (u, unlockSeconds, _) = spawn(["unlock"], unlockEnv)
    precondition(u == 0, "unlock failed")

    func key(_ i: Int) -> Int { (i * 7919) % items }
    func findArgs(_ k: Int) -> [String] {
        ["find", "--account", "user\(k)@example.com", "--service", "service-\(k % 10)", "--access-group", "bench.app"]
    }
    // CLI find through the agent.
    var cliAgent: [Double] = []
    for i in 0..<runs {
        let (s, t, _) = spawn(findArgs(key(i)), env)
        precondition(s == 0, "find through the agent failed (\(s))")
        cliAgent.append(t)
    }
    // The same with LATCHKEY_PASSCODE set, as a script that also works without an agent sets
    // it: the agent holds the keys, so the passcode must not cost a KDF per command.
    var cliAgentGiven: [Double] = []
    for i in 0..<runs {
        let (s, t, _) = spawn(findArgs(key(i)), unlockEnv)
        precondition(s == 0, "find through the agent with a passcode given failed (\(s))")
        cliAgentGiven.append(t)
    }
    // CLI find without the agent: open the file and run the KDF (the passcode is needed for ak).
    var directEnv = unlockEnv
    directEnv["LATCHKEY_AGENT_SOCK"] = "none"
    var cliDirect: [Double] = []
    for i in 0..<max(5, runs / 4) {
        let (s, t, _) = spawn(findArgs(key(i)), directEnv)
        precondition(s == 0, "direct find failed (\(s))")
        cliDirect.append(t)
    }
    // A process that only starts and prints its version: the floor of any CLI command.
    var floor: [Double] = []
    for _ in 0..<runs { floor.append(spawn(["--version"], env).1) }

    // SecItemCopyMatching by unique key, through the agent and directly.
    setenv("LATCHKEY_AGENT_SOCK", socket, 1)
    func secItemTimes(_ config: LatchkeySecurityConfiguration, count: Int) -> [Double] {
        config.use {
            var out: [Double] = []
            for i in 0..<count {
                let k = key(i)
                let query: [String: Any] = [
                    kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "user\(k)@example.com",
                    kSecAttrService as String: "service-\(k % 10)", kSecAttrAccessGroup as String: "bench.app",
                    kSecReturnData as String: true
                ]
                var result: CFTypeRef?
                let t = now()
                let status = SecItemCopyMatching(query as CFDictionary, &result)
                out.append(now() - t)
                precondition(status == errSecSuccess, "SecItemCopyMatching: \(status)")
            }
            return out
        }
    }
    let caller = CallerIdentity(applicationIdentifier: "bench.app")
    let viaAgent = LatchkeySecurityConfiguration(keychainPath: path, devicePath: devicePath, caller: caller)
    let secAgent = secItemTimes(viaAgent, count: 2000)
    precondition((try? viaAgent.keychain().isServedByAgent) == true, "SecItem did not use the agent")
    setenv("LATCHKEY_AGENT_SOCK", "none", 1)
    let direct = LatchkeySecurityConfiguration(
        keychainPath: path, devicePath: devicePath, caller: caller,
        passcodeSource: .passcode(Array(passcode.utf8)))
    let secDirect = secItemTimes(direct, count: 2000)

    func ms(_ xs: [Double]) -> String { String(format: "%.2f ms", median(xs) / 1000) }
    func us(_ xs: [Double]) -> String { String(format: "%.1f µs", median(xs)) }
    print("agent benchmark: \(items) items (WhenUnlocked), medians")
    print(
        "  latchkey unlock (scrypt at the default cost, once):       \(String(format: "%.0f ms", unlockSeconds * 1000))"
    )
    print("  CLI find by unique key through the agent (end to end):    \(ms(cliAgent))   [goal ≤ 15 ms; \(runs) runs]")
    print("  ... the same with LATCHKEY_PASSCODE set:                  \(ms(cliAgentGiven))")
    print("  CLI find without the agent (open + KDF):                  \(ms(cliDirect))")
    print("  CLI process floor (latchkey --version):                   \(ms(floor))")
    print("  SecItemCopyMatching by unique key through the agent:      \(us(secAgent))   [goal ≤ 200 µs; 2000 calls]")
    print("  SecItemCopyMatching by unique key, keychain in process:   \(us(secDirect))")
}
