#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The three entitlements `CallerIdentity` reads from an Entitlements.plist (XML or binary,
/// through FoundationEssentials' PropertyListDecoder); every other key is ignored, whatever
/// its type.
struct EntitlementsPlist: Decodable {
    var applicationIdentifier: String?
    var keychainAccessGroups: [String]
    var applicationGroups: [String]

    /// A property list of the wrong shape (as opposed to bytes that are no property list).
    struct ShapeError: Error {
        let message: String
    }

    private struct Key: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: Decoder) throws {
        let dict: KeyedDecodingContainer<Key>
        do {
            dict = try decoder.container(keyedBy: Key.self)
        } catch {
            throw ShapeError(message: "the entitlements property list must be a dictionary")
        }
        func strings(_ name: String) throws -> [String] {
            let key = Key(name)
            guard dict.contains(key) else { return [] }
            guard let list = try? dict.decode([String].self, forKey: key) else {
                throw ShapeError(message: "\(name) in the entitlements must be an array of strings")
            }
            return list
        }
        keychainAccessGroups = try strings("keychain-access-groups")
        applicationGroups = try strings("com.apple.security.application-groups")
        let appID = Key("application-identifier")
        if dict.contains(appID) {
            guard let s = try? dict.decode(String.self, forKey: appID) else {
                throw ShapeError(message: "application-identifier in the entitlements must be a string")
            }
            applicationIdentifier = s
        } else {
            applicationIdentifier = nil
        }
    }
}
