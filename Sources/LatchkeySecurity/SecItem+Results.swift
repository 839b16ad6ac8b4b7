import Foundation
import Latchkey
import LatchkeyFormat

/// Result shapes of SecItemCopyMatching and SecItemAdd (reference §5.4).
enum SecItemResult {
    /// The per-item result for `returns`, or nil when it yields no object (nothing requested,
    /// or only kSecReturnRef for a class without reference objects).
    static func object(for item: Item, returns: SecReturns) -> AnyObject? {
        object(
            returns: returns, data: item.data, persistentRef: item.persistentRef,
            attributes: { attributes(of: item) }, reference: { reference(for: item) })
    }

    /// The result for `returns` of one item or identity, from its data, persistent reference,
    /// attribute dictionary and reference object.
    static func object(
        returns: SecReturns, data: [UInt8], persistentRef: [UInt8],
        attributes: () -> NSMutableDictionary, reference: () -> AnyObject?
    ) -> AnyObject? {
        switch (returns.data, returns.attributes, returns.ref, returns.persistentRef) {
        case (false, false, false, false):
            return nil
        case (true, false, false, false):
            // Items without data read back as empty data, as on iOS.
            return NSData(data: Data(data))
        case (false, true, false, false):
            return attributes()
        case (false, false, false, true):
            return NSData(data: Data(persistentRef))
        case (false, false, true, false):
            return reference()
        default:
            let dict = returns.attributes ? attributes() : NSMutableDictionary()
            if returns.data, !data.isEmpty {
                dict.setObject(NSData(data: Data(data)), forKey: NSString(string: "v_Data"))
            }
            if returns.persistentRef {
                dict.setObject(NSData(data: Data(persistentRef)), forKey: NSString(string: "v_PersistentRef"))
            }
            if returns.ref, let ref = reference() {
                dict.setObject(ref, forKey: NSString(string: "v_Ref"))
            }
            return dict
        }
    }

    /// The result of a query: one object, or an array when the limit asks for one (§5.3).
    static func object(for items: [Item], returns: SecReturns, limit: SecMatchLimit) -> AnyObject? {
        object(for: items, returns: returns, limit: limit) { object(for: $0, returns: returns) }
    }

    /// The result of a query of items or identities, `each` making one's object.
    static func object<Found>(
        for found: [Found], returns: SecReturns, limit: SecMatchLimit, each: (Found) -> AnyObject?
    ) -> AnyObject? {
        if limit.returnsArray {
            let array = NSMutableArray()
            for one in found {
                if let o = each(one) { array.add(o) }
            }
            return returns.isEmpty ? nil : array
        }
        return found.first.flatMap(each)
    }

    /// kSecReturnRef: passwords have no reference type on iOS, so no object is returned (§5.4).
    /// Certificates and keys get SecCertificate/SecKey objects (the item must be read with its
    /// data; SecCertificate.swift).
    static func reference(for item: Item) -> AnyObject? { secReference(for: item) }  // SecCertificate.swift

    /// The attribute dictionary of an item: 4-character keys, the unique-key attributes with
    /// their defaults when absent (Apple stores defaults, so `svce = ""` appears), `pdmn`, the
    /// dates, and `accc` (a SecAccessControl with the item's protection, as modern iOS
    /// synthesises it). No `v_Data`, `UUID`, `persistref` and no `class` key: the daemon does
    /// not add one (reference §5.4).
    static func attributes(of item: Item) -> NSMutableDictionary {
        let dict = NSMutableDictionary()
        for (name, kind) in UniqueKey.attributes(for: item.itemClass) where item.attributes[name] == nil {
            dict.setObject(defaultValue(name, kind, item.itemClass), forKey: NSString(string: name))
        }
        for (name, value) in item.attributes {
            dict.setObject(object(for: value), forKey: NSString(string: name))
        }
        dict.setObject(NSString(string: item.protection.code), forKey: NSString(string: "pdmn"))
        let flags: SecAccessControlCreateFlags = item.requiresUserPresence ? .userPresence : []
        dict.setObject(SecAccessControl(protection: item.protection, flags: flags), forKey: NSString(string: "accc"))
        return dict
    }

    static func object(for value: AttributeValue) -> AnyObject {
        switch value {
        case .string(let s): return NSString(string: s)
        case .data(let d): return NSData(data: Data(d))
        case .integer(let i): return NSNumber(value: i)
        case .date(let t): return NSDate(timeIntervalSinceReferenceDate: t)
        }
    }

    /// An absent unique-key attribute as Apple reports it: blobs as an empty string, data
    /// attributes as empty data, numbers 0, dates the reference date.
    static func defaultValue(_ name: String, _ kind: UniqueKey.Kind, _ c: ItemClass) -> AnyObject {
        switch kind {
        case .bytes:
            return ItemSchema.kind(name, in: c) == .data ? NSData() : NSString(string: "")
        case .integer: return NSNumber(value: 0)
        case .date: return NSDate(timeIntervalSinceReferenceDate: 0)
        }
    }
}
