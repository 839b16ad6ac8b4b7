#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Testing

/// The CLI turns core dumps off itself, even when it starts with them allowed: the binary is
/// started through sh with the core limits raised as far as this runner allows, and its own
/// /proc/<pid>/limits must show 0 / 0 while it waits at a prompt (TerminalTests checks the same
/// from the test runner's limits, which may already be 0).
@Suite struct CoreDumpTests {
    @Test func coreDumps_areOffEvenWhenTheParentAllowsThem() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        var hard = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &hard)
        try #require(hard.rlim_max != 0, "this runner's hard core limit is 0: nothing to switch off")

        let raise = "ulimit -S -c unlimited 2>/dev/null || ulimit -S -c \(hard.rlim_max)"
        // Not vacuous: a program started the same way but that leaves the limit alone has it on.
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/bin/sh")
        probe.arguments = ["-c", "\(raise); exec cat /proc/self/limits"]
        let probeOut = Pipe()
        probe.standardOutput = probeOut
        try probe.run()
        let probeLimits = String(decoding: probeOut.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        probe.waitUntilExit()
        let probeLine =
            probeLimits.split(separator: "\n").first { $0.hasPrefix("Max core file size") }.map(String.init) ?? ""
        try #require(
            probeLine.split(separator: " ").dropFirst(4).first != "0",
            "the shell could not raise the core limit: \(probeLine)")

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = [
            "-c", "\(raise); exec \"$0\" \"$@\"",
            try CLISandbox.binary().path, "add", "--account", "core", "--service", "dump"
        ]
        process.environment = sandbox.environment
        let input = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }
        var line = ""
        for _ in 0..<300 {
            let limits =
                (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/limits", encoding: .utf8)) ?? ""
            let exe =
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(process.processIdentifier)/exe"))
                ?? ""
            line = limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") }.map(String.init) ?? ""
            // Wait until the binary itself runs and has set its limits.
            if exe.hasSuffix("/latchkey"), Array(line.split(separator: " ").dropFirst(4).prefix(2)) == ["0", "0"] {
                break
            }
            usleep(10_000)
        }
        #expect(Array(line.split(separator: " ").dropFirst(4).prefix(2)) == ["0", "0"], "\(line)")
    }
}
