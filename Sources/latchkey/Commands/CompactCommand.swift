import ArgumentParser
import Latchkey

/// `latchkey compact`: rewrites the log to its live records.
struct CompactCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compact",
        abstract: "Rewrite the keychain file to its live records, atomically.",
        discussion: """
            Writes a new file beside the keychain, syncs it and renames it over the old one, so \
            a crash leaves either the old or the new file. Needs no passcode: item records \
            are copied still encrypted. Prints the size before and after on stderr.

            Example:
              latchkey compact
            """
    )

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func run() throws {
        let keychain = try global.open(unlock: .never)
        let (before, after) = try keychain.compact()
        Output.status("compacted \(global.keychainPath): \(before) -> \(after) bytes")
    }
}
