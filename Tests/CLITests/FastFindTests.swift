import ArgumentParser
import Latchkey
import LatchkeyFormat
import Testing
@testable import latchkey

/// `find`'s hand-written parser (Commands/FindCommand+Fast.swift) must mean exactly what
/// ArgumentParser means, or step aside (nil) so that ArgumentParser parses and reports.
@Suite struct FastFindTests {
    /// ArgumentParser's request for `find ARGS`, or nil when it refuses them.
    func parsed(_ arguments: [String]) -> FindCommand.Request? {
        guard let command = try? FindCommand.parseAsRoot(arguments) as? FindCommand else { return nil }
        return try? command.request()
    }

    func describe(_ r: FindCommand.Request) -> String {
        let q = r.query
        let attributes = q.attributes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.typeCode):\($0.value.keyBytes)" }
        let g = r.global
        return "\(q.itemClass) \(attributes) \(String(describing: q.protection)) ci=\(q.caseInsensitive) \(q.synchronizable) "
            + "ref=\(String(describing: q.persistentRef)) limit=\(r.limit) return=\(r.returnKind) json=\(r.json) "
            + "\([g.keychainOption, g.deviceOption, g.passcodeFile, g.newPasscodeFile, g.appIDOption, g.entitlementsOption])"
    }

    /// Where the fast parser answers, ArgumentParser gives the same request.
    func expectAgreement(_ arguments: [String], fastMustAnswer: Bool = false, sourceLocation: SourceLocation = #_sourceLocation) {
        let fast = FindCommand.fastRequest(arguments)
        if fastMustAnswer { #expect(fast != nil, "the fast parser declined \(arguments)", sourceLocation: sourceLocation) }
        guard let fast else { return }
        guard let slow = parsed(arguments) else {
            Issue.record("the fast parser accepted \(arguments), which ArgumentParser refuses", sourceLocation: sourceLocation)
            return
        }
        #expect(describe(fast) == describe(slow), "\(arguments)", sourceLocation: sourceLocation)
    }

    @Test func commonForms_areParsedFast_andMeanTheSame() {
        let forms: [[String]] = [
            [], ["--account", "alice"], ["--account", "alice", "--service", "mail"],
            ["--account=alice", "--service=mail"], ["--service", "mail", "--limit", "all", "--return", "attributes"],
            ["--service", "mail", "--limit", "3", "--return", "all"], ["--limit", "1"], ["--account", "a", "--json"],
            ["--label", "Mail", "--case-insensitive"], ["--account", ""], ["--account", "äöü 𝄞 \u{301}e"],
            ["--keychain", "/tmp/k", "--device", "/tmp/d", "--app-id", "com.example", "--entitlements", "e.plist",
             "--passcode-file", "p", "--account", "x"],
            ["--access-group", "group.shared", "--generic", "Z2VuZXJpYw=="],
        ]
        for arguments in forms { expectAgreement(arguments, fastMustAnswer: true) }
    }

    /// Every attribute option of genp, with values of several shapes: both parsers agree,
    /// whether the value parses or not (ArgumentParser takes about 0.1 s a parse in a debug
    /// build, so the shapes are few). Options of other classes are left to ArgumentParser.
    @Test func everyAttributeOption_agreesWithArgumentParser() {
        let values = ["plain", "42", "yes", "2026-01-02T03:04:05Z", "aGVsbG8="]
        var answered = 0
        for option in AttributeOption.all {
            guard option.classes.contains(.genericPassword) else {
                #expect(FindCommand.fastRequest(["--" + option.flag, "plain"]) == nil, "--\(option.flag) is not genp's")
                continue
            }
            for value in values {
                let arguments = ["--" + option.flag, value]
                if FindCommand.fastRequest(arguments) != nil { answered += 1 }
                expectAgreement(arguments)
            }
        }
        #expect(answered >= AttributeOption.all.filter { $0.classes.contains(.genericPassword) }.count)
    }

    @Test func formsLeftToArgumentParser() {
        let declined: [[String]] = [
            ["--help"], ["-h"], ["--class", "inet", "--server", "example.com"], ["--accessible", "ak"],
            ["--synchronizable", "any"], ["--account", "a", "--account", "b"], ["--account"], ["--account", "-x"],
            ["--limit", "all"],   // with --return data: validate() refuses; ArgumentParser says why
            ["--limit", "zero"], ["--return", "everything"], ["--json=yes"], ["--no-such-option", "x"],
            ["positional"], ["--server", "example.com"],   // inet's attribute without --class inet
            ["--new-passcode-file", "p"],
        ]
        for arguments in declined {
            #expect(FindCommand.fastRequest(arguments) == nil, "\(arguments)")
        }
    }

    /// `GlobalOptions.given` sets every option of the struct (an option added later and not
    /// set there would crash the fast path when read).
    @Test func givenGlobalOptions_coverEveryOption() {
        let options = Mirror(reflecting: GlobalOptions()).children.filter { "\(type(of: $0.value))".hasPrefix("Option<") }
        #expect(options.count == 6, "GlobalOptions has \(options.count) options; set every one in GlobalOptions.given")
        let g = GlobalOptions.given([:])
        #expect([g.keychainOption, g.deviceOption, g.passcodeFile, g.newPasscodeFile, g.appIDOption, g.entitlementsOption].allSatisfy { $0 == nil })
    }
}
