import ArgumentParser
import Latchkey

/// `latchkey info`: facts about the keychain file.
struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Show the format version, item counts per class and protection class, sizes and device binding.",
        discussion: """
            Needs no passcode: counts come from the records' class tags. A passcode given by \
            --passcode-file or LATCHKEY_PASSCODE is used (never asked for), and then the \
            unlocked classes include the passcode-protected ones.

            Example:
              latchkey info
              latchkey info --json | jq .liveItems
            """
    )

    @OptionGroup(title: "Global options") var global: GlobalOptions

    @Flag(help: "Print JSON (path, formatVersion, fileUUID, deviceUUID, hasPasscode, kdf, fileSize, records, liveItems, itemsByClass, itemsByProtection, unlockedClasses).")
    var json = false

    func run() throws {
        let keychain = try global.open(unlock: .givenOnly)
        let info = try keychain.info()
        if json {
            try Output.json(encoding: info)
            return
        }
        func counts(_ d: [String: Int]) -> String {
            d.isEmpty ? "none" : d.keys.sorted().map { "\($0) \(d[$0]!)" }.joined(separator: ", ")
        }
        let rows: [(String, String)] = [
            ("path", info.path),
            ("format version", info.formatVersion),
            ("file UUID", info.fileUUID),
            ("device UUID", info.deviceUUID),
            ("passcode", info.hasPasscode ? "yes (\(info.kdf))" : "none"),
            ("file size", "\(info.fileSize) bytes"),
            ("records", "\(info.records)"),
            ("live items", "\(info.liveItems)"),
            ("by class", counts(info.itemsByClass)),
            ("by protection", counts(info.itemsByProtection)),
            ("unlocked", info.unlockedClasses.isEmpty ? "none" : info.unlockedClasses.joined(separator: " ")),
        ]
        let width = rows.map(\.0.count).max() ?? 0
        for (name, value) in rows {
            Output.line(name + String(repeating: " ", count: width - name.count + 2) + value)
        }
    }
}
