import Latchkey
import LatchkeyDBus
import LatchkeyFormat

/// org.freedesktop.DBus.Properties of the service, collections and items.
extension SecretServiceProvider {
    func properties(_ object: Object, _ member: String, _ args: [DBusValue]) throws -> [DBusValue] {
        switch member {
        case "Get":
            try Self.expect(args, "ss", member)
            let all = try propertyValues(object, interface: args[0].stringValue ?? "")
            let name = args[1].stringValue ?? ""
            guard let v = all[name] else { throw DBusError.invalidArgs("no property \(name)") }
            return [.variant(v)]
        case "GetAll":
            try Self.expect(args, "s", member)
            return [.properties(try propertyValues(object, interface: args[0].stringValue ?? ""))]
        case "Set":
            try Self.expect(args, "ssv", member)
            guard case .variant(let value) = args[2] else { throw DBusError.invalidArgs("Set takes a variant") }
            try setProperty(object, args[1].stringValue ?? "", value)
            return []
        default:
            throw DBusError.unknownMethod("org.freedesktop.DBus.Properties has no method \(member)")
        }
    }

    func propertyValues(_ object: Object, interface: String) throws -> [String: DBusValue] {
        switch object {
        case .service:
            guard interface.isEmpty || interface == Self.serviceInterface else { return [:] }
            return ["Collections": .objectPaths(collections.keys.sorted().map(Self.collectionPath))]
        case .collection(let name):
            guard interface.isEmpty || interface == Self.collectionInterface else { return [:] }
            let unlocked = try refresh()
            let c = collections[name]!
            return [
                "Items": .objectPaths(c.items.keys.sorted().map { Self.itemPath(name, $0) }),
                "Label": .string(c.label), "Locked": .bool(!unlocked), "Created": .uint64(c.created),
                "Modified": .uint64(c.modified)
            ]
        case .item(let name, let id):
            guard interface.isEmpty || interface == Self.itemInterface else { return [:] }
            let unlocked = try refresh()
            let c = collections[name]!
            guard c.items[id] != nil else {
                throw DBusError(SecretError.noSuchObject, "no such item: \(Self.itemPath(name, id))")
            }
            // While locked only the item's existence is known here (spec/SECRET-SERVICE.md §4).
            let known = c.items[id] ?? nil
            return [
                "Locked": .bool(!unlocked), "Label": .string(known?.label ?? ""),
                "Attributes": .stringDictionary(known?.metadata.attributes ?? [:]),
                "Created": .uint64(known?.created ?? 0), "Modified": .uint64(known?.modified ?? 0)
            ]
        case .session, .prompt:
            return [:]
        }
    }

    func setProperty(_ object: Object, _ name: String, _ value: DBusValue) throws {
        switch object {
        case .collection(let c) where name == "Label":
            guard let label = value.stringValue, label.utf8.count <= Limits.labelBytes else {
                throw DBusError.invalidArgs("Label is a string of at most \(Limits.labelBytes) bytes")
            }
            try keychain.update(
                Query(
                    .genericPassword,
                    [
                        "svce": .string(Mapping.collectionService), "agrp": .string(Mapping.group(c)),
                        "acct": .string(c)
                    ], synchronizable: .any),
                attributes: ["labl": .string(label)])
            collections[c]?.label = label
            bus.emitSignal(
                path: Self.root, interface: Self.serviceInterface, member: "CollectionChanged",
                [.objectPath(Self.collectionPath(c))])
            propertiesChanged(Self.collectionPath(c), Self.collectionInterface, changed: ["Label": .string(label)])
        case .item(let c, let id) where name == "Label" || name == "Attributes":
            try requireUnlocked("Set \(name)")
            let index = collections[c]!
            let before = index.token
            var change: [String: AttributeValue] = [:]
            if name == "Label" {
                guard let label = value.stringValue, label.utf8.count <= Limits.labelBytes else {
                    throw DBusError.invalidArgs("Label is a string of at most \(Limits.labelBytes) bytes")
                }
                change["labl"] = .string(label)
            } else {
                guard let attributes = value.stringDictionary else {
                    throw DBusError.invalidArgs("Attributes are a{ss}")
                }
                try Self.checkAttributes(attributes)
                var metadata = Self.indexed(try storedItem(c, id, data: false)).metadata
                metadata.attributes = attributes
                change["gena"] = .data(metadata.encoded())
            }
            try keychain.update(Self.itemQuery(c, id), attributes: change)
            let item = Self.indexed(try storedItem(c, id, data: false))
            if name == "Attributes" {
                _ = try? keychain.delete(Self.indexRecordQuery(c, id))
                try keychain.add(contentsOf: [Self.indexRecord(c, id, item.metadata.attributes)])
            }
            index.put(id, item)
            wrote(from: before)
            let path = Self.itemPath(c, id)
            bus.emitSignal(
                path: Self.collectionPath(c), interface: Self.collectionInterface, member: "ItemChanged",
                [.objectPath(path)])
            propertiesChanged(path, Self.itemInterface, changed: [name: value])
        default:
            throw DBusError.accessDenied("the property \(name) cannot be set")
        }
    }
}
