import Foundation
import Testing

/// `init` makes `…/latchkey` (and the directories above it) and must fsync the parent of
/// each directory it makes, or a power cut can lose the new name and with it the keychain and
/// the device secret (issue 14, point 6). Watched on the real file system with strace(1).
@Suite struct DataDirectoryDurabilityTests {
    /// strace is installed and may trace here (ptrace can be forbidden in containers).
    static let straceWorks: Bool = {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/strace") else { return false }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/strace")
        p.arguments = ["-o", "/dev/null", "/bin/true"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return false }
        p.waitUntilExit()
        return p.terminationStatus == 0
    }()

    @Test(.enabled(if: straceWorks, "needs strace(1) allowed to trace a child"))
    func init_fsyncsTheParentOfEveryDirectoryItMakes() throws {
        let sb = try CLISandbox()
        let data = sb.directory.appendingPathComponent("new/share").path
        let log = sb.directory.appendingPathComponent("strace.log").path
        let r = try sb.run(
            executable: URL(fileURLWithPath: "/usr/bin/strace"),
            [
                "-f", "-e", "trace=mkdir,mkdirat,openat,fsync", "-o", log, try CLISandbox.binary().path, "init",
                "--no-passcode"
            ],
            env: [
                "XDG_DATA_HOME": data, "LATCHKEY_KEYCHAIN": nil, "LATCHKEY_DEVICE": nil, "LATCHKEY_PASSCODE": nil,
                // Under `make test-asan`: LeakSanitizer cannot run under ptrace (it
                // ends the traced process with a fatal error), so it is off here.
                "ASAN_OPTIONS": (ProcessInfo.processInfo.environment["ASAN_OPTIONS"].map { $0 + ":" } ?? "")
                    + "detect_leaks=0"
            ])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map(String.init)

        func quoted(_ line: String) -> String? {
            guard let a = line.firstIndex(of: "\""), let b = line[line.index(after: a)...].firstIndex(of: "\"") else {
                return nil
            }
            return String(line[line.index(after: a)..<b])
        }
        var made: [(index: Int, path: String)] = []
        for (i, line) in lines.enumerated() where line.contains("mkdir") && line.hasSuffix("= 0") {
            if let p = quoted(line) { made.append((i, p)) }
        }
        let expected = [sb.directory.path + "/new", data, data + "/latchkey"]
        for dir in expected {
            #expect(made.contains { $0.path == dir }, "init made \(dir)")
        }
        for (index, dir) in made {
            let parent = (dir as NSString).deletingLastPathComponent
            // After the mkdir: the parent opened as a directory, then that descriptor fsynced.
            var synced = false
            var fd: String?
            for line in lines[(index + 1)...] {
                if line.contains("openat("), line.contains("O_DIRECTORY"), quoted(line) == parent,
                    let eq = line.range(of: "= ", options: .backwards)
                {
                    fd = String(line[eq.upperBound...])
                } else if let fd, line.contains("fsync(\(fd))"), line.hasSuffix("= 0") {
                    synced = true
                    break
                }
            }
            #expect(synced, "the parent \(parent) of the new directory \(dir) is fsynced after the mkdir")
        }
    }
}
