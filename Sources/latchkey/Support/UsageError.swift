import Latchkey

/// A command line that parsed but cannot be carried out as given (a missing passcode source,
/// a combination of options that makes no sense). Printed as `latchkey: <message>` with a
/// pointer to the command's help; exit status 2 (docs/CLI.md). With a `status` (errSecParam
/// for bad input bytes and refused deletions) its name and number follow the message, as for
/// every other error.
struct UsageError: Error, CustomStringConvertible {
    var message: String
    var command: String
    var status: KeychainStatus?

    init(_ message: String, command: String, status: KeychainStatus? = nil) {
        self.message = message
        self.command = command
        self.status = status
    }

    var description: String {
        let code = status.map { " (\($0.name) \($0.rawValue))" } ?? ""
        let help = command.isEmpty ? "latchkey --help" : "latchkey \(command) --help"
        return "\(message)\(code)\n  See '\(help)' for more information."
    }
}
