import Latchkey
import LatchkeyDBus
import LatchkeySecretService

#if canImport(Glibc)
    import Glibc
#endif

// `latchkey-secret-service`: the Secret Service provider (spec/SECRET-SERVICE.md). A program of
// its own because sd-bus (libsystemd) has no static library on Debian, while `latchkey` is one
// static executable; `latchkey secret-service` runs this one.

let usage = """
    USAGE: latchkey-secret-service [--keychain PATH] [--device PATH] [--pinentry PROGRAM] [--replace]

    Serves org.freedesktop.secrets (the Secret Service API) on the session bus from the keychain
    that 'latchkey agent' holds: secret-tool, python keyring, git-credential-libsecret and every
    libsecret program then keep their secrets in Latchkey.

      --keychain PATH      the keychain (default: LATCHKEY_KEYCHAIN, else the login keychain)
      --device PATH        its device secret (default: LATCHKEY_DEVICE, else beside it)
      --pinentry PROGRAM   asks for the passcode when a client unlocks (default:
                           LATCHKEY_PINENTRY; else this process's terminal; else nobody, and
                           then clients are told to run 'latchkey unlock')
      --replace            take the name from another provider (gnome-keyring) that allows it

    Example:
      latchkey agent --daemon && latchkey unlock
      latchkey secret-service &
      secret-tool store --label 'demo' service demo user alice

    """

func fail(_ text: String, _ code: Int32) -> Never {
    var line = "latchkey secret-service: " + text + "\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    exit(code)
}

var keychainPath: String?
var devicePath: String?
var pinentry: String?
var replace = false
var args = CommandLine.arguments.dropFirst()
while let a = args.popFirst() {
    switch a {
    case "--help", "-h":
        print(usage, terminator: "")
        exit(0)
    case "--replace": replace = true
    case "--keychain", "--device", "--pinentry":
        guard let v = args.popFirst() else { fail("\(a) needs a value", 2) }
        if a == "--keychain" { keychainPath = v } else if a == "--device" { devicePath = v } else { pinentry = v }
    default: fail("unknown option '\(a)'; see 'latchkey secret-service --help'", 2)
    }
}

let environment = KeychainEnvironment.process(keychainPath: keychainPath, devicePath: devicePath)
let keychain: Keychain
do {
    guard let k = try Keychain.openThroughAgent(path: environment.keychainPath, devicePath: environment.devicePath)
    else {
        fail(
            "no agent answers (LATCHKEY_AGENT_SOCK or the default socket); the Secret Service shares the agent's lock state: start it with 'latchkey agent --daemon', unlock with 'latchkey unlock', then start this again",
            4)
    }
    keychain = k
} catch let e as KeychainError {
    fail(e.description, 7)
} catch {
    fail("\(error)", 7)
}

do {
    let bus = try DBusConnection()
    let provider = SecretServiceProvider(
        keychain: keychain, keychainPath: environment.keychainPath, bus: bus,
        prompter: PasscodePrompter.choose(configured: pinentry))
    try provider.start(replace: replace)
    try provider.run()
} catch let e as SecretServiceProvider.ProviderError {
    fail(e.description, 7)
} catch let e as KeychainError {
    fail(e.description, 7)
} catch {
    fail("\(error)", 7)
}
