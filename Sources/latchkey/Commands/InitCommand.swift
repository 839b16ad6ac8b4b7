import ArgumentParser
import Latchkey
import LatchkeyFormat

/// `latchkey init`: creates the keychain and, when absent, the device secret.
struct InitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create the keychain (and the device secret if absent); never overwrites.",
        discussion: """
            The passcode comes from --passcode-file or LATCHKEY_PASSCODE, or is asked twice \
            without echo when stdin is a terminal. Without a terminal one of them, or \
            --no-passcode, is required. A keychain without a passcode keeps every item \
            available to whoever can read the device secret, and cannot hold \
            WhenPasscodeSetThisDeviceOnly (akpu) items until 'latchkey passwd' sets one.

            Fails with errSecDuplicateKeychain (exit 7) when the keychain exists.

            Example:
              LATCHKEY_PASSCODE='correct horse' latchkey init
              latchkey init --keychain ./ci.keychain --device ./ci.device --no-passcode
            """
    )

    @Flag(
        name: .customLong("no-passcode"),
        help: "Create the keychain without a passcode (items are protected by the device secret alone).")
    var noPasscode = false

    @Option(name: .customLong("kdf-log-n"), help: ArgumentHelp(KDFCost.help, valueName: "n"))
    var kdfLogN: UInt8 = KDFParameters.defaultLogN

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func validate() throws {
        guard CommandLineForms.validating else { return }
        try KDFCost.validate(kdfLogN)
        if noPasscode { try InitCommand.refusePasscode(global) }
    }

    /// `--no-passcode` (of `init` and `restore`) with a passcode given anyway: the user meant
    /// one of them, and a keychain made without the passcode they gave would be a surprise.
    static func refusePasscode(_ global: GlobalOptions) throws {
        if global.passcodeFile != nil {
            throw ValidationError("--no-passcode and --passcode-file contradict each other; give one")
        }
        if global.passcodeCommand != nil {
            throw ValidationError("--no-passcode and --passcode-command contradict each other; give one")
        }
        for name in ["LATCHKEY_PASSCODE", "LATCHKEY_PASSCODE_FILE", "LATCHKEY_PASSCODE_COMMAND"]
        where GlobalOptions.environment(name) != nil {
            throw ValidationError(
                "--no-passcode and \(name) contradict each other; unset \(name) or drop --no-passcode")
        }
    }

    func run() throws {
        var passcode: [UInt8]?
        if !noPasscode {
            passcode = try global.newPasscodeOrPrompt(
                given: try global.givenPasscode(),
                prompt: "New passcode for \(global.keychainPath): ")
            guard passcode != nil else {
                throw UsageError(
                    "init needs a passcode and there is no terminal to ask on; set LATCHKEY_PASSCODE, give --passcode-file PATH, or use --no-passcode",
                    command: "init")
            }
        }
        _ = try Keychain.create(
            path: global.keychainPath, devicePath: global.devicePath,
            passcode: passcode, kdfLogN: kdfLogN)
        if passcode != nil { KDFCost.warnIfWeak(kdfLogN, "passcode") }
        Output.progress("created \(global.keychainPath)\(passcode == nil ? " without a passcode" : "")")
    }
}
