import Foundation
import Testing

/// What depends on the process's environment: core dumps, colour and the terminal.
@Suite struct TerminalTests {
    /// Core dumps are off (soft and hard limit 0) from the start of every command: checked
    /// in /proc while `add` waits for its secret on stdin.
    @Test(arguments: [["add", "--account", "a"], ["import", "-"]])
    func coreDumps_areDisabledWhileACommandRuns(_ args: [String]) throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        let process = Process()
        process.executableURL = try CLISandbox.binary()
        process.arguments = args
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
        var limits = ""
        for _ in 0..<100 {
            limits = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/limits", encoding: .utf8)) ?? ""
            // Wait until the binary itself runs (the limits of a just-forked child are inherited).
            if let line = limits.split(separator: "\n").first(where: { $0.hasPrefix("Max core file size") }),
                line.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).prefix(2) == ["0", "0"]
            {
                break
            }
            usleep(20_000)
        }
        let line = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") })
        #expect(Array(line.split(separator: " ").dropFirst(4).prefix(2)) == ["0", "0"], "\(line)")
    }

    @Test func colour_onlyOnATerminal_andNotWithNO_COLOR() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "a", data: [1])
        let piped = try sandbox.run(["info"])
        #expect(!piped.out.contains("\u{1B}["), "no escape codes when stdout is not a terminal")
        guard let terminal = try sandbox.runOnTerminal(["info"], env: ["TERM": "xterm", "NO_COLOR": nil]) else {
            return
        }
        #expect(terminal.status == 0)
        #expect(terminal.out.contains("\u{1B}[1m"), "bold on a terminal: \(terminal.out)")
        let noColor = try #require(try sandbox.runOnTerminal(["info"], env: ["TERM": "xterm", "NO_COLOR": "1"]))
        #expect(noColor.status == 0)
        #expect(!noColor.out.contains("\u{1B}["), "NO_COLOR: \(noColor.out)")
        #expect(noColor.out.contains("format version"))
    }
}
