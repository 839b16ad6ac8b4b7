#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
import ArgumentParser
import Latchkey

/// Shell completion of service and account names (`find mail/<TAB>`, `--account <TAB>`).
///
/// Names come only from an agent that already holds the keychain with its WhenUnlocked class
/// available: a completion never opens the file, never asks for a passcode, never reads a
/// secret (attributes only), and never waits long (it gives up, offering nothing, after
/// `Completion.patience` seconds: an agent busy with another request must not freeze the
/// shell). With no agent, or the keychain locked or not open in it, it offers nothing.
enum Completion {
    enum Kind { case serviceAccount, service, account }

    static let serviceAccount = CompletionKind.custom { words, _, prefix in names(.serviceAccount, words, prefix) }
    static let service = CompletionKind.custom { words, _, prefix in names(.service, words, prefix) }
    static let account = CompletionKind.custom { words, _, prefix in names(.account, words, prefix) }

    /// Seconds after which a completion gives up and offers nothing.
    static let patience: UInt32 = 2

    /// The names of `kind` that start with `prefix`, sorted, each once.
    static func names(_ kind: Kind, _ words: [String], _ prefix: String) -> [String] {
        let done = AtomicFlag()
        _ = DetachedThread.start {
            sleep(patience)
            if !done.set() { _exit(0) }
        }
        defer { done.set() }
        guard let items = try? unlockedItems(words) else { return [] }
        let service = kind == .account ? optionValue("service", words) : nil
        var out: Set<String> = []
        for item in items {
            guard case .string(let svce)? = item.attributes["svce"] else { continue }
            var account: String?
            if case .string(let a)? = item.attributes["acct"], !a.isEmpty { account = a }
            switch kind {
            case .serviceAccount: out.insert(account.map { svce + "/" + $0 } ?? svce)
            case .service: out.insert(svce)
            case .account:
                if let account, service == nil || service == svce { out.insert(account) }
            }
        }
        return out.filter { $0.hasPrefix(prefix) && !$0.contains("\n") }.sorted()
    }

    /// The attributes of the generic passwords the caller sees, from an agent that holds the
    /// keychain unlocked; nil otherwise. One `status` request (which never waits for a
    /// keychain), then a find per available protection class.
    static func unlockedItems(_ words: [String]) throws -> [Item]? {
        var given: [String: String] = [:]
        for name in ["keychain", "device", "app-id", "entitlements"] { given[name] = optionValue(name, words) }
        let settings = GlobalSettings(given: given)
        guard let client = try AgentClient.connect() else { return nil }
        let path = AgentSocket.absolute(settings.keychainPath)
        guard let state = try client.status().keychains.first(where: { $0.keychain == path }),
            !state.hasPasscode || state.unlocked.contains(ProtectionClass.whenUnlocked.code)
        else { return nil }
        let keychain = try client.keychain(path: settings.keychainPath, devicePath: settings.devicePath, asking: false)
        keychain.caller = try settings.caller()
        var items: [Item] = []
        for pc in ProtectionClass.allCases where state.unlocked.contains(pc.code) {
            items += try keychain.find(
                Query(.genericPassword, protection: pc, synchronizable: .any), limit: nil, includeData: false)
        }
        return items
    }

    /// The value of `--name VALUE` or `--name=VALUE` among the words typed so far.
    static func optionValue(_ name: String, _ words: [String]) -> String? {
        var value: String?
        for (i, word) in words.enumerated() {
            if word == "--" + name, i + 1 < words.count {
                value = words[i + 1]
            } else if word.hasPrefix("--\(name)=") {
                value = String(word.dropFirst(name.count + 3))
            }
        }
        return value
    }
}
