#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
import Latchkey

/// The command line and environment as the bytes the process was given.
///
/// Swift turns argv and environment values into `String`s by replacing every byte that is not
/// UTF-8 with U+FFFD, so `--account $'\xfe'` and `--account $'\xff'` would both become the
/// same account and select each other's items, and a path with such a byte would name another
/// file. Latchkey therefore refuses, before parsing, every argument and every environment
/// variable it reads as a path or an attribute that is not valid UTF-8 (errSecParam, exit 2),
/// naming the option or variable and never echoing the value. Exact bytes of an attribute
/// that can hold data are given in hex (`--account-hex`). Secrets in the environment
/// (LATCHKEY_PASSCODE, …) are bytes and are read as they are (`secretEnvironment`).
enum RawInput {
    /// Variables read as paths or attributes; HOME and XDG_RUNTIME_DIR only where they are
    /// used (see `checkEnvironment`).
    static let textVariables = [
        "LATCHKEY_KEYCHAIN", "LATCHKEY_DEVICE", "LATCHKEY_ENTITLEMENTS", "LATCHKEY_APP_ID", "LATCHKEY_AGENT_SOCK",
        "LATCHKEY_PASSCODE_FILE", "LATCHKEY_NEW_PASSCODE_FILE", "LATCHKEY_BACKUP_PASSWORD_FILE", "XDG_DATA_HOME"
    ]

    /// The arguments after the program name, as bytes.
    static func arguments() -> [[UInt8]] {
        (1..<Int(CommandLine.argc)).map { i in
            guard let p = CommandLine.unsafeArgv[i] else { return [] }
            return Array(
                UnsafeBufferPointer(start: UnsafeRawPointer(p).assumingMemoryBound(to: UInt8.self), count: strlen(p)))
        }
    }

    /// The value of `name` as bytes; nil when unset or empty.
    static func environment(_ name: String) -> [UInt8]? {
        guard let p = getenv(name) else { return nil }
        let bytes = Array(
            UnsafeBufferPointer(start: UnsafeRawPointer(p).assumingMemoryBound(to: UInt8.self), count: strlen(p)))
        return bytes.isEmpty ? nil : bytes
    }

    /// A secret held in the environment (LATCHKEY_PASSCODE, …), byte for byte.
    static func secretEnvironment(_ name: String) -> [UInt8]? { environment(name) }

    static func isUTF8(_ bytes: [UInt8]) -> Bool { String(validating: bytes, as: UTF8.self) != nil }

    /// Refuses the process's arguments and environment when one is not UTF-8.
    static func check() throws {
        try checkArguments(arguments())
        try checkEnvironment()
    }

    /// Refuses the first argument that is not valid UTF-8.
    /// - Throws: a `UsageError` with errSecParam naming the option it belongs to (or its
    ///   position), the hex form when the option has one, and never the value.
    static func checkArguments(_ arguments: [[UInt8]]) throws {
        for (index, argument) in arguments.enumerated() where !isUTF8(argument) {
            let command =
                arguments.first.flatMap { String(validating: $0, as: UTF8.self) }.flatMap {
                    $0.hasPrefix("-") ? nil : $0
                } ?? ""
            let dash = UInt8(ascii: "-"), equals = UInt8(ascii: "=")
            var option: String?
            if argument.starts(with: [dash, dash]), let eq = argument.firstIndex(of: equals),
                isUTF8(Array(argument[..<eq]))
            {
                option = String(decoding: argument[..<eq], as: UTF8.self)  // --account=VALUE
            } else if index > 0, arguments[index - 1].first == dash, !arguments[index - 1].contains(equals),
                isUTF8(arguments[index - 1]), !argument.starts(with: [dash])
            {
                option = String(decoding: arguments[index - 1], as: UTF8.self)  // --account VALUE
            }
            var message: String
            if let option {
                message = "the value of \(option) is not valid UTF-8 text, and Latchkey takes only UTF-8 arguments"
                if let hex = hexForm(of: option) {
                    message +=
                        "; give its exact bytes in hex with \(hex) (for example \(hex) 6a6f73e9 for \"josé\" in Latin-1)"
                } else {
                    message +=
                        "; give it as UTF-8 (a path with such bytes: name it through a symbolic link whose name is UTF-8)"
                }
            } else {
                message =
                    "argument \(index + 1) is not valid UTF-8 text, and Latchkey takes only UTF-8 arguments; give it as UTF-8"
            }
            throw UsageError(message + "; nothing was done", command: index == 0 ? "" : command, status: .param)
        }
    }

    /// `--account` → `--account-hex`, `--set-account` → `--set-account-hex`, for the options
    /// that have a hex form; nil for the others.
    static func hexForm(of option: String) -> String? {
        guard option.hasPrefix("--") else { return nil }
        var name = String(option.dropFirst(2))
        var prefix = "--"
        if name.hasPrefix("set-") {
            name.removeFirst(4)
            prefix += "set-"
        }
        guard AttributeOption.all.contains(where: { $0.flag == name && $0.bytesOption != nil }) else { return nil }
        return prefix + name + "-hex"
    }

    /// Refuses a variable read as a path or an attribute that is not valid UTF-8.
    /// - Throws: a `UsageError` with errSecParam naming the variable, never its value.
    static func checkEnvironment() throws {
        var names = textVariables
        // HOME and XDG_RUNTIME_DIR count only when the variables before them leave them in use.
        if !(environment("XDG_DATA_HOME").map { $0.first == UInt8(ascii: "/") } ?? false) { names.append("HOME") }
        if environment("LATCHKEY_AGENT_SOCK") == nil { names.append("XDG_RUNTIME_DIR") }
        for name in names {
            if let value = environment(name), !isUTF8(value) {
                throw UsageError(
                    "the environment variable \(name) is not valid UTF-8 text, and Latchkey reads it as a path or a name; set it to UTF-8 text (a path with such bytes: name it through a symbolic link whose name is UTF-8); nothing was done",
                    command: "", status: .param)
            }
        }
    }
}
