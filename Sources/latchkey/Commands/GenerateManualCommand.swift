import ArgumentParser

/// `latchkey generate-manual`: writes latchkey(1) in roff (used by `make install`; hidden).
struct GenerateManualCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate-manual",
        abstract: "Write the latchkey(1) man page in roff to stdout, generated from the command definitions.",
        discussion: """
            Shell completions come from swift-argument-parser itself: \
            latchkey --generate-completion-script bash (or zsh, fish).

            Example:
              latchkey generate-manual > latchkey.1 && man -l latchkey.1
            """,
        shouldDisplay: false
    )

    func run() throws {
        Output.data(Array(try Manual.page(version: LatchkeyCommand.version).utf8))
    }
}
