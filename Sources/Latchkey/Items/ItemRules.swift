#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LatchkeyFormat

/// The rules every backend applies to the items it is given, whatever path brought them
/// (the typed API, LatchkeySecurity, the agent's wire): which names a class has, which
/// attributes only the keychain sets, how large an item may be, and the clock that dates it.
///
/// They sit below the backends so that a backend never calls up into the `Keychain` facade,
/// and so that the agent, which holds backends, applies exactly the rules of a direct open.
package enum ItemRules {
    /// Attributes the keychain sets itself and callers cannot.
    static let keychainOwned: Set<String> = ["cdat", "mdat", "pdmn"]

    /// The time written into `cdat` and `mdat` (seconds since 2001-01-01, as Apple's keychain).
    static func now() -> Double { Date().timeIntervalSinceReferenceDate }

    /// Refuses, before anything is sent or written, an item whose given attributes and data are
    /// already over the size limit of spec §6.4 (the engine checks the final item again).
    /// Apple's rule for synchronizable items (reference §5.11): they can be neither
    /// ThisDeviceOnly nor guarded by user presence, since they are meant to leave this machine.
    /// - Throws: errSecParam, naming what to change.
    static func checkSynchronizable(
        _ attributes: [String: AttributeValue], protection: ProtectionClass, userPresence: Bool
    ) throws {
        guard attributes["sync"] == .integer(1) else { return }
        if protection.isThisDeviceOnly {
            throw KeychainError(
                .param,
                "a synchronizable item cannot have a ThisDeviceOnly protection class (\(protection.code)); use \(ProtectionClass(rawValue: min(protection.rawValue - 3, 8))?.code ?? "ak"), or make it not synchronizable"
            )
        }
        if userPresence {
            throw KeychainError(
                .param, "a synchronizable item cannot require user presence; drop one or the other")
        }
    }

    static func checkSize(_ p: ItemPlaintext) throws {
        let size = p.encodedSize
        if size > FormatConstants.maxItemPlaintextSize {
            throw KeychainError.tooLarge(size: size, limit: FormatConstants.maxItemPlaintextSize)
        }
    }

    /// `checkSize` for the attributes and data a caller gave for an item of class `c`.
    static func checkSize(_ c: ItemClass, attributes: [String: AttributeValue], data: [UInt8]) throws {
        try checkSize(ItemPlaintext(itemClass: c, attributes: attributes, data: data))
    }

    /// Checks that every attribute exists in the class (errSecNoSuchAttr, −25303).
    static func validateNames(_ attributes: [String: AttributeValue], _ c: ItemClass) throws {
        for name in attributes.keys where ItemSchema.kind(name, in: c) == nil {
            throw KeychainError(.noSuchAttr, "'\(name)' is not an attribute of class \(c.rawValue)" + hint(name, c))
        }
    }

    /// What the caller probably meant by an attribute name the class does not have: the code
    /// of the constant it names (`account` → `acct`), or the classes that do have that code.
    static func hint(_ name: String, _ c: ItemClass) -> String {
        if let s = AttributeKey.suggestion(for: name), ItemSchema.kind(s.key.rawValue, in: c) != nil {
            return
                "; attributes are named by Apple's four-character codes: did you mean '\(s.key.rawValue)' (AttributeKey.\(s.name))?"
        }
        let owners = ItemClass.allCases.filter { ItemSchema.kind(name, in: $0) != nil }.map(\.rawValue)
        if !owners.isEmpty {
            return " (it is one of \(owners.joined(separator: ", ")))"
        }
        return ""
    }

    /// Splits identity attributes: the certificate gets those of the cert schema, the key those
    /// of the keys schema that the cert schema does not have; with `common`, attributes of both
    /// schemas (agrp, labl, sync, …) go to both. - Throws: errSecNoSuchAttr for any other name.
    static func splitIdentityAttributes(_ attributes: [String: AttributeValue], common: Bool) throws
        -> (certificate: [String: AttributeValue], key: [String: AttributeValue])
    {
        var cert: [String: AttributeValue] = [:]
        var key: [String: AttributeValue] = [:]
        for (name, value) in attributes {
            let inCert = ItemSchema.kind(name, in: .certificate) != nil
            let inKey = ItemSchema.kind(name, in: .key) != nil
            if inCert { cert[name] = value }
            if inKey && (!inCert || common) { key[name] = value }
            if !inCert && !inKey {
                throw KeychainError(
                    .noSuchAttr, "'\(name)' is an attribute of neither certificates nor keys, so not of identities")
            }
        }
        return (cert, key)
    }

    // MARK: Unique keys

    /// The query that finds exactly the item `given` collides with: every unique-key attribute
    /// (spec/FORMAT.md §7.5), with the value `add` would store — the given one, the caller's
    /// default access group, or the class default.
    static func uniqueKeyQuery(of given: NewItem, _ context: CallContext) throws -> Query {
        let item = try DerivedAttributes.derivingAttributes(given)
        let policy = try AccessPolicy(caller: context.caller)
        var attrs: [String: AttributeValue] = [:]
        for attribute in UniqueKey.attributes(for: given.itemClass) where attribute.name != "sync" {
            if let value = item.attributes[attribute.name] {
                attrs[attribute.name] = value
            } else if attribute.name == "agrp", let group = policy.defaultGroup {
                attrs["agrp"] = .string(group)
            } else if let value = ItemSchema.defaultValue(attribute.name, given.itemClass) {
                attrs[attribute.name] = value
            }
        }
        let sync: SyncFilter = item.attributes["sync"] == .integer(1) ? .synchronizable : .notSynchronizable
        return Query(given.itemClass, attrs, synchronizable: sync)
    }
}
