import Foundation
import Testing

/// Help, the man page and shell completions, all generated from the command definitions.
@Suite struct DocumentationTests {
    struct Command: Decodable {
        var commandName: String
        var abstract: String?
        var discussion: String?
        var shouldDisplay: Bool?
        var subcommands: [Command]?
        var arguments: [Argument]?
    }

    struct Argument: Decodable {
        var abstract: String?
        var shouldDisplay: Bool
        var valueName: String?
    }

    struct ToolInfo: Decodable { var command: Command }

    /// Every visible command has a one-line purpose and an example, and every visible option is
    /// explained.
    @Test func everyCommand_hasAPurpose_anExample_andEveryOptionExplained() throws {
        let dump = try CLISandbox().run(["--experimental-dump-help"])
        let tool = try JSONDecoder().decode(ToolInfo.self, from: Data(dump.stdout))
        let commands = (tool.command.subcommands ?? []).filter {
            ($0.shouldDisplay ?? true) && $0.commandName != "help"
        }
        #expect(commands.count >= 11)
        for command in commands {
            let abstract = command.abstract ?? ""
            #expect(!abstract.isEmpty && !abstract.contains("\n"), "\(command.commandName): one-line purpose")
            let discussion = command.discussion ?? ""
            #expect(
                discussion.contains("Example:\n") && discussion.contains("latchkey \(command.commandName)"),
                "\(command.commandName): example")
            for argument in command.arguments ?? [] where argument.shouldDisplay {
                #expect(
                    !(argument.abstract ?? "").isEmpty,
                    "\(command.commandName) \(argument.valueName ?? "?") is not explained")
            }
        }
    }

    /// Every "Example:" line of every command's help, subcommands included, fits 80 columns
    /// under --help and --help-all: a wrapped example breaks copy and paste.
    @Test func everyExampleLine_fitsEightyColumns() throws {
        let sandbox = try CLISandbox()
        let dump = try sandbox.run(["--experimental-dump-help"])
        let tool = try JSONDecoder().decode(ToolInfo.self, from: Data(dump.stdout))
        func paths(_ c: Command, _ prefix: [String]) -> [[String]] {
            let here = prefix + [c.commandName]
            return [here] + (c.subcommands ?? []).filter { $0.commandName != "help" }.flatMap { paths($0, here) }
        }
        let commands = (tool.command.subcommands ?? []).filter { $0.commandName != "help" }.flatMap { paths($0, []) }
        #expect(commands.count >= 30)
        for command in commands {
            for flag in ["--help", "--help-all"] {
                let help = try sandbox.run(command + [flag], env: ["COLUMNS": "80"])
                #expect(help.status == 0, "\(command) \(flag): \(help.stderr)")
                let lines = help.out.components(separatedBy: "\n")
                guard let start = lines.firstIndex(of: "Example:") else { continue }
                for line in lines[(start + 1)...].prefix(while: { !$0.isEmpty }) {
                    #expect(line.hasPrefix("  ") && line.count <= 80, "\(command) \(flag): wrapped: \(line)")
                }
            }
        }
    }

    @Test func manual_isRoffWithEveryCommandAndOption() throws {
        let result = try CLISandbox().run(["generate-manual"])
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
        let page = result.out
        for part in [
            ".TH LATCHKEY 1", ".SH NAME", ".SH SYNOPSIS", ".SH COMMANDS", ".SH ITEM AND QUERY OPTIONS",
            ".SH GLOBAL OPTIONS",
            ".SH ENVIRONMENT", ".SH EXIT STATUS", "LATCHKEY_PASSCODE", "\\-\\-application\\-label", "\\-\\-set\\-label",
            "LATCHKEY_PASSCODE_COMMAND", "LATCHKEY_BACKUP_PASSWORD_COMMAND", "\\-\\-passcode\\-command", "\\-\\-item"
        ] {
            #expect(page.contains(part), "missing \(part)")
        }
        for command in [
            "init", "add", "find", "update", "delete", "dump", "import", "verify", "compact", "info", "passwd", "exec",
            "env", "otp", "generate"
        ] {
            #expect(page.contains(".SS \"latchkey \(command)"), "missing \(command)")
        }
        #expect(!page.contains("generate\\-manual\""), "hidden commands stay hidden")
        #expect(page.contains("LATCHKEY_CLIP_SECONDS"), "the clipboard's delay is documented")
        #expect(page.contains("kdf\\-log\\-n"), "the scrypt cost is documented")
        #expect(page.split(separator: "\n").allSatisfy { !$0.hasPrefix("'") })
        // groff, when installed, reads it without a warning.
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/groff") {
            let sandbox = try CLISandbox()
            let path = try sandbox.writeFile("latchkey.1", result.stdout)
            let groff = Process()
            groff.executableURL = URL(fileURLWithPath: "/usr/bin/groff")
            groff.arguments = ["-man", "-ww", "-z", path]
            let errors = Pipe()
            groff.standardError = errors
            try groff.run()
            groff.waitUntilExit()
            let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(groff.terminationStatus == 0 && text.isEmpty, "groff: \(text)")
        }
    }

    @Test(arguments: [
        ("bash", "-F _latchkey latchkey"), ("zsh", "#compdef latchkey"), ("fish", "complete -c 'latchkey'")
    ])
    func completionScript_namesTheCommandsAndOptions(_ shell: String, _ marker: String) throws {
        let sandbox = try CLISandbox()
        let result = try sandbox.run(["--generate-completion-script", shell])
        #expect(result.status == 0)
        let script = result.out
        #expect(script.contains(marker))
        for word in [
            "dump", "import", "account", "application-tag", "set-label", "set-can-encrypt", "otp", "clip", "in-place",
            "words"
        ] {
            #expect(script.contains(word), "\(shell) lacks \(word)")
        }
        #expect(!script.contains("generate-manual"), "hidden commands are not completed")
        #expect(!script.contains("clipboard-clear"), "the clipboard's clearer is not a command")
        // The shell itself, when installed, accepts the syntax.
        let interpreter = "/bin/\(shell)"
        if shell != "fish", FileManager.default.isExecutableFile(atPath: interpreter) {
            let path = try sandbox.writeFile("completion.\(shell)", result.stdout)
            let check = Process()
            check.executableURL = URL(fileURLWithPath: interpreter)
            check.arguments = ["-n", path]
            try check.run()
            check.waitUntilExit()
            #expect(check.terminationStatus == 0, "\(shell) -n rejects the script")
        }
    }
}
