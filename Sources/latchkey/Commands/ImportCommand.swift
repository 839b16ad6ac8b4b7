import ArgumentParser
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import Latchkey
import LatchkeyCrypto
import LatchkeyFormat

/// `latchkey import`: adds the items of a JSON-lines file in one streaming transaction.
struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Add the items of a JSON-lines file (or stdin) in one transaction: all or none.",
        discussion: """
            One JSON object a line: "class" (genp, inet, cert or keys), Apple's 4-character \
            attribute keys ("acct", "svce", "labl", "agrp", …), the secret in base64 under \
            "v_Data" (absent: empty), and optionally the protection class under "pdmn" (ak, ck, \
            dk, aku, cku, dku, akpu; default ak, certificates dk). Data-valued attributes \
            (klbl, subj, …) are base64, dates ISO 8601; "cdat" and "mdat" are ignored, as the \
            keychain sets them. Blank lines are skipped. This is the form `find --return all` \
            prints, one object a line. The input is read as it streams, a line at a time, and \
            every item goes into one transaction that closes only after the last line: a bad \
            line fails with errSecParam (exit 2) naming its number, a unique key that is \
            already in the keychain or repeats an earlier line with errSecDuplicateItem \
            (exit 3), and then nothing is imported; an import that is killed or crashes \
            leaves the keychain as it was. Through the agent the items go in transactions of \
            1,000, and a failure says how many landed and from which line to go on. Prints \
            the count on stdout; a progress count on stderr when it is a terminal.

            Example:
              echo '{"class":"genp","acct":"alice","v_Data":"aHVudGVyMg=="}' > items.jsonl
              latchkey import items.jsonl
              latchkey find --limit all --return all | jq -c '.[]' \\
                | latchkey import --keychain copy.keychain -
            """
    )

    @Argument(help: ArgumentHelp("The JSON-lines file, or - for stdin.", valueName: "file|-"), completion: .file())
    var file: String

    @Flag(name: .customLong("dry-run"), help: "Check every line and print the count; import nothing.")
    var dryRun = false

    @Flag(help: "Print the result as JSON: {\"imported\": N, \"dryRun\": bool, \"keychain\": path}.")
    var json = false

    @OptionGroup(title: "Global options") var global: GlobalOptions

    /// Keys of a line that are not attributes.
    static let nonAttributes: Set<String> = ["class", "v_Data", "pdmn", "cdat", "mdat"]

    func run() throws {
        // Large tables grow during an import: their old copies must not stay resident.
        ProcessMemory.returnLargeBlocksToTheSystem()
        // Open (and so check the keychain and caller) before reading a possibly large input.
        let keychain = dryRun ? nil : try global.open(unlock: .whenNeeded)
        if let keychain { try unlockUpFront(keychain) }
        if file == "-" {
            try Terminal.requireStdin(
                "import reads the items from stdin (-), but stdin is closed; pipe them in or give a FILE",
                command: "import")
        }
        let reader = try LineReader(path: file, what: "import file")
        let progress = Progress("import")
        defer { progress.finish() }
        var run = ImportRun(file: file, policy: try keychain.map { try AccessPolicy(caller: $0.caller) })

        // One pass: each line is parsed, checked and handed on before the next is read, so
        // memory holds one line and the import's index, never the items.
        func eachItem(_ handle: (NewItem) throws -> Void) throws {
            while let line = try reader.next() {
                let number = reader.lineNumber
                guard
                    line.contains(where: {
                        $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") && $0 != UInt8(ascii: "\r")
                    })
                else { continue }
                run.line = number
                let item = try ImportCommand.newItem(line, line: number)
                try run.check(item)
                try handle(item)
                run.accepted()
                progress.update(completed: run.count)
            }
        }

        if let keychain {
            var importer: ItemImporter?
            do {
                try keychain.importItems { i in
                    importer = i
                    try eachItem { try i.add($0) }
                    run.forgetKeys()
                    progress.restart(
                        "import: closing the transaction of \(Progress.grouped(run.count)) items", total: nil,
                        counting: false)
                }
            } catch let error as KeychainError {
                throw run.explain(
                    error, landed: importer?.landed ?? 0, atomic: importer?.isAtomic ?? true, keychain: keychain)
            }
        } else {
            do {
                try eachItem { _ in }
            } catch let error as KeychainError {
                throw run.explain(error, landed: 0, atomic: true, keychain: nil)
            }
        }
        progress.finish()
        let path = global.keychainPath
        if json {
            try Output.json(
                encoding: Summary(imported: dryRun ? 0 : run.count, checked: run.count, dryRun: dryRun, keychain: path))
        } else if dryRun {
            Output.line("\(run.count) item(s) checked; nothing imported (--dry-run)")
        } else {
            Output.line("imported \(run.count) item(s) into \(path)")
        }
    }

    /// The input is read once, as it streams, so a class found locked half-way cannot be
    /// retried after a prompt: when the passcode would be asked for at all, ask before.
    func unlockUpFront(_ keychain: Keychain) throws {
        let needed: [ProtectionClass] = [
            .whenUnlocked, .afterFirstUnlock, .always,
            .whenUnlockedThisDeviceOnly, .afterFirstUnlockThisDeviceOnly, .alwaysThisDeviceOnly
        ]
        guard keychain.hasPasscode, file != "-", Terminal.stdinIsTerminal, try global.givenPasscode() == nil,
            !needed.allSatisfy(keychain.isAvailable)
        else { return }
        guard let passcode = try Terminal.readSecret(prompt: "Passcode for \(global.keychainPath): ") else { return }
        try keychain.unlock(passcode: passcode)
    }

    /// What `--json` prints.
    struct Summary: Encodable {
        var imported: Int
        var checked: Int
        var dryRun: Bool
        var keychain: String
    }

    static func bad(_ line: Int, _ what: String) -> KeychainError {
        KeychainError(.param, "line \(line): \(what)")
    }

    /// The item of one line. - Throws: errSecParam naming the line.
    static func newItem(_ bytes: [UInt8], line: Int) throws -> NewItem {
        // The common form without building a JSON value first; every other line (and every
        // bad one) takes the general path.
        if let item = ImportLine.item(bytes) { return item }
        return try parsedItem(bytes, line: line)
    }

    /// The item of one line through the general JSON parser. - Throws: errSecParam naming the line.
    static func parsedItem(_ bytes: [UInt8], line: Int) throws -> NewItem {
        let object: JSONValue
        do {
            object = try JSONValue.parse(bytes)
        } catch {
            throw bad(line, "not valid JSON; each line must be one JSON object")
        }
        guard case .object(let dict) = object else { throw bad(line, "not a JSON object") }
        guard case .string(let className)? = dict["class"] else {
            throw bad(line, "no \"class\"; give \"class\": \"genp\" (or inet, cert, keys)")
        }
        guard let itemClass = ItemClass(rawValue: className) else {
            throw bad(line, "class '\(className)' cannot be imported; use genp, inet, cert or keys")
        }
        var data: [UInt8] = []
        if let value = dict["v_Data"] {
            guard case .string(let text) = value, let decoded = Data(base64Encoded: text) else {
                throw bad(line, "\"v_Data\" must be the secret in base64")
            }
            data = [UInt8](decoded)
        }
        var protection: ProtectionClass?
        if let value = dict["pdmn"] {
            guard case .string(let text) = value, let pc = ProtectionClass(code: text) else {
                throw bad(line, "\"pdmn\" must be one of ak, ck, dk, aku, cku, dku, akpu")
            }
            protection = pc
        }
        var attributes: [String: AttributeValue] = [:]
        for (key, value) in dict where !nonAttributes.contains(key) {
            guard let kind = ItemSchema.kind(key, in: itemClass), kind != .access else {
                throw bad(line, "\"\(key)\" is not an attribute of class \(itemClass.rawValue)")
            }
            let input = try inputValue(value, kind: kind, key: key, line: line)
            do {
                attributes[key] = try input.coerced(to: kind, code: key)
            } catch let error as KeychainError {
                throw bad(line, error.message)
            }
        }
        if itemClass == .certificate {
            do {
                _ = try CertificateInfo(der: data)
            } catch {
                throw bad(line, "\"v_Data\" of a certificate must be one DER X.509 certificate in base64")
            }
        }
        return NewItem(itemClass, attributes: attributes, data: data, protection: protection)
    }

    /// A JSON value as the library takes it: data-valued attributes from base64, dates from
    /// ISO 8601, whole numbers and booleans as numbers.
    static func inputValue(_ value: JSONValue, kind: ItemSchema.Kind, key: String, line: Int) throws -> InputValue {
        if case .string(let text) = value {
            switch kind {
            case .data:
                guard let d = Data(base64Encoded: text) else {
                    throw bad(line, "\"\(key)\" holds data: give it in base64")
                }
                return .data([UInt8](d))
            case .date:
                guard let t = ISODate.parse(text) else {
                    throw bad(line, "\"\(key)\" is a date: give it as ISO 8601, e.g. 2026-01-31T12:00:00Z")
                }
                return .date(t)
            default:
                return .string(text)
            }
        }
        if case .bool(let b) = value { return .bool(b) }
        if case .number(let d) = value {
            guard d == d.rounded(), let i = Int64(exactly: d) else {
                throw bad(line, "\"\(key)\" must be a whole number")
            }
            return .integer(i)
        }
        throw bad(line, "\"\(key)\" must be a string, a number or true/false")
    }

    /// The unique key an item will have, as far as it can be told before adding: the access
    /// group is compared only when the line gives one (nil → not compared across defaults).
    static func uniqueKey(_ item: NewItem) -> UniqueKey? {
        var attributes = item.attributes
        switch item.itemClass {
        case .certificate:
            guard let info = try? CertificateInfo(der: item.data) else { return nil }
            attributes.merge(Keychain.certificateAttributes(info)) { $1 }
        case .key:
            // As the keychain does: a key not declared symmetric gets the attributes of its data.
            let symmetric = attributes["kcls"] == .integer(2) || attributes["kcls"] == .string("2")
            if !symmetric, let info = try? KeyInfo(data: item.data) {
                for (name, value) in Keychain.keyAttributes(info) where attributes[name] == nil {
                    attributes[name] = value
                }
            }
        case .genericPassword, .internetPassword:
            break
        }
        // A line without a group stands for the default group (a name no caller can give);
        // the dictionary is read as it is, not copied to add it.
        return UniqueKey(itemClass: item.itemClass) { name in
            attributes[name] ?? (name == "agrp" ? .string("\u{0}default") : nil)
        }
    }
}
