import ArgumentParser

/// What `main` does to the arguments before either parser sees them (docs/CLI.md):
/// global options given before the subcommand move after its name, and `--help-all` /
/// `help-all` become ArgumentParser's `--help` with every option shown.
enum CommandLineForms {
    /// The options of `GlobalOptions`, which may come before the subcommand. An array: a
    /// `Set` would be made at run time with a look-up of `String: Hashable` in the binary's
    /// conformance tables, paid by every command before anything else (`latchkey --version`).
    static let globalOptions: [String] = [
        "keychain", "device", "passcode-file", "passcode-command", "new-passcode-file",
        "app-id", "entitlements"
    ]

    /// Whether help, the man page and the completion scripts show every option. `--help`
    /// leaves out the per-class attribute options (today's `update` has some 90 of them), so
    /// that it fits on a screen; `--help-all`, `latchkey generate-manual` and
    /// `--generate-completion-script` show them all, so completion and the man page miss none.
    /// Set once by `normalized`, before ArgumentParser reads a command's options.
    nonisolated(unsafe) static var showsEverything = false

    /// The subcommand's name (the first argument), for help that only one command needs shown.
    nonisolated(unsafe) static var command: String?

    /// Whether the commands' `validate()` methods check anything (each begins with
    /// `guard CommandLineForms.validating else { return }`). ArgumentParser runs `validate()`
    /// before it looks for unknown options, so a mistyped option (`update --set-lable X`) made
    /// validate() complain about what its absence left (no --set-X given) instead of being
    /// named; `LatchkeyCommand.parse` then parses once more with this false, and reports what
    /// that parse finds (ArgumentParser's "Unknown option '--set-lable'. Did you mean …").
    nonisolated(unsafe) static var validating = true

    /// The visibility of an option that `--help` leaves out.
    static var secondary: ArgumentVisibility { showsEverything ? .default : .hidden }

    /// A command's discussion: `full` under `--help-all` (and in the man page), `short` under
    /// `--help`, which must fit a screen (HelpAndCompletionTests: 40 lines at 80 columns for
    /// the common commands); each followed by the examples, one command a line.
    static func discussion(short: String, full: String, example: String) -> String {
        (showsEverything ? full : short + " More: --help-all.") + "\n\nExample:\n" + example
    }

    /// An option's longer explanation: under `--help-all` (and in the man page) only.
    static func details(_ text: String) -> String { showsEverything ? text : "" }

    /// The arguments (without the program name) as the parsers expect them.
    ///
    /// `latchkey --keychain k --passcode-file f find --account a` becomes
    /// `latchkey find --keychain=k --passcode-file=f --account a`: each leading global option
    /// is moved, with its value, right after the subcommand's name, in the `--name=value`
    /// form, so a value that starts with "-" stays a value. The scan stops at the first
    /// argument that is not a global option; arguments after it (and after a `--`) are never
    /// touched.
    /// - Throws: `UsageError` when a leading global option has no value or no command follows.
    static func normalized(_ arguments: [String]) throws -> [String] {
        var arguments = arguments
        if arguments.first == "help-all" {
            arguments = Array(arguments.dropFirst()) + ["--help"]
            showsEverything = true
        }
        if let i = arguments.prefix(while: { $0 != "--" }).firstIndex(of: "--help-all") {
            arguments[i] = "--help"
            showsEverything = true
        }
        if arguments.first == "generate-manual" || arguments.contains("--generate-completion-script")
            || arguments.contains("--experimental-dump-help")
        {
            showsEverything = true
        }

        var moved: [String] = [], i = 0
        while i < arguments.count, arguments[i].hasPrefix("--"), arguments[i] != "--" {
            let argument = arguments[i]
            let name = String(argument.dropFirst(2).prefix { $0 != "=" })
            guard globalOptions.contains(name) else { break }
            if argument.contains("=") {
                moved.append(argument)
                i += 1
            } else {
                guard i + 1 < arguments.count else {
                    throw UsageError(
                        "--\(name) needs a value, and a command after it: latchkey --\(name) VALUE COMMAND …",
                        command: "")
                }
                moved.append("--\(name)=\(arguments[i + 1])")
                i += 2
            }
        }
        guard !moved.isEmpty else {
            command = arguments.first
            return arguments
        }
        guard i < arguments.count, !arguments[i].hasPrefix("-") else {
            throw UsageError(
                "global options before the command need a command after them: latchkey \(moved.joined(separator: " ")) COMMAND …",
                command: "")
        }
        command = arguments[i]
        return [arguments[i]] + moved + arguments[(i + 1)...]
    }
}
