import Latchkey
import LatchkeyCrypto
import LatchkeyFormat

/// Where a backup takes its items from (spec/BACKUP.md §8 steps 1 and 3): the keychain file
/// opened in this process, or `latchkey agent` serving it. Both give every live item but akpu
/// ones with its UUID, protection class, flags and whole plaintext (attributes, `cdat` and
/// `mdat` included, and data), so a restore of either backup gives the same items.
protocol BackupItemSource {
    /// The secret of the device the keychain is bound to.
    var deviceSecret: DeviceSecret { get }
    /// The keychain's file UUID (spec/FORMAT.md §3.2).
    var keychainUUID: [UInt8] { get }
    /// The live items, akpu ones included (for progress).
    var count: Int { get }
    /// Calls `notExported` for each akpu item and `body` for every other item. Every check
    /// that can fail before an item is written (a locked class) is made before `body` first
    /// runs.
    func forEach(
        notExported: () -> Void,
        _ body: (_ uuid: [UInt8], _ protection: ProtectionClass, _ flags: UInt8, _ plaintext: ItemPlaintext) throws ->
            Void) throws
}

/// The keychain file opened here: the live items of one moment (`LiveItemSnapshot`), read one
/// at a time from the store. With an index they come in UUID order, and memory holds the
/// changes since the index, not the items.
struct StoreItemSource: BackupItemSource {
    let store: KeychainStore
    let items: LiveItemSnapshot

    init(_ store: KeychainStore) throws {
        self.store = store
        try store.refresh()
        items = try store.liveItemSnapshot()
        for pc in items.countsByProtection.keys.sorted(by: { $0.rawValue < $1.rawValue })
        where pc != .whenPasscodeSetThisDeviceOnly && !store.isAvailable(pc) {
            throw KeychainError(
                .interactionNotAllowed,
                "the keychain is locked: backing up its \(pc.code) items needs the passcode; nothing was written",
                remedy: .unlock)
        }
    }

    var deviceSecret: DeviceSecret { store.boundDevice.deviceSecret }
    var keychainUUID: [UInt8] { store.fileUUID }
    var count: Int { items.count }

    func forEach(
        notExported: () -> Void,
        _ body: ([UInt8], ProtectionClass, UInt8, ItemPlaintext) throws -> Void
    ) throws {
        try items.forEach { item in
            if item.protection == .whenPasscodeSetThisDeviceOnly {
                notExported()
                return
            }
            try body(item.uuid, item.protection, item.flags, try store.read(item))
        }
    }
}

/// A keychain served by `latchkey agent`, read through the agent protocol as the trusted
/// caller (every access group, as a backup of the file sees them): first the persistent
/// references of the items of each item class and protection class (attributes only, one
/// reply each), then each item with its data, one request each. Memory holds the references
/// (20 bytes an item) and one reply; the items are read in class order, not file order, which a
/// restore does not depend on. An item deleted between the listing and its read is left out;
/// one added after the listing is not in the backup (it was not there when the backup began).
///
/// The device-bound keys are derived here from `device`, which must be the device secret the
/// agent opened the keychain with (same device UUID): the CLI loads it from the same path it
/// gives the agent.
struct AgentItemSource: BackupItemSource {
    let keychain: Keychain
    let context: CallContext
    let deviceSecret: DeviceSecret
    let keychainUUID: [UInt8]
    let count: Int
    let notExportedCount: Int
    /// (item class, persistent reference) of every item to back up.
    let refs: [(ItemClass, [UInt8])]

    /// The classes a backup exports, in the order they are read.
    static let exported: [ProtectionClass] = [
        .whenUnlocked, .afterFirstUnlock, .always,
        .whenUnlockedThisDeviceOnly, .afterFirstUnlockThisDeviceOnly, .alwaysThisDeviceOnly
    ]

    init(_ keychain: Keychain, device: Device?) throws {
        guard let device else {
            throw KeychainError(
                .param,
                "a backup through the agent needs this device's secret to derive its device-bound keys; none was given")
        }
        self.keychain = keychain
        // The trusted caller: every access group, as the file's own backup.
        context = CallContext(caller: nil, authenticate: keychain.authenticationHandler)
        let info = try keychain.info()
        guard info.deviceUUID == device.uuidHex else {
            throw KeychainError(
                .authFailed,
                "the device secret at \(device.path) (device \(device.uuidHex)) is not the one the agent opened \(info.path) with (device \(info.deviceUUID)); give the keychain's own device secret (--device); nothing was written"
            )
        }
        guard let uuid = bytesFromHex(info.fileUUID), uuid.count == 16 else {
            throw KeychainError(.internal, "the agent gave no usable file UUID for \(info.path)")
        }
        deviceSecret = device.deviceSecret
        keychainUUID = uuid
        for pc in Self.exported where info.itemsByProtection[pc.code, default: 0] > 0 && !keychain.isAvailable(pc) {
            throw KeychainError(
                .interactionNotAllowed,
                "the agent holds \(info.path) locked: backing up its \(pc.code) items needs the passcode (run 'latchkey unlock', or give it to this command); nothing was written",
                remedy: .unlock)
        }
        var refs: [(ItemClass, [UInt8])] = []
        var needPresence = 0
        for pc in Self.exported where info.itemsByProtection[pc.code, default: 0] > 0 {
            for c in ItemClass.allCases {
                for item in try keychain.find(
                    Query(c, protection: pc, synchronizable: .any), includeData: false, context: context)
                {
                    refs.append((c, item.persistentRef))
                    if item.requiresUserPresence { needPresence += 1 }
                }
            }
        }
        if needPresence > 0, context.authenticate == nil {
            throw KeychainError(
                .interactionNotAllowed,
                "\(needPresence) item(s) of \(info.path) need user presence (the passcode) to be read, and there is no way to ask for it here; give the passcode (LATCHKEY_PASSCODE or --passcode-file) to back them up; nothing was written",
                remedy: .unlock)
        }
        self.refs = refs
        notExportedCount = info.itemsByProtection[ProtectionClass.whenPasscodeSetThisDeviceOnly.code, default: 0]
        count = refs.count + notExportedCount
    }

    func forEach(
        notExported: () -> Void,
        _ body: ([UInt8], ProtectionClass, UInt8, ItemPlaintext) throws -> Void
    ) throws {
        for _ in 0..<notExportedCount { notExported() }
        for (c, ref) in refs {
            // Gone since the listing: not in the backup, as if it had been deleted just before.
            guard
                var item = try keychain.find(
                    Query(c, persistentRef: ref), limit: 1, includeData: true,
                    prompt: "Back up an item that needs user presence", context: context
                ).first
            else { continue }
            defer { Crypto.cleanse(&item.data) }
            var attributes = item.attributes
            attributes["pdmn"] = nil  // the protection class is the record's, not an attribute (§5.2)
            try body(
                Array(ref.suffix(16)), item.protection, item.requiresUserPresence ? ItemPutPayload.userPresenceFlag : 0,
                ItemPlaintext(itemClass: c, attributes: attributes, data: item.data))
        }
    }
}
