import Foundation

/// The SecItem operation an identity call stands for.
enum SecItemOperation: Sendable {
    case add, copyMatching, update, delete
}

/// SecItem calls whose kSecClass is kSecClassIdentity (`idnt`).
///
/// An identity is not stored: it is a certificate and a private key joined by public-key hash
/// (reference §1.1), so adding one adds both items, a query joins them, and deleting one
/// deletes both. Identities arrive with certificate support, which another change is adding
/// to the Latchkey module; until then every identity call returns errSecUnimplemented (−4)
/// and changes nothing. This is the one place to fill in.
///
/// - Parameters:
///   - operation: which SecItem function was called.
///   - entries: its dictionary (the query for update), normalised.
///   - attributesToUpdate: the new values of SecItemUpdate, else nil.
///   - result: the result pointer of SecItemAdd / SecItemCopyMatching, else nil.
/// - Returns: errSecUnimplemented.
func identityCall(_ operation: SecItemOperation, _ entries: [String: SecValue],
                  _ attributesToUpdate: [String: SecValue]?, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    LatchkeySecurityConfiguration.current.record(SecFailure(.unimplemented,
        "identities (kSecClassIdentity) are not supported yet; store the certificate (kSecClassCertificate) and the key (kSecClassKey) as separate items"))
    return errSecUnimplemented
}
