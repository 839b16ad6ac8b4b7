import Foundation
import Testing

/// Passcode attempts through the CLI are throttled across processes (spec/SECURITY.md §2.4).
@Suite struct ThrottleCommandTests {
    @Test func fiveWrongPasscodes_thenANewProcessAndACopyOfTheFileMustWait() throws {
        let sandbox = try CLISandbox()
        try sandbox.initKeychain()
        try sandbox.add(account: "alice", data: Array("s3cret".utf8))
        for attempt in 1...5 {
            let wrong = try sandbox.run(
                ["find", "--account", "alice", "--service", "mail"], env: ["LATCHKEY_PASSCODE": "wrong \(attempt)"])
            #expect(wrong.status == 4, "attempt \(attempt): \(wrong.stderr)")
            #expect(wrong.stderr.contains("errSecAuthFailed -25293"), "attempt \(attempt): \(wrong.stderr)")
            #expect(wrong.stderr.contains("try again in") == (attempt == 5), "attempt \(attempt): \(wrong.stderr)")
        }
        // Each command is a new process: the count lives in the device state.
        let right = try sandbox.run(["find", "--account", "alice", "--service", "mail"])
        #expect(right.status == 4)
        #expect(
            right.stderr.range(of: #"try again in (59|60) seconds"#, options: .regularExpression) != nil,
            "\(right.stderr)")
        #expect(right.stdout.isEmpty)
        // A copy of the file elsewhere is the same keychain to this device.
        let copy = sandbox.directory.appendingPathComponent("copy.keychain").path
        try FileManager.default.copyItem(atPath: sandbox.keychainPath, toPath: copy)
        let copied = try sandbox.run(
            ["find", "--account", "alice", "--service", "mail"], env: ["LATCHKEY_KEYCHAIN": copy])
        #expect(copied.status == 4)
        #expect(copied.stderr.contains("try again in"), "\(copied.stderr)")
        // Items that need no passcode stay usable meanwhile.
        let info = try sandbox.run(["info"], env: ["LATCHKEY_PASSCODE": nil])
        #expect(info.status == 0, "\(info.stderr)")
    }
}
