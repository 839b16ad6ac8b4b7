import LatchkeyCrypto

/// The payload of an attribute-hash record (spec/FORMAT.md §7.6, record type `0x80`): keyed,
/// truncated hashes of a few attributes of the item put by the record just before it, so that
/// a query on one of those attributes can find its candidates without decrypting every item.
///
/// The record is ancillary: a reader that does not know it skips it, and a put without a
/// valid hash record bound to it is simply "unhashed", a candidate for every attribute query.
/// The hashes are filters, never answers: every candidate is decrypted and matched.
public struct AttributeHashRecord: Equatable, Sendable {
    /// Bytes of the put payload the binding copies: the first 16 bytes of the wrapped item key
    /// (payload bytes 40–55), which a fresh random item key makes unique per put.
    public static let bindingRange = 40..<56
    public static let hashSize = 8
    public static let fixedSize = 36
    /// A writer writes at most one hash per indexed attribute (five for `cert`).
    public static let maxHashes = 16

    public var uuid: [UInt8]
    public var binding: [UInt8]
    /// Each hash as the big-endian integer of its 8 bytes.
    public var hashes: [UInt64]

    public init(uuid: [UInt8], binding: [UInt8], hashes: [UInt64]) {
        self.uuid = uuid
        self.binding = binding
        self.hashes = hashes
    }

    /// The attributes each class's hash records cover, in this order (§7.6). Each is either a
    /// unique-key attribute (absent: hashed with its default, as the query matching and the
    /// unique key treat it) or one that an absent value never matches (absent: no hash).
    public static func indexedAttributes(for c: ItemClass) -> [String] {
        switch c {
        case .genericPassword: return ["acct", "svce", "labl", "gena"]
        case .internetPassword: return ["acct", "srvr", "sdmn", "labl"]
        case .certificate: return ["labl", "subj", "issr", "pkhh", "skid"]
        case .key: return ["klbl", "atag", "labl"]
        }
    }

    /// How many hashes the record of this plaintext holds (`FileKeys.attributeHashes`), known
    /// without the keys: one per indexed attribute the item has or that has a default.
    public static func hashCount(for plaintext: ItemPlaintext) -> Int {
        // An attribute with a default is exactly one whose absent value has an element.
        let indexed = IndexedAttributes.of(plaintext.itemClass)
        var n = 0
        for k in indexed.strings.indices
        where indexed.defaults[k] != nil || plaintext.attributes[indexed.strings[k]] != nil { n += 1 }
        return n
    }

    /// The binding of a put payload (its bytes 40–55).
    public static func binding(ofPut payload: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        guard payload.count >= FormatConstants.itemPutFixedSize else { return nil }
        let s = payload.startIndex
        return payload[s + bindingRange.lowerBound..<s + bindingRange.upperBound]
    }

    public func encode() -> [UInt8] {
        var w = ByteWriter(capacity: AttributeHashRecord.fixedSize + hashes.count * AttributeHashRecord.hashSize)
        w.writeBytes(uuid)
        w.writeBytes(binding)
        w.writeInteger(UInt8(hashes.count), as: UInt8.self)
        w.writeZeros(3)
        for h in hashes { w.writeInteger(h, as: UInt64.self) }
        return w.bytes
    }

    /// Decodes a payload; nil when it is not one a writer writes (wrong length, a count over
    /// 16, non-zero reserved bytes). A reader ignores such a record: the put before it is then
    /// unhashed (§7.6), never an error.
    public static func decode(_ payload: ArraySlice<UInt8>) -> AttributeHashRecord? {
        var r = ByteReader(payload)
        do {
            let uuid = try r.readBytes(count: 16, "attribute hashes UUID")
            let binding = try r.readBytes(count: 16, "attribute hashes binding")
            let n = Int(try r.readInteger(as: UInt8.self, "attribute hash count"))
            try r.readReserved(count: 3, "attribute hashes reserved")
            guard n <= maxHashes, r.remaining == n * hashSize else { return nil }
            var hashes: [UInt64] = []
            hashes.reserveCapacity(n)
            for _ in 0..<n { hashes.append(try r.readInteger(as: UInt64.self, "attribute hash")) }
            return AttributeHashRecord(uuid: uuid, binding: binding, hashes: hashes)
        } catch {
            return nil
        }
    }
}

/// The canonical element of one attribute (§7.5 "Canonical encoding", §7.6): name length,
/// name, kind, value length, value bytes. `value` nil means absent: a unique-key attribute
/// then takes its default (empty bytes, integer 0, date 0); any other has no element.
public func attributeElement(_ name: String, _ value: AttributeValue?, itemClass c: ItemClass) -> [UInt8]? {
    let v: AttributeValue
    if let value {
        v = value
    } else {
        guard let kind = UniqueKey.attributes(for: c).first(where: { $0.name == name })?.kind else { return nil }
        switch kind {
        case .bytes: v = .data([])
        case .integer: v = .integer(0)
        case .date: v = .date(0)
        }
    }
    let nameBytes = Array(name.utf8)
    let valueBytes = v.keyBytes
    var w = ByteWriter(capacity: 6 + nameBytes.count + valueBytes.count)
    w.writeInteger(UInt8(truncatingIfNeeded: nameBytes.count), as: UInt8.self)
    w.writeBytes(nameBytes)
    w.writeInteger(v.keyKind, as: UInt8.self)
    w.writeInteger(UInt32(truncatingIfNeeded: valueBytes.count), as: UInt32.self)
    w.writeBytes(valueBytes)
    return w.bytes
}

extension FileKeys {
    /// The attribute hash of one canonical element (§7.6):
    /// first_8(HMAC(index key, "LKv1attr" ‖ class code ‖ element)), as a big-endian integer.
    public func attributeHash(itemClass c: ItemClass, element: [UInt8]) -> UInt64 {
        // HMAC-SHA256 gives 32 bytes: the first 8 are always there.
        ByteReader(Crypto.hmacSHA256(key: index, parts: [FormatConstants.attributeHashPrefix, c.code, element]))
            .getInteger(at: 0, as: UInt64.self) ?? 0
    }

    /// The attribute hash of a query value (nil value: the attribute absent), or nil when an
    /// item without the attribute has no hash for it.
    public func attributeHash(itemClass c: ItemClass, name: String, value: AttributeValue?) -> UInt64? {
        attributeElement(name, value, itemClass: c).map { attributeHash(itemClass: c, element: $0) }
    }

    /// The hash record a writer appends right after a put of this plaintext (§7.6): one hash
    /// per indexed attribute of the class that the item has, or that has a default.
    public func attributeHashRecord(for plaintext: ItemPlaintext, putPayload: [UInt8]) -> AttributeHashRecord {
        AttributeHashRecord(
            uuid: Array(putPayload[0..<16]), binding: Array(putPayload[AttributeHashRecord.bindingRange]),
            hashes: attributeHashes(for: plaintext))
    }

    /// The hashes a writer puts in the hash record of this plaintext, in the list's order:
    /// `attributeHash(itemClass:name:value:)` of each indexed attribute, computed through the
    /// index key's keyed context with each element assembled on the stack (a bulk import
    /// hashes four attributes an item).
    public func attributeHashes(for plaintext: ItemPlaintext) -> [UInt64] {
        let c = plaintext.itemClass
        let indexed = IndexedAttributes.of(c)
        let context = index.hmacContext
        var hashes: [UInt64] = []
        hashes.reserveCapacity(indexed.names.count)
        for k in indexed.names.indices {
            guard let value = plaintext.attributes[indexed.strings[k]] else {
                if let element = indexed.defaults[k] { hashes.append(attributeHash(itemClass: c, element: element)) }
                continue
            }
            let hash: UInt64 = indexed.names[k].withUnsafeBytes { name in
                switch value {
                case .string(var s):
                    return s.withUTF8 {
                        attributeHash(context, itemClass: c, name: name, kind: 0, value: UnsafeRawBufferPointer($0))
                    }
                case .data(let d):
                    return d.withUnsafeBytes { attributeHash(context, itemClass: c, name: name, kind: 0, value: $0) }
                case .integer(let i):
                    return withUnsafeBytes(of: UInt64(bitPattern: i).bigEndian) {
                        attributeHash(context, itemClass: c, name: name, kind: 1, value: $0)
                    }
                case .date(let t):
                    return withUnsafeBytes(of: t.bitPattern.bigEndian) {
                        attributeHash(context, itemClass: c, name: name, kind: 2, value: $0)
                    }
                }
            }
            hashes.append(hash)
        }
        return hashes
    }
}

extension FileKeys {
    /// Checks an encoded plaintext as `ItemPlaintext.check` does and puts into `hashes` the
    /// attribute hashes `attributeHashes(for:)` gives for its decoded plaintext (in the order
    /// the attributes are read, then the defaults of absent ones), without decoding it.
    /// - Returns: the item class, or nil when `ItemPlaintext.decode` would throw (`hashes` is
    ///   then meaningless).
    public func attributeHashes(ofEncoded bytes: UnsafeRawBufferPointer, into hashes: inout [UInt64]) -> ItemClass? {
        hashes.removeAll(keepingCapacity: true)
        guard let c = ItemPlaintext.encodedClass(bytes) else { return nil }
        let indexed = IndexedAttributes.of(c)
        let context = index.hmacContext
        var present: UInt32 = 0
        let checked = ItemPlaintext.check(bytes) { name, type, value in
            guard let k = indexed.names.firstIndex(where: { $0.elementsEqual(name) }) else { return }
            present |= 1 << UInt32(k)
            // The canonical element (§7.5): the stored value's bytes are its key bytes (UTF-8,
            // data, or the 8 big-endian bytes of an integer or date), its kind 0, 0, 1 or 2.
            let kind: UInt8 = type == 3 ? 1 : type == 4 ? 2 : 0
            hashes.append(attributeHash(context, itemClass: c, name: name, kind: kind, value: value))
        }
        guard checked == c else { return nil }
        for (k, element) in indexed.defaults.enumerated() where present & (1 << UInt32(k)) == 0 {
            if let element { hashes.append(attributeHash(itemClass: c, element: element)) }
        }
        return c
    }

    /// first_8(HMAC(index key, "LKv1attr" ‖ class ‖ name length ‖ name ‖ kind ‖ value length ‖ value)),
    /// with everything before the value assembled on the stack.
    private func attributeHash(
        _ context: HMACContext, itemClass c: ItemClass, name: UnsafeRawBufferPointer, kind: UInt8,
        value: UnsafeRawBufferPointer
    ) -> UInt64 {
        withUnsafeTemporaryAllocation(byteCount: 96, alignment: 8) { buffer in
            var n = 0
            func put(_ b: UInt8) { buffer[n] = b; n += 1 }
            for b in FormatConstants.attributeHashPrefix { put(b) }
            for b in c.rawValue.utf8 { put(b) }
            put(UInt8(truncatingIfNeeded: name.count))
            for b in name { put(b) }
            put(kind)
            let length = UInt32(truncatingIfNeeded: value.count)
            for s in stride(from: 24, through: 0, by: -8) { put(UInt8(truncatingIfNeeded: length >> UInt32(s))) }
            Crypto.hmacSHA256(context: context, UnsafeRawBufferPointer(rebasing: buffer[0..<n]), value, into: buffer)
            return (0..<8).reduce(UInt64(0)) { $0 << 8 | UInt64(buffer[$1]) }
        }
    }
}

/// Per class, the names of the attributes its hash records cover (as bytes) and, for each, the
/// canonical element of its absent value (nil when an absent value has no hash), computed once.
private struct IndexedAttributes: Sendable {
    var strings: [String]
    var names: [[UInt8]]
    var defaults: [[UInt8]?]

    init(_ c: ItemClass) {
        let list = AttributeHashRecord.indexedAttributes(for: c)
        strings = list
        names = list.map { Array($0.utf8) }
        defaults = list.map { attributeElement($0, nil, itemClass: c) }
        precondition(list.count <= 32, "a presence bit per indexed attribute")
    }

    private static let all = PerItemClass(IndexedAttributes.init)

    static func of(_ c: ItemClass) -> IndexedAttributes { all[c] }
}

extension FileKeys {
    /// The unique-key hash (§7.5) of an encoded plaintext, computed from its bytes without
    /// decoding it: what `uniqueKeyHash(UniqueKey(itemClass:attributes:))` gives for the decoded
    /// plaintext. A full verification compares it with the put's clear part (§8.4), once per
    /// item: the canonical encoding is assembled in `scratch` (kept between calls, so nothing
    /// is allocated once it has grown) and the hash is written into `hash` (16 bytes).
    /// - Returns: false when `ItemPlaintext.check` refuses the plaintext.
    public func uniqueKeyHash(
        ofEncoded bytes: UnsafeRawBufferPointer, scratch: inout [UInt8],
        into hash: UnsafeMutableRawBufferPointer
    ) -> Bool {
        precondition(hash.count >= 16)
        guard let c = ItemPlaintext.encodedClass(bytes), let base = bytes.baseAddress else { return false }
        let key = UniqueKeyNames.of(c)
        return withUnsafeTemporaryAllocation(of: (start: Int, count: Int, kind: UInt8).self, capacity: key.names.count)
        { found in
            for k in 0..<key.names.count { found[k] = (-1, 0, 0) }
            let checked = ItemPlaintext.check(bytes) { name, type, value in
                guard let k = key.names.firstIndex(where: { $0.elementsEqual(name) }) else { return }
                found[k] = (value.baseAddress.map { $0 - base } ?? 0, value.count, type == 3 ? 1 : type == 4 ? 2 : 0)
            }
            guard checked == c else { return false }
            scratch.removeAll(keepingCapacity: true)
            scratch.append(contentsOf: c.rawValue.utf8)
            func u32(_ v: Int) {
                scratch.append(UInt8(truncatingIfNeeded: v >> 24)); scratch.append(UInt8(truncatingIfNeeded: v >> 16))
                scratch.append(UInt8(truncatingIfNeeded: v >> 8)); scratch.append(UInt8(truncatingIfNeeded: v))
            }
            for k in 0..<key.names.count {
                scratch.append(UInt8(key.names[k].count))
                scratch.append(contentsOf: key.names[k])
                let f = found[k]
                if f.start >= 0 {
                    scratch.append(f.kind)
                    u32(f.count)
                    scratch.append(contentsOf: UnsafeRawBufferPointer(start: base + f.start, count: f.count))
                } else {
                    // The default of an absent attribute: empty bytes, 0, date +0.0 (all zero bytes).
                    switch key.kinds[k] {
                    case .bytes: scratch.append(0); u32(0)
                    case .integer: scratch.append(1); u32(8); scratch.append(contentsOf: repeatElement(0, count: 8))
                    case .date: scratch.append(2); u32(8); scratch.append(contentsOf: repeatElement(0, count: 8))
                    }
                }
            }
            let context = index.hmacContext
            withUnsafeTemporaryAllocation(byteCount: 32, alignment: 8) { mac in
                FormatConstants.uniqueKeyPrefix.withUnsafeBytes { prefix in
                    scratch.withUnsafeBytes { Crypto.hmacSHA256(context: context, prefix, $0, into: mac) }
                }
                hash.copyMemory(from: UnsafeRawBufferPointer(rebasing: mac[0..<16]))
            }
            return true
        }
    }
}

/// The unique-key attribute names of each class as bytes, with their kinds (`UniqueKey`), made
/// once for `uniqueKeyHash(ofEncoded:scratch:into:)`.
private struct UniqueKeyNames: Sendable {
    var names: [[UInt8]]
    var kinds: [UniqueKey.Kind]

    init(_ c: ItemClass) {
        names = UniqueKey.attributes(for: c).map { Array($0.name.utf8) }
        kinds = UniqueKey.attributes(for: c).map(\.kind)
    }

    private static let all = PerItemClass(UniqueKeyNames.init)

    static func of(_ c: ItemClass) -> UniqueKeyNames { all[c] }
}
