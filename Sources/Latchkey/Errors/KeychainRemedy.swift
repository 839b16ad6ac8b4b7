/// What to do about an error, kept apart from the message that says what happened, so each
/// surface says it in its own terms: `KeychainError.description` in the library's (an API to
/// call), the `latchkey` CLI in its commands and options (Sources/latchkey/Support/Remedies.swift).
public enum KeychainRemedy: Sendable, Equatable {
    /// Damage: see what cutting the file back to its last intact change would drop, or restore
    /// from a backup.
    case repairOrRestore
    /// An older copy of the file: put the newer back, or adopt this one.
    case adoptRollback
    /// No keychain at the path: create one, or name the existing one.
    case createKeychain
    /// A keychain exists where one was to be created.
    case useExistingOrChooseAnother
    /// The keychain path is a directory; `example` is a file path inside it.
    case giveKeychainFile(example: String)
    /// Needs a keychain with a passcode.
    case setPasscode
    /// A class is locked: give the passcode.
    case unlock
    /// An item or record is damaged: check the file and restore from a backup.
    case verifyAndRestore
    /// A rewrite is in force but its directory is not synced: compact again.
    case compactAgain
    /// A passcode was given for a keychain without one.
    case checkForReplacement
    /// The caller has no access group.
    case giveCallerIdentity
    /// The device secret is unsafe where it was looked for: name another.
    case giveDeviceSecret
    /// No device secret and no keychain: create both, or name the device secret.
    case createOrGiveDeviceSecret
    /// The keychain's own device secret is missing: put it back or name it; else restore.
    case findKeychainsDeviceSecret
    /// A restore into a new keychain found one at the path: merge into it, or choose another.
    case mergeOrChooseAnotherKeychain
    /// The archive needs its backup password.
    case giveBackupPassword
    /// A backup needs a non-empty password, or none at all.
    case chooseBackupPassword
    /// Backups are written to regular files: choose another path, or write to a descriptor.
    case chooseBackupOutput

    /// The next step in the library's terms.
    public var advice: String {
        switch self {
        case .repairOrRestore:
            return
                "Keychain.repairPlan(path:devicePath:) shows what cutting it back to its last intact change would drop; or restore from a backup"
        case .adoptRollback:
            return "restore the newer copy, or adopt this file with Keychain.open(path:devicePath:acceptRollback: true)"
        case .createKeychain:
            return "create one with Keychain.create(path:devicePath:passcode:), or give the path of an existing one"
        case .useExistingOrChooseAnother:
            return "open it (with the device secret it was made with), or create another at another path"
        case .giveKeychainFile(let example):
            return "give the file's path (for example \(example))"
        case .setPasscode:
            return "set one with Keychain.changePasscode(old: nil, new:)"
        case .unlock:
            return "unlock it with Keychain.unlock(passcode:)"
        case .verifyAndRestore:
            return "check it with Keychain.verify() and restore from a backup"
        case .compactAgain:
            return "compact it again (Keychain.compact()) to sync it"
        case .checkForReplacement:
            return
                "if it should have one, it may have been replaced: check it with Keychain.info() and restore from a backup; otherwise open it without a passcode, or set one with Keychain.changePasscode(old: nil, new:)"
        case .giveCallerIdentity:
            return
                "give the call a caller (Keychain.caller, CallContext) with an application-identifier or keychain-access-groups"
        case .giveDeviceSecret:
            return "or give the path of a device secret kept in a directory of your own (devicePath)"
        case .createOrGiveDeviceSecret:
            return
                "Keychain.create(path:devicePath:passcode:) creates one with a new keychain; or give the path of your device secret (devicePath)"
        case .mergeOrChooseAnotherKeychain:
            return "restore into it with VerifiedBackup.verify(…, target: .existing(keychain)), or choose another path"
        case .giveBackupPassword:
            return "give its password"
        case .chooseBackupPassword:
            return "choose a non-empty password, or write the backup without one (password nil)"
        case .chooseBackupOutput:
            return "choose another path, or write to a pipe or device through a file descriptor"
        case .findKeychainsDeviceSecret:
            return
                "put that file back, or give its path (devicePath); a new device secret cannot open this keychain. If the device secret is lost, the items come back only from a backup restored into a new keychain (a password backup restores onto any device secret; one without a password only onto the one it was made with)"
        }
    }
}
