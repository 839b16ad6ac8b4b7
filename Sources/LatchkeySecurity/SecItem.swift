import Foundation
import Latchkey

// SecItemAdd, SecItemCopyMatching, SecItemUpdate and SecItemDelete with Apple's signatures
// (keychain/headers/SecItem.h), on the keychain of `LatchkeySecurityConfiguration.current`.
// Which keys each call takes, and the status of each mistake, follow reference §5.2 and the
// deliberate differences the LatchkeySecurity documentation lists ("Porting code from iOS"). A failed call changes nothing in the keychain.
// They are `@discardableResult`, as C functions imported from Apple's headers are, so that a
// status left unread (as in seed 002's samples) compiles without a warning there and here.

/// Adds an item, as Apple's `SecItemAdd`.
///
/// ```swift
/// var result: AnyObject?
/// let status = withUnsafeMutablePointer(to: &result) {
///     SecItemAdd([kSecClass as String: kSecClassGenericPassword,
///                 kSecAttrAccount as String: "alice",
///                 kSecValueData as String: Data("s3cret".utf8),
///                 kSecReturnAttributes as String: true] as CFDictionary, UnsafeMutablePointer($0))
/// }
/// ```
/// The keychain sets `cdat`/`mdat` (values given are replaced), `agrp` defaults to the caller's
/// first access group, `sync` to 0, `pdmn` to `ak` (certificates `dk`) or to the protection of
/// kSecAttrAccessControl. kSecAttrAccessControl with user presence makes every later read of
/// the data ask the authentication handler.
///
/// - Parameters:
///   - attributes: kSecClass, item attributes, kSecValueData, kSecReturn… keys, kSecUse… keys.
///   - result: receives the shape the kSecReturn… keys ask for (reference §5.4), or nil.
/// - Returns: errSecSuccess, or
///   - errSecParam (−50): no kSecClass; a value of the wrong type; kSecReturn… not a boolean;
///     kSecValuePersistentRef or kSecValueRef; **any kSecMatch… key** — Apple's daemon returns
///     success without adding anything (an iOS bug, reference §5.2 ‡); Latchkey refuses it,
///     a deliberate fix; kSecAttrAccessible and kSecAttrAccessControl that differ;
///   - errSecNoSuchClass (−25306), errSecNoSuchAttr (−25303) for an attribute the class lacks;
///   - errSecDuplicateItem (−25299); errSecNoAccessForItem (−25243) for an access group the
///     caller may not use; errSecMissingEntitlement (−34018) for a caller without groups;
///   - errSecInteractionNotAllowed (−25308) when the item's class is locked; errSecNotAvailable
///     (−25291) for akpu or user presence on a keychain without passcode, or no keychain;
///   - kSecClassIdentity adds a certificate and its private key as two items (see `identityCall`);
///     errSecParam when the key does not belong to the certificate.
@discardableResult
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    secItemCall(.add, attributes, result) { request, config in
        let outcome = config.perform { kc in
            try kc.add(
                request.itemClass, attributes: request.attributes, data: request.data ?? [],
                protection: request.protection, requiresUserPresence: request.requiresUserPresence)
        }
        return outcome.status(setting: result) { SecItemResult.object(for: $0, returns: request.returns) }
    }
}

/// Finds items, as Apple's `SecItemCopyMatching`.
///
/// ```swift
/// var queryResult: AnyObject?
/// let status = withUnsafeMutablePointer(to: &queryResult) {
///     SecItemCopyMatching([kSecClass as String: kSecClassGenericPassword,
///                          kSecAttrAccount as String: "alice",
///                          kSecReturnData as String: kCFBooleanTrue] as CFDictionary,
///                         UnsafeMutablePointer($0))
/// }
/// let password = String(data: queryResult as! Data, encoding: .utf8)
/// ```
/// Attribute filters are exact (a string and data with the same bytes are equal);
/// kSecMatchCaseInsensitive compares strings with Unicode case folding (unlike iOS, where it
/// is ignored), except kSecAttrAccessGroup. Only items of the caller's access groups and,
/// unless kSecAttrSynchronizable says otherwise, with sync = 0 are seen: an item's group must
/// have exactly the bytes of one of the caller's groups (no case folding, no Unicode
/// normalization), whatever the query, a persistent reference included. kSecMatchLimit: one (the default, a single object),
/// all (an array), or a number (an array unless 1; 0 finds nothing). kSecReturnData with
/// kSecMatchLimitAll is allowed. Reading the data of a user-presence item asks the
/// authentication handler with kSecUseOperationPrompt.
///
/// - Returns: errSecSuccess (with no kSecReturn… key the result stays nil), or
///   errSecItemNotFound (−25300); errSecParam (−50) for a malformed query (a persistent ref
///   with other attribute filters, a bad kSecMatchLimit, kSecReturn… not a boolean,
///   kSecUseItemList, …); errSecNoSuchClass; errSecNoSuchAttr; errSecUnimplemented for
///   kSecMatchPolicy/Issuers/HostOrSubdomainOfHost (identities are found: see `identityCall`); errSecInteractionNotAllowed
///   (locked class, or user presence needed with kSecUseAuthenticationUIFail or no handler);
///   errSecUserCanceled (−128) and errSecAuthFailed (−25293) from user presence;
///   errSecMissingEntitlement.
@discardableResult
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    secItemCall(.copyMatching, query, result) { request, config in
        let limit = request.limit ?? .one
        let outcome = config.perform(authenticationUI: request.authenticationUI) { kc -> [Item] in
            let items = try find(kc, request, limit: limit)
            guard !items.isEmpty else {
                throw KeychainError(.itemNotFound, "no item matches the query")
            }
            return items
        }
        return outcome.status(setting: result) { SecItemResult.object(for: $0, returns: request.returns, limit: limit) }
    }
}

/// The matches of a CopyMatching request. Data (and so user presence) only when kSecReturnData
/// asks for it; kSecUseAuthenticationUISkip leaves out the items that would ask.
private func find(_ kc: Keychain, _ request: SecItemRequest, limit: SecMatchLimit) throws -> [Item] {
    let fetch = limit.fetchLimit
    if fetch == 0 { return [] }
    // kSecReturnRef needs the data too: a certificate or key object is made from it.
    let withData = request.returns.data || (request.returns.ref && [.certificate, .key].contains(request.itemClass))
    guard withData, request.authenticationUI == .skip else {
        return try kc.find(request.query, limit: fetch, includeData: withData, prompt: request.prompt)
    }
    var out: [Item] = []
    for candidate in try kc.find(request.query, includeData: false) where !candidate.requiresUserPresence {
        let one = Query(request.itemClass, persistentRef: candidate.persistentRef)
        out += try kc.find(one, limit: 1, includeData: true)
        if let l = fetch, out.count >= l { break }
    }
    return out
}

/// Changes every item that matches `query`, as Apple's `SecItemUpdate`, in one transaction.
///
/// ```swift
/// let query = [kSecClass as String: kSecClassGenericPassword,
///              kSecAttrAccount as String: "alice"] as CFDictionary
/// let status = SecItemUpdate(query, [kSecValueData as String: Data("new".utf8)] as CFDictionary)
/// ```
/// `mdat` moves, `cdat` stays (dates given are replaced); a new kSecAttrAccessible re-encrypts
/// the items under that class.
///
/// - Parameters:
///   - query: kSecClass (or kSecValuePersistentRef alone) and attribute filters. kSecValueData
///     here is not a filter and is ignored.
///   - attributesToUpdate: item attributes and kSecValueData only.
/// Where iOS and macOS differ, code written for Apple platforms takes its macOS branch on Linux
/// (`#if os(iOS)` is false), so these follow macOS where that is safe:
/// - kSecMatchLimitAll in the query is accepted and changes nothing (every match is updated
///   anyway); iOS answers errSecParam. A finite kSecMatchLimit (kSecMatchLimitOne, a number)
///   stays errSecParam: macOS would ignore it and update every match, more than was asked.
/// - kSecReturn… keys in the query are ignored, as on macOS (iOS: errSecParam), so a
///   CopyMatching query can be passed on as it is.
///
/// - Returns: errSecSuccess, or errSecItemNotFound when nothing matches; errSecParam (−50) for
///   a kSecMatch… key in the query other than kSecMatchLimitAll; errSecNoSuchAttr (−25303) for any key of
///   `attributesToUpdate` that is not an attribute of the class (kSecClass, kSecReturn…,
///   kSecMatch…, kSecUse…, unknown keys); errSecDuplicateItem when a change would give two
///   items one unique key (then nothing changes); errSecNoAccessForItem (−25243) for a new
///   access group the caller may not use (a foreign group in the *query* finds nothing);
///   errSecInteractionNotAllowed for a locked class; errSecUnimplemented for access-control
///   constraints in `attributesToUpdate`. Identities change both items (see `identityCall`).
@discardableResult
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
    secItemCall(.update, query, attributesToUpdate: attributesToUpdate) { request, config in
        let changes = try SecItemChanges(try secEntries(attributesToUpdate), itemClass: request.itemClass)
        return config.perform { kc in
            try kc.update(
                request.query, attributes: changes.attributes, data: changes.data, protection: changes.protection)
        }.status
    }
}

/// Deletes every item that matches `query`, as Apple's `SecItemDelete`, in one transaction.
///
/// ```swift
/// let status = SecItemDelete([kSecClass as String: kSecClassGenericPassword,
///                             kSecAttrService as String: "mail"] as CFDictionary)
/// ```
/// kSecMatchLimitAll is accepted and changes nothing, as on macOS, where "delete every match"
/// is often written that way (iOS answers errSecParam); every match is deleted in any case. A
/// finite kSecMatchLimit (kSecMatchLimitOne, a number) is errSecParam: macOS would ignore it
/// and delete every match, more than the caller asked for. kSecReturn… keys are ignored.
///
/// - Returns: errSecSuccess, or errSecItemNotFound when nothing matches (also for an access
///   group the caller may not use); errSecParam (−50) for a kSecMatch… key other than
///   kSecMatchLimitAll (a finite limit included); errSecNoSuchClass; errSecNoSuchAttr;
///   errSecInteractionNotAllowed for a locked class; errSecMissingEntitlement;
///   an identity deletes its certificate and private key (see `identityCall`).
@discardableResult
public func SecItemDelete(_ query: CFDictionary) -> OSStatus {
    secItemCall(.delete, query) { request, config in
        config.perform { kc in try kc.delete(request.query) }.status
    }
}

/// What the four calls share: `result` cleared, the dictionary read, an identity handed to
/// `identityCall`. `stored` makes the call for a stored class; what it throws (a malformed
/// dictionary of SecItemUpdate's changes) becomes `lastError` and the status, as a malformed
/// `dictionary` does.
private func secItemCall(
    _ operation: SecItemOperation, _ dictionary: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>? = nil,
    attributesToUpdate: CFDictionary? = nil,
    stored: (SecItemRequest, LatchkeySecurityConfiguration) throws -> OSStatus
) -> OSStatus {
    result?.pointee = nil
    let config = LatchkeySecurityConfiguration.current
    do {
        let entries = try secEntries(dictionary)
        switch try SecItemRequest.itemClass(of: entries, call: operation.call) {
        case .identity:
            return identityCall(operation, entries, try attributesToUpdate.map { try secEntries($0) }, result)
        case .stored(let c):
            return try stored(try SecItemRequest(entries, itemClass: c, call: operation.call), config)
        }
    } catch {
        return config.record(error)
    }
}

extension Result where Failure == SecFailure {
    /// The status of a performed call: errSecSuccess, with `result` (when the caller gave
    /// one) receiving `object(value)`, or the failure's status.
    func status(setting result: UnsafeMutablePointer<CFTypeRef?>?, to object: (Success) -> AnyObject?) -> OSStatus {
        switch self {
        case .success(let value):
            result?.pointee = object(value)
            return errSecSuccess
        case .failure(let f):
            return f.error.osStatus
        }
    }

    /// The status of a performed call that returns no object.
    var status: OSStatus { status(setting: nil) { _ in nil } }
}
