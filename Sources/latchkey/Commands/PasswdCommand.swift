import ArgumentParser
import Latchkey
import LatchkeyFormat

/// `latchkey passwd`: changes (or sets) the keychain's passcode.
struct PasswdCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passwd",
        abstract: "Change the keychain's passcode, or give a keychain without one a passcode.",
        discussion: """
            The current passcode comes from LATCHKEY_PASSCODE or --passcode-file, or is asked \
            without echo; the new one from LATCHKEY_NEW_PASSCODE or --new-passcode-file, or is \
            asked twice. Only the keybag is rewrapped (one appended record); items are not \
            rewritten. A wrong current passcode fails with errSecAuthFailed (exit 4).

            Example:
              latchkey passwd
              LATCHKEY_PASSCODE=old LATCHKEY_NEW_PASSCODE=new latchkey passwd
            """
    )

    /// Testing knob: scrypt cost of the new passcode as log2(N), 10–22 (engine default 15);
    /// hidden from help because lower values weaken the passcode.
    @Option(name: .customLong("kdf-log-n"), help: ArgumentHelp(visibility: .private))
    var kdfLogN: UInt8 = KDFParameters.defaultLogN

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func validate() throws {
        guard (10...22).contains(kdfLogN) else { throw ValidationError("--kdf-log-n must be between 10 and 22") }
    }

    func run() throws {
        let keychain = try global.open(unlock: .never)
        var old: [UInt8]?
        if keychain.hasPasscode {
            old = try global.passcodeOrPrompt("Current passcode for \(global.keychainPath): ")
            guard old != nil else {
                throw UsageError("passwd needs the current passcode and there is no terminal to ask on; set LATCHKEY_PASSCODE or give --passcode-file PATH", command: "passwd")
            }
        }
        let new = try global.newPasscodeOrPrompt(given: try global.givenNewPasscode(),
                                                 prompt: "New passcode for \(global.keychainPath): ")
        guard let new else {
            throw UsageError("passwd needs the new passcode and there is no terminal to ask on; set LATCHKEY_NEW_PASSCODE or give --new-passcode-file PATH", command: "passwd")
        }
        try keychain.changePasscode(old: old, new: new, kdfLogN: kdfLogN)
        Output.progress("changed the passcode of \(global.keychainPath)")
    }
}
