import Foundation
import Latchkey

/// Which dictionary is being read: each call accepts a different set of keys (reference §5.2).
enum SecItemCall: Sendable {
    case add
    case copyMatching
    /// The first dictionary of SecItemUpdate.
    case updateQuery
    case delete
}

/// kSecMatchLimit (reference §5.3).
enum SecMatchLimit: Equatable {
    case one
    case all
    case count(Int)

    /// How many items to fetch (nil: all).
    var fetchLimit: Int? {
        switch self {
        case .one: return 1
        case .all: return nil
        case .count(let n): return n < 0 ? nil : n
        }
    }

    /// Whether the result is an array: LimitAll, or a number other than 1.
    var returnsArray: Bool {
        switch self {
        case .one: return false
        case .all: return true
        case .count(let n): return n != 1
        }
    }
}

/// kSecUseAuthenticationUI.
enum SecAuthenticationUI {
    case allow, fail, skip
}

/// What the caller asked to get back (kSecReturn…).
struct SecReturns: Equatable {
    var data = false
    var attributes = false
    var ref = false
    var persistentRef = false

    var count: Int { [data, attributes, ref, persistentRef].filter { $0 }.count }
    var isEmpty: Bool { count == 0 }
}

/// The item class of a call: a stored class, or the virtual identity class.
enum SecItemClass: Equatable {
    case stored(ItemClass)
    case identity
}

/// A SecItem dictionary, checked and translated into the typed API's terms.
struct SecItemRequest {
    var call: SecItemCall
    var itemClass: ItemClass
    /// Attributes: values to store (add) or filters (queries), coerced to their kinds.
    var attributes: [String: AttributeValue] = [:]
    var protection: ProtectionClass?
    var accessControl: SecAccessControl?
    var synchronizable: SyncFilter = .notSynchronizable
    /// kSecValueData (add).
    var data: [UInt8]?
    var persistentRef: [UInt8]?
    var returns = SecReturns()
    var limit: SecMatchLimit?
    var caseInsensitive = false
    var prompt: String?
    var authenticationUI: SecAuthenticationUI = .allow
    /// Whether any item attribute (a filter) was given; a persistent ref must stand alone.
    var hasAttributeFilter = false

    var query: Query {
        Query(
            itemClass, attributes, protection: protection, caseInsensitive: caseInsensitive,
            synchronizable: synchronizable, persistentRef: persistentRef)
    }

    var requiresUserPresence: Bool { accessControl?.requiresUserPresence ?? false }
}

extension SecItemRequest {
    /// The class named by `class`, or by the persistent ref of a query.
    /// - Throws: errSecParam when there is none (or it is not a string), errSecNoSuchClass for
    ///   an unknown class.
    static func itemClass(of entries: [String: SecValue], call: SecItemCall) throws -> SecItemClass {
        if let byReference = referenceClass(entries) { return byReference }  // kSecValueRef (SecCertificate.swift)
        let name: String
        switch entries["class"] {
        case .string(let s)?:
            name = s
        case nil:
            // The class is taken from a persistent ref when kSecClass is absent (reference §5.8).
            if call != .add, case .data(let ref)? = entries["v_PersistentRef"], ref.count >= 4 {
                name = String(decoding: ref.prefix(4), as: UTF8.self)
                guard ItemClass(rawValue: name) != nil else {
                    throw SecFailure.param("kSecValuePersistentRef is not a persistent reference of this keychain")
                }
            } else {
                throw SecFailure.param(
                    "the dictionary has no kSecClass; add kSecClass (for example kSecClassGenericPassword)")
            }
        case let v?:
            throw SecFailure.param("kSecClass must be one of the kSecClass… strings, not \(v.typeName)")
        }
        if name == "idnt" { return .identity }
        guard let c = ItemClass(rawValue: name) else {
            throw SecFailure(.noSuchClass, "'\(name)' is not an item class; use genp, inet, cert, keys or idnt")
        }
        return .stored(c)
    }

    /// Reads a dictionary for `call` (Apple's rules for each call, with the deliberate differences the LatchkeySecurity documentation lists, "Porting code from iOS").
    /// Keys are examined in sorted order, so the same dictionary always gives the same error.
    /// - Throws: errSecParam, errSecNoSuchAttr, errSecUnimplemented as each key demands.
    init(_ entries: [String: SecValue], itemClass: ItemClass, call: SecItemCall) throws {
        self.call = call
        self.itemClass = itemClass
        var pdmnGiven: ProtectionClass?
        for key in entries.keys.sorted() {
            let value = entries[key]!
            if key == "class" { continue }
            if key.count == 4 {
                try attribute(key, value, pdmnGiven: &pdmnGiven)
            } else if key.hasPrefix("m_") {
                try matchKey(key, value)
            } else if key.hasPrefix("r_") {
                try returnKey(key, value)
            } else if key.hasPrefix("v_") {
                try valueKey(key, value)
            } else if key.hasPrefix("u_") {
                try useKey(key, value)
            } else if key.hasPrefix("f_") {
                continue  // callbacks: ignored, as by Apple's daemon
            } else {
                throw SecFailure.param(
                    "'\(key)' is not a SecItem key (kSecClass, kSecAttr…, kSecMatch…, kSecReturn…, kSecValue…, kSecUse…)"
                )
            }
        }
        if let ac = accessControl {
            if let p = pdmnGiven, p != ac.protection {
                throw SecFailure.param(
                    "kSecAttrAccessible (\(p.code)) and the protection of kSecAttrAccessControl (\(ac.protection.code)) differ; give one of them"
                )
            }
            protection = ac.protection
        } else {
            protection = pdmnGiven
        }
        if call == .add, requiresUserPresence, attributes["sync"] == .integer(1) {
            throw SecFailure.param("an item with access-control constraints cannot be synchronizable")
        }
        if persistentRef != nil, hasAttributeFilter {
            throw SecFailure.param("a query with kSecValuePersistentRef may not have other attribute filters")
        }
    }

    // MARK: Attributes (4-character keys)

    private mutating func attribute(_ code: String, _ value: SecValue, pdmnGiven: inout ProtectionClass?) throws {
        switch code {
        case "nleg":
            // kSecUseDataProtectionKeychain: iOS treats it as an attribute and ignores it (§5.9).
            return
        case "accc":
            guard case .accessControl(let ac) = value else {
                throw SecFailure.param(
                    "kSecAttrAccessControl must be a SecAccessControl (SecAccessControlCreateWithFlags), not \(value.typeName)"
                )
            }
            hasAttributeFilter = true
            accessControl = ac
        case "pdmn":
            pdmnGiven = try SecItemRequest.protectionValue(value)
            hasAttributeFilter = true
        case "sync":
            hasAttributeFilter = true
            switch try SecItemRequest.syncValue(value) {
            case .any: synchronizable = call == .add ? .notSynchronizable : .any
            case .synchronizable:
                synchronizable = .synchronizable
                if call == .add { attributes["sync"] = .integer(1) }
            case .notSynchronizable:
                synchronizable = .notSynchronizable
                if call == .add { attributes["sync"] = .integer(0) }
            }
        default:
            guard let kind = ItemSchema.kind(code, in: itemClass) else {
                throw SecFailure.noSuchAttr("'\(code)' is not an attribute of class \(itemClass.rawValue)")
            }
            let coerced = try SecItemRequest.coerce(value, to: kind, code: code)
            hasAttributeFilter = true
            if call == .add && (code == "cdat" || code == "mdat") {
                return  // the keychain sets the dates itself (reference §5.12)
            }
            attributes[code] = coerced
        }
    }

    /// kSecAttrAccessible: one of Apple's `pdmn` codes.
    static func protectionValue(_ value: SecValue) throws -> ProtectionClass {
        guard case .string(let s) = value, let pc = SecProtection.parse(s) else {
            throw SecFailure.param(
                "kSecAttrAccessible must be one of the kSecAttrAccessible… values (ak, ck, dk, aku, cku, dku, akpu)")
        }
        return pc
    }

    /// kSecAttrSynchronizable: a boolean (or 0/1), or kSecAttrSynchronizableAny.
    static func syncValue(_ value: SecValue) throws -> SyncFilter {
        switch value {
        case .bool(true), .integer(1): return .synchronizable
        case .bool(false), .integer(0): return .notSynchronizable
        case .string("syna"): return .any
        default:
            throw SecFailure.param("kSecAttrSynchronizable must be a boolean or kSecAttrSynchronizableAny")
        }
    }

    static func coerce(_ value: SecValue, to kind: ItemSchema.Kind, code: String) throws -> AttributeValue {
        do {
            return try value.input(for: code).coerced(to: kind, code: code)
        } catch let e as KeychainError {
            throw SecFailure(e)
        }
    }

    // MARK: kSecMatch…

    private mutating func matchKey(_ key: String, _ value: SecValue) throws {
        switch call {
        case .add:
            // Apple's daemon returns success without adding anything (reference §5.2 ‡, an iOS
            // bug); Latchkey returns errSecParam instead, a deliberate fix (LatchkeySecurity documentation, "Deliberate differences from iOS").
            throw SecFailure.param(
                "SecItemAdd does not take search keys (\(key)); remove kSecMatch… from the attributes")
        case .updateQuery, .delete:
            let name = call == .delete ? "SecItemDelete" : "the query of SecItemUpdate"
            let verb = call == .delete ? "deletes" : "changes"
            // macOS accepts kSecMatchLimitAll here ("delete every match", a common idiom in
            // code written for it); iOS answers errSecParam. It asks for what these calls do
            // anyway, so it is accepted as the no-op it is.
            if key == "m_Limit", case .string("m_LimitAll") = value { return }
            if key == "m_Limit" {
                // macOS would ignore a finite limit and act on every match, more than the caller
                // asked for; refusing it is the safe reading.
                throw SecFailure.param(
                    "\(name) \(verb) every match and cannot stop after a number of items; remove kSecMatchLimit (or give kSecMatchLimitAll)"
                )
            }
            throw SecFailure.param("\(name) does not take search keys (\(key)); it \(verb) every match")
        case .copyMatching:
            break
        }
        switch key {
        case "m_Limit":
            switch value {
            case .string("m_LimitOne"): limit = .one
            case .string("m_LimitAll"): limit = .all
            case .integer(let n): limit = .count(Int(clamping: n))
            default:
                throw SecFailure.param("kSecMatchLimit must be kSecMatchLimitOne, kSecMatchLimitAll or a number")
            }
        case "m_CaseInsensitive":
            caseInsensitive = try value.boolean(for: "kSecMatchCaseInsensitive")
        case "m_Policy", "m_Issuers", "m_HostOrSubdomainOfHost":
            throw SecFailure(.unimplemented, "\(key) is not implemented by Latchkey")
        case "m_ValidOnDate", "m_TrustedOnly", "m_EmailAddressIfPresent", "m_SubjectContains":
            // Certificate filters: not implemented for certificates; ignored for the other classes.
            if itemClass == .certificate {
                throw SecFailure(.unimplemented, "\(key) is not implemented by Latchkey")
            }
        case "m_ItemList", "m_SearchList":
            break  // macOS only; iOS ignores them in CopyMatching (reference §5.7)
        default:
            throw SecFailure.param("'\(key)' is not a kSecMatch… key")
        }
    }

    // MARK: kSecReturn…

    private mutating func returnKey(_ key: String, _ value: SecValue) throws {
        switch call {
        case .updateQuery, .delete:
            // Ignored (reference §5.2 for SecItemDelete). In SecItemUpdate's query iOS answers
            // errSecParam and macOS ignores them; code written for macOS (the branch Linux
            // builds take) passes its CopyMatching query on, kSecReturnData and all, so they
            // are ignored as macOS does.
            return
        case .add, .copyMatching:
            break
        }
        let on = try value.boolean(for: key)
        switch key {
        case "r_Data": returns.data = on
        case "r_Attributes": returns.attributes = on
        case "r_Ref": returns.ref = on
        case "r_PersistentRef": returns.persistentRef = on
        default: throw SecFailure.param("'\(key)' is not a kSecReturn… key")
        }
    }

    // MARK: kSecValue…

    private mutating func valueKey(_ key: String, _ value: SecValue) throws {
        switch key {
        case "v_Data":
            guard call == .add else { return }  // not a filter (reference §5.2 *)
            data = try SecItemRequest.secretData(value)
        case "v_PersistentRef":
            guard call != .add else {
                throw SecFailure.param("SecItemAdd does not take kSecValuePersistentRef")
            }
            guard case .data(let ref) = value, ref.count == 20,
                ItemClass(rawValue: String(decoding: ref.prefix(4), as: UTF8.self)) != nil
            else {
                throw SecFailure.param(
                    "kSecValuePersistentRef must be a persistent reference returned by kSecReturnPersistentRef (20 bytes)"
                )
            }
            persistentRef = ref
        case "v_Ref":
            try valueReference(value)  // SecCertificate.swift
        default:
            throw SecFailure.param("'\(key)' is not a kSecValue… key")
        }
    }

    /// kSecValueData: data, a string (stored as its UTF-8 bytes) or a number (4 bytes), as
    /// the Data kind of reference §1.2.
    static func secretData(_ value: SecValue) throws -> [UInt8] {
        switch value {
        case .data(let d): return d
        case .string(let s): return Array(s.utf8)
        case .integer:
            if case .data(let d) = try coerce(value, to: .data, code: "v_Data") { return d }
        default: break
        }
        throw SecFailure.param("kSecValueData must be data (or a string), not \(value.typeName)")
    }

    // MARK: kSecUse…

    private mutating func useKey(_ key: String, _ value: SecValue) throws {
        switch key {
        case "u_OpPrompt":
            guard case .string(let s) = value else {
                throw SecFailure.param("kSecUseOperationPrompt must be a string")
            }
            prompt = s
        case "u_AuthUI":
            switch value {
            case .string("u_AuthUIA"): authenticationUI = .allow
            case .string("u_AuthUIF"): authenticationUI = .fail
            case .string("u_AuthUIS") where call == .copyMatching: authenticationUI = .skip
            case .string("u_AuthUIS"):
                throw SecFailure.param("kSecUseAuthenticationUISkip is only allowed in SecItemCopyMatching")
            default:
                throw SecFailure.param("kSecUseAuthenticationUI must be kSecUseAuthenticationUIAllow, …Fail or …Skip")
            }
        case "u_NoAuthUI":
            if try value.boolean(for: "kSecUseNoAuthenticationUI") { authenticationUI = .fail }
        case "u_ItemList":
            throw SecFailure.param(
                "kSecUseItemList is not supported (deprecated by Apple, \"not implemented on this platform\")")
        case "u_AuthCtx", "u_CredRef", "u_Tomb", "u_SystemKeychain", "u_SyncBubbleKeychain", "u_CallerName",
            "u_TokenRawItems", "u_CertWithIssuers":
            return
        default:
            throw SecFailure.param("'\(key)' is not a kSecUse… key")
        }
    }
}

/// The second dictionary of SecItemUpdate: new attribute values and data only.
struct SecItemChanges {
    var attributes: [String: AttributeValue] = [:]
    var data: [UInt8]?
    var protection: ProtectionClass?

    /// Reads `attributesToUpdate` (reference §5.11).
    /// - Throws: errSecNoSuchAttr for any key that is not an attribute of the class or
    ///   kSecValueData (kSecClass, kSecReturn…, kSecMatch…, kSecUse…, kSecValuePersistentRef,
    ///   unknown keys); errSecParam for a value of the wrong type or Accessible and
    ///   AccessControl that differ; errSecUnimplemented for access-control constraints.
    init(_ entries: [String: SecValue], itemClass: ItemClass) throws {
        var pdmn: ProtectionClass?
        var accessControl: SecAccessControl?
        for key in entries.keys.sorted() {
            let value = entries[key]!
            if key == "v_Data" {
                data = try SecItemRequest.secretData(value)
                continue
            }
            guard key.count == 4 else {
                throw SecFailure.noSuchAttr(
                    "'\(key)' cannot be changed by SecItemUpdate; the attributes to update take item attributes and kSecValueData only (put kSecClass and search keys in the query)"
                )
            }
            switch key {
            case "nleg":
                continue
            case "accc":
                guard case .accessControl(let ac) = value else {
                    throw SecFailure.param("kSecAttrAccessControl must be a SecAccessControl, not \(value.typeName)")
                }
                accessControl = ac
            case "pdmn":
                pdmn = try SecItemRequest.protectionValue(value)
            case "sync":
                switch try SecItemRequest.syncValue(value) {
                case .any: continue  // silently ignored (reference §5.2)
                case .synchronizable: attributes["sync"] = .integer(1)
                case .notSynchronizable: attributes["sync"] = .integer(0)
                }
            default:
                guard let kind = ItemSchema.kind(key, in: itemClass) else {
                    throw SecFailure.noSuchAttr("'\(key)' is not an attribute of class \(itemClass.rawValue)")
                }
                let coerced = try SecItemRequest.coerce(value, to: kind, code: key)
                if key == "cdat" || key == "mdat" { continue }  // set by the keychain (§5.12)
                attributes[key] = coerced
            }
        }
        if let ac = accessControl {
            if let p = pdmn, p != ac.protection {
                throw SecFailure.param(
                    "kSecAttrAccessible (\(p.code)) and the protection of kSecAttrAccessControl (\(ac.protection.code)) differ; give one of them"
                )
            }
            if ac.requiresUserPresence {
                throw SecFailure(
                    .unimplemented,
                    "SecItemUpdate cannot add access-control constraints to existing items yet; delete the item and add it again with kSecAttrAccessControl"
                )
            }
            protection = ac.protection
        } else {
            protection = pdmn
        }
    }
}
