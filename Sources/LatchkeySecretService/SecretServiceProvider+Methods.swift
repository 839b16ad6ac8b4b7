import Latchkey
import LatchkeyCrypto
import LatchkeyDBus
import LatchkeyFormat

/// The methods of org.freedesktop.Secret.Service, .Collection, .Item and .Prompt.
extension SecretServiceProvider {
    static let serviceInterface = "org.freedesktop.Secret.Service"
    static let collectionInterface = "org.freedesktop.Secret.Collection"
    static let itemInterface = "org.freedesktop.Secret.Item"
    static let promptInterface = "org.freedesktop.Secret.Prompt"
    static let noPrompt = DBusValue.objectPath("/")

    // MARK: Service

    func serviceCall(_ member: String, _ args: [DBusValue], sender: String, interface: String) throws -> [DBusValue]? {
        guard interface.isEmpty || interface == Self.serviceInterface else { return nil }
        switch member {
        case "OpenSession":
            try Self.expect(args, "sv", member)
            return try openSession(algorithm: args[0].stringValue ?? "", input: args[1], sender: sender)
        case "CreateCollection":
            try Self.expect(args, "a{sv}s", member)
            let props = args[0].properties ?? [:]
            let label = props[Self.collectionInterface + ".Label"]?.stringValue ?? ""
            let alias = args[1].stringValue ?? ""
            if !alias.isEmpty, let existing = aliases[alias] {
                return [.objectPath(Self.collectionPath(existing)), Self.noPrompt]
            }
            guard label.utf8.count <= Limits.labelBytes else { throw DBusError.invalidArgs("the label is too long") }
            guard collections.count < 256 else { throw DBusError.limitsExceeded("at most 256 collections") }
            let name = uniqueCollectionName(for: label.isEmpty ? alias : label)
            _ = try createCollection(name: name, label: label)
            if !alias.isEmpty {
                guard Mapping.isValidName(alias) else {
                    throw DBusError.invalidArgs("an alias is 1 to 64 of A-Z a-z 0-9 _")
                }
                try setAlias(alias, to: name)
            }
            let path = Self.collectionPath(name)
            bus.emitSignal(
                path: Self.root, interface: Self.serviceInterface, member: "CollectionCreated", [.objectPath(path)])
            propertiesChanged(Self.root, Self.serviceInterface, invalidated: ["Collections"])
            return [.objectPath(path), Self.noPrompt]
        case "SearchItems":
            try Self.expect(args, "a{ss}", member)
            let query = try Self.attributeQuery(args[0])
            let unlocked = try refresh()
            var paths: [String] = []
            for name in collections.keys.sorted() {
                paths += collections[name]!.search(query).map { Self.itemPath(name, $0) }
            }
            return unlocked ? [.objectPaths(paths), .objectPaths([])] : [.objectPaths([]), .objectPaths(paths)]
        case "Unlock":
            try Self.expect(args, "ao", member)
            let objects = args[0].objectPaths ?? []
            if try refresh() { return [.objectPaths(objects.filter { resolve($0) != nil }), Self.noPrompt] }
            if case .nobody = prompter {
                throw DBusError(
                    SecretError.isLocked,
                    "the keychain is locked and this Secret Service has nobody to ask for its passcode (no pinentry configured, no terminal); run 'latchkey unlock' and try again"
                )
            }
            guard prompts.values.filter({ $0.sender == sender }).count < Limits.promptsPerClient else {
                throw DBusError.limitsExceeded("too many prompts open for this client")
            }
            let path = Self.promptPrefix + "u\(nextID())"
            prompts[path] = PendingPrompt(sender: sender, objects: objects.filter { resolve($0) != nil })
            return [.objectPaths([]), .objectPath(path)]
        case "Lock":
            try Self.expect(args, "ao", member)
            let objects = args[0].objectPaths ?? []
            keychain.lock()
            _ = try? refresh()
            for name in collections.keys {
                propertiesChanged(Self.collectionPath(name), Self.collectionInterface, changed: ["Locked": .bool(true)])
            }
            return [.objectPaths(objects.filter { resolve($0) != nil }), Self.noPrompt]
        case "GetSecrets":
            try Self.expect(args, "aoo", member)
            let sessionPath = args[1].stringValue ?? ""
            let session = try self.session(sessionPath, sender: sender)
            try requireUnlocked("GetSecrets")
            var out: [(DBusValue, DBusValue)] = []
            for path in args[0].objectPaths ?? [] {
                guard case .item(let c, let id)? = resolve(path) else { continue }
                guard let item = try? storedItem(c, id, data: true) else { continue }
                out.append((.objectPath(path), try secretValue(item, session: session, path: sessionPath)))
            }
            return [.dict(key: "o", value: "(oayays)", out)]
        case "ReadAlias":
            try Self.expect(args, "s", member)
            guard let target = aliases[args[0].stringValue ?? ""] else { return [.objectPath("/")] }
            return [.objectPath(Self.collectionPath(target))]
        case "SetAlias":
            try Self.expect(args, "so", member)
            let alias = args[0].stringValue ?? ""
            guard Mapping.isValidName(alias) else {
                throw DBusError.invalidArgs("an alias is 1 to 64 of A-Z a-z 0-9 _")
            }
            let path = args[1].stringValue ?? "/"
            if path == "/" {
                try setAlias(alias, to: nil)
            } else {
                guard case .collection(let name)? = resolve(path) else {
                    throw DBusError(SecretError.noSuchObject, "no such collection: \(path)")
                }
                try setAlias(alias, to: name)
            }
            return []
        default:
            throw DBusError.unknownMethod("org.freedesktop.Secret.Service has no method \(member)")
        }
    }

    func uniqueCollectionName(for label: String) -> String {
        var base = String(
            label.lowercased().unicodeScalars.map { s -> Character in
                s.isASCII && (s.properties.isAlphabetic || ("0"..."9").contains(s)) ? Character(s) : "_"
            }.prefix(48))
        if base.isEmpty { base = "collection" }
        var name = base
        var n = 1
        while collections[name] != nil {
            n += 1
            name = base + "_\(n)"
        }
        return name
    }

    /// The attributes of a SearchItems, checked against the limits.
    static func attributeQuery(_ v: DBusValue) throws -> [String: String] {
        guard let d = v.stringDictionary else { throw DBusError.invalidArgs("attributes are a{ss}") }
        try checkAttributes(d)
        return d
    }

    static func checkAttributes(_ d: [String: String]) throws {
        guard d.count <= Limits.attributesPerItem else {
            throw DBusError.limitsExceeded("at most \(Limits.attributesPerItem) attributes")
        }
        for (k, v) in d {
            guard k.utf8.count <= Limits.attributeNameBytes, v.utf8.count <= Limits.attributeValueBytes else {
                throw DBusError.limitsExceeded(
                    "an attribute name is at most \(Limits.attributeNameBytes) bytes, a value \(Limits.attributeValueBytes)"
                )
            }
        }
    }

    func openSession(algorithm: String, input: DBusValue, sender: String) throws -> [DBusValue] {
        guard sessions.count < Limits.sessions,
            sessions.values.filter({ $0.sender == sender }).count < Limits.sessionsPerClient
        else {
            throw DBusError.limitsExceeded(
                "too many open sessions (at most \(Limits.sessionsPerClient) a client); close sessions you no longer use"
            )
        }
        let output: DBusValue
        let key: SecretSessionKey?
        switch algorithm {
        case "plain":
            key = nil
            output = .variant(.string(""))
        case "dh-ietf1024-sha256-aes128-cbc-pkcs7":
            guard let peer = input.bytesValue else {
                throw DBusError.invalidArgs("the input is the client's public value, ay")
            }
            do {
                key = try SecretSessionKey(peerPublic: peer)
            } catch {
                throw DBusError.invalidArgs("\(error)")
            }
            output = .variant(.bytes(key!.publicValue))
        default:
            throw DBusError.notSupported(
                "the algorithm '\(algorithm)' is not supported; use plain or dh-ietf1024-sha256-aes128-cbc-pkcs7")
        }
        let path = Self.sessionPrefix + "s\(nextID())"
        sessions[path] = Session(sender: sender, key: key)
        return [output, .objectPath(path)]
    }

    func session(_ path: String, sender: String) throws -> Session {
        guard let s = sessions[path], s.sender == sender else {
            throw DBusError(SecretError.noSession, "no such session: \(path); open one with OpenSession")
        }
        return s
    }

    /// (oayays): the session, the IV, the secret (encrypted for an encrypted session), its type.
    func secretValue(_ item: Item, session: Session, path: String) throws -> DBusValue {
        let indexed = Self.indexed(item)
        var data = item.data
        defer { Crypto.cleanse(&data) }
        if let key = session.key {
            let (iv, sealed) = try key.seal(data)
            return .structure([.objectPath(path), .bytes(iv), .bytes(sealed), .string(indexed.metadata.contentType)])
        }
        return .structure([.objectPath(path), .bytes([]), .bytes(data), .string(indexed.metadata.contentType)])
    }

    /// The secret and content type of a (oayays) a client sent.
    func secretFrom(_ v: DBusValue, sender: String) throws -> (data: [UInt8], contentType: String) {
        guard case .structure(let f) = v, f.count == 4, let sessionPath = f[0].stringValue,
            let params = f[1].bytesValue, let value = f[2].bytesValue, let type = f[3].stringValue
        else { throw DBusError.invalidArgs("a secret is (oayays)") }
        let s = try session(sessionPath, sender: sender)
        guard value.count <= Limits.secretBytes + 32 else {
            throw DBusError.limitsExceeded("a secret is at most \(Limits.secretBytes) bytes")
        }
        guard type.utf8.count <= Limits.contentTypeBytes else {
            throw DBusError.invalidArgs("the content type is too long")
        }
        let contentType = type.isEmpty ? Mapping.defaultContentType : type
        guard let key = s.key else { return (value, contentType) }
        do {
            return (try key.open(iv: params, value), contentType)
        } catch {
            throw DBusError.invalidArgs(
                "the secret could not be decrypted with the session's key (wrong IV, length or padding)")
        }
    }

    // MARK: Collection

    func collectionCall(_ name: String, _ member: String, _ args: [DBusValue], sender: String, interface: String) throws
        -> [DBusValue]?
    {
        guard interface.isEmpty || interface == Self.collectionInterface else { return nil }
        let path = Self.collectionPath(name)
        switch member {
        case "SearchItems":
            try Self.expect(args, "a{ss}", member)
            let query = try Self.attributeQuery(args[0])
            try refresh()
            return [.objectPaths(collections[name]!.search(query).map { Self.itemPath(name, $0) })]
        case "CreateItem":
            try Self.expect(args, "a{sv}(oayays)b", member)
            let props = args[0].properties ?? [:]
            var attributes: [String: String] = [:]
            if let a = props[Self.itemInterface + ".Attributes"] {
                guard let d = a.stringDictionary else { throw DBusError.invalidArgs("Attributes are a{ss}") }
                attributes = d
            }
            try Self.checkAttributes(attributes)
            let label = props[Self.itemInterface + ".Label"]?.stringValue ?? ""
            guard label.utf8.count <= Limits.labelBytes else { throw DBusError.invalidArgs("the label is too long") }
            var (data, contentType) = try secretFrom(args[1], sender: sender)
            defer { Crypto.cleanse(&data) }
            let replace = args[2].boolValue ?? false
            try requireUnlocked("CreateItem")
            let c = collections[name]!
            let before = c.token
            let metadata = ItemMetadata(attributes: attributes, contentType: contentType)
            if replace,
                let existing = c.search(attributes).first(where: { c.items[$0]??.metadata.attributes == attributes })
            {
                try keychain.update(
                    Self.itemQuery(name, existing),
                    attributes: ["labl": .string(label), "gena": .data(metadata.encoded())], data: data)
                let item = try storedItem(name, existing, data: false)
                c.put(existing, Self.indexed(item))
                wrote(from: before)
                let itemPath = Self.itemPath(name, existing)
                bus.emitSignal(
                    path: path, interface: Self.collectionInterface, member: "ItemChanged", [.objectPath(itemPath)])
                return [.objectPath(itemPath), Self.noPrompt]
            }
            let id = try Self.newID()
            // The item and its index record in one transaction: both or neither.
            let added = try keychain.add(contentsOf: [
                NewItem(
                    .genericPassword,
                    attributes: [
                        "svce": .string(Mapping.itemService), "agrp": .string(Mapping.group(name)),
                        "acct": .string(id), "labl": .string(label), "gena": .data(metadata.encoded())
                    ], data: data, protection: .whenUnlocked),
                Self.indexRecord(name, id, attributes)
            ])
            c.put(id, Self.indexed(added[0]))
            wrote(from: before)
            let itemPath = Self.itemPath(name, id)
            bus.emitSignal(
                path: path, interface: Self.collectionInterface, member: "ItemCreated", [.objectPath(itemPath)])
            propertiesChanged(path, Self.collectionInterface, invalidated: ["Items"])
            return [.objectPath(itemPath), Self.noPrompt]
        case "Delete":
            try Self.expect(args, "", member)
            try requireUnlocked("Delete")
            _ = try? keychain.delete(
                Query(
                    .genericPassword,
                    ["svce": .string(Mapping.itemService), "agrp": .string(Mapping.group(name))],
                    synchronizable: .any))
            _ = try? keychain.delete(
                Query(
                    .genericPassword,
                    ["svce": .string(Mapping.indexService), "agrp": .string(Mapping.group(name))],
                    synchronizable: .any))
            _ = try? keychain.delete(
                Query(
                    .genericPassword,
                    ["svce": .string(Mapping.collectionService), "agrp": .string(Mapping.group(name))],
                    synchronizable: .any))
            collections[name] = nil
            for (alias, target) in aliases where target == name { try? setAlias(alias, to: nil) }
            bus.emitSignal(
                path: Self.root, interface: Self.serviceInterface, member: "CollectionDeleted", [.objectPath(path)])
            propertiesChanged(Self.root, Self.serviceInterface, invalidated: ["Collections"])
            return [Self.noPrompt]
        default:
            throw DBusError.unknownMethod("org.freedesktop.Secret.Collection has no method \(member)")
        }
    }

    // MARK: Item

    func itemCall(
        _ name: String, _ id: String, _ member: String, _ args: [DBusValue], sender: String, interface: String
    )
        throws -> [DBusValue]?
    {
        guard interface.isEmpty || interface == Self.itemInterface else { return nil }
        let path = Self.itemPath(name, id)
        let collectionPath = Self.collectionPath(name)
        switch member {
        case "GetSecret":
            try Self.expect(args, "o", member)
            let sessionPath = args[0].stringValue ?? ""
            let s = try session(sessionPath, sender: sender)
            try requireUnlocked("GetSecret")
            return [try secretValue(try storedItem(name, id, data: true), session: s, path: sessionPath)]
        case "SetSecret":
            try Self.expect(args, "(oayays)", member)
            var (data, contentType) = try secretFrom(args[0], sender: sender)
            defer { Crypto.cleanse(&data) }
            try requireUnlocked("SetSecret")
            let c = collections[name]!
            let before = c.token
            var metadata = Self.indexed(try storedItem(name, id, data: false)).metadata
            metadata.contentType = contentType
            try keychain.update(Self.itemQuery(name, id), attributes: ["gena": .data(metadata.encoded())], data: data)
            c.put(id, Self.indexed(try storedItem(name, id, data: false)))
            wrote(from: before)
            bus.emitSignal(
                path: collectionPath, interface: Self.collectionInterface, member: "ItemChanged", [.objectPath(path)])
            return []
        case "Delete":
            try Self.expect(args, "", member)
            try requireUnlocked("Delete")
            let c = collections[name]!
            let before = c.token
            try keychain.delete(Self.itemQuery(name, id))
            _ = try? keychain.delete(Self.indexRecordQuery(name, id))
            c.remove(id)
            wrote(from: before)
            bus.emitSignal(
                path: collectionPath, interface: Self.collectionInterface, member: "ItemDeleted", [.objectPath(path)])
            propertiesChanged(collectionPath, Self.collectionInterface, invalidated: ["Items"])
            return [Self.noPrompt]
        default:
            throw DBusError.unknownMethod("org.freedesktop.Secret.Item has no method \(member)")
        }
    }

    // MARK: Prompt

    func promptCall(_ path: String, _ member: String, _ args: [DBusValue], sender: String) throws -> [DBusValue] {
        guard var p = prompts[path] else { throw DBusError.unknownObject("no such prompt: \(path)") }
        switch member {
        case "Prompt":
            guard !p.running else { return [] }
            p.running = true
            prompts[path] = p
            let keychain = self.keychain
            let prompter = self.prompter
            background(
                { () -> Bool in
                    var error: String?
                    for _ in 0..<3 {
                        guard
                            var passcode = prompter.ask(
                                description: "A program asks to unlock your Latchkey keychain (Secret Service).",
                                error: error)
                        else { return false }
                        defer { Crypto.cleanse(&passcode) }
                        do {
                            try keychain.unlock(passcode: passcode)
                            return true
                        } catch let e as KeychainError where e.status == .authFailed {
                            error = "Wrong passcode; try again."
                        } catch {
                            return false
                        }
                    }
                    return false
                },
                then: { [unowned self] unlocked in
                    guard let p = self.prompts.removeValue(forKey: path) else { return }
                    _ = try? self.refresh()
                    let objects = unlocked ? p.objects : []
                    self.bus.emitSignal(
                        path: path, interface: Self.promptInterface, member: "Completed",
                        [.bool(!unlocked), .variant(.objectPaths(objects))])
                    if unlocked {
                        for name in self.collections.keys {
                            self.propertiesChanged(
                                Self.collectionPath(name), Self.collectionInterface, changed: ["Locked": .bool(false)])
                        }
                    }
                })
            return []
        case "Dismiss":
            prompts[path] = nil
            bus.emitSignal(
                path: path, interface: Self.promptInterface, member: "Completed",
                [.bool(true), .variant(.objectPaths([]))])
            return []
        default:
            throw DBusError.unknownMethod("org.freedesktop.Secret.Prompt has no method \(member)")
        }
    }

    func propertiesChanged(
        _ path: String, _ interface: String, changed: [String: DBusValue] = [:], invalidated: [String] = []
    ) {
        bus.emitSignal(
            path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            [.string(interface), .properties(changed), .array(element: "s", invalidated.map { .string($0) })])
    }
}
