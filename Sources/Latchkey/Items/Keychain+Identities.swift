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

    public init(
        _ attributes: [String: AttributeValue] = [:], protection: ProtectionClass? = nil,
        caseInsensitive: Bool = false, synchronizable: SyncFilter = .notSynchronizable,
        persistentRef: [UInt8]? = nil
    ) {
        self.attributes = attributes
        self.protection = protection
        self.caseInsensitive = caseInsensitive
        self.synchronizable = synchronizable
        self.persistentRef = persistentRef
    }
}

extension Keychain {
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
    public func addIdentity(
        certificate: [UInt8], privateKey: [UInt8], attributes: [String: AttributeValue] = [:],
        protection: ProtectionClass? = nil, requiresUserPresence: Bool = false
    ) throws -> Identity {
        try addIdentity(
            certificate: certificate, privateKey: privateKey, attributes: attributes, protection: protection,
            requiresUserPresence: requiresUserPresence, context: context)
    }

    @discardableResult
    package func addIdentity(
        certificate: [UInt8], privateKey: [UInt8], attributes: [String: AttributeValue] = [:],
        protection: ProtectionClass? = nil, requiresUserPresence: Bool = false,
        context: CallContext
    ) throws -> Identity {
        try openBackend().addIdentity(
            certificate: certificate, privateKey: privateKey, attributes: attributes,
            protection: protection, requiresUserPresence: requiresUserPresence, context)
    }

    /// Identities (certificate + private key) matching `query`, at most `limit` (nil: all).
    /// - Parameters:
    ///   - query: attributes of the certificate or of the key that must match.
    ///   - limit: the most identities returned; nil for all.
    ///   - prompt: shown by the authentication handler for user-presence items.
    ///   - includeData: false returns both items with empty `data` and never asks for user
    ///     presence; true returns the certificate's DER and the key's bytes.
    /// - Throws: errSecNoSuchAttr for an attribute of neither class; the errors of `find`.
    public func identities(
        matching query: IdentityQuery = IdentityQuery(), limit: Int? = nil,
        includeData: Bool = true, prompt: String? = nil
    ) throws -> [Identity] {
        try identities(matching: query, limit: limit, includeData: includeData, prompt: prompt, context: context)
    }

    package func identities(
        matching query: IdentityQuery = IdentityQuery(), limit: Int? = nil,
        includeData: Bool = true, prompt: String? = nil, context: CallContext
    ) throws -> [Identity] {
        try openBackend().identities(query, limit: limit, includeData: includeData, prompt: prompt, context)
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
    public func updateIdentities(
        matching query: IdentityQuery, attributes: [String: AttributeValue],
        protection: ProtectionClass? = nil
    ) throws -> Int {
        try updateIdentities(matching: query, attributes: attributes, protection: protection, context: context)
    }

    @discardableResult
    package func updateIdentities(
        matching query: IdentityQuery, attributes: [String: AttributeValue],
        protection: ProtectionClass? = nil, context: CallContext
    ) throws -> Int {
        try openBackend().updateIdentities(query, attributes: attributes, protection: protection, context)
    }

    /// Deletes the certificate and the private key of every identity matching `query`, all in
    /// one transaction (a certificate shared by several matching keys is deleted once).
    /// - Returns: the number of identities deleted. - Throws: errSecItemNotFound when none match.
    @discardableResult
    public func deleteIdentities(matching query: IdentityQuery = IdentityQuery()) throws -> Int {
        try deleteIdentities(matching: query, context: context)
    }

    @discardableResult
    package func deleteIdentities(matching query: IdentityQuery = IdentityQuery(), context: CallContext) throws -> Int {
        try openBackend().deleteIdentities(query, context)
    }
}
