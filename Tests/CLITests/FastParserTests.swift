import ArgumentParser
import Foundation
import Latchkey
import LatchkeyFormat
import Testing
@testable import latchkey

/// The hand-written parser of find, add, update and delete (Commands/FastParser.swift) must
/// mean exactly what ArgumentParser means, or step aside (nil) so that ArgumentParser parses
/// and reports.
@Suite struct FastParserTests {
    // MARK: Both parsers, as text to compare

    static func describe(_ q: Query) -> String {
        let attributes = q.attributes.sorted { $0.key < $1.key }.map {
            "\($0.key)=\($0.value.typeCode):\($0.value.keyBytes)"
        }
        return
            "\(q.itemClass) \(attributes) \(String(describing: q.protection)) ci=\(q.caseInsensitive) \(q.synchronizable) "
            + "ref=\(String(describing: q.persistentRef))"
    }

    static func describe(_ attributes: [String: AttributeValue]) -> String {
        attributes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.typeCode):\($0.value.keyBytes)" }.joined(
            separator: ",")
    }

    static func describe(_ g: GlobalSettings) -> String {
        let values = [
            g.keychainOption, g.deviceOption, g.passcodeFile, g.passcodeCommand, g.newPasscodeFile, g.appIDOption,
            g.entitlementsOption
        ]
        return "\(values)"
    }

    /// A command's fast parser and ArgumentParser's, each giving the request as text (nil:
    /// declined or refused).
    struct Parsers: Sendable {
        var name: String
        var fast: @Sendable ([String]) -> String?
        var slow: @Sendable ([String]) -> String?
    }

    static let find = Parsers(
        name: "find", fast: { FindCommand.fastRequest($0).map(describe) },
        slow: { arguments in
            guard let c = try? FindCommand.parseAsRoot(arguments) as? FindCommand, let r = try? c.request() else {
                return nil
            }
            return describe(r)
        })
    static func describe(_ r: FindCommand.Request) -> String {
        "\(describe(r.query)) limit=\(r.limit) return=\(r.returnKind) json=\(r.json) \(describe(r.global))"
    }

    static let add = Parsers(
        name: "add", fast: { AddCommand.fastRequest($0).map(describe) },
        slow: { arguments in
            guard let c = try? AddCommand.parseAsRoot(arguments) as? AddCommand, let r = try? c.request() else {
                return nil
            }
            return describe(r)
        })
    static func describe(_ r: AddCommand.Request) -> String {
        "\(r.itemClass) \(describe(r.attributes)) \(String(describing: r.protection)) file=\(String(describing: r.dataFile)) "
            + "presence=\(r.requireUserPresence) \(describe(r.global))"
    }

    static let update = Parsers(
        name: "update", fast: { UpdateCommand.fastRequest($0).map(describe) },
        slow: { arguments in
            guard let c = try? UpdateCommand.parseAsRoot(arguments) as? UpdateCommand, let r = try? c.request() else {
                return nil
            }
            return describe(r)
        })
    static func describe(_ r: UpdateCommand.Request) -> String {
        "\(describe(r.query)) set=\(describe(r.newValues)) \(String(describing: r.protection)) data=\(r.setData) "
            + "file=\(String(describing: r.dataFile)) \(describe(r.global))"
    }

    static let delete = Parsers(
        name: "delete", fast: { DeleteCommand.fastRequest($0).map(describe) },
        slow: { arguments in
            guard let c = try? DeleteCommand.parseAsRoot(arguments) as? DeleteCommand, let r = try? c.request() else {
                return nil
            }
            return describe(r)
        })
    static func describe(_ r: DeleteCommand.Request) -> String {
        "\(describe(r.query)) all=\(r.all) yes=\(r.yes) dry=\(r.dryRun) \(describe(r.global))"
    }

    /// Where the fast parser answers, ArgumentParser gives the same request.
    func expectAgreement(
        _ p: Parsers, _ arguments: [String], fastMustAnswer: Bool = false,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let fast = p.fast(arguments)
        if fastMustAnswer {
            #expect(fast != nil, "\(p.name): the fast parser declined \(arguments)", sourceLocation: sourceLocation)
        }
        guard let fast else { return }
        guard let slow = p.slow(arguments) else {
            Issue.record(
                "\(p.name): the fast parser accepted \(arguments), which ArgumentParser refuses",
                sourceLocation: sourceLocation)
            return
        }
        #expect(fast == slow, "\(p.name) \(arguments)", sourceLocation: sourceLocation)
    }

    static let globals = [
        "--keychain", "/tmp/k", "--device", "/tmp/d", "--app-id", "com.example", "--entitlements", "e.plist",
        "--passcode-file", "p", "--passcode-command", "pass show latchkey"
    ]

    // MARK: find

    @Test func find_commonForms_areParsedFast_andMeanTheSame() {
        let forms: [[String]] = [
            [], ["--account", "alice"], ["--account", "alice", "--service", "mail"],
            ["--account=alice", "--service=mail"], ["--service", "mail", "--limit", "all", "--return", "attributes"],
            ["--service", "mail", "--limit", "3", "--return", "all"], ["--limit", "1"], ["--account", "a", "--json"],
            ["--label", "Mail", "--case-insensitive"], ["--account", ""], ["--account", "äöü 𝄞 \u{301}e"],
            FastParserTests.globals + ["--account", "x"],
            ["--access-group", "group.shared", "--generic", "Z2VuZXJpYw=="],
            ["--account-hex", "ff00fe", "--service-hex", "0x6D:61"], ["--label-hex", "", "--comment-hex", "00"],
            // SERVICE/ACCOUNT (ServiceAccount), read by both
            ["mail/alice"], ["mail"], ["https://example.com/api/alice", "--first"], ["--label", "L", "mail/"],
            ["mail", "--account", "alice"]
        ]
        for arguments in forms { expectAgreement(Self.find, arguments, fastMustAnswer: true) }
    }

    @Test func find_formsLeftToArgumentParser() {
        let declined: [[String]] = [
            ["--help"], ["-h"], ["--class", "inet", "--server", "example.com"], ["--accessible", "ak"],
            ["--synchronizable", "any"], ["--account", "a", "--account", "b"], ["--account"], ["--account", "-x"],
            ["--limit", "all"],  // with --return data: validate() refuses; ArgumentParser says why
            ["--limit", "zero"], ["--return", "everything"], ["--json=yes"], ["--no-such-option", "x"],
            ["one", "two"], ["/alice"], ["mail/a", "--service", "x"], ["mail/a", "--account", "b"], ["-x"],
            ["--server", "example.com"],  // inet's attribute without --class inet
            ["--new-passcode-file", "p"], ["--set-account", "x"], ["--data-file", "f"],
            // one attribute twice
            ["--account", "a", "--account-hex", "61"], ["--service-hex", "6d", "--service", "m"],
            ["--account-hex", "zz"], ["--account-hex", "abc"], ["--server-hex", "00"], ["--application-tag-hex", "00"],
            ["--account="], ["--label-hex="]  // ArgumentParser: a missing value
        ]
        for arguments in declined {
            #expect(FindCommand.fastRequest(arguments) == nil, "\(arguments)")
        }
        #expect(Self.find.slow(["--account="]) == nil, "as the fast parser assumes")
        // ArgumentParser refuses the same attribute given twice, as text and as hex.
        #expect(Self.find.slow(["--account", "a", "--account-hex", "61"]) == nil)
        #expect(Self.update.slow(["--account", "a", "--set-label", "x", "--set-label-hex", "78"]) == nil)
    }

    // MARK: add, update, delete

    @Test func add_commonForms_areParsedFast_andMeanTheSame() {
        let forms: [[String]] = [
            [], ["--account", "alice", "--service", "mail"], ["--account=alice", "--service=mail", "--label", "Mail"],
            ["--account", "a", "--data-file", "secret.bin"], ["--account", "a", "--require-user-presence"],
            ["--account", "äöü 𝄞 \u{301}e", "--comment", ""], FastParserTests.globals + ["--account", "x"],
            ["--access-group", "group.shared", "--generic", "Z2VuZXJpYw==", "--is-invisible", "yes"]
        ]
        for arguments in forms { expectAgreement(Self.add, arguments, fastMustAnswer: true) }
    }

    @Test func update_commonForms_areParsedFast_andMeanTheSame() {
        let forms: [[String]] = [
            ["--account", "alice", "--service", "mail", "--set-data"], ["--account", "a", "--set-label", "Work mail"],
            ["--account=a", "--set-account=b", "--set-service", "s", "--set-comment", ""],
            ["--service", "mail", "--set-data", "--data-file", "new.bin"], ["--set-is-negative", "no"],
            FastParserTests.globals + ["--account", "x", "--set-data"],
            ["--label", "L", "--set-generic", "Z2VuZXJpYw==", "--set-creator", "aapl", "--set-type", "42"],
            ["--account-hex", "ff", "--set-account-hex", "fe", "--set-label-hex", "00:01"],
            ["--account-hex", "61", "--set-account", "b"]  // the query and a new value: one attribute, not given twice
        ]
        for arguments in forms { expectAgreement(Self.update, arguments, fastMustAnswer: true) }
    }

    @Test func delete_commonForms_areParsedFast_andMeanTheSame() {
        let forms: [[String]] = [
            [], ["--account", "alice", "--service", "mail"], ["--service=mail"], ["--label", "äöü 𝄞"],
            FastParserTests.globals + ["--account", "x"], ["--all"], ["--all", "--yes"],
            ["--service", "mail", "--dry-run"],
            ["--yes", "--account-hex", "ff"], ["--dry-run", "--all", "--yes", "--generic-hex", "00"],
            ["mail/alice"], ["mail", "--dry-run"], ["--yes", "mail/"]
        ]
        for arguments in forms { expectAgreement(Self.delete, arguments, fastMustAnswer: true) }
    }

    @Test func add_update_delete_formsLeftToArgumentParser() {
        let declined: [(Parsers, [String])] = [
            (Self.add, ["--help"]), (Self.add, ["--class", "keys", "--key-class", "symmetric"]),
            (Self.add, ["--accessible", "ck"]),
            (Self.add, ["--synchronizable", "yes"]), (Self.add, ["--account", "a", "--account", "b"]),
            (Self.add, ["--require-user-presence=yes"]), (Self.add, ["--server", "example.com"]),
            (Self.add, ["--set-data"]),
            (Self.add, ["--limit", "all"]), (Self.add, ["--data-file"]), (Self.add, ["--port", "80"]),
            (Self.update, ["--account", "a"]),  // nothing to change: validate() says so
            // --data-file without --set-data
            (Self.update, ["--account", "a", "--data-file", "f", "--set-label", "x"]),
            (Self.update, ["--set-accessible", "ck"]), (Self.update, ["--set-synchronizable", "yes"]),
            (Self.update, ["--set-server", "example.com"]), (Self.update, ["--set-data=yes"]),
            (Self.update, ["--set-port", "x"]),
            (Self.update, ["--class", "inet", "--server", "example.com", "--set-data"]), (Self.update, ["-h"]),
            (Self.delete, ["--class", "cert"]), (Self.delete, ["--set-label", "x"]), (Self.delete, ["--json"]),
            (Self.delete, ["one", "two"]), (Self.delete, ["--is-invisible", "maybe"]),
            (Self.delete, ["--all=yes"]), (Self.delete, ["--yes", "--yes"]),
            (Self.delete, ["mail/a", "--service", "s"]),
            (Self.update, ["mail/alice", "--set-label", "x"]), (Self.add, ["mail/alice"]),
            (Self.delete, ["--account", "a", "--account-hex", "61"]),
            (Self.add, ["--label-hex", "6", "--account", "a"]),
            (Self.update, ["--set-account", "a", "--set-account-hex", "61"])
        ]
        for (p, arguments) in declined {
            #expect(p.fast(arguments) == nil, "\(p.name) \(arguments)")
        }
    }

    static let dump = Parsers(
        name: "dump", fast: { DumpCommand.fastRequest($0).map { "json=\($0.json) \(describe($0.global))" } },
        slow: { arguments in
            guard let c = try? DumpCommand.parseAsRoot(arguments) as? DumpCommand else { return nil }
            return "json=\(c.json) \(describe(c.global.settings))"
        })

    @Test func dump_commonForms_areParsedFast_andMeanTheSame() {
        for arguments in [
            [], ["--json"], FastParserTests.globals, FastParserTests.globals + ["--json"], ["--keychain=/k"]
        ] {
            expectAgreement(Self.dump, arguments, fastMustAnswer: true)
        }
        for arguments in [
            ["--account", "a"], ["--json=yes"], ["--json", "--json"], ["--help"], ["x"], ["--set-label", "x"],
            ["--new-passcode-file", "p"], ["--limit", "all"]
        ] {
            #expect(Self.dump.fast(arguments) == nil, "\(arguments)")
        }
    }

    // MARK: Every option

    /// Every attribute option of genp, with values of several shapes, for each command (and as
    /// update's --set-X): both parsers agree, whether the value parses or not (ArgumentParser
    /// takes about 0.1 s a parse in a debug build, so the shapes are few). Options of other
    /// classes are left to ArgumentParser.
    @Test(arguments: ["find", "add", "update", "delete", "update --set"])
    func everyAttributeOption_agreesWithArgumentParser(form: String) {
        let values = ["plain", "42", "yes", "2026-01-02T03:04:05Z", "aGVsbG8=", "0a:1B"]
        let parsers = [Self.find, Self.add, Self.update, Self.delete].first { form.hasPrefix($0.name) }!
        let setForm = form.hasSuffix("--set")
        var answered = 0
        for option in AttributeOption.all + AttributeOption.allBytes {
            let flag = (setForm ? "--set-" : "--") + option.flag
            // update needs a new value: --set-data (or, for --set-X, the option itself).
            let extra = parsers.name == "update" && !setForm ? ["--set-data"] : []
            guard option.classes.contains(.genericPassword) else {
                #expect(parsers.fast([flag, "plain"] + extra) == nil, "\(form): \(flag) is not genp's")
                continue
            }
            for value in values {
                let arguments = [flag, value] + extra
                if parsers.fast(arguments) != nil { answered += 1 }
                expectAgreement(parsers, arguments)
            }
        }
        #expect(
            answered
                >= (AttributeOption.all + AttributeOption.allBytes).filter { $0.classes.contains(.genericPassword) }
                .count, "\(form)")
    }

    /// Both parsers read the same declarations: the attribute options ArgumentParser declares
    /// are exactly `AttributeOption.all` and their hex forms (update: and each `--set-` form of
    /// those not derived), and each `FastForm` names flags and options that its command declares
    /// as flags and options.
    @Test func fastForms_andAttributeOptions_areTheCommandsDeclarations() throws {
        struct Name: Decodable { var name: String }
        struct Argument: Decodable { var kind: String; var names: [Name]?; var sectionTitle: String? }
        struct Command: Decodable { var commandName: String; var subcommands: [Command]?; var arguments: [Argument]? }
        struct Tool: Decodable { var command: Command }
        let dump = try CLISandbox().run(["--experimental-dump-help"])
        let tool = try JSONDecoder().decode(Tool.self, from: Data(dump.stdout))
        let titles = Set(
            OptionSection.allCases.flatMap {
                [$0.title(newValues: false, full: true), $0.title(newValues: true, full: true)]
            })
        let special: Set<String> = ["class", "accessible", "synchronizable", "set-accessible", "set-synchronizable"]
        let attributeFlags = Set((AttributeOption.all + AttributeOption.allBytes).map(\.flag))
        let settable = Set(
            (AttributeOption.all + AttributeOption.allBytes).filter { !$0.derived }.map { "set-" + $0.flag })
        for form in [
            FindCommand.fastForm, AddCommand.fastForm, UpdateCommand.fastForm, DeleteCommand.fastForm,
            DumpCommand.fastForm
        ] {
            let command = try #require(tool.command.subcommands?.first { $0.commandName == form.command })
            let arguments = command.arguments ?? []
            func names(_ kind: String) -> Set<String> {
                Set(arguments.filter { $0.kind == kind }.flatMap { $0.names ?? [] }.map(\.name))
            }
            #expect(form.flags.isSubset(of: names("flag")), "\(form.command): \(form.flags.subtracting(names("flag")))")
            #expect(
                form.options.isSubset(of: names("option")),
                "\(form.command): \(form.options.subtracting(names("option")))")
            #expect(FastArguments.globalOptions.isSubset(of: names("option")), "\(form.command)")
            let attributes = Set(
                arguments.filter { titles.contains($0.sectionTitle ?? "") }.flatMap { $0.names ?? [] }.map(\.name)
            )
            .subtracting(special)
            let expected = form.command == "dump" ? [] : attributeFlags.union(form.newValues ? settable : [])
            #expect(attributes == expected, "\(form.command): \(attributes.symmetricDifference(expected).sorted())")
        }
    }

    /// GlobalSettings, which the fast path fills, has a value for every option of
    /// GlobalOptions, and `settings` carries each (an option added later and not there would be
    /// lost by both parsers' commands).
    @Test func globalSettings_coverEveryOption() throws {
        let options = Mirror(reflecting: GlobalOptions()).children.filter {
            "\(type(of: $0.value))".hasPrefix("Option<")
        }
        let values = Mirror(reflecting: GlobalSettings(given: [:])).children
        #expect(options.count == 7, "GlobalOptions has \(options.count) options; give GlobalSettings a value for each")
        #expect(values.count == options.count)
        let names = [
            "keychain", "device", "passcode-file", "passcode-command", "new-passcode-file", "app-id", "entitlements"
        ]
        let given = GlobalSettings(given: Dictionary(uniqueKeysWithValues: names.map { ($0, "v-" + $0) }))
        let parsed = try GlobalOptions.parse(names.flatMap { ["--" + $0, "v-" + $0] }).settings
        #expect(FastParserTests.describe(given) == FastParserTests.describe(parsed))
        #expect(Mirror(reflecting: parsed).children.allSatisfy { ($0.value as? String?)??.hasPrefix("v-") == true })
    }
}
