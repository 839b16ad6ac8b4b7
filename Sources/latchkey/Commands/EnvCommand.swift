import ArgumentParser
import Latchkey
import LatchkeyCrypto

/// `latchkey env`: the chosen secrets as `export NAME='…'` lines for a shell's `eval`.
struct EnvCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "env",
        abstract:
            "Print export lines (NAME='secret', quoted for sh) for eval; each --item NAME=SERVICE/ACCOUNT is one variable.",
        discussion: """
            This puts secrets on stdout, for eval "$(latchkey env …)": prefer 'latchkey exec', \
            which hands them to one command and keeps them out of the shell. Every item is \
            found first; when one is missing (exit 1), ambiguous or locked, nothing is \
            printed. Values are in single quotes (a ' inside becomes '\\''), so any bytes but \
            NUL survive eval in sh, bash, zsh and dash.

            Example:
              eval "$(latchkey env --item GITHUB_TOKEN=github.com/alice)"
            """
    )

    @OptionGroup var items: EnvironmentItemOptions

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func validate() throws {
        guard CommandLineForms.validating else { return }
        _ = try items.items()
        if items.specs.isEmpty { throw ValidationError("give at least one --item NAME=SERVICE/ACCOUNT") }
    }

    func run() throws {
        var secrets = try EnvironmentItemOptions.secrets(try items.items(), global: global, command: "env")
        var out: [UInt8] = []
        out.reserveCapacity(secrets.reduce(0) { $0 + $1.name.utf8.count + 4 * $1.value.count + 12 })
        for i in secrets.indices {
            out +=
                Array("export \(secrets[i].name)=".utf8) + EnvCommand.shellQuoted(secrets[i].value) + [
                    UInt8(ascii: "\n")
                ]
            Crypto.cleanse(&secrets[i].value)
        }
        Output.data(out)
        Crypto.cleanse(&out)
    }

    /// `bytes` in single quotes for sh: every byte as it is, a quote as `'\''`.
    static func shellQuoted(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "'")]
        out.reserveCapacity(bytes.count * 4 + 2)  // no reallocation: no copy left in freed memory
        for b in bytes {
            if b == UInt8(ascii: "'") { out += Array("'\\''".utf8) } else { out.append(b) }
        }
        out.append(UInt8(ascii: "'"))
        return out
    }
}
