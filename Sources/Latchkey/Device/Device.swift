#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LatchkeyCrypto
import LatchkeyFormat

/// The device: its secret file and, beside it, the per-keychain device state
/// (spec/FORMAT.md §2 and §9).
public final class Device: @unchecked Sendable {
    public let path: String
    let secret: DeviceSecret
    let fs: FileSystem
    private let stateKey: SecretKey
    /// While set (a restore that made this device secret), every state file this object
    /// creates is removed if a signal ends the process (`InterruptCleanup`), until
    /// `keepNewStateFiles()`.
    private var newStateFiles: [InterruptCleanup.Token?]?
    private let newStateFilesLock = Lock()

    /// The device UUID, as 32 hex digits.
    public var uuidHex: String { hexString(secret.uuid) }

    init(path: String, secret: DeviceSecret, fs: FileSystem) throws {
        self.path = path
        self.secret = secret
        self.fs = fs
        self.stateKey = try DeviceState.macKey(device: secret)
    }

    /// Loads the device secret at `path`. Refuses a file that is a symlink, is not this user's,
    /// or grants any group or world permission, and a secret or `.state` directory that other
    /// users could replace (`PrivateFiles`, as ssh does for private keys).
    /// - Parameter keychainPath: the keychain it is loaded for, to say which device secret that
    ///   keychain needs when none is at `path`.
    /// - Throws: `KeychainError` errSecIO (missing or unsafe file), errSecDecode (damaged).
    package static func load(path: String, fs: FileSystem, keychainPath: String? = nil) throws -> Device {
        guard let found = try io({ try fs.ownership(path: path) }, "read the device secret") else {
            throw missingSecret(path: path, keychainPath: keychainPath, fs: fs)
        }
        if found.kind == .symlink {
            throw KeychainError(
                .io,
                "the device secret \(path) is a symbolic link; refusing to follow it (another user who controls the link could point it at their own secret); put the device secret file itself there",
                remedy: .giveDeviceSecret)
        }
        try PrivateFiles.checkDirectories(above: path, what: "the device secret", fs: fs)
        let fd: Int32
        do {
            fd = try PrivateFiles.open(path, what: "the device secret", writable: false, fs: fs)
        } catch is IOFailure {
            throw missingSecret(path: path, keychainPath: keychainPath, fs: fs)
        }
        defer { fs.close(fd) }
        try PrivateFiles.checkSecretFile(
            try io({ try fs.ownership(fd) }, "check the device secret"), path: path, userID: fs.userID)
        var bytes = try io(
            { try fs.read(fd, offset: 0, count: Int(min(try fs.size(fd), 1 << 16))) }, "read the device secret")
        defer { Crypto.cleanse(&bytes) }
        let device: Device
        do {
            device = try Device(path: path, secret: DeviceSecret.decodeFile(bytes), fs: fs)
        } catch let e as FormatError {
            throw KeychainError.fromFormat("the device secret \(path)", e)
        }
        try device.checkStateDirectory()
        return device
    }

    /// The error for a missing device secret. When the keychain exists, it was made with a
    /// device secret that only it can be opened with: the message names that device (from the
    /// keychain's header), says where the secret is looked for, and that a backup restores
    /// onto a new one; it never suggests `init`, which would make a secret that cannot open it.
    static func missingSecret(path: String, keychainPath: String?, fs: FileSystem) -> KeychainError {
        guard let keychainPath, (try? fs.identity(path: keychainPath)) != nil else {
            return KeychainError(.io, "no device secret at \(path)", remedy: .createOrGiveDeviceSecret)
        }
        return KeychainError(
            .io,
            "no device secret at \(path), and the keychain \(keychainPath) needs the one it was made with"
                + (recordedDeviceUUID(keychainPath: keychainPath, fs: fs).map { " (device \($0))" } ?? "")
                + ": no other device secret can open it", remedy: .findKeychainsDeviceSecret)
    }

    /// The device UUID a keychain's header records (unauthenticated: for messages only).
    static func recordedDeviceUUID(keychainPath: String, fs: FileSystem) -> String? {
        guard let fd = try? fs.openReadOnly(keychainPath) else { return nil }
        defer { fs.close(fd) }
        guard let prefix = try? fs.read(fd, offset: 0, count: 16), let length = try? FileHeader.peekLength(prefix),
            let bytes = try? fs.read(fd, offset: 0, count: length), let decoded = try? FileHeader.decode(bytes)
        else { return nil }
        return hexString(decoded.header.deviceUUID)
    }

    /// Loads the device secret, creating a new one (mode 0600) when none exists. The
    /// directories above it are checked before anything secret is written there.
    package static func loadOrCreate(path: String, fs: FileSystem) throws -> (device: Device, created: Bool) {
        if try io({ try fs.ownership(path: path) }, "read the device secret") != nil {
            return (try load(path: path, fs: fs), false)
        }
        try io({ try fs.makeDirectory(directoryOf(path), mode: 0o700) }, "create the device secret's directory")
        try PrivateFiles.checkDirectories(above: path, what: "the device secret", fs: fs)
        let secret = try DeviceSecret.generate()
        var bytes = secret.encodeFile()
        defer { Crypto.cleanse(&bytes) }
        try io({ try fs.writeFileAtomically(path, bytes, mode: 0o600) }, "create the device secret")
        let device = try Device(path: path, secret: secret, fs: fs)
        try device.checkStateDirectory()
        return (device, true)
    }

    /// The library's public entry points take paths; this loads with the real file system.
    public static func load(path: String) throws -> Device { try load(path: path, fs: PosixFileSystem.shared) }

    // MARK: Device state (spec §9)

    var stateDirectory: String { path + ".state" }

    func statePath(fileUUID: [UInt8]) -> String { stateDirectory + "/" + hexString(fileUUID) }

    /// From now on, state files this object creates are removed if a signal ends the process.
    package func removeNewStateFilesOnInterrupt() {
        newStateFilesLock.lock(); defer { newStateFilesLock.unlock() }
        if newStateFiles == nil { newStateFiles = [] }
    }

    /// The state files created since `removeNewStateFilesOnInterrupt` are kept after all.
    package func keepNewStateFiles() {
        newStateFilesLock.lock(); defer { newStateFilesLock.unlock() }
        newStateFiles?.forEach(InterruptCleanup.unregister)
        newStateFiles = nil
    }

    /// Registered before the file exists, so that no moment is left in which a signal finds
    /// it made but not registered.
    private func noteNewStateFile(_ path: String) {
        newStateFilesLock.lock(); defer { newStateFilesLock.unlock() }
        newStateFiles?.append(InterruptCleanup.register(path, on: fs))
    }

    /// Refuses a `.state` directory that is not this user's own (when it exists).
    func checkStateDirectory() throws {
        guard let o = try io({ try fs.ownership(path: stateDirectory) }, "check the device state directory") else {
            return
        }
        try PrivateFiles.checkStateDirectory(o, path: stateDirectory, userID: fs.userID)
    }

    /// Opens a state file (no symlink followed) and checks it on the descriptor; nil when absent.
    private func openStateFile(_ path: String, writable: Bool) throws -> Int32? {
        let fd: Int32
        do {
            fd = try PrivateFiles.open(path, what: "the device state file", writable: writable, fs: fs)
        } catch let f as IOFailure where f.errno == ENOENT {
            return nil
        }
        do {
            try PrivateFiles.checkStateFile(
                try io({ try fs.ownership(fd) }, "check the device state"), path: path, userID: fs.userID)
        } catch {
            fs.close(fd)
            throw error
        }
        return fd
    }

    /// The remembered state of a keychain, or nil when this device has none for it.
    ///
    /// A state file that fails its MAC is treated as absent (spec §9): it is overwritten in
    /// place without fsync, so a power cut can tear it, and refusing the keychain then would be
    /// a false alarm. This costs no security: whoever can damage it can also delete it.
    /// - Throws: errSecIO for a state file or directory that another user could have planted.
    func state(fileUUID: [UInt8]) throws -> DeviceState? {
        try checkStateDirectory()
        guard let fd = try openStateFile(statePath(fileUUID: fileUUID), writable: false) else { return nil }
        defer { fs.close(fd) }
        let bytes = try io(
            { try fs.read(fd, offset: 0, count: FormatConstants.stateFileSize + 1) }, "read the device state")
        guard let state = try? DeviceState.decode(bytes, macKey: stateKey), state.fileUUID == fileUUID else {
            return nil
        }
        return state
    }

    /// Records the newest committed sequence number of a keychain (no fsync: spec §9.3 explains
    /// why that is safe). Only `newestSequence` is taken from `state`: the passcode attempt
    /// counter is owned by `withLockedState` and is kept as it is on disk, so a commit in one
    /// process never undoes a failed attempt counted by another. The number never goes down
    /// (a process that read the file before another's commit must not undo that commit's
    /// update) unless `allowLower` says so: adopting a rolled-back file (`--accept-rollback`).
    ///
    /// `passcodeSet`, when given, is whether the keychain has a passcode now: given only by a
    /// process holding the keychain's exclusive lock with its header current (a commit, a
    /// passcode change, the adoption of a file), so a process that read an older header never
    /// records it over a newer one (spec §9.2).
    func saveState(_ state: DeviceState, allowLower: Bool = false, passcodeSet: Bool? = nil) throws {
        try withLockedState(fileUUID: state.fileUUID) { current in
            var merged = current ?? state
            merged.newestSequence =
                allowLower ? state.newestSequence : max(state.newestSequence, current?.newestSequence ?? 0)
            if let passcodeSet { merged.passcodeSet = passcodeSet }
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
        if try io({ try fs.ownership(path: stateDirectory) }, "check the device state directory") == nil {
            try io({ try fs.makeDirectory(stateDirectory, mode: 0o700) }, "create the device state directory")
        }
        try checkStateDirectory()
        let fd = try io(
            { () throws -> Int32 in
                while true {
                    if try fs.ownership(path: path) == nil {
                        noteNewStateFile(path)
                        do {
                            fs.close(
                                try PrivateFiles.open(
                                    path, what: "the device state file", writable: true, create: true, fs: fs))
                            // The name is made durable once, so that a power cut cannot take the
                            // whole state away (recovery relies on it, spec §9.3, §10.4).
                            try? fs.syncDirectory(stateDirectory)
                        } catch let f as IOFailure where f.errno == EEXIST {}
                    }
                    guard let fd = try openStateFile(path, writable: true) else { continue }
                    do {
                        // The file may have been replaced or removed between open and lock.
                        if try fs.lock(fd, stillAt: path) { return fd }
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
        let bytes = try io(
            { try fs.read(fd, offset: 0, count: FormatConstants.stateFileSize + 1) }, "read the device state")
        var state: DeviceState? = nil
        if let s = try? DeviceState.decode(bytes, macKey: stateKey), s.fileUUID == fileUUID { state = s }
        let before = state
        let result = try body(&state)
        if let s = state, s != before {
            try io({ try fs.write(fd, offset: 0, s.encode(macKey: stateKey)) }, "write the device state")
            // A state written over an empty or untrusted one is synced once: later updates are
            // not (spec §9.3), but from here a power cut leaves a state that may lag, never none.
            // A lowered number (an adopted rollback, a repair) is synced too: after a power cut
            // the higher one could come back and call the adopted file rolled back, or the
            // torn tail of a later append damage.
            if before == nil || s.newestSequence < before!.newestSequence { try? fs.sync(fd) }
        }
        return result
    }
}

/// Runs a file-system call, turning its failure into a `KeychainError` that says what failed.
func io<T>(_ body: () throws -> T, _ what: String) throws -> T {
    do {
        return try body()
    } catch let f as IOFailure {
        throw KeychainError(.io, "could not \(what): \(ioHint(f))", underlying: f.description)
    }
}

/// What a failed file-system call means for the user, and the next step.
func ioHint(_ error: Error) -> String {
    switch (error as? IOFailure)?.errno {
    case ENOSPC: return "the disk is full; free some space and try again"
    case EACCES, EPERM: return "permission denied; check the file's owner and mode"
    case EROFS: return "the file system is read-only"
    default: return "an I/O error occurred; check the disk"
    }
}

#if canImport(Glibc)
    import Glibc
#endif
