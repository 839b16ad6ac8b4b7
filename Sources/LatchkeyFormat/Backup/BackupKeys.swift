import LatchkeyCrypto

/// The key schedule of one backup (spec/BACKUP.md §4).
///
/// ```
/// PK  = HKDF(scrypt(password, salt, N, r, p), salt = backup UUID, "latchkey backup v1 password key")
/// DBK = HKDF(device secret,                   salt = backup UUID, "latchkey backup v1 device key")
/// password wrap key        = HKDF(PK,       ε, "latchkey backup v1 password wrap")          kind 2
/// device wrap key          = HKDF(DBK,      ε, "latchkey backup v1 device wrap")            kind 1
/// password and device wrap = HKDF(PK ‖ DBK, ε, "latchkey backup v1 password device wrap")   kind 3
/// manifest MAC key         = HKDF(PK, or DBK without a password, ε, "latchkey backup v1 manifest mac")
/// ```
package struct BackupKeys: Sendable {
    /// PK: present when the password was given.
    package let passwordKey: SecretKey?
    /// DBK: present when the device secret of the source device is at hand.
    package let deviceKey: SecretKey?

    package init(passwordKey: SecretKey?, deviceKey: SecretKey?) {
        self.passwordKey = passwordKey
        self.deviceKey = deviceKey
    }

    /// PK from the password and the keybag's KDF parameters (runs scrypt with its explicit
    /// memory ceiling).
    package static func passwordKey(password: [UInt8], kdf: KDFParameters, backupUUID: [UInt8]) throws -> SecretKey {
        var stretched = try Crypto.scrypt(
            password: password, salt: kdf.salt, n: kdf.n, r: kdf.r, p: kdf.p,
            maxMemory: kdf.maxMemory, count: 32)
        defer { Crypto.cleanse(&stretched) }
        var out = try Crypto.hkdfSHA256(ikm: stretched, salt: backupUUID, info: BackupConstants.infoPassword, count: 32)
        return SecretKey(consuming: &out)
    }

    /// DBK from the source device's secret.
    package static func deviceKey(device: DeviceSecret, backupUUID: [UInt8]) throws -> SecretKey {
        try Crypto.hkdfSHA256(ikm: device.secret, salt: backupUUID, info: BackupConstants.infoDevice)
    }

    /// The KEK of a wrap kind, or nil when a key it needs is missing.
    package func kek(_ kind: BackupWrapKind) throws -> SecretKey? {
        switch kind {
        case .device:
            guard let d = deviceKey else { return nil }
            return try Crypto.hkdfSHA256(ikm: d, salt: [], info: BackupConstants.infoDeviceWrap)
        case .password:
            guard let p = passwordKey else { return nil }
            return try Crypto.hkdfSHA256(ikm: p, salt: [], info: BackupConstants.infoPasswordWrap)
        case .passwordAndDevice:
            guard let p = passwordKey, let d = deviceKey else { return nil }
            // Built in place: `p.copyBytes() + d.copyBytes()` would leave both halves in
            // freed temporaries that nobody cleanses.
            var ikm = [UInt8]()
            ikm.reserveCapacity(p.count + d.count)
            p.withUnsafeBytes { ikm.append(contentsOf: $0) }
            d.withUnsafeBytes { ikm.append(contentsOf: $0) }
            defer { Crypto.cleanse(&ikm) }
            var out = try Crypto.hkdfSHA256(ikm: ikm, salt: [], info: BackupConstants.infoBothWrap, count: 32)
            return SecretKey(consuming: &out)
        }
    }

    /// The manifest MAC key: from PK in a password backup, from DBK in a device-only one.
    package func manifestMACKey(mode: BackupMode) throws -> SecretKey? {
        guard let base = mode == .password ? passwordKey : deviceKey else { return nil }
        return try Crypto.hkdfSHA256(ikm: base, salt: [], info: BackupConstants.infoManifestMAC)
    }
}
