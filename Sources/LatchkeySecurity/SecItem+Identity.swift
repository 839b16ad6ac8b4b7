import Foundation
import Latchkey

/// The SecItem function called.
enum SecItemOperation: Sendable {
    case add, copyMatching, update, delete

    /// The rules its (first) dictionary is read by.
    var call: SecItemCall {
        switch self {
        case .add: return .add
        case .copyMatching: return .copyMatching
        case .update: return .updateQuery
        case .delete: return .delete
        }
    }
}

/// SecItem calls whose kSecClass is kSecClassIdentity (`idnt`), or whose kSecValueRef is a
/// `SecIdentity`.
///
/// An identity is not stored: it is a certificate and a private key joined by public-key hash
/// (reference §1.1), so adding one adds both items, a query joins them, and deleting one
/// deletes both — each in one transaction (`Keychain.addIdentity`, `identities(matching:)`,
/// `updateIdentities`, `deleteIdentities`).
///
/// * **Attributes** are looked up in the certificate schema first, then in the keys schema:
///   common ones (kSecAttrLabel, kSecAttrAccessGroup, kSecAttrSynchronizable, …) filter the
///   certificate and key-only ones (kSecAttrApplicationTag, kSecAttrKeyType, …) the key. On add
///   and update, common attributes go to both items. Other attribute keys → errSecNoSuchAttr.
/// * **Add** needs kSecValueRef with a `SecIdentity`.
/// * **Results** (reference §5.4) are those of the private key, "an identity being first of all
///   its key": kSecReturnData gives the key's data, kSecReturnPersistentRef the key's persistent
///   reference, kSecReturnAttributes the key's attributes plus the certificate's own (ctyp,
///   cenc, subj, issr, slnr, skid, pkhh); kSecReturnRef gives a `SecIdentity`.
/// * **kSecValuePersistentRef** (alone) finds the identity of that certificate or key.
///
/// - Parameters:
///   - operation: which SecItem function was called.
///   - entries: its dictionary (the query for update), normalised.
///   - attributesToUpdate: the new values of SecItemUpdate, else nil.
///   - result: the result pointer of SecItemAdd / SecItemCopyMatching, else nil.
/// - Returns: the OSStatus of the call, with the statuses of the stored classes' calls.
func identityCall(
    _ operation: SecItemOperation, _ entries: [String: SecValue],
    _ attributesToUpdate: [String: SecValue]?, _ result: UnsafeMutablePointer<CFTypeRef?>?
) -> OSStatus {
    result?.pointee = nil
    let config = LatchkeySecurityConfiguration.current
    let request: SecIdentityRequest
    do {
        request = try SecIdentityRequest(entries, call: operation.call)
    } catch {
        return config.record(error)
    }
    switch operation {
    case .add: return identityAdd(request, result, config)
    case .copyMatching: return identityCopyMatching(request, result, config)
    case .update: return identityUpdate(request, attributesToUpdate ?? [:], config)
    case .delete:
        return config.perform { kc in try kc.deleteIdentities(matching: request.query) }.status
    }
}

/// An identity dictionary read as a certificate request (cert-schema attributes and every
/// non-attribute key, checked by the rules of `call`) and a key request (key-only attributes;
/// on add, common attributes as well).
struct SecIdentityRequest {
    var certificate: SecItemRequest
    var key: SecItemRequest
    var reference: SecIdentity?

    /// Attributes that are not in the class tables but every class takes.
    static let everyClass: Set<String> = ["pdmn", "accc", "sync", "nleg"]

    /// Whether the attribute `key` belongs to certificates, to keys, or to both.
    /// - Throws: errSecNoSuchAttr for an attribute of neither.
    static func classes(of key: String) throws -> (certificate: Bool, key: Bool) {
        let common = everyClass.contains(key)
        let inCert = common || ItemSchema.kind(key, in: .certificate) != nil
        let inKey = common || ItemSchema.kind(key, in: .key) != nil
        guard inCert || inKey else {
            throw SecFailure.noSuchAttr(
                "'\(key)' is an attribute of neither certificates nor keys, so not of identities")
        }
        return (inCert, inKey)
    }

    init(_ entries: [String: SecValue], call: SecItemCall) throws {
        var certEntries: [String: SecValue] = [:]
        var keyEntries: [String: SecValue] = [:]
        for key in entries.keys.sorted() {
            let value = entries[key]!
            if key == "v_Ref" {
                guard case .ref(let object) = value, let identity = object as? SecIdentity else {
                    throw SecFailure.param("kSecValueRef of an identity must be a SecIdentity, not \(value.typeName)")
                }
                reference = identity
                continue
            }
            guard key.count == 4 else {
                certEntries[key] = value
                continue
            }
            let (inCert, inKey) = try SecIdentityRequest.classes(of: key)
            if inCert { certEntries[key] = value }
            if inKey && (!inCert || call == .add) { keyEntries[key] = value }
        }
        certificate = try SecItemRequest(certEntries, itemClass: .certificate, call: call)
        key = try SecItemRequest(keyEntries, itemClass: .key, call: call)
        if call == .add {
            guard reference != nil else {
                throw SecFailure.param("SecItemAdd of an identity needs kSecValueRef with a SecIdentity")
            }
        } else if let ref = reference {
            if certificate.persistentRef != nil {
                throw SecFailure.param("a query with kSecValuePersistentRef may not have other filters (kSecValueRef)")
            }
            // The identity of that certificate; the client's own attributes win.
            let info = ref.certificate.info
            for (name, value) in Keychain.certificateAttributes(info)
            where ["ctyp", "issr", "slnr", "pkhh"].contains(name) {
                if certificate.attributes[name] == nil { certificate.attributes[name] = value }
            }
            if key.attributes["klbl"] == nil, let label = ref.privateKey.info?.publicKeyHash {
                key.attributes["klbl"] = .data(label)
            }
        }
    }

    /// The typed query: both requests' filters, the certificate request's options.
    var query: IdentityQuery {
        IdentityQuery(
            certificate.attributes.merging(key.attributes) { c, _ in c },
            protection: certificate.protection, caseInsensitive: certificate.caseInsensitive,
            synchronizable: certificate.synchronizable, persistentRef: certificate.persistentRef)
    }
}

private func identityAdd(
    _ request: SecIdentityRequest, _ result: UnsafeMutablePointer<CFTypeRef?>?,
    _ config: LatchkeySecurityConfiguration
) -> OSStatus {
    let identity = request.reference!
    let attributes = request.certificate.attributes.merging(request.key.attributes) { c, _ in c }
    let outcome = config.perform { kc in
        try kc.addIdentity(
            certificate: identity.certificate.info.der, privateKey: identity.privateKey.data,
            attributes: attributes, protection: request.certificate.protection,
            requiresUserPresence: request.certificate.requiresUserPresence)
    }
    return outcome.status(setting: result) { SecIdentityResult.object(for: $0, returns: request.certificate.returns) }
}

private func identityCopyMatching(
    _ request: SecIdentityRequest, _ result: UnsafeMutablePointer<CFTypeRef?>?,
    _ config: LatchkeySecurityConfiguration
) -> OSStatus {
    let r = request.certificate
    let limit = r.limit ?? .one
    let includeData = r.returns.data || r.returns.ref
    let outcome = config.perform(authenticationUI: r.authenticationUI) { kc -> [Identity] in
        guard limit.fetchLimit != 0 else { throw KeychainError(.itemNotFound, "no identity matches the query") }
        var found: [Identity]
        if includeData && r.authenticationUI == .skip {
            // Leave out the identities whose key would ask for user presence.
            found = []
            for candidate in try kc.identities(matching: request.query, includeData: false)
            where !candidate.privateKey.requiresUserPresence && !candidate.certificate.requiresUserPresence {
                let cert = try kc.find(
                    Query(.certificate, persistentRef: candidate.certificate.persistentRef), limit: 1)
                let key = try kc.find(Query(.key, persistentRef: candidate.privateKey.persistentRef), limit: 1)
                if let c = cert.first, let k = key.first { found.append(Identity(certificate: c, privateKey: k)) }
                if let l = limit.fetchLimit, found.count >= l { break }
            }
        } else {
            found = try kc.identities(
                matching: request.query, limit: limit.fetchLimit, includeData: includeData, prompt: r.prompt)
        }
        guard !found.isEmpty else {
            throw KeychainError(.itemNotFound, "no identity (certificate with its private key) matches the query")
        }
        return found
    }
    return outcome.status(setting: result) { SecIdentityResult.object(for: $0, returns: r.returns, limit: limit) }
}

private func identityUpdate(
    _ request: SecIdentityRequest, _ attributesToUpdate: [String: SecValue],
    _ config: LatchkeySecurityConfiguration
) -> OSStatus {
    let attributes: [String: AttributeValue]
    let protection: ProtectionClass?
    do {
        var certEntries: [String: SecValue] = [:]
        var keyEntries: [String: SecValue] = [:]
        for key in attributesToUpdate.keys.sorted() {
            let value = attributesToUpdate[key]!
            if key == "v_Data" {
                throw SecFailure.param(
                    "the data of an identity cannot be changed; delete the identity and add the new one")
            }
            guard key.count == 4 else {
                certEntries[key] = value  // SecItemChanges gives the status for it
                continue
            }
            if try SecIdentityRequest.classes(of: key).certificate {
                certEntries[key] = value
            } else {
                keyEntries[key] = value
            }
        }
        let cert = try SecItemChanges(certEntries, itemClass: .certificate)
        let key = try SecItemChanges(keyEntries, itemClass: .key)
        attributes = cert.attributes.merging(key.attributes) { c, _ in c }
        protection = cert.protection
    } catch {
        return config.record(error)
    }
    return config.perform { kc in
        try kc.updateIdentities(matching: request.query, attributes: attributes, protection: protection)
    }.status
}

/// Result shapes of identity queries (reference §5.4), from the private key's side.
enum SecIdentityResult {
    /// Attributes of the certificate that an identity's attribute dictionary adds to the key's.
    static let certificateOnly = ["ctyp", "cenc", "subj", "issr", "slnr", "skid", "pkhh"]

    static func attributes(of identity: Identity) -> NSMutableDictionary {
        let dict = SecItemResult.attributes(of: identity.privateKey)
        for name in certificateOnly {
            if let v = identity.certificate.attributes[name] {
                dict.setObject(SecItemResult.object(for: v), forKey: NSString(string: name))
            }
        }
        return dict
    }

    static func object(for identity: Identity, returns: SecReturns) -> AnyObject? {
        SecItemResult.object(
            returns: returns, data: identity.privateKey.data, persistentRef: identity.privateKey.persistentRef,
            attributes: { attributes(of: identity) }, reference: { SecIdentity(identity) })
    }

    static func object(for identities: [Identity], returns: SecReturns, limit: SecMatchLimit) -> AnyObject? {
        SecItemResult.object(for: identities, returns: returns, limit: limit) { object(for: $0, returns: returns) }
    }
}
