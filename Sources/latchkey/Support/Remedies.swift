import Latchkey

extension KeychainRemedy {
    /// The next step in the CLI's commands and options (the library's `advice` names its API).
    var cliAdvice: String {
        switch self {
        case .repairOrRestore:
            return
                "run 'latchkey verify --repair' to see what cutting it back to its last intact change would drop, or restore from a backup"
        case .adoptRollback:
            return "restore the newer copy, or to adopt this file anyway run 'latchkey verify --accept-rollback'"
        case .createKeychain:
            return "create one with 'latchkey init' or set LATCHKEY_KEYCHAIN / --keychain"
        case .useExistingOrChooseAnother:
            return "use it (with the device secret it was made with), or create another with --keychain PATH"
        case .giveKeychainFile(let example):
            return "give the file's path (for example \(example)) with --keychain or LATCHKEY_KEYCHAIN"
        case .setPasscode:
            return "set one with 'latchkey passwd'"
        case .unlock:
            return "unlock it (LATCHKEY_PASSCODE, --passcode-file or a prompt)"
        case .verifyAndRestore:
            return "run 'latchkey verify' and restore from a backup if needed"
        case .compactAgain:
            return "run 'latchkey compact' to sync it again"
        case .checkForReplacement:
            return
                "if it should have one, it may have been replaced: check it with 'latchkey info' and restore from a backup; otherwise stop giving a passcode (unset LATCHKEY_PASSCODE), or set one with 'latchkey passwd'"
        case .giveCallerIdentity:
            return "set LATCHKEY_APP_ID or LATCHKEY_ENTITLEMENTS (--app-id / --entitlements)"
        case .giveDeviceSecret:
            return "or keep the device secret in a directory of your own and point --device / LATCHKEY_DEVICE at it"
        case .createOrGiveDeviceSecret:
            return
                "'latchkey init' creates one with a new keychain, or point LATCHKEY_DEVICE / --device at your device secret"
        case .mergeOrChooseAnotherKeychain:
            return "restore into it with --merge, or choose another --keychain"
        case .giveBackupPassword:
            return "give it with --password-file or LATCHKEY_BACKUP_PASSWORD"
        case .chooseBackupPassword:
            return "choose a non-empty password, or use --no-password"
        case .chooseBackupOutput:
            return "choose another path, or write to a pipe or device with --output - and a redirection"
        case .findKeychainsDeviceSecret:
            return
                "put that file back, or point LATCHKEY_DEVICE / --device at where it is. Do not run 'latchkey init' for this keychain: a new device secret cannot open it. If the device secret is lost, the items come back only from a backup: 'latchkey restore BACKUP --keychain NEW-PATH' makes a new keychain and device secret (a password backup restores onto any device secret; a --no-password backup only onto the one it was made with)"
        }
    }
}

extension KeychainError {
    /// How the CLI prints the error: `description` with the remedy in the CLI's terms.
    var cliDescription: String { description(advice: \.cliAdvice) }
}
