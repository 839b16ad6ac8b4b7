#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import LatchkeyCrypto
import LatchkeyFormat

extension KeychainStore {
    // MARK: Keys and lock state

    package var hasPasscode: Bool { mutex.lock(); defer { mutex.unlock() }; return log.keybag.hasPasscode }

    func unwrapDeviceClasses() throws {
        for e in log.keybag.entries where e.wrap == .device {
            do {
                classKeys[e.protectionClass] = try Crypto.unwrap(e.wrappedKey, with: keys.deviceWrap)
            } catch {
                throw KeychainError(
                    .decode,
                    "the keychain \(path): the \(e.protectionClass.code) class key does not unwrap with this device's key (damaged or tampered keybag)"
                )
            }
        }
    }

    /// Unlocks the passcode-protected classes.
    /// - Throws: errSecAuthFailed for a wrong passcode, or while a delay after repeated wrong
    ///   passcodes runs (PasscodeThrottle); errSecParam when there is no passcode.
    package func unlock(passcode: [UInt8]) throws {
        try unlock(passcode: passcode, prefetched: nil)
    }

    func unlock(passcode: [UInt8], prefetched: PrefetchedPasscodeKey?) throws {
        mutex.lock(); defer { mutex.unlock() }
        try refreshLocked()
        let bag = log.keybag
        guard bag.hasPasscode else { throw KeychainError.passcodeForKeychainWithout(path) }
        let unwrapped = try throttledPasscodeAttempt { () throws -> [ProtectionClass: SecretKey] in
            let passKey =
                try prefetched.flatMap { $0.kdf == bag.kdf ? try $0.key() : nil }
                ?? keys.passcodeKey(passcode: passcode, kdf: bag.kdf)
            var unwrapped: [ProtectionClass: SecretKey] = [:]
            for e in bag.entries where e.wrap == .passcode {
                do {
                    unwrapped[e.protectionClass] = try Crypto.unwrap(e.wrappedKey, with: passKey)
                } catch {
                    throw KeychainError(.authFailed, "wrong passcode for the keychain \(path)")
                }
            }
            return unwrapped
        }
        classKeys.merge(unwrapped) { $1 }
        unlockedOnce = true
    }

    private func refreshLocked() throws { try refresh() }

    /// Drops the WhenUnlocked keys (ak, aku, akpu); AfterFirstUnlock (ck, cku) stay.
    package func lock() {
        mutex.lock(); defer { mutex.unlock() }
        guard log.keybag.hasPasscode else { return }
        for pc in [ProtectionClass.whenUnlocked, .whenUnlockedThisDeviceOnly, .whenPasscodeSetThisDeviceOnly] {
            classKeys[pc] = nil
        }
    }

    /// Drops every class key (each `SecretKey` zeroes its bytes when released) and closes the
    /// file: `Keychain.close()`. Every later operation on this store fails with errSecIO
    /// (no open file), so nothing is read or written through it again.
    package func close() {
        mutex.lock(); defer { mutex.unlock() }
        classKeys = [:]
        log = LogState(header: header, headerSize: headerSize)  // the item table, and the index file it read
        if fd >= 0 { fs.close(fd); fd = -1 }
    }

    /// Whether items of `pc` can be read and written now.
    package func isAvailable(_ pc: ProtectionClass) -> Bool {
        mutex.lock(); defer { mutex.unlock() }
        return classKeys[pc] != nil
    }

    /// The class key, or the error the API must return for it (errSecInteractionNotAllowed, or errSecNotAvailable for akpu without a passcode).
    func classKey(_ pc: ProtectionClass) throws -> SecretKey {
        if let k = classKeys[pc] { return k }
        if pc == .whenPasscodeSetThisDeviceOnly && !log.keybag.hasPasscode {
            throw KeychainError(
                .notAvailable,
                "WhenPasscodeSetThisDeviceOnly (akpu) items need a keychain with a passcode, and this keychain has none",
                remedy: .setPasscode)
        }
        throw KeychainError.locked(pc)
    }
}

extension KeychainStore {
    /// Checks a passcode without changing the lock state (user presence).
    /// - Throws: errSecAuthFailed when it is wrong; errSecNotAvailable without a passcode.
    package func checkPasscode(_ passcode: [UInt8]) throws {
        let bag = kdfAndEntry()
        guard let entry = bag.entry else {
            throw KeychainError(.notAvailable, "this keychain has no passcode to check")
        }
        try throttledPasscodeAttempt {
            let passKey = try keys.passcodeKey(passcode: passcode, kdf: bag.kdf)
            do {
                _ = try Crypto.unwrap(entry.wrappedKey, with: passKey)
            } catch {
                throw KeychainError(.authFailed, "wrong passcode")
            }
        }
    }

    private func kdfAndEntry() -> (kdf: KDFParameters, entry: KeybagEntry?) {
        mutex.lock(); defer { mutex.unlock() }
        let bag = log.keybag
        return (bag.kdf, bag.entries.first { $0.wrap == .passcode })
    }
}

/// The passcode key of `FileKeys.passcodeKey`, derived on a thread of its own (see
/// `KeychainStore.open(path:device:acceptRollback:unlockingWith:)`).
///
/// The thread is a joined pthread, not a detached one: `key()` returns only once it has ended,
/// its OpenSSL state freed (`Crypto.releaseThreadState`). A process exiting while a detached
/// thread is still ending has OpenSSL's exit-time cleanup free that state a second time (a
/// double free), or leaks it.
final class PrefetchedPasscodeKey: @unchecked Sendable {
    let kdf: KDFParameters
    let lock = Lock()
    var thread: pthread_t?
    /// Written by the deriving thread; read only after it was joined.
    var result: Result<SecretKey, Error>?
    let keys: FileKeys
    var passcode: [UInt8]

    init(keys: FileKeys, passcode: [UInt8], kdf: KDFParameters) {
        self.kdf = kdf
        self.keys = keys
        self.passcode = passcode
        var t = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        if pthread_create(
            &t, nil,
            { raw in
                let me = Unmanaged<PrefetchedPasscodeKey>.fromOpaque(raw!).takeRetainedValue()
                me.derive()
                Crypto.releaseThreadState()
                return nil
            }, context) == 0
        {
            thread = t
        } else {
            Unmanaged<PrefetchedPasscodeKey>.fromOpaque(context).release()
            derive()  // no thread: derive here
        }
    }

    func derive() {
        result = Result { try keys.passcodeKey(passcode: passcode, kdf: kdf) }
        Crypto.cleanse(&passcode)
    }

    /// Joins the thread (once); rethrows what the derivation threw.
    func key() throws -> SecretKey {
        lock.lock(); defer { lock.unlock() }
        if let t = thread {
            pthread_join(t, nil)
            thread = nil
        }
        return try result!.get()
    }

    /// `open` always calls `key()`; this only covers a caller that did not (the last reference
    /// may then be the thread's own, and a thread cannot join itself).
    deinit {
        if let t = thread {
            if pthread_equal(t, pthread_self()) != 0 { pthread_detach(t) } else { pthread_join(t, nil) }
        }
    }
}
