import ArgumentParser
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import Latchkey

/// `latchkey compact`: rewrites the log to its live records.
struct CompactCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compact",
        abstract: "Rewrite the keychain file to its live records, atomically.",
        discussion: """
            Writes a new file beside the keychain, syncs it and renames it over the old one, so \
            a crash leaves either the old or the new file. Needs no passcode: item records \
            are copied still encrypted. Earlier versions ('latchkey history') within their \
            bound are kept, unless --drop-history: then every earlier version of every item \
            leaves the keychain. Their bytes may survive on the disk (and in backups and \
            snapshots) until overwritten; versions synced to other machines stay in the sync \
            history. Prints the size before and after on stderr.

            Example:
              latchkey compact
              latchkey compact --drop-history
            """
    )

    @Flag(
        name: .customLong("drop-history"),
        help: "Drop every earlier version of every item ('latchkey history').")
    var dropHistory = false

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func run() throws {
        let keychain = try global.open(unlock: .never)
        // The engine reports nothing while it copies, so the bar follows the size of the new
        // file it writes beside the keychain, against an estimate of the live records' bytes.
        var estimate = 0
        if Progress.stderrCanShow {
            let info = try keychain.info()
            estimate = Int(Double(info.fileSize) * Double(info.liveItems) / Double(max(info.records, 1)))
        }
        let progress = Progress("compact", total: estimate, unit: .bytes)
        defer { progress.finish() }
        let (before, after) = try progress.whileRunning(tick: CompactCommand.follow(beside: global.keychainPath)) {
            try keychain.compact(dropHistory: dropHistory)
        }
        progress.finish()
        Output.status(
            "compacted \(global.keychainPath): \(before) -> \(after) bytes\(dropHistory ? ", every earlier version dropped" : "")"
        )
    }

    /// A progress tick that follows the size of the file `compact` writes beside `path`
    /// (`<name>.compact-…`); once it has been renamed into place, the engine reads it back.
    static func follow(beside path: String) -> @Sendable (Progress) -> Void {
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        let prefix = url.lastPathComponent + ".compact-"
        let seen = AtomicFlag()
        let announced = AtomicFlag()
        return { progress in
            if let name = (try? FileManager.default.contentsOfDirectory(atPath: directory))?.first(where: {
                $0.hasPrefix(prefix)
            }),
                let size = (try? FileManager.default.attributesOfItem(atPath: directory + "/" + name))?[.size] as? Int
            {
                seen.set()
                progress.update(completed: size)
            } else if seen.isSet && !announced.set() {
                progress.restart("compact: reading the new file", total: nil, counting: false)
            }
        }
    }
}
