import Foundation
import Testing

/// The item size limit of spec/FORMAT.md §6.4 (an item plaintext of at most 16 777 120 bytes)
/// through the CLI's writers, `add` and `import`, at the limit and one byte over (the library
/// and agent writers: LatchkeyTests SizeLimitTests). Over the limit the command exits 2
/// (errSecParam) with a message that names the limit, before anything is written; the keychain
/// still opens and verifies with every other item (issue 14 defect 1).
@Suite struct SizeLimitCLITests {
    static let maxPlaintext = 16_777_120
    static let limitWords = ["16777120", "16 777 120", "16,777,120", "16 MiB"]

    func size(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? -1
    }

    func bytes(_ path: String) -> [UInt8] { (try? [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))) ?? [] }

    /// The attribute-hash record after each put (spec §7.6): frame and tag (36), its fixed part
    /// (36) and one 8-byte hash each for `acct` and `svce` (a generic password without `labl`
    /// and `gena`).
    static let hashRecord = 36 + 36 + 2 * 8

    /// A keychain with one other item, and the plaintext overhead of an item that `write`
    /// makes with `dataLength` bytes of data: the file grows by one put record, 36 + 96 bytes
    /// more than the plaintext (spec §6, §7.1), and its attribute-hash record.
    func overhead(_ s: CLISandbox, _ write: (Int) throws -> Void) throws -> Int {
        let before = size(s.keychainPath)
        try write(10)
        let plaintext = size(s.keychainPath) - before - 132 - Self.hashRecord
        return plaintext - 10
    }

    func expectRefused(
        _ s: CLISandbox, _ result: CLIResult, _ what: String, before: [UInt8],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        #expect(result.status == 2, "\(what): exit \(result.status): \(result.stderr)", sourceLocation: sourceLocation)
        #expect(
            Self.limitWords.contains { result.stderr.contains($0) },
            "\(what): the message does not name the limit: \(result.stderr)",
            sourceLocation: sourceLocation)
        #expect(
            result.stderr.hasSuffix("(errSecParam -50)\n"), "\(what): \(result.stderr)", sourceLocation: sourceLocation)
        let unchanged = bytes(s.keychainPath) == before
        #expect(
            unchanged, "\(what): the keychain file changed (\(size(s.keychainPath)) bytes, was \(before.count))",
            sourceLocation: sourceLocation)
        let verify = try s.run(["verify"])
        #expect(verify.status == 0, "\(what): verify: \(verify.out) \(verify.stderr)", sourceLocation: sourceLocation)
        let other = try s.run(["find", "--account", "other"])
        #expect(
            other.status == 0 && other.out == "other-secret", "\(what): the other item: \(other.stderr)",
            sourceLocation: sourceLocation)
    }

    @Test func add_atTheLimitWorks_oneByteOverIsRefusedBeforeWriting() throws {
        let s = try CLISandbox()
        try s.initKeychain()
        try s.add(account: "other", data: Array("other-secret".utf8))
        // "big00" and "probe" have the same length: the same attributes take the same room.
        let overhead = try overhead(s) {
            try s.add(account: "probe", service: "limits", data: [UInt8](repeating: 1, count: $0))
        }
        let n = Self.maxPlaintext - overhead
        let before = bytes(s.keychainPath)
        let over = try s.run(
            ["add", "--account", "big00", "--service", "limits"], stdin: [UInt8](repeating: 0x61, count: n + 1))
        try expectRefused(s, over, "add of a \(Self.maxPlaintext + 1)-byte plaintext", before: before)

        let at = try s.run(
            ["add", "--account", "big00", "--service", "limits"], stdin: [UInt8](repeating: 0x61, count: n))
        #expect(at.status == 0, "add of a \(Self.maxPlaintext)-byte plaintext: \(at.stderr)")
        #expect(
            size(s.keychainPath) == before.count + 132 + Self.maxPlaintext + Self.hashRecord,
            "the record is not the largest one the format holds")
        let found = try s.run(["find", "--account", "big00"])
        #expect(found.status == 0 && found.stdout.count == n)
        #expect(try s.run(["verify"]).status == 0)
    }

    @Test func import_atTheLimitWorks_oneByteOverIsRefusedBeforeWriting() throws {
        let s = try CLISandbox()
        try s.initKeychain()
        try s.add(account: "other", data: Array("other-secret".utf8))
        func line(_ account: String, _ n: Int) -> [UInt8] {
            Array(
                #"{"class":"genp","acct":"\#(account)","svce":"limits","v_Data":"\#(Data(repeating: 0x62, count: n).base64EncodedString())"}"#
                    .utf8) + [0x0A]
        }
        let overhead = try overhead(s) { n in
            let r = try s.run(["import", "-"], stdin: line("probe", n))
            guard r.status == 0 else { throw CLITestError("import of the probe: \(r.stderr)") }
        }
        let n = Self.maxPlaintext - overhead
        let before = bytes(s.keychainPath)
        let over = try s.run(["import", "-"], stdin: line("small", 1) + line("big00", n + 1))
        try expectRefused(s, over, "import of a \(Self.maxPlaintext + 1)-byte plaintext", before: before)

        let at = try s.run(["import", "-"], stdin: line("big00", n))
        #expect(at.status == 0, "import of a \(Self.maxPlaintext)-byte plaintext: \(at.stderr)")
        #expect(try s.run(["find", "--account", "big00"]).stdout.count == n)
        #expect(try s.run(["verify"]).status == 0)
    }
}
