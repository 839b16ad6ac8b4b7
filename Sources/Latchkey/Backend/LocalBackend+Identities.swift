import LatchkeyCrypto
import LatchkeyFormat

extension LocalBackend {
    package func addIdentity(
        certificate: [UInt8], privateKey: [UInt8], attributes: [String: AttributeValue],
        protection: ProtectionClass?, requiresUserPresence: Bool, _ context: CallContext
    ) throws -> Identity {
        let cert = try DerivedAttributes.parseCertificate(certificate)
        let key: KeyInfo
        do {
            key = try KeyInfo(data: privateKey)
        } catch {
            throw KeychainError(
                .param, "the private key of an identity must be a DER private key (PKCS#8, PKCS#1 or SEC1)",
                underlying: "\(error)")
        }
        guard key.isPrivate else {
            throw KeychainError(
                .param,
                "the key given for the identity is a public key; an identity needs the certificate's private key")
        }
        guard key.publicKeyHash == cert.publicKeyHash else {
            throw KeychainError(
                .param,
                "the private key does not belong to the certificate: the key's public key hash \(hexString(key.publicKeyHash)) is not the certificate's \(hexString(cert.publicKeyHash))"
            )
        }
        let split = try ItemRules.splitIdentityAttributes(attributes, common: true)
        var keyAttributes = split.key
        // The join column must hold the hash, whatever else the caller asked for.
        keyAttributes["kcls"] = .integer(1)
        keyAttributes["klbl"] = .data(key.publicKeyHash)

        let certItem = NewItem(.certificate, attributes: split.certificate, data: certificate, protection: protection)
        let keyItem = NewItem(
            .key, attributes: keyAttributes, data: privateKey, protection: protection,
            requiresUserPresence: requiresUserPresence)
        if let existing = try existingCertificate(cert, attributes: split.certificate, context),
            existing.data == certificate
        {
            let added = try add([keyItem], context)
            return Identity(certificate: existing, privateKey: added[0])
        }
        let added = try add([certItem, keyItem], context)
        return Identity(certificate: added[0], privateKey: added[1])
    }

    /// The stored certificate with the unique key `info` and `attributes` would give a new one.
    private func existingCertificate(
        _ info: CertificateInfo, attributes: [String: AttributeValue],
        _ context: CallContext
    ) throws -> Item? {
        var unique = DerivedAttributes.certificateAttributes(info).filter { ["ctyp", "issr", "slnr"].contains($0.key) }
        let defaultGroup = try AccessPolicy(caller: context.caller).defaultGroup
        unique["agrp"] = attributes["agrp"] ?? defaultGroup.map { .string($0) } ?? .data([])
        unique["sync"] = attributes["sync"] ?? .integer(0)
        return try find(
            Query(.certificate, unique, synchronizable: .any), limit: 1, includeData: true, prompt: nil, context
        ).first
    }

    package func identities(
        _ query: IdentityQuery, limit: Int?, includeData: Bool, prompt: String?,
        _ context: CallContext
    ) throws -> [Identity] {
        try store.refresh()
        var out: [Identity] = []
        for m in try planner.identityMatches(query, context, limit: limit) {
            var cert = makeItem(
                m.certificate.plaintext, protection: m.certificate.slot.protection, id: m.certificate.id,
                flags: m.certificate.slot.flags)
            var key = makeItem(
                m.key.plaintext, protection: m.key.slot.protection, id: m.key.id, flags: m.key.slot.flags)
            if includeData {
                if cert.requiresUserPresence { try authenticate(context, prompt: prompt) }
                if key.requiresUserPresence { try authenticate(context, prompt: prompt) }
            } else {
                cert.data = []
                key.data = []
            }
            out.append(Identity(certificate: cert, privateKey: key))
        }
        return out
    }

    package func updateIdentities(
        _ query: IdentityQuery, attributes: [String: AttributeValue], protection: ProtectionClass?,
        _ context: CallContext
    ) throws -> Int {
        let split = try ItemRules.splitIdentityAttributes(attributes, common: true)
        for name in split.certificate.keys where DerivedAttributes.certificateNames.contains(name) {
            throw KeychainError(.param, "'\(name)' of a certificate is derived from its data and cannot be changed")
        }
        for name in ["kcls", "klbl"] where split.key[name] != nil {
            throw KeychainError(
                .param, "'\(name)' joins the private key to its certificate and cannot be changed through the identity")
        }
        try LocalBackend.checkWritableGroup(attributes, try AccessPolicy(caller: context.caller))
        let certChanges = split.certificate.filter { !ItemRules.keychainOwned.contains($0.key) }
        let keyChanges = split.key.filter { !ItemRules.keychainOwned.contains($0.key) }
        return try store.write { tx in
            let found = try planner.identityMatches(query, context)
            guard !found.isEmpty else {
                throw KeychainError(.itemNotFound, "no identity (certificate with its private key) matches the query")
            }
            let t = ItemRules.now()
            var seen = Set<ID16>()
            var mutations: [Mutation] = []
            func put(_ m: Match, _ changes: [String: AttributeValue]) {
                guard seen.insert(m.id).inserted else { return }
                var p = m.plaintext
                p.attributes.merge(changes) { $1 }
                p.attributes["mdat"] = .date(t)
                mutations.append(
                    .put(id: m.id, plaintext: p, protection: protection ?? m.slot.protection, flags: m.slot.flags))
            }
            for m in found {
                put(m.certificate, certChanges)
                put(m.key, keyChanges)
            }
            try tx.commit(mutations)
            return found.count
        }
    }

    package func deleteIdentities(_ query: IdentityQuery, _ context: CallContext) throws -> Int {
        try store.write { tx in
            let found = try planner.identityMatches(query, context)
            guard !found.isEmpty else {
                throw KeychainError(.itemNotFound, "no identity (certificate with its private key) matches the query")
            }
            var seen = Set<ID16>()
            var mutations: [Mutation] = []
            for m in found {
                for id in [m.certificate.id, m.key.id] where seen.insert(id).inserted {
                    mutations.append(.delete(id))
                }
            }
            try tx.commit(mutations)
            return found.count
        }
    }
}
