/// The plaintext sealed inside an item record: class, attributes and secret data (spec §8).
/// It only ever exists in memory; on disk it is AES-256-GCM ciphertext.
public struct ItemPlaintext: Equatable, Sendable {
    public var itemClass: ItemClass
    public var attributes: [String: AttributeValue]
    public var data: [UInt8]

    public init(itemClass: ItemClass, attributes: [String: AttributeValue], data: [UInt8]) {
        self.itemClass = itemClass
        self.attributes = attributes
        self.data = data
    }

    public static let maxNameLength = 32

    /// The size of `encode()`'s output, computed without encoding.
    public var encodedSize: Int { 1 + 4 + AttributeList.encodedSize(attributes) + 4 + data.count }

    public func encode() -> [UInt8] {
        var w = ByteWriter(capacity: 64 + data.count + attributes.count * 24)
        w.u8(FormatConstants.itemPlaintextVersion)
        w.raw(itemClass.code)
        AttributeList.write(attributes, into: &w)
        w.u32(UInt32(data.count))
        w.raw(data)
        return w.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws -> ItemPlaintext {
        var r = ByteReader(bytes)
        let version = try r.u8("item plaintext version")
        guard version == FormatConstants.itemPlaintextVersion else {
            throw FormatError.unsupportedVersion(what: "item plaintext", major: UInt16(version), minor: 0)
        }
        let code = String(decoding: try r.take(4, "item class"), as: UTF8.self)
        guard let cls = ItemClass(rawValue: code) else {
            throw FormatError.invalidField(field: "item class", reason: "unknown class")
        }
        let attributes = try AttributeList.read(&r)
        let dataLength = Int(try r.u32("item data length"))
        let data = try r.bytes(dataLength, "item data")
        try r.expectEnd("item plaintext")
        return ItemPlaintext(itemClass: cls, attributes: attributes, data: data)
    }
}
