/// A command line that parsed but cannot be carried out as given (a missing passcode source,
/// a combination of options that makes no sense). Printed as `latchkey: <message>` with a
/// pointer to the command's help; exit status 2 (shared/CLI.md).
struct UsageError: Error, CustomStringConvertible {
    var message: String
    var command: String

    init(_ message: String, command: String) {
        self.message = message
        self.command = command
    }

    var description: String { "\(message)\n  See 'latchkey \(command) --help' for more information." }
}
