import Foundation

/// Who is calling: an application-identifier and its keychain-access-groups, as the seeds
/// describe (an Entitlements.plist may supply both). The access groups it may use are the
/// keychain-access-groups in order, then the application-identifier (reference §6.1).
///
/// On Linux this is a convention, not a security boundary: same-user code can claim any
/// identity (spec/SECURITY.md).
public struct CallerIdentity: Sendable, Equatable, CustomStringConvertible {
    public var applicationIdentifier: String?
    public var keychainAccessGroups: [String]

    public init(applicationIdentifier: String?, keychainAccessGroups: [String] = []) {
        self.applicationIdentifier = applicationIdentifier
        self.keychainAccessGroups = keychainAccessGroups
    }

    /// The identity of an unsigned app on the old iOS simulator, whose only group was `test`
    /// (reference §6.4).
    public static let simulator = CallerIdentity(applicationIdentifier: nil, keychainAccessGroups: ["test"])

    /// The groups this caller may read and write, in order: the default group first. Groups are
    /// their UTF-8 bytes (AccessPolicy): two spellings that differ only in Unicode normalization
    /// are two groups, both kept.
    public var accessGroups: [String] {
        var out: [String] = []
        for g in keychainAccessGroups + [applicationIdentifier].compactMap({ $0 })
        where !g.isEmpty && !out.contains(where: { $0.utf8.elementsEqual(g.utf8) }) {
            out.append(g)
        }
        return out
    }

    /// Two identities are the same when their application-identifiers and groups have the same
    /// bytes (String's `==` is canonical equivalence, which groups are not compared by).
    public static func == (a: CallerIdentity, b: CallerIdentity) -> Bool {
        func same(_ x: String?, _ y: String?) -> Bool {
            switch (x, y) {
            case (nil, nil): return true
            case (let x?, let y?): return x.utf8.elementsEqual(y.utf8)
            default: return false
            }
        }
        return same(a.applicationIdentifier, b.applicationIdentifier)
            && a.keychainAccessGroups.count == b.keychainAccessGroups.count
            && zip(a.keychainAccessGroups, b.keychainAccessGroups).allSatisfy { same($0, $1) }
    }

    /// The group an item is added to when the caller names none (reference §6.2): the first
    /// keychain-access-groups entry, else the application-identifier.
    public var defaultAccessGroup: String? { accessGroups.first }

    public var description: String {
        "CallerIdentity(app-id: \(applicationIdentifier ?? "none"), groups: \(accessGroups))"
    }

    /// Reads `application-identifier` and `keychain-access-groups` from an Entitlements.plist
    /// (XML or binary). `fallbackApplicationIdentifier` is used when the plist has none.
    /// - Throws: errSecParam when the file is not a property-list dictionary of that shape.
    public init(entitlementsPlist data: Data, fallbackApplicationIdentifier: String? = nil) throws {
        let object: Any
        do {
            object = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        } catch {
            throw KeychainError(.param, "the entitlements file is not a property list (XML or binary)", underlying: "\(error)")
        }
        guard let dict = object as? [String: Any] else {
            throw KeychainError(.param, "the entitlements property list must be a dictionary")
        }
        var groups: [String] = []
        if let raw = dict["keychain-access-groups"] {
            guard let list = raw as? [Any], list.allSatisfy({ $0 is String }) else {
                throw KeychainError(.param, "keychain-access-groups in the entitlements must be an array of strings")
            }
            groups = list.map { $0 as! String }
        }
        var appID = fallbackApplicationIdentifier
        if let raw = dict["application-identifier"] {
            guard let s = raw as? String else {
                throw KeychainError(.param, "application-identifier in the entitlements must be a string")
            }
            appID = s
        }
        self.init(applicationIdentifier: appID, keychainAccessGroups: groups)
    }

    /// The identity the environment describes (docs/CLI.md): LATCHKEY_ENTITLEMENTS names a
    /// plist; LATCHKEY_APP_ID (default `latchkey.cli`) is the application-identifier when the
    /// plist gives none.
    public static func fromEnvironment(_ env: [String: String] = ProcessInfo.processInfo.environment) throws -> CallerIdentity {
        let appID = env["LATCHKEY_APP_ID"].flatMap { $0.isEmpty ? nil : $0 } ?? "latchkey.cli"
        if let path = env["LATCHKEY_ENTITLEMENTS"], !path.isEmpty {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw KeychainError(.io, "cannot read the entitlements file \(path) (LATCHKEY_ENTITLEMENTS)")
            }
            return try CallerIdentity(entitlementsPlist: data, fallbackApplicationIdentifier: appID)
        }
        return CallerIdentity(applicationIdentifier: appID)
    }
}
