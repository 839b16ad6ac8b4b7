import LatchkeyFormat

/// Identities: a join of two planned queries, certificates and private keys.
extension QueryPlanner {
    struct IdentityMatch {
        var certificate: Match
        var key: Match
    }

    /// Certificates and private keys matching `query`, joined by `pkhh` == `klbl`, after the
    /// implicit filters of `matches` (the caller's groups, sync) on both sides. In certificate
    /// order; a certificate with several matching keys gives several identities.
    func identityMatches(_ query: IdentityQuery, _ context: CallContext, limit: Int? = nil) throws -> [IdentityMatch] {
        if let l = limit, l <= 0 { return [] }
        var attributes = query.attributes
        var protection = query.protection
        if let pdmn = attributes.removeValue(forKey: "pdmn") {
            guard case .string(let code) = pdmn, let pc = ProtectionClass(code: code) else {
                throw KeychainError(
                    .param, "'\(pdmn)' is not a protection class; use ak, ck, dk, aku, cku, dku or akpu")
            }
            if let p = protection, p != pc { return [] }
            protection = pc
        }
        let split = try ItemRules.splitIdentityAttributes(attributes, common: false)
        var keyAttributes = split.key
        if let kcls = keyAttributes["kcls"], DerivedAttributes.givenKeyClass(kcls) != 1 { return [] }
        keyAttributes["kcls"] = .integer(1)
        let sync = query.persistentRef == nil ? query.synchronizable : .any

        let certs = try matches(
            Query(
                .certificate, split.certificate, protection: protection,
                caseInsensitive: query.caseInsensitive, synchronizable: sync), context)
        guard !certs.isEmpty else { return [] }
        let keys = try matches(
            Query(.key, keyAttributes, caseInsensitive: query.caseInsensitive, synchronizable: sync), context)
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
                    ItemClass.certificate.code + c.id.bytes != ref, ItemClass.key.code + k.id.bytes != ref
                {
                    continue
                }
                out.append(IdentityMatch(certificate: c, key: k))
                if let l = limit, out.count >= l { return out }
            }
        }
        return out
    }
}
