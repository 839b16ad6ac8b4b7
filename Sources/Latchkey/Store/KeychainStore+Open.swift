#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif
import LatchkeyCrypto
import LatchkeyFormat

extension KeychainStore {
    // MARK: Create

    /// Creates a new keychain file. Without a passcode every class but akpu is wrapped by the
    /// device key alone.
    /// - Throws: errSecDuplicateKeychain when a file exists at `path`; errSecIO.
    package static func create(
        path: String, device: Device, passcode: [UInt8]?, logN: UInt8 = KDFParameters.defaultLogN,
        now: UInt64 = UInt64(Date().timeIntervalSince1970)
    ) throws -> KeychainStore {
        let fs = device.fs
        if try io({ try fs.identity(path: path) }, "check the keychain path") != nil {
            throw existing(fs: fs, path: path)
        }
        let fileUUID = try ID16.random().bytes
        let keys = try FileKeys(device: device.secret, fileUUID: fileUUID)
        var classKeys: [ProtectionClass: SecretKey] = [:]
        for pc in ProtectionClass.allCases where pc != .whenPasscodeSetThisDeviceOnly || passcode != nil {
            classKeys[pc] = try SecretKey.random()
        }
        let kdf: KDFParameters =
            passcode == nil ? .none : .scrypt(salt: try Crypto.randomBytes(FormatConstants.saltSize), logN: logN)
        let passKey = try passcode.map { try keys.passcodeKey(passcode: $0, kdf: kdf) }
        let bag = try wrapKeybag(classKeys, kdf: kdf, keys: keys, passcodeKey: passKey)
        let header = FileHeader(
            fileUUID: fileUUID, deviceUUID: device.secret.uuid, baseSequence: 0, createdAt: now, keybag: bag)
        let bytes = header.encode(macKey: keys.headerMAC)
        let fd = try io(
            { () throws -> Int32 in
                try fs.makeDirectory(directoryOf(path), mode: 0o700)
                let temp = try temporaryName(path + ".create-")
                let registered = InterruptCleanup.register(temp, on: fs)  // before it exists: no window
                defer { InterruptCleanup.unregister(registered) }
                let tfd = try fs.open(temp, create: true, exclusive: true, mode: 0o600)
                var named = false
                do {
                    try fs.write(tfd, offset: 0, bytes)
                    try fs.sync(tfd)
                    try fs.renameNoReplace(temp, path)
                    named = true
                    try fs.syncDirectory(directoryOf(path))
                    // What an init or a restore to this path left when it was killed: with a
                    // keychain here, each of them would fail now anyway.
                    removeAbandonedCreations(besides: path, fs: fs)
                    return tfd
                } catch {
                    // Until the directory fsync returns, the new name may not survive a power cut:
                    // the call fails, so it leaves no keychain behind either.
                    if named {
                        try? fs.remove(path)
                        try? fs.syncDirectory(directoryOf(path))
                    } else {
                        try? fs.remove(temp)
                    }
                    fs.close(tfd)
                    // ENOENT: another process created the keychain at `path` and removed this
                    // temporary file as a leftover (`removeAbandonedCreations`).
                    if let f = error as? IOFailure,
                        f.errno == EEXIST || (f.errno == ENOENT && (try? fs.identity(path: path)) != nil)
                    {
                        throw existing(fs: fs, path: path)
                    }
                    throw error
                }
            }, "create the keychain")
        // Durable from here: the store is made from what was written, never read back (a read
        // failing now must not turn a created keychain into a reported failure).
        let store = KeychainStore(
            path: path, device: device, fs: fs, fd: fd,
            identity: (try? fs.identity(fd)) ?? FileIdentity(device: 0, inode: 0),
            header: header, headerSize: bytes.count, keys: keys)
        store.classKeys = classKeys
        store.unlockedOnce = passcode != nil
        store.recordCommit(0)
        return store
    }

    /// The error for creating a keychain where something already is: a directory, or a file that
    /// must never be deleted to make room (it may be the only copy of someone's items).
    package static func existing(fs: FileSystem, path: String) -> KeychainError {
        do {
            fs.close(try fs.open(path, create: false, exclusive: false, mode: 0o600))
        } catch let f as IOFailure where f.errno == EISDIR {
            return KeychainError.pathIsDirectory(path)
        } catch {}
        return KeychainError(
            .duplicateKeychain, "a keychain already exists at \(path); nothing was changed",
            remedy: .useExistingOrChooseAnother)
    }

    static func wrapKeybag(
        _ classKeys: [ProtectionClass: SecretKey], kdf: KDFParameters, keys: FileKeys,
        passcodeKey: SecretKey?
    ) throws -> Keybag {
        var entries: [KeybagEntry] = []
        for (pc, key) in classKeys.sorted(by: { $0.key < $1.key }) {
            let usePasscode = !pc.isAlwaysAvailable && passcodeKey != nil
            let kek = usePasscode ? passcodeKey! : keys.deviceWrap
            entries.append(
                KeybagEntry(
                    protectionClass: pc, wrap: usePasscode ? .passcode : .device,
                    wrappedKey: try Crypto.wrap(key, with: kek)))
        }
        return Keybag(kdf: kdf, entries: entries)
    }

    // MARK: Open

    /// Opens a keychain locked: only the classes wrapped by the device key are available.
    /// Cuts off and reports an incomplete tail; refuses damage, foreign devices, newer majors
    /// and rolled-back files.
    /// - Throws: errSecDecode (damaged, newer version, rolled back), errSecAuthFailed (another
    ///   device's keychain), errSecIO.
    package static func open(path: String, device: Device, acceptRollback: Bool = false) throws -> KeychainStore {
        try open(path: path, device: device, acceptRollback: acceptRollback, unlockingWith: nil)
    }

    /// Opens and, with a passcode, unlocks. The scrypt KDF for the passcode starts on another
    /// thread as soon as the header is read and runs while this one checks every record of
    /// the file, so that a command run without the agent costs the longer of the two rather
    /// than their sum. The derived key is used only if the
    /// current keybag (a later keybag record may replace the header's, spec §4) has the same
    /// KDF parameters, and only inside the throttled attempt; while a delay after wrong
    /// passcodes runs, no KDF is started at all.
    package static func open(
        path: String, device: Device, acceptRollback: Bool = false,
        unlockingWith passcode: [UInt8]?
    ) throws -> KeychainStore {
        let fs = device.fs
        guard try io({ try fs.identity(path: path) }, "open the keychain") != nil else {
            throw KeychainError(.io, "no keychain at \(path)", remedy: .createKeychain)
        }
        let (fd, writable) = try openFile(fs: fs, path: path)
        let parts: (FileHeader, Int, FileKeys, FileIdentity)
        do {
            let (header, size, keys) = try readHeader(fs: fs, fd: fd, path: path, device: device)
            parts = (header, size, keys, try io({ try fs.identity(fd) }, "open the keychain"))
        } catch {
            fs.close(fd)
            throw error
        }
        var prefetched: PrefetchedPasscodeKey?
        if let passcode, parts.0.keybag.hasPasscode,
            PasscodeThrottle.remaining(
                (try? device.state(fileUUID: parts.0.fileUUID)) ?? nil, now: Int64(Date().timeIntervalSince1970)) == 0
        {
            prefetched = PrefetchedPasscodeKey(keys: parts.2, passcode: passcode, kdf: parts.0.keybag.kdf)
        }
        // The thread is always waited for, whatever is thrown: a process that exits while it runs
        // scrypt would have OpenSSL's atexit cleanup free what the thread uses (a crash in a
        // command that exits with "wrong passcode").
        defer { _ = try? prefetched?.key() }
        // From here the store owns fd and closes it in deinit.
        let store = KeychainStore(
            path: path, device: device, fs: fs, fd: fd, identity: parts.3,
            header: parts.0, headerSize: parts.1, keys: parts.2)
        store.directoryUnsynced = true
        (store.log, store.indexedEnd) = store.initialState(fd: fd, header: parts.0, headerSize: parts.1, keys: parts.2)
        if parts.0.minor > FormatConstants.fileMinor {
            store.readOnlyReason =
                "it was written by a newer Latchkey (format 1.\(parts.0.minor)); upgrade Latchkey to change it"
        } else if !writable {
            store.readOnlyReason = KeychainStore.notWritable
        }
        // Rollback is judged on the committed records before anything is cut off: a file
        // that is rolled back (or carries a forged tail) keeps every byte (spec §10.5, §13).
        try store.catchUp(mayTruncate: false)
        try store.checkRollback(accept: acceptRollback)
        try store.catchUp(mayTruncate: !store.readOnly)
        try store.unwrapDeviceClasses()
        if let passcode { try store.unlock(passcode: passcode, prefetched: prefetched) }
        return store
    }

    /// Opens the keychain file for reading and writing, or, where it may only be read (a
    /// read-only file system, a file without write permission), for reading alone: readers then
    /// work and writers say why they cannot (spec §10.4: a reader that may not write never cuts
    /// a torn tail).
    static func openFile(fs: FileSystem, path: String) throws -> (fd: Int32, writable: Bool) {
        let opened: (fd: Int32, writable: Bool)
        do {
            opened = (try fs.open(path, create: false, exclusive: false, mode: 0o600), true)
        } catch let f as IOFailure where f.errno == EROFS || f.errno == EACCES || f.errno == EPERM {
            opened = (try io({ try fs.openReadOnly(path) }, "open the keychain"), false)
        } catch let f as IOFailure where f.errno == EISDIR {
            throw KeychainError.pathIsDirectory(path)
        } catch {
            return try io({ throw error }, "open the keychain")
        }
        try requireRegularFile(fs: fs, fd: opened.fd, path: path)
        return opened
    }

    /// Refuses (and closes) a keychain descriptor that is not a regular file: a FIFO, socket or
    /// device planted at the keychain's path. The open did not block (the file system opens
    /// with O_NONBLOCK); reading such a file could, or would fail with a misleading error.
    static func requireRegularFile(fs: FileSystem, fd: Int32, path: String) throws {
        let kind: FileOwnership.Kind
        do {
            kind = try io({ try fs.ownership(fd) }, "check the keychain").kind
        } catch {
            fs.close(fd)
            throw error
        }
        guard kind == .regular else {
            fs.close(fd)
            throw kind == .directory ? KeychainError.pathIsDirectory(path) : KeychainError.pathIsNotRegularFile(path)
        }
    }

    static func readHeader(fs: FileSystem, fd: Int32, path: String, device: Device) throws -> (
        FileHeader, Int, FileKeys
    ) {
        let what = "the keychain \(path)"
        let prefix = try io({ try fs.read(fd, offset: 0, count: 16) }, "read the keychain")
        // A file that cannot hold the magic cannot be identified: not a Latchkey file (spec §10.1).
        guard prefix.count >= FormatConstants.fileMagic.count else {
            throw KeychainError(
                .decode,
                "\(what) is not a Latchkey file: it is \(prefix.count) bytes long, shorter than the 8-byte magic number; check the path"
            )
        }
        do {
            let length = try FileHeader.peekLength(prefix)
            let bytes = try io({ try fs.read(fd, offset: 0, count: length) }, "read the keychain")
            let (header, authenticated, mac) = try FileHeader.decode(bytes)
            guard header.deviceUUID == device.secret.uuid else {
                throw KeychainError(
                    .authFailed,
                    "\(what) belongs to another device (device \(hexString(header.deviceUUID)), this device secret is \(device.uuidHex)); use the device secret it was made with, or restore a backup here"
                )
            }
            let keys = try FileKeys(device: device.secret, fileUUID: header.fileUUID)
            guard FileHeader.verifyMAC(authenticated: authenticated, mac: mac, macKey: keys.headerMAC) else {
                throw KeychainError(
                    .decode,
                    "\(what): the header failed its integrity check (damaged, tampered with, or made with a different device secret that has the same UUID); restore from a backup"
                )
            }
            return (header, length, keys)
        } catch let e as FormatError {
            if case .truncated = e, prefix.count < 16 {
                throw KeychainError(.decode, "\(what) is empty or truncated inside its header; restore from a backup")
            }
            throw KeychainError.fromFormat(what, e)
        }
    }
}
