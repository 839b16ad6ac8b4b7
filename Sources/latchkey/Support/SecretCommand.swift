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
        var bytes: [UInt8] = []
        let status = try spawn(
            "/bin/sh", ["/bin/sh", "-c", command], environment: nil, stdinFromTerminal: true,
            describe: "the \(what) command (\(source))", output: &bytes)
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

    /// What a program prints on stdout when run without a shell: `arguments[0]` is looked up
    /// on PATH as execvp does, its stdin is /dev/null (it can read no secret of latchkey's,
    /// and a prompting program such as pinentry uses its own terminal), its stderr latchkey's,
    /// its environment `environment` ("NAME=value"). For `import --from pass` (`pass show`).
    /// - Parameter output: receives the bytes of stdout (zeroed wherever they passed on the way).
    /// - Returns: the exit status, or nil when a signal ended it.
    /// - Throws: errSecIO when it cannot be started (the reason named).
    static func run(arguments: [String], environment: [String], output: inout [UInt8]) throws -> Int32? {
        let status = try spawn(
            arguments[0], arguments, environment: environment, stdinFromTerminal: false, describe: arguments[0],
            output: &output)
        return status & 0x7f == 0 ? (status >> 8) & 0xff : nil
    }

    /// Starts `path` (a name without "/" is searched on PATH) with stdout on a pipe, reads the
    /// pipe to its end into `output` and waits. - Returns: the raw wait status.
    private static func spawn(
        _ path: String, _ arguments: [String], environment: [String]?, stdinFromTerminal: Bool, describe: String,
        output: inout [UInt8]
    ) throws -> Int32 {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw KeychainError(
                .io,
                "cannot run \(describe): cannot create a pipe: \(String(cString: strerror(errno)))")
        }
        let readEnd = fds[0], writeEnd = fds[1]
        // Neither end may reach the command (the write end: its dup2 as stdout only) or another child.
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        defer { close(readEnd) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if !(stdinFromTerminal && Terminal.stdinIsTerminal) {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var envp: [UnsafeMutablePointer<CChar>?] = (environment ?? []).map { strdup($0) } + [nil]
        defer { for p in envp { free(p) } }
        var pid: pid_t = 0
        let spawned =
            environment == nil
            ? posix_spawn(&pid, path, &actions, nil, &argv, environ)
            : posix_spawnp(&pid, path, &actions, nil, &argv, &envp)
        close(writeEnd)
        guard spawned == 0 else {
            throw KeychainError(.io, "cannot run \(describe): \(path): \(String(cString: strerror(spawned)))")
        }

        do {
            output = try InputFile.secret(descriptor: readEnd, what: "output of \(describe)")
        } catch {
            _ = wait(for: pid)
            throw error
        }
        return wait(for: pid)
    }

    /// The raw wait status of `pid`, waiting through signals.
    private static func wait(for pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status
    }
}
