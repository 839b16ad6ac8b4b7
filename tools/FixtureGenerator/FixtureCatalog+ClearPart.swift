import LatchkeyCrypto
import LatchkeyFormat

extension FixtureCatalog {
    // MARK: The clear part against the plaintext (spec §8.4)

    /// golden_nopasscode with one put, in the middle of the log, whose clear part is not what
    /// its plaintext gives, sealed with the class key so that its AAD and GCM tag are right: a
    /// class tag of another class (a reader refuses it when it decrypts it), and a unique-key
    /// hash of another unique key (a full verification refuses it).
    static func clearPartCases() throws -> [Fixture] {
        func build(
            _ seed: String, classTag: @escaping (KeychainBuilder) -> [UInt8]?,
            uniqueKeyHash: @escaping (KeychainBuilder) -> [UInt8]?
        )
            throws -> (KeychainBuilder, RecordInfo)
        {
            var at: RecordInfo?
            let b = try buildGoldenNoPasscode { b in
                let item = b.makeItem(
                    .genericPassword, ["acct": .string(seed), "svce": .string("fixtures.latchkey.example/dk")],
                    data: "clear part disagrees", protection: .always, minute: 20)
                let payload = try ItemPutPayload.seal(
                    item.plaintext, uuid: item.uuid, protectionClass: item.protection, flags: 0,
                    keys: b.keys, classKey: b.classKeys[.always]!, fileUUID: b.fileUUID,
                    itemKey: b.newKey().copyBytes(), classTag: classTag(b),
                    uniqueKeyHash: uniqueKeyHash(b))
                try b.commit([.raw(type: RecordType.itemPut.rawValue, payload: payload.encode())])
                at = b.records.last
            }
            return (b, at!)
        }
        let (wrongClass, classAt) = try build(
            "filed-as-inet", classTag: { $0.keys.classTag(.internetPassword) }, uniqueKeyHash: { _ in nil })
        let (wrongKey, keyAt) = try build(
            "hash-of-another-key", classTag: { _ in nil },
            uniqueKeyHash: {
                $0.keys.uniqueKeyHash(
                    UniqueKey(itemClass: .genericPassword, attributes: ["acct": .string("someone-else")]))
            })
        return [
            try Fixture(
                name: "item_class_tag_mismatch", expect: .integrityError,
                description:
                    "golden_nopasscode with a put of a genp item (class dk, readable without a passcode) whose clear class tag is inet's, sealed with the right class key, AAD and tags; a reader that decrypts it finds another class than the tag names (spec §8.4 rule 1)",
                defect:
                    "the put at byte \(classAt.offset), sequence \(classAt.sequence), carries the class tag of inet over a genp plaintext",
                builder: wrongClass),
            try Fixture(
                name: "item_unique_hash_mismatch", expect: .integrityError,
                description:
                    "golden_nopasscode with a put of a genp item (class dk) whose unique-key hash is that of another unique key (acct \"someone-else\"), sealed with the right class key, AAD and tags; queries still answer right, and a full verification refuses it (spec §8.4 rule 2)",
                defect:
                    "the put at byte \(keyAt.offset), sequence \(keyAt.sequence), carries the unique-key hash of acct \"someone-else\" over a plaintext with acct \"hash-of-another-key\"",
                builder: wrongKey)
        ]
    }
}
