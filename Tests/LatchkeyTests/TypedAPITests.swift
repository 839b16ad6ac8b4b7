import Foundation
import Testing
import Latchkey  // not @testable: this is the surface a package that depends on Latchkey sees

/// Issue 18 §1: the typed surface a first program meets — attribute keys with Apple's codes,
/// `Data`/`String`/`Date`, one item or none, add-or-update, open-or-create and `close()`.
@Suite struct TypedAPITests {
    /// A directory of its own, removed at the end.
    final class Directory {
        let path: String
        init() throws {
            path = FileManager.default.temporaryDirectory.path + "/latchkey-typed-" + UUID().uuidString
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }
        var keychain: String { path + "/app.keychain" }
        var device: String { path + "/device.secret" }
    }

    @Test func attributeKeys_carryApplesCodes() {
        #expect(AttributeKey.account.rawValue == "acct")
        #expect(AttributeKey.service.rawValue == "svce")
        #expect(AttributeKey.accessGroup.rawValue == "agrp")
        #expect(AttributeKey.protocol.rawValue == "ptcl")
        #expect(AttributeKey.applicationLabel.rawValue == "klbl")
        #expect(AttributeKey.keyType == AttributeKey.type)
        #expect(AttributeKey("acct") == .account)
    }

    @Test func addFindSave_withTypedKeysAndTextSecrets() throws {
        let dir = try Directory()
        let keychain = try Keychain.openOrCreate(path: dir.keychain, devicePath: dir.device)
        defer { keychain.close() }
        let added = try keychain.add(
            .genericPassword, [.account: "alice", .service: "mail", .label: "Mail"],
            secret: "s3cret")
        #expect(added.account == "alice" && added.service == "mail" && added.label == "Mail")
        #expect(added.creationDate != nil && added.creationDate == added.modificationDate)

        let found = try #require(try keychain.first(.genericPassword, [.account: "alice"]))
        #expect(found.secretString == "s3cret")
        #expect(found.secretData == Data("s3cret".utf8))
        #expect(found[.service] == "mail")
        #expect(try keychain.first(.genericPassword, [.account: "bob"]) == nil, "no match is nil, not an error")
        #expect(try keychain.find(.genericPassword, [.service: "mail"]).count == 1)

        // save = add or update: the same unique key (account, service) keeps one item.
        let saved = try keychain.save(
            .genericPassword, [.account: "alice", .service: "mail", .label: "Mail 2"],
            secret: "n3w")
        #expect(saved.persistentRef == added.persistentRef, "the existing item was updated, not a second one added")
        #expect(saved.secretString == "n3w" && saved.label == "Mail 2")
        #expect(try keychain.find(.genericPassword).count == 1)
        // Another service is another unique key: save adds.
        try keychain.save(.genericPassword, [.account: "alice", .service: "chat"], secret: Data([0, 1, 2]))
        #expect(try keychain.find(.genericPassword, [.account: "alice"]).count == 2)
        #expect(
            try keychain.first(.genericPassword, [.service: "chat"])?.secretString
                == String(decoding: [0, 1, 2], as: UTF8.self))

        #expect(try keychain.update(.genericPassword, matching: [.service: "chat"], set: [.comment: "moved"]) == 1)
        #expect(try keychain.first(.genericPassword, [.service: "chat"])?[.comment] == "moved")
        #expect(try keychain.delete(.genericPassword, matching: [.account: "alice"]) == 2)
        #expect(try keychain.find(.genericPassword).isEmpty)
    }

    /// save must not update an item that only resembles the new one: a generic password with the
    /// same account but no service is another unique key (an absent service is the empty one).
    @Test func save_updatesOnlyTheItemWithTheSameUniqueKey() throws {
        let dir = try Directory()
        let keychain = try Keychain.openOrCreate(path: dir.keychain, devicePath: dir.device)
        try keychain.add(.genericPassword, [.account: "alice", .service: "mail"], secret: "mail")
        try keychain.save(.genericPassword, [.account: "alice"], secret: "bare")
        let items = try keychain.find(.genericPassword, [.account: "alice"])
        #expect(items.count == 2)
        #expect(Set(items.compactMap(\.secretString)) == ["mail", "bare"])
        try keychain.save(.genericPassword, [.account: "alice"], secret: "bare 2")
        #expect(try keychain.first(.genericPassword, [.account: "alice", .service: "mail"])?.secretString == "mail")
        #expect(try keychain.find(.genericPassword).count == 2)
    }

    @Test func attributeValues_fromAndToFoundationTypes() {
        let when = Date(timeIntervalSinceReferenceDate: 12345.5)
        #expect(AttributeValue(when) == .date(12345.5))
        #expect(AttributeValue(when).dateValue == when)
        #expect(AttributeValue(Data([1, 2])) == .data([1, 2]))
        #expect(
            AttributeValue(Data("x".utf8)).stringValue == "x", "valid UTF-8 data reads as text, as Apple returns either"
        )
        #expect(AttributeValue.data([0xff]).stringValue == nil)
        #expect(AttributeValue("mail").dataValue == Data("mail".utf8))
        #expect(AttributeValue(443).integerValue == 443)
        let literal: [AttributeKey: AttributeValue] = [.port: 443, .synchronizable: true, .server: "example.com"]
        #expect(literal[.port] == .integer(443) && literal[.synchronizable] == .integer(1))
    }

    @Test func misspeltAttributeName_isRefusedWithTheCodeMeant() throws {
        let dir = try Directory()
        let keychain = try Keychain.openOrCreate(path: dir.keychain, devicePath: dir.device)
        for name in ["account", "kSecAttrAccount", "Account"] {
            let error = #expect(throws: KeychainError.self) {
                try keychain.add(.genericPassword, [AttributeKey(name): "alice"], secret: "x")
            }
            #expect(error?.status == .noSuchAttr)
            #expect(
                error?.message.contains("did you mean 'acct' (AttributeKey.account)") == true, "\(error?.message ?? "")"
            )
        }
        let wrongClass = #expect(throws: KeychainError.self) {
            try keychain.add(.internetPassword, [.service: "mail"], secret: "x")
        }
        #expect(wrongClass?.message.contains("it is one of genp") == true, "\(wrongClass?.message ?? "")")
        #expect(try keychain.find(.genericPassword).isEmpty, "nothing was added")
    }

    @Test func openOrCreate_opensWhatItCreatedAndUnlocksWithThePasscode() throws {
        let dir = try Directory()
        let passcode = Array("correct horse".utf8)
        let first = try Keychain.openOrCreate(path: dir.keychain, devicePath: dir.device, passcode: passcode)
        #expect(first.hasPasscode)
        try first.add(.genericPassword, [.account: "alice"], secret: "s3cret")
        first.close()

        let again = try Keychain.openOrCreate(path: dir.keychain, devicePath: dir.device, passcode: passcode)
        #expect(again.isAvailable(.whenUnlocked), "opened and unlocked")
        #expect(try again.first(.genericPassword, [.account: "alice"])?.secretString == "s3cret")
        let wrong = #expect(throws: KeychainError.self) {
            _ = try Keychain.openOrCreate(path: dir.keychain, devicePath: dir.device, passcode: Array("wrong".utf8))
        }
        #expect(wrong?.status == .authFailed, "an existing keychain is never re-created")
    }

    @Test func close_releasesTheFileAndKeysAndRefusesLaterCalls() throws {
        let dir = try Directory()
        let keychain = try Keychain.openOrCreate(path: dir.keychain, devicePath: dir.device)
        let view = keychain.with(keychain.context)
        try keychain.add(.genericPassword, [.account: "alice"], secret: "s3cret")
        #expect(try descriptors(of: dir.keychain) == 1)
        keychain.close()
        #expect(try descriptors(of: dir.keychain) == 0, "the keychain file is closed, with its view still referenced")
        #expect(!keychain.isAvailable(.always) && !view.isAvailable(.always), "no class key is left")
        for kc in [keychain, view] {
            let error = #expect(throws: KeychainError.self) { _ = try kc.find(.genericPassword) }
            #expect(error?.status == .notAvailable)
            #expect(error?.message.contains("closed") == true)
        }
        keychain.close()  // twice: nothing happens
        let reopened = try Keychain.open(path: dir.keychain, devicePath: dir.device)
        #expect(try reopened.first(.genericPassword, [.account: "alice"])?.secretString == "s3cret")
    }

    /// How many of this process's descriptors are open on `path` (tests run in parallel, so
    /// only those of this test's own file count).
    private func descriptors(of path: String) throws -> Int {
        let fm = FileManager.default
        let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        return try fm.contentsOfDirectory(atPath: "/proc/self/fd").filter {
            (try? fm.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == target
        }.count
    }
}
