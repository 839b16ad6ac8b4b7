import ArgumentParser
import Latchkey
import LatchkeyFormat

/// `latchkey passwd`: changes, sets or removes the keychain's passcode.
struct PasswdCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passwd",
        abstract: "Change the keychain's passcode, give a keychain without one a passcode, or remove it.",
        discussion: """
            The current passcode comes from LATCHKEY_PASSCODE or --passcode-file, or is asked \
            without echo; the new one from LATCHKEY_NEW_PASSCODE or --new-passcode-file, or is \
            asked twice. The classes the passcode protects get new class keys and the file is \
            rewritten (like 'compact'), so a copy of the file taken before the change opens \
            nothing added or changed after it, even with the old passcode. A kill or power cut \
            leaves the old file with the old passcode or the new one with the new passcode. A \
            wrong current passcode fails with errSecAuthFailed (exit 4).

            --remove takes the passcode away: WhenUnlocked and AfterFirstUnlock items then need \
            only the device secret, and the WhenPasscodeSetThisDeviceOnly (akpu) items are \
            deleted, as on iOS.

            Example:
              latchkey passwd
              LATCHKEY_PASSCODE=old LATCHKEY_NEW_PASSCODE=new latchkey passwd
              LATCHKEY_PASSCODE=old latchkey passwd --remove
            """
    )

    @Option(name: .customLong("kdf-log-n"), help: ArgumentHelp(KDFCost.help, valueName: "n"))
    var kdfLogN: UInt8 = KDFParameters.defaultLogN

    @Flag(help: "Remove the passcode (deletes WhenPasscodeSetThisDeviceOnly items).")
    var remove = false

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func validate() throws {
        guard CommandLineForms.validating else { return }
        try KDFCost.validate(kdfLogN)
        if remove, global.newPasscodeFile != nil {
            throw ValidationError("--remove and --new-passcode-file contradict each other; give one")
        }
    }

    func run() throws {
        let keychain = try global.open(unlock: .never)
        var old: [UInt8]?
        if keychain.hasPasscode {
            old = try global.passcodeOrPrompt("Current passcode for \(global.keychainPath): ")
            guard old != nil else {
                throw UsageError(
                    "passwd needs the current passcode and there is no terminal to ask on; set LATCHKEY_PASSCODE or give --passcode-file PATH",
                    command: "passwd")
            }
        }
        if remove {
            let deleted = try keychain.changePasscode(old: old, new: nil, kdfLogN: kdfLogN)
            Output.progress(
                "removed the passcode of \(global.keychainPath)"
                    + (deleted > 0 ? "; deleted \(deleted) WhenPasscodeSetThisDeviceOnly (akpu) item(s)" : ""))
            return
        }
        let new = try global.newPasscodeOrPrompt(
            given: try global.givenNewPasscode(),
            prompt: "New passcode for \(global.keychainPath): ")
        guard let new else {
            throw UsageError(
                "passwd needs the new passcode and there is no terminal to ask on; set LATCHKEY_NEW_PASSCODE or give --new-passcode-file PATH",
                command: "passwd")
        }
        try keychain.changePasscode(old: old, new: new, kdfLogN: kdfLogN)
        KDFCost.warnIfWeak(kdfLogN, "new passcode")
        Output.progress("changed the passcode of \(global.keychainPath)")
    }
}
