import LatchkeyCrypto
import LatchkeyFormat

/// The device: its secret file and, beside it, the per-keychain device state
/// (spec/FORMAT.md §2 and §9).
public final class Device: @unchecked Sendable {
    public let path: String
    let secret: DeviceSecret
    let fs: FileSystem
    private let stateKey: SecretKey

    /// The device UUID, as 32 hex digits.
    public var uuidHex: String { hexString(secret.uuid) }

    init(path: String, secret: DeviceSecret, fs: FileSystem) throws {
        self.path = path
        self.secret = secret
        self.fs = fs
        self.stateKey = try DeviceState.macKey(device: secret)
    }

    /// Loads the device secret at `path`. Refuses a file that grants any group or world
    /// permission (as ssh does for private keys).
    /// - Throws: `KeychainError` errSecIO (missing or unsafe file), errSecDecode (damaged).
    package static func load(path: String, fs: FileSystem) throws -> Device {
        guard let mode = try io({ try fs.permissions(path) }, "read the device secret") else {
            throw KeychainError(.io, "no device secret at \(path); create one with 'latchkey init', or point LATCHKEY_DEVICE / --device at the right file")
        }
        guard mode & 0o077 == 0 else {
            throw KeychainError(.io, "the device secret \(path) is readable by others (mode \(String(mode, radix: 8))); run 'chmod 600 \(path)'")
        }
        guard var bytes = try io({ try fs.readFile(path) }, "read the device secret") else {
            throw KeychainError(.io, "no device secret at \(path)")
        }
        defer { Crypto.cleanse(&bytes) }
        do {
            return try Device(path: path, secret: DeviceSecret.decodeFile(bytes), fs: fs)
        } catch let e as FormatError {
            throw KeychainError.fromFormat("the device secret \(path)", e)
        }
    }

    /// Loads the device secret, creating a new one (mode 0600) when none exists.
    package static func loadOrCreate(path: String, fs: FileSystem) throws -> (device: Device, created: Bool) {
        if try io({ try fs.identity(path: path) }, "read the device secret") != nil {
            return (try load(path: path, fs: fs), false)
        }
        let secret = try DeviceSecret.generate()
        var bytes = secret.encodeFile()
        defer { Crypto.cleanse(&bytes) }
        try io({
            try fs.makeDirectory(directoryOf(path), mode: 0o700)
            try fs.writeFileAtomically(path, bytes, mode: 0o600)
        }, "create the device secret")
        return (try Device(path: path, secret: secret, fs: fs), true)
    }

    /// The library's public entry points take paths; this loads with the real file system.
    public static func load(path: String) throws -> Device { try load(path: path, fs: PosixFileSystem.shared) }

    // MARK: Device state (spec §9)

    var stateDirectory: String { path + ".state" }

    func statePath(fileUUID: [UInt8]) -> String { stateDirectory + "/" + hexString(fileUUID) }

    /// The remembered state of a keychain, or nil when this device has none for it.
    ///
    /// A state file that fails its MAC is treated as absent (spec §9): it is overwritten in
    /// place without fsync, so a power cut can tear it, and refusing the keychain then would be
    /// a false alarm. This costs no security: whoever can damage it can also delete it.
    func state(fileUUID: [UInt8]) throws -> DeviceState? {
        guard let bytes = try io({ try fs.readFile(statePath(fileUUID: fileUUID)) }, "read the device state") else { return nil }
        guard let state = try? DeviceState.decode(bytes, macKey: stateKey), state.fileUUID == fileUUID else { return nil }
        return state
    }

    /// Records the newest committed sequence number of a keychain (no fsync: spec §9.3 explains
    /// why that is safe). Only `newestSequence` is taken from `state`: the passcode attempt
    /// counter is owned by `withLockedState` and is kept as it is on disk, so a commit in one
    /// process never undoes a failed attempt counted by another. The number never goes down
    /// (a process that read the file before another's commit must not undo that commit's
    /// update) unless `allowLower` says so: adopting a rolled-back file (`--accept-rollback`).
    func saveState(_ state: DeviceState, allowLower: Bool = false) throws {
        try withLockedState(fileUUID: state.fileUUID) { current in
            var merged = current ?? state
            merged.newestSequence = allowLower ? state.newestSequence : max(state.newestSequence, current?.newestSequence ?? 0)
            current = merged
        }
    }

    /// Runs `body` on the state of one keychain (nil when absent or untrusted, spec §9.4) while
    /// holding an exclusive `flock` on its state file, then writes the state back in place when
    /// `body` changed it. Read-modify-write cycles of different processes are thereby
    /// serialized. The file is created empty (mode 0600, exclusively) when absent; an empty or
    /// torn file reads as absent, exactly as spec §9.4 treats a damaged one.
    @discardableResult
    func withLockedState<T>(fileUUID: [UInt8], _ body: (inout DeviceState?) throws -> T) throws -> T {
        let path = statePath(fileUUID: fileUUID)
        let fd = try io({ () throws -> Int32 in
            while true {
                if try fs.identity(path: path) == nil {
                    try fs.makeDirectory(stateDirectory, mode: 0o700)
                    do {
                        fs.close(try fs.open(path, create: true, exclusive: true, mode: 0o600))
                        // The name is made durable once, so that a power cut cannot take the
                        // whole state away (recovery relies on it, spec §9.3, §10.4).
                        try? fs.syncDirectory(stateDirectory)
                    } catch let f as IOFailure where f.errno == EEXIST {}
                }
                let fd = try fs.open(path, create: false, exclusive: false, mode: 0o600)
                do {
                    try fs.lock(fd)
                    // The file may have been replaced or removed between open and lock.
                    if try fs.identity(path: path) == fs.identity(fd) { return fd }
                    fs.unlock(fd)
                } catch {
                    fs.close(fd)
                    throw error
                }
                fs.close(fd)
            }
        }, "lock the device state")
        defer {
            fs.unlock(fd)
            fs.close(fd)
        }
        let bytes = try io({ try fs.read(fd, offset: 0, count: FormatConstants.stateFileSize + 1) }, "read the device state")
        var state: DeviceState? = nil
        if let s = try? DeviceState.decode(bytes, macKey: stateKey), s.fileUUID == fileUUID { state = s }
        let before = state
        let result = try body(&state)
        if let s = state, s != before {
            try io({ try fs.write(fd, offset: 0, s.encode(macKey: stateKey)) }, "write the device state")
            // A state written over an empty or untrusted one is synced once: later updates are
            // not (spec §9.3), but from here a power cut leaves a state that may lag, never none.
            if before == nil { try? fs.sync(fd) }
        }
        return result
    }
}

/// Runs a file-system call, turning its failure into a `KeychainError` that says what failed.
func io<T>(_ body: () throws -> T, _ what: String) throws -> T {
    do {
        return try body()
    } catch let f as IOFailure {
        let hint: String
        switch f.errno {
        case ENOSPC: hint = "the disk is full; free some space and try again"
        case EACCES, EPERM: hint = "permission denied; check the file's owner and mode"
        case EROFS: hint = "the file system is read-only"
        default: hint = "an I/O error occurred; check the disk"
        }
        throw KeychainError(.io, "could not \(what): \(hint)", underlying: f.description)
    }
}

#if canImport(Glibc)
import Glibc
#endif
