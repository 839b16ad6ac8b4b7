#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Who is calling: an application-identifier, its keychain-access-groups and its application
/// groups, as an Entitlements.plist gives them. The access groups it may use are, in iOS's
/// order (reference §6.1), the keychain-access-groups, then the application-identifier, then the
/// application groups (`com.apple.security.application-groups`, iOS 8 and later), so an item in
/// `group.example.shared` is shared by every app of that group.
///
/// On Linux this is a convention, not a security boundary: same-user code can claim any
/// identity (spec/SECURITY.md).
public struct CallerIdentity: Sendable, Equatable, CustomStringConvertible {
    public var applicationIdentifier: String?
    public var keychainAccessGroups: [String]
    /// The `com.apple.security.application-groups` entitlement (`group.…` names), appended to
    /// the access groups after the application-identifier.
    public var applicationGroups: [String]

    public init(applicationIdentifier: String?, keychainAccessGroups: [String] = [], applicationGroups: [String] = []) {
        self.applicationIdentifier = applicationIdentifier
        self.keychainAccessGroups = keychainAccessGroups
        self.applicationGroups = applicationGroups
    }

    /// The identity of an unsigned app on the old iOS simulator, whose only group was `test`
    /// (reference §6.4).
    public static let simulator = CallerIdentity(applicationIdentifier: nil, keychainAccessGroups: ["test"])

    /// The groups this caller may read and write, in order: the default group first. Groups are
    /// their UTF-8 bytes (AccessPolicy): two spellings that differ only in Unicode normalization
    /// are two groups, both kept.
    public var accessGroups: [String] {
        var out: [String] = []
        for g in keychainAccessGroups + [applicationIdentifier].compactMap({ $0 }) + applicationGroups
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
        func same(_ x: [String], _ y: [String]) -> Bool {
            x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
        }
        return same(a.applicationIdentifier, b.applicationIdentifier)
            && same(a.keychainAccessGroups, b.keychainAccessGroups)
            && same(a.applicationGroups, b.applicationGroups)
    }

    /// The group an item is added to when the caller names none (reference §6.2): the first
    /// keychain-access-groups entry, else the application-identifier (an application group only
    /// when the caller has nothing else).
    public var defaultAccessGroup: String? { accessGroups.first }

    public var description: String {
        "CallerIdentity(app-id: \(applicationIdentifier ?? "none"), groups: \(accessGroups))"
    }

    /// Reads `application-identifier`, `keychain-access-groups` and
    /// `com.apple.security.application-groups` from an Entitlements.plist (XML or binary); other
    /// entitlements are ignored. `fallbackApplicationIdentifier` is used when the plist has no
    /// application-identifier. The CLI (`--entitlements`, LATCHKEY_ENTITLEMENTS), LatchkeySecurity
    /// and, through them, the agent all read entitlements here.
    /// - Throws: errSecParam when the file is not a property-list dictionary of that shape.
    public init(entitlementsPlist data: Data, fallbackApplicationIdentifier: String? = nil) throws {
        let plist: EntitlementsPlist
        do {
            plist = try PropertyListDecoder().decode(EntitlementsPlist.self, from: data)
        } catch let shape as EntitlementsPlist.ShapeError {
            throw KeychainError(.param, shape.message)
        } catch {
            throw KeychainError(
                .param, "the entitlements file is not a property list (XML or binary)", underlying: "\(error)")
        }
        self.init(
            applicationIdentifier: plist.applicationIdentifier ?? fallbackApplicationIdentifier,
            keychainAccessGroups: plist.keychainAccessGroups, applicationGroups: plist.applicationGroups)
    }

    /// The identity the environment describes (docs/CLI.md): LATCHKEY_ENTITLEMENTS names a
    /// plist; LATCHKEY_APP_ID (default `latchkey.cli`) is the application-identifier when the
    /// plist gives none.
    public static func fromEnvironment(_ env: [String: String] = ProcessInfo.processInfo.environment) throws
        -> CallerIdentity
    {
        try KeychainEnvironment(env).caller()
    }
}
