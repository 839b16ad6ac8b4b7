import ArgumentParser
import Latchkey
import LatchkeyFormat

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

    @Flag(
        help:
            "Print JSON (path, formatVersion, fileUUID, deviceUUID, hasPasscode, kdf, fileSize, records, liveItems, itemsByClass, itemsByProtection, unlockedClasses)."
    )
    var json = false

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func run() throws {
        let keychain = try global.open(unlock: .givenOnly)
        let info = try keychain.info()
        if json {
            try Output.json(encoding: info)
            return
        }
        let rows: [(String, String)] = [
            ("path", info.path),
            ("format version", info.formatVersion),
            ("file UUID", info.fileUUID),
            ("device UUID", info.deviceUUID),
            ("passcode", info.hasPasscode ? "yes (\(info.kdf))" : "none"),
            ("file size", "\(Progress.grouped(Int(info.fileSize))) bytes"),
            ("records", Progress.grouped(info.records)),
            ("live items", Progress.grouped(info.liveItems))
        ]
        let width = rows.map(\.0.count).max() ?? 0
        let style = Style.stdout
        for (name, value) in rows {
            Output.line(style.bold(name) + String(repeating: " ", count: width - name.count + 2) + value)
        }

        var classes = Table(["CLASS", "", "ITEMS"], rightAligned: [2])
        let names = ["genp": "generic passwords", "inet": "internet passwords", "cert": "certificates", "keys": "keys"]
        for c in ItemClass.allCases {
            classes.append([
                c.rawValue, names[c.rawValue] ?? "", Progress.grouped(info.itemsByClass[c.rawValue, default: 0])
            ])
        }
        for (name, count) in info.itemsByClass.sorted(by: { $0.key < $1.key }) where ItemClass(rawValue: name) == nil {
            classes.append([name, "", Progress.grouped(count)])
        }
        var protections = Table(["PDMN", "PROTECTION CLASS", "ITEMS", "NOW"], rightAligned: [2])
        for pc in ProtectionClass.allCases {
            protections.append([
                pc.code, pc.longName, Progress.grouped(info.itemsByProtection[pc.code, default: 0]),
                info.unlockedClasses.contains(pc.code) ? "unlocked" : "locked"
            ])
        }
        Output.line("")
        Output.table(classes)
        Output.line("")
        Output.table(protections)
    }
}
