#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Testing

/// Files that someone who can write the keychain's directory plants where latchkey opens a path:
/// a FIFO at `<keychain>.index` or at the keychain itself (issue 27, finding 1). A plain open(2)
/// of a FIFO blocks until a writer comes, so each command runs with a deadline: a hang fails the
/// test (and the process is killed) instead of hanging the suite.
@Suite struct PlantedFileTests {
    /// Runs `latchkey args…` and waits at most `seconds` for it; nil when it was still running
    /// (it is killed then).
    func run(_ s: CLISandbox, _ args: [String], stdin: [UInt8] = [], seconds: Double = 20) throws -> (
        status: Int32, out: String, err: String
    )? {
        let p = try Spawned(args, environment: s.environment, stdin: stdin, in: s.directory)
        let deadline = monotonicMicroseconds() + Int64(seconds * 1_000_000)
        while p.running {
            if monotonicMicroseconds() > deadline {
                p.kill()
                p.wait()
                return nil
            }
            pause(microseconds: 5_000)
        }
        guard case .exited(let status) = p.wait() else { return nil }
        return (status, String(decoding: p.stdout, as: UTF8.self), p.stderr)
    }

    @Test func aFIFOAtTheIndexPathIsABadIndexForEveryCommand() throws {
        let s = try CLISandbox()
        try s.initKeychain()
        try s.add(account: "a", data: Array("secret-a".utf8))
        let index = s.keychainPath + ".index"
        unlink(index)
        #expect(mkfifo(index, 0o600) == 0)

        let find = try run(s, ["find", "--account", "a"])
        #expect(find?.status == 0, "find: \(String(describing: find))")
        #expect(find?.out.contains("secret-a") == true)
        let add = try run(s, ["add", "--account", "b", "--service", "mail"], stdin: Array("secret-b".utf8))
        #expect(add?.status == 0, "add: \(String(describing: add))")
        for args in [["dump"], ["verify"], ["info"], ["find", "--account", "b"]] {
            let r = try run(s, args)
            #expect(r?.status == 0, "\(args): \(String(describing: r))")
        }
        let compact = try run(s, ["compact"])
        #expect(compact?.status == 0, "compact: \(String(describing: compact))")
        let backup = try run(
            s, ["backup", "--output", s.directory.appendingPathComponent("b.lkbackup").path],
            stdin: [], seconds: 20)
        #expect(backup != nil, "backup hung")
        // A writer replaces the planted FIFO with a real index (or leaves no index at all):
        // nothing of the kind stays at the path.
        var st = stat()
        if lstat(index, &st) == 0 { #expect(st.st_mode & S_IFMT == S_IFREG) }
    }

    @Test func aFIFOAtTheKeychainPathIsRefusedWithAMessage() throws {
        let s = try CLISandbox()
        try s.initKeychain()
        try s.add(account: "a", data: Array("secret-a".utf8))
        #expect(rename(s.keychainPath, s.keychainPath + ".moved") == 0)
        #expect(mkfifo(s.keychainPath, 0o600) == 0)
        for args in [["find", "--account", "a"], ["verify"], ["info"], ["add", "--account", "c", "--service", "mail"]] {
            let r = try run(s, args, stdin: Array("x".utf8))
            #expect(r != nil, "\(args) hung")
            #expect(r?.status != 0)
            #expect(r?.err.contains("is not a regular file") == true, "\(args): \(String(describing: r))")
            #expect(r?.err.contains("errSecIO -36") == true, "\(args): \(String(describing: r))")
        }
    }

    /// A FIFO at the keychain's device state file (beside the device secret): refused with a
    /// message that says what to remove, at once.
    @Test func aFIFOAtTheDeviceStateFileIsRefusedWithAMessage() throws {
        let s = try CLISandbox()
        try s.initKeychain()
        try s.add(account: "a", data: Array("secret-a".utf8))
        let header = [UInt8](try Data(contentsOf: URL(fileURLWithPath: s.keychainPath)).prefix(32))
        let uuid = header[16..<32].map { String(format: "%02x", $0) }.joined()
        let state = s.environment["LATCHKEY_DEVICE"]! + ".state/" + uuid
        #expect(unlink(state) == 0)
        #expect(mkfifo(state, 0o600) == 0)
        let r = try run(s, ["find", "--account", "a"])
        #expect(r != nil, "find hung")
        #expect(r?.status != 0)
        #expect(r?.err.contains("is not a regular file") == true, "\(String(describing: r))")
    }
}
