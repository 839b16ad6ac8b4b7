#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
import Latchkey
import LatchkeyCrypto

/// `--passcode-command` / `--password-command` (docs/CLI.md): a secret printed by another
/// program — a password manager (`pass show latchkey`), `systemd-creds cat`, a secret service
/// client — as restic's `--password-command`.
///
/// The command is one string run by `/bin/sh -c`, so pipes and quoting work as the user wrote
/// them (restic splits the string itself and runs it without a shell; a shell is what git's
/// credential helpers and ssh's ProxyCommand use, and it lets `pass show x | head -n1` work).
/// Its stdout is read through a pipe, zeroed wherever it passed, and one trailing newline (LF
/// or CRLF) is dropped. Its stderr is latchkey's, so its own messages reach the user. Its
/// stdin is latchkey's only when that is a terminal (a prompting program such as pinentry can
/// ask there); otherwise /dev/null, so that it cannot swallow a secret piped to `add`.
enum SecretCommand {
    /// The secret `command` prints.
    /// - Parameters:
    ///   - what: what the secret is, for messages ("passcode").
    ///   - source: where the command came from (`--passcode-command`, `LATCHKEY_PASSCODE_COMMAND`).
    /// - Throws: errSecIO when the command cannot be started, exits with a status other than 0
    ///   or is killed (the status or signal is named; its output never is); errSecParam when it
    ///   prints nothing.
    static func output(_ command: String, what: String, source: String) throws -> [UInt8] {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw KeychainError(
                .io,
                "cannot run the \(what) command (\(source)): cannot create a pipe: \(String(cString: strerror(errno)))")
        }
        let readEnd = fds[0], writeEnd = fds[1]
        // Neither end may reach the command (the write end: its dup2 as stdout only) or another child.
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        defer { close(readEnd) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if !Terminal.stdinIsTerminal { posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0) }
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        let arguments: [String] = ["/bin/sh", "-c", command]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/bin/sh", &actions, nil, &argv, environ)
        close(writeEnd)
        guard spawned == 0 else {
            throw KeychainError(
                .io, "cannot run the \(what) command (\(source)): /bin/sh: \(String(cString: strerror(spawned)))")
        }

        var bytes: [UInt8]
        do {
            bytes = try InputFile.secret(descriptor: readEnd, what: "output of the \(what) command (\(source))")
        } catch {
            _ = wait(for: pid)
            throw error
        }
        let status = wait(for: pid)
        let exited = status & 0x7f == 0, code = (status >> 8) & 0xff, signal = status & 0x7f
        guard exited, code == 0 else {
            Crypto.cleanse(&bytes)
            let how = exited ? "exited with status \(code)" : "was killed by signal \(signal)"
            throw KeychainError(
                .io,
                "the \(what) command (\(source)) \(how), so there is no \(what); run it by hand to see why (its output is never shown)"
            )
        }
        if bytes.last == UInt8(ascii: "\n") {
            bytes.removeLast()
            if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        }
        guard !bytes.isEmpty else {
            throw KeychainError(
                .param, "the \(what) command (\(source)) printed nothing on stdout; it must print the \(what)")
        }
        return bytes
    }

    /// The raw wait status of `pid`, waiting through signals.
    private static func wait(for pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status
    }
}
