import LatchkeyCrypto
import LatchkeyFormat

/// A digital identity: a certificate item and the private key item whose `klbl` equals the
/// certificate's `pkhh` (reference §1.1). Not stored as such: class `idnt` is a join.
public struct Identity: Sendable, Equatable {
    public var certificate: Item
    public var privateKey: Item

    public init(certificate: Item, privateKey: Item) {
        self.certificate = certificate
        self.privateKey = privateKey
    }
}

/// Which identities a call acts on. Each attribute is looked up in the certificate schema first,
/// then in the keys schema (reference §1.1): common attributes (`labl`, `agrp`, `sync`, …)
/// filter the certificate; key-only attributes (`atag`, `type`, `bsiz`, …) filter the key.
public struct IdentityQuery: Sendable {
    public var attributes: [String: AttributeValue]
    /// Only identities whose certificate has this protection class (nil: any).
    public var protection: ProtectionClass?
    public var caseInsensitive: Bool
    /// Applies to both items (default: sync = 0 only).
    public var synchronizable: SyncFilter
    /// Only the identity whose certificate or private key has this persistent reference (then
    /// synchronizable items are found too, as with any persistent reference).
    public var persistentRef: [UInt8]?

    public init(_ attributes: [String: AttributeValue] = [:], protection: ProtectionClass? = nil,
                caseInsensitive: Bool = false, synchronizable: SyncFilter = .notSynchronizable,
                persistentRef: [UInt8]? = nil) {
        self.attributes = attributes
        self.protection = protection
        self.caseInsensitive = caseInsensitive
        self.synchronizable = synchronizable
        self.persistentRef = persistentRef
    }
}

extension Keychain {
    /// Splits identity attributes: the certificate gets those of the cert schema, the key those
    /// of the keys schema that the cert schema does not have; with `common`, attributes of both
    /// schemas (agrp, labl, sync, …) go to both. - Throws: errSecNoSuchAttr for any other name.
    static func splitIdentityAttributes(_ attributes: [String: AttributeValue], common: Bool) throws
        -> (certificate: [String: AttributeValue], key: [String: AttributeValue]) {
        var cert: [String: AttributeValue] = [:]
        var key: [String: AttributeValue] = [:]
        for (name, value) in attributes {
            let inCert = ItemSchema.kind(name, in: .certificate) != nil
            let inKey = ItemSchema.kind(name, in: .key) != nil
            if inCert { cert[name] = value }
            if inKey && (!inCert || common) { key[name] = value }
            if !inCert && !inKey {
                throw KeychainError(.noSuchAttr, "'\(name)' is an attribute of neither certificates nor keys, so not of identities")
            }
        }
        return (cert, key)
    }

    /// Adds a certificate and its private key as two items in one transaction (reference
    /// §1.1, §9.8). `attributes` go to both items when both classes have them (agrp, labl, sync,
    /// …), else to the one that has them; the certificate's derived attributes and the key's
    /// `kcls`/`klbl`/`type`/`bsiz`/`esiz` are set from the data. `protection` applies to both
    /// (nil: each class's default — certificate dk, key ak).
    ///
    /// As on iOS, an identity is first of all its key: when the same certificate is already
    /// stored (same unique key and bytes), only the key is added and the existing certificate is
    /// returned.
    /// - Throws: errSecParam when the certificate is not DER X.509, the key is not a private key,
    ///   or the key does not belong to the certificate (public key hashes differ);
    ///   errSecDuplicateItem when the key exists; the errors of `add(contentsOf:)`.
    ///   - requiresUserPresence: reading the private key's data asks for the passcode again
    ///     (the certificate, which is public, never does).
    @discardableResult
    public func addIdentity(certificate: [UInt8], privateKey: [UInt8], attributes: [String: AttributeValue] = [:],
                            protection: ProtectionClass? = nil, requiresUserPresence: Bool = false) throws -> Identity {
        if let remote {
            return try remote.addIdentity(self, certificate: certificate, privateKey: privateKey, attributes: attributes,
                                          protection: protection, requiresUserPresence: requiresUserPresence)
        }
        let cert = try Keychain.parseCertificate(certificate)
        let key: KeyInfo
        do {
            key = try KeyInfo(data: privateKey)
        } catch {
            throw KeychainError(.param, "the private key of an identity must be a DER private key (PKCS#8, PKCS#1 or SEC1)", underlying: "\(error)")
        }
        guard key.isPrivate else {
            throw KeychainError(.param, "the key given for the identity is a public key; an identity needs the certificate's private key")
        }
        guard key.publicKeyHash == cert.publicKeyHash else {
            throw KeychainError(.param, "the private key does not belong to the certificate: the key's public key hash \(hex(key.publicKeyHash)) is not the certificate's \(hex(cert.publicKeyHash))")
        }
        let split = try Keychain.splitIdentityAttributes(attributes, common: true)
        var keyAttributes = split.key
        // The join column must hold the hash, whatever else the caller asked for.
        keyAttributes["kcls"] = .integer(1)
        keyAttributes["klbl"] = .data(key.publicKeyHash)

        let certItem = NewItem(.certificate, attributes: split.certificate, data: certificate, protection: protection)
        let keyItem = NewItem(.key, attributes: keyAttributes, data: privateKey, protection: protection,
                              requiresUserPresence: requiresUserPresence)
        if let existing = try existingCertificate(cert, attributes: split.certificate), existing.data == certificate {
            let added = try add(contentsOf: [keyItem])
            return Identity(certificate: existing, privateKey: added[0])
        }
        let added = try add(contentsOf: [certItem, keyItem])
        return Identity(certificate: added[0], privateKey: added[1])
    }

    /// The stored certificate with the unique key `info` and `attributes` would give a new one.
    private func existingCertificate(_ info: CertificateInfo, attributes: [String: AttributeValue]) throws -> Item? {
        var unique = Keychain.certificateAttributes(info).filter { ["ctyp", "issr", "slnr"].contains($0.key) }
        let defaultGroup = try accessPolicy().defaultGroup
        unique["agrp"] = attributes["agrp"] ?? defaultGroup.map { .string($0) } ?? .data([])
        unique["sync"] = attributes["sync"] ?? .integer(0)
        return try find(Query(.certificate, unique, synchronizable: .any), limit: 1).first
    }

    struct IdentityMatch {
        var certificate: Match
        var key: Match
    }

    /// Certificates and private keys matching `query`, joined by `pkhh` == `klbl`, after the
    /// implicit filters of `matches` (the caller's groups, sync) on both sides. In certificate
    /// order; a certificate with several matching keys gives several identities.
    func identityMatches(_ query: IdentityQuery, limit: Int? = nil) throws -> [IdentityMatch] {
        if let l = limit, l <= 0 { return [] }
        var attributes = query.attributes
        var protection = query.protection
        if let pdmn = attributes.removeValue(forKey: "pdmn") {
            guard case .string(let code) = pdmn, let pc = ProtectionClass(code: code) else {
                throw KeychainError(.param, "'\(pdmn)' is not a protection class; use ak, ck, dk, aku, cku, dku or akpu")
            }
            if let p = protection, p != pc { return [] }
            protection = pc
        }
        let split = try Keychain.splitIdentityAttributes(attributes, common: false)
        var keyAttributes = split.key
        if let kcls = keyAttributes["kcls"], Keychain.givenKeyClass(kcls) != 1 { return [] }
        keyAttributes["kcls"] = .integer(1)
        let sync = query.persistentRef == nil ? query.synchronizable : .any

        let certs = try matches(Query(.certificate, split.certificate, protection: protection,
                                      caseInsensitive: query.caseInsensitive, synchronizable: sync))
        guard !certs.isEmpty else { return [] }
        let keys = try matches(Query(.key, keyAttributes, caseInsensitive: query.caseInsensitive, synchronizable: sync))
        var byLabel: [[UInt8]: [Match]] = [:]
        for k in keys {
            guard let klbl = k.plaintext.attributes["klbl"]?.keyBytes, !klbl.isEmpty else { continue }
            byLabel[klbl, default: []].append(k)
        }
        var out: [IdentityMatch] = []
        for c in certs {
            guard let pkhh = c.plaintext.attributes["pkhh"]?.keyBytes, let pairs = byLabel[pkhh] else { continue }
            for k in pairs {
                if let ref = query.persistentRef,
                   ItemClass.certificate.code + c.id.bytes != ref, ItemClass.key.code + k.id.bytes != ref { continue }
                out.append(IdentityMatch(certificate: c, key: k))
                if let l = limit, out.count >= l { return out }
            }
        }
        return out
    }

    /// Identities (certificate + private key) matching `query`, at most `limit` (nil: all).
    /// - Parameters:
    ///   - includeData: false returns both items with empty `data` and never asks for user
    ///     presence; true returns the certificate's DER and the key's bytes.
    /// - Throws: errSecNoSuchAttr for an attribute of neither class; the errors of `find`.
    public func identities(matching query: IdentityQuery = IdentityQuery(), limit: Int? = nil,
                           includeData: Bool = true, prompt: String? = nil) throws -> [Identity] {
        if let remote { return try remote.identities(self, query, limit: limit, includeData: includeData, prompt: prompt) }
        try store.refresh()
        var out: [Identity] = []
        for m in try identityMatches(query, limit: limit) {
            var cert = makeItem(m.certificate.plaintext, protection: m.certificate.slot.protection, id: m.certificate.id,
                                flags: m.certificate.slot.flags)
            var key = makeItem(m.key.plaintext, protection: m.key.slot.protection, id: m.key.id, flags: m.key.slot.flags)
            if includeData {
                if cert.requiresUserPresence { try authenticate(prompt: prompt) }
                if key.requiresUserPresence { try authenticate(prompt: prompt) }
            } else {
                cert.data = []
                key.data = []
            }
            out.append(Identity(certificate: cert, privateKey: key))
        }
        return out
    }

    /// Changes the certificate and the private key of every identity matching `query`, all in one
    /// transaction: attributes of both schemas (labl, agrp, sync, …) change on both items, the
    /// others on the item whose class has them; `protection` re-encrypts both. `mdat` moves.
    /// - Returns: the number of identities changed.
    /// - Throws: errSecItemNotFound when none match; errSecParam for a derived certificate
    ///   attribute (ctyp, cenc, subj, issr, slnr, skid, pkhh) or the key's `klbl`/`kcls`, which
    ///   hold the identity together; errSecNoSuchAttr; errSecNoAccessForItem;
    ///   errSecDuplicateItem (then nothing changes).
    @discardableResult
    public func updateIdentities(matching query: IdentityQuery, attributes: [String: AttributeValue],
                                 protection: ProtectionClass? = nil) throws -> Int {
        if let remote { return try remote.updateIdentities(self, query, attributes: attributes, protection: protection) }
        let split = try Keychain.splitIdentityAttributes(attributes, common: true)
        for name in split.certificate.keys where Keychain.derivedCertificateAttributes.contains(name) {
            throw KeychainError(.param, "'\(name)' of a certificate is derived from its data and cannot be changed")
        }
        for name in ["kcls", "klbl"] where split.key[name] != nil {
            throw KeychainError(.param, "'\(name)' joins the private key to its certificate and cannot be changed through the identity")
        }
        try checkWritableGroup(attributes, try accessPolicy())
        let certChanges = split.certificate.filter { !Keychain.keychainOwned.contains($0.key) }
        let keyChanges = split.key.filter { !Keychain.keychainOwned.contains($0.key) }
        return try store.withWriteLock {
            let found = try identityMatches(query)
            guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no identity (certificate with its private key) matches the query") }
            let t = Keychain.now()
            var seen = Set<ID16>()
            var mutations: [Mutation] = []
            func put(_ m: Match, _ changes: [String: AttributeValue]) {
                guard seen.insert(m.id).inserted else { return }
                var p = m.plaintext
                p.attributes.merge(changes) { $1 }
                p.attributes["mdat"] = .date(t)
                mutations.append(.put(id: m.id, plaintext: p, protection: protection ?? m.slot.protection, flags: m.slot.flags))
            }
            for m in found {
                put(m.certificate, certChanges)
                put(m.key, keyChanges)
            }
            try store.commit(mutations)
            return found.count
        }
    }

    /// Deletes the certificate and the private key of every identity matching `query`, all in
    /// one transaction (a certificate shared by several matching keys is deleted once).
    /// - Returns: the number of identities deleted. - Throws: errSecItemNotFound when none match.
    @discardableResult
    public func deleteIdentities(matching query: IdentityQuery = IdentityQuery()) throws -> Int {
        if let remote { return try remote.deleteIdentities(self, query) }
        return try store.withWriteLock {
            let found = try identityMatches(query)
            guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no identity (certificate with its private key) matches the query") }
            var seen = Set<ID16>()
            var mutations: [Mutation] = []
            for m in found {
                for id in [m.certificate.id, m.key.id] where seen.insert(id).inserted {
                    mutations.append(.delete(id))
                }
            }
            try store.commit(mutations)
            return found.count
        }
    }
}

private func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
}
