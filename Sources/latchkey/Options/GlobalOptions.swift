import ArgumentParser
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif
import Latchkey

/// Where the keychain is and who is asking (docs/CLI.md "The keychain, the passcode and the
/// caller"). Every option that names a file has an environment variable; an explicit option wins
/// over the variable. The options are declared here for ArgumentParser; what they mean is in
/// GlobalSettings, which the fast path fills without them.
struct GlobalOptions: ParsableArguments {
    @Option(
        name: .customLong("keychain"),
        help: ArgumentHelp(
            "The keychain file (env LATCHKEY_KEYCHAIN).",
            discussion: CommandLineForms.details(
                "Default: $XDG_DATA_HOME/latchkey/login.keychain, or ~/.local/share/latchkey/login.keychain when XDG_DATA_HOME is unset."
            ),
            valueName: "path"),
        completion: .file())
    var keychainOption: String?

    @Option(
        name: .customLong("device"),
        help: ArgumentHelp(
            "The device secret file (env LATCHKEY_DEVICE); 'init' creates it (mode 0600) when absent.",
            discussion: CommandLineForms.details("Default: $XDG_DATA_HOME/latchkey/device.secret."),
            valueName: "path", visibility: CommandLineForms.secondary),
        completion: .file())
    var deviceOption: String?

    @Option(
        name: .customLong("passcode-file"),
        help: ArgumentHelp(
            "Passcode file or pipe (env LATCHKEY_PASSCODE_FILE).",
            discussion: CommandLineForms.details(
                "One trailing newline is ignored. A pipe works: --passcode-file <(pass show latchkey), /dev/stdin. Or put the passcode itself in LATCHKEY_PASSCODE, or use --passcode-command (one source at a time). With none of them, it is asked without echo when stdin is a terminal; otherwise a keychain that has a passcode stays locked (only Always/dk and dku items are usable)."
            ),
            valueName: "path"),
        completion: .file())
    var passcodeFile: String?

    @Option(
        name: .customLong("passcode-command"),
        help: ArgumentHelp(
            "Read the passcode from what this command prints (env LATCHKEY_PASSCODE_COMMAND).",
            discussion: CommandLineForms.details(
                "/bin/sh -c runs it; one trailing newline of its stdout is ignored. For a password manager or systemd credentials: --passcode-command 'pass show latchkey'. It must exit 0; its stderr is shown, its stdin is the terminal or /dev/null."
            ),
            valueName: "command", visibility: CommandLineForms.secondary),
        completion: .list([]))
    var passcodeCommand: String?

    @Option(
        name: .customLong("new-passcode-file"),
        help: ArgumentHelp(
            "Read the new passcode for 'passwd' from this file or pipe (env LATCHKEY_NEW_PASSCODE_FILE; or LATCHKEY_NEW_PASSCODE holds it).",
            valueName: "path", visibility: CommandLineForms.command == "passwd" ? .default : CommandLineForms.secondary),
        completion: .file())
    var newPasscodeFile: String?

    @Option(
        name: .customLong("app-id"),
        help: ArgumentHelp(
            "The application identifier of the caller (env LATCHKEY_APP_ID; default latchkey.cli).",
            discussion: CommandLineForms.details("Items added without --access-group go to this access group."),
            valueName: "id", visibility: CommandLineForms.secondary))
    var appIDOption: String?

    @Option(
        name: .customLong("entitlements"),
        help: ArgumentHelp(
            "An Entitlements.plist (XML or binary; a file or a pipe) giving application-identifier, keychain-access-groups and com.apple.security.application-groups (env LATCHKEY_ENTITLEMENTS).",
            discussion: CommandLineForms.details(
                "The caller may use its keychain-access-groups (in order), its application-identifier, then its application groups, as on iOS; new items go to the first of them. Without a plist the caller is --app-id alone."
            ),
            valueName: "plist", visibility: CommandLineForms.secondary),
        completion: .file())
    var entitlementsOption: String?

    /// These options' values, for the commands' work (GlobalSettings).
    var settings: GlobalSettings {
        var s = GlobalSettings(given: [:])
        s.keychainOption = keychainOption
        s.deviceOption = deviceOption
        s.passcodeFile = passcodeFile
        s.passcodeCommand = passcodeCommand
        s.newPasscodeFile = newPasscodeFile
        s.appIDOption = appIDOption
        s.entitlementsOption = entitlementsOption
        return s
    }

    // The settings' work, for the commands that hold GlobalOptions.

    static func environment(_ name: String) -> String? { GlobalSettings.environment(name) }

    var keychainPath: String { settings.keychainPath }
    var devicePath: String { settings.devicePath }
    func givenPasscode() throws -> [UInt8]? { try settings.givenPasscode() }
    func givenNewPasscode() throws -> [UInt8]? { try settings.givenNewPasscode() }
    func passcodeOrPrompt(_ prompt: String) throws -> [UInt8]? { try settings.passcodeOrPrompt(prompt) }
    func newPasscodeOrPrompt(given: [UInt8]?, prompt: String) throws -> [UInt8]? {
        try settings.newPasscodeOrPrompt(given: given, prompt: prompt)
    }

    func open(unlock: GlobalSettings.Unlock, acceptRollback: Bool = false) throws -> Keychain {
        try settings.open(unlock: unlock, acceptRollback: acceptRollback)
    }

    @discardableResult
    func retryingUnlocked<T>(_ keychain: Keychain, _ body: () throws -> T) throws -> T {
        try settings.retryingUnlocked(keychain, body)
    }
}
