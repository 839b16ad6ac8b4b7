import LatchkeyFormat

/// Which items a caller may touch: the keychain's one access-control decision.
///
/// An item belongs to the access group its `agrp` attribute names; a caller may read, update,
/// delete, or write into an item only when that group is, **byte for byte**, one of the
/// caller's groups (`CallerIdentity.accessGroups`). The bytes are the UTF-8 of a string value,
/// or the bytes of a data value: the same bytes the unique key uses (spec/FORMAT.md §7.5), so
/// two values that are one unique key are one group. There is no Unicode normalization (NFC
/// `café` and NFD `café` are two groups) and no case folding (`COM.VICTIM.BANK` is not
/// `com.victim.bank`), whatever the query asks for: `kSecMatchCaseInsensitive` folds the
/// attributes a query matches, never access control.
///
/// An item without `agrp` (added by a library caller without identity) belongs to no group,
/// so only a caller without identity reaches it; a persistent reference gives no right of its
/// own. Every path decides here, after any attribute matching: queries (unique-key, index and
/// case-insensitive), persistent references, update, delete, identities (both items of the
/// join), the groups named in new values (add, update, import), and so the agent and the
/// SecItem functions, which run these.
package struct AccessPolicy: Sendable {
    /// The caller's groups in order, the default first; nil: no caller (a trusted tool that
    /// reaches every item and gives new items no default group).
    package let groups: [String]?
    /// `groups` as the bytes the decision compares.
    private let groupBytes: [[UInt8]]

    /// No restriction: the policy of a keychain without a caller.
    package static let unrestricted = AccessPolicy(groups: nil)

    private init(groups: [String]?) {
        self.groups = groups
        groupBytes = groups?.map { Array($0.utf8) } ?? []
    }

    /// The policy of `caller` (nil: unrestricted).
    /// - Throws: errSecMissingEntitlement for a caller with neither an application-identifier
    ///   nor keychain-access-groups.
    package init(caller: CallerIdentity?) throws {
        guard let caller else {
            self.init(groups: nil)
            return
        }
        let groups = caller.accessGroups
        guard !groups.isEmpty else {
            throw KeychainError(
                .missingEntitlement, "the caller has neither an application-identifier nor keychain-access-groups",
                remedy: .giveCallerIdentity)
        }
        self.init(groups: groups)
    }

    /// The group new items go to when they name none (nil: no caller, so none).
    package var defaultGroup: String? { groups?.first }

    /// Whether the caller may touch an item whose `agrp` is `group` (nil: the item has none),
    /// or give an item that group. This is the decision; everything else calls it.
    package func permits(group: AttributeValue?) -> Bool {
        guard groups != nil else { return true }
        switch group {
        case .string(let s)?: return groupBytes.contains { $0.elementsEqual(s.utf8) }
        case .data(let d)?: return groupBytes.contains { $0 == d }
        case .integer?, .date?, nil: return false
        }
    }

    /// Whether the caller may touch this item (read it, change it, delete it).
    func permits(_ item: ItemPlaintext) -> Bool { permits(group: item.attributes["agrp"]) }

    /// The error for new values that name a group the caller may not use (add, update).
    package func refusal(group: AttributeValue) -> KeychainError {
        KeychainError(
            .noAccessForItem,
            "the caller may not use access group \(group); its groups are \((groups ?? []).joined(separator: ", "))")
    }
}
