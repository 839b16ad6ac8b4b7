import Latchkey
import LatchkeyCrypto
import LatchkeyFormat

/// A machine's syncing identity (spec/SYNC.md §3): an Ed25519 signing key and one X25519 key
/// per syncing class. The private halves live in this machine's keychain as ThisDeviceOnly
/// items (never synced, never restorable elsewhere): the signing key and the `dk` exchange key
/// in a `dku` item, the `ck` one in a `cku` item, the `ak` one in an `aku` item, so that a
/// class locked on this machine keeps the sync keys of that class locked too.
package struct SyncIdentity: @unchecked Sendable {
    package let device: SyncID
    package let signingSeed: SecretKey
    /// Present for the classes whose item could be read (unlocked).
    package var exchange: [SyncClass: SecretKey]
    package let name: String

    package var signingKey: [UInt8] { (try? Crypto.ed25519PublicKey(signingSeed)) ?? [] }

    package init(device: SyncID, signingSeed: SecretKey, exchange: [SyncClass: SecretKey], name: String) {
        self.device = device
        self.signingSeed = signingSeed
        self.exchange = exchange
        self.name = name
    }

    /// A new identity.
    package static func generate(name given: String) throws -> (SyncIdentity, Member) {
        let name: String
        do {
            name = try Member.checkedName(given)
        } catch {
            throw KeychainError(.param, "\(error)")
        }
        var ex: [SyncClass: SecretKey] = [:]
        for c in SyncClass.allCases { ex[c] = try SecretKey.random() }
        let id = SyncIdentity(
            device: try Crypto.randomBytes(16), signingSeed: try SecretKey.random(), exchange: ex, name: name)
        return (id, try id.member(role: .machine))
    }

    /// The recovery key's identity (§3.2): every key derived from the 32-byte recovery secret.
    package static func recovery(_ secret: SecretKey) throws -> SyncIdentity {
        func derive(_ label: String) throws -> SecretKey {
            try Crypto.hkdfSHA256(ikm: secret, salt: Array("LKsync recovery".utf8), info: Array(label.utf8), count: 32)
        }
        var ex: [SyncClass: SecretKey] = [:]
        for c in SyncClass.allCases { ex[c] = try derive("exchange \(c.rawValue)") }
        let device = Array(try derive("device").copyBytes().prefix(16))
        return SyncIdentity(device: device, signingSeed: try derive("signing"), exchange: ex, name: "recovery key")
    }

    package func member(role: Member.Role) throws -> Member {
        Member(
            device: device, signingKey: try Crypto.ed25519PublicKey(signingSeed),
            exchangeKeys: try SyncClass.allCases.map { try Crypto.x25519PublicKey(exchange[$0]!) }, role: role,
            name: name)
    }

    package func sign(_ bytes: [UInt8]) throws -> [UInt8] { try Crypto.ed25519Sign(signingSeed, bytes) }

    // MARK: In the keychain

    /// In the caller's default access group (the CLI's is `latchkey.cli`).
    static let service = "latchkey-sync"

    private static func account(_ pc: ProtectionClass) -> String { "identity-\(pc.code)" }

    /// The identity items are the sync engine's, not the caller's: they are stored and read
    /// with no caller, so they have no access group, and no app (nor the CLI, whose caller has
    /// a group) lists, changes or deletes them by accident (§3.1).
    static let engineContext = CallContext()

    /// Stores the private keys in `keychain` (one item per class; §3.1).
    package func store(in keychain: Keychain) throws {
        for c in SyncClass.allCases {
            var data = exchange[c]!.copyBytes()
            defer { Crypto.cleanse(&data) }
            if c == .always { data = device + signingSeed.copyBytes() + Array(name.utf8) + [0] + data }
            _ = try keychain.add(
                contentsOf: [
                    NewItem(
                        .genericPassword,
                        attributes: [
                            "svce": .string(Self.service), "acct": .string(Self.account(c.localProtection)),
                            "labl": .string("Latchkey sync identity (this machine only)")
                        ], data: data, protection: c.localProtection)
                ], context: Self.engineContext)
        }
    }

    /// The identity stored in `keychain`, with the exchange keys of the classes that are
    /// unlocked; nil when this machine has none.
    package static func load(from keychain: Keychain) throws -> SyncIdentity? {
        func item(_ pc: ProtectionClass) throws -> [UInt8]? {
            do {
                return try keychain.find(
                    // The class named, so that a locked class of the other identity items is
                    // not a candidate that fails the whole query.
                    Query(.genericPassword, ["svce": .string(service), "acct": .string(account(pc))], protection: pc),
                    limit: 1, includeData: true, context: engineContext
                ).first?.data
            } catch let e as KeychainError where e.status == .interactionNotAllowed {
                return nil
            }
        }
        guard var main = try item(SyncClass.always.localProtection) else { return nil }
        defer { Crypto.cleanse(&main) }
        guard main.count >= 16 + 32 + 1 + 32, let zero = main[48...].firstIndex(of: 0), main.count == zero + 33 else {
            throw KeychainError(.decode, "the sync identity item of this keychain is damaged")
        }
        var ex: [SyncClass: SecretKey] = [.always: SecretKey(copying: main[(zero + 1)...])]
        for c in [SyncClass.whenUnlocked, .afterFirstUnlock] {
            if var d = try item(c.localProtection) {
                ex[c] = SecretKey(consuming: &d)
            }
        }
        return SyncIdentity(
            device: Array(main[0..<16]), signingSeed: SecretKey(copying: main[16..<48]), exchange: ex,
            name: String(decoding: main[48..<zero], as: UTF8.self))
    }

    /// Removes this machine's identity from `keychain` (after it left the circle).
    package static func remove(from keychain: Keychain) throws {
        for c in SyncClass.allCases {
            _ = try? keychain.delete(
                Query(.genericPassword, ["svce": .string(service), "acct": .string(account(c.localProtection))]),
                context: engineContext)
        }
    }
}

/// The class keys of one epoch (§6): 32 random bytes per syncing class.
package struct EpochKeys: @unchecked Sendable {
    package var keys: [SyncClass: SecretKey]

    package init(keys: [SyncClass: SecretKey]) { self.keys = keys }

    /// - Parameter random: where the bytes come from (the CSPRNG; the fixture generator's
    ///   deterministic bytes).
    package static func generate(random: (Int) throws -> [UInt8] = Crypto.randomBytes) throws -> EpochKeys {
        var k: [SyncClass: SecretKey] = [:]
        for c in SyncClass.allCases {
            var b = try random(32)
            k[c] = SecretKey(consuming: &b)
        }
        return EpochKeys(keys: k)
    }

    /// The envelope that gives these keys to `members`, and the previous epoch's keys (wrapped
    /// under these) to whoever holds these.
    package func envelope(
        circle: SyncID, epoch: UInt32, statement: [UInt8], author: SyncIdentity, members: [Member],
        previous: EpochKeys?, random: (Int) throws -> [UInt8] = Crypto.randomBytes
    ) throws -> KeyEnvelope {
        var ephemeral: [SyncClass: SecretKey] = [:]
        for c in SyncClass.allCases {
            var b = try random(32)
            ephemeral[c] = SecretKey(consuming: &b)
        }
        var entries: [KeyEnvelope.Entry] = []
        for m in members.sorted(by: { $0.device.lexicographicallyPrecedes($1.device) }) {
            var wrapped: [[UInt8]] = []
            for (i, c) in SyncClass.allCases.enumerated() {
                let shared = try Crypto.x25519(ephemeral[c]!, peerPublic: m.exchangeKeys[i])
                let kek = try KeyEnvelope.kek(shared: shared, statement: statement, member: m.device, c)
                wrapped.append(try Crypto.wrap(keys[c]!, with: kek))
            }
            entries.append(KeyEnvelope.Entry(member: m.device, wrapped: wrapped))
        }
        if let previous {
            // The chain back (§6.3): an entry for the all-zero member holds the previous
            // epoch's keys wrapped under this epoch's.
            entries.append(
                KeyEnvelope.Entry(
                    member: KeyEnvelope.chainMember,
                    wrapped: try SyncClass.allCases.map { try Crypto.wrap(previous.keys[$0]!, with: keys[$0]!) }))
        }
        var e = KeyEnvelope(
            circle: circle, epoch: epoch, statement: statement, author: author.device,
            ephemeral: try SyncClass.allCases.map { try Crypto.x25519PublicKey(ephemeral[$0]!) }, entries: entries)
        e.signature = try author.sign(e.signedBytes)
        return e
    }

    /// This identity's keys from `envelope` (the classes it can unwrap).
    package static func open(_ envelope: KeyEnvelope, as identity: SyncIdentity) throws -> EpochKeys {
        guard let entry = envelope.entries.first(where: { $0.member == identity.device }) else {
            throw SyncFormatError("the key envelope of epoch \(envelope.epoch) holds no keys for this machine")
        }
        var keys: [SyncClass: SecretKey] = [:]
        for (i, c) in SyncClass.allCases.enumerated() {
            guard let mine = identity.exchange[c] else { continue }
            do {
                let shared = try Crypto.x25519(mine, peerPublic: envelope.ephemeral[i])
                let kek = try KeyEnvelope.kek(shared: shared, statement: envelope.statement, member: identity.device, c)
                keys[c] = try Crypto.unwrap(entry.wrapped[i], with: kek)
            } catch {
                throw SyncFormatError(
                    "the key envelope of epoch \(envelope.epoch) does not open with this machine's keys")
            }
        }
        return EpochKeys(keys: keys)
    }

    /// The previous epoch's keys, from the chain entry of `envelope`, for the classes held.
    package func previous(in envelope: KeyEnvelope) throws -> EpochKeys {
        guard let entry = envelope.entries.first(where: { $0.member == KeyEnvelope.chainMember }) else {
            throw SyncFormatError("the key envelope of epoch \(envelope.epoch) has no chain to the epoch before")
        }
        var out: [SyncClass: SecretKey] = [:]
        for (i, c) in SyncClass.allCases.enumerated() {
            guard let k = keys[c] else { continue }
            do {
                out[c] = try Crypto.unwrap(entry.wrapped[i], with: k)
            } catch {
                throw SyncFormatError(
                    "the key envelope of epoch \(envelope.epoch) has a chain entry that does not open")
            }
        }
        return EpochKeys(keys: out)
    }
}

extension KeyEnvelope {
    /// The member id of the chain entry (§6.3).
    package static let chainMember = [UInt8](repeating: 0, count: 16)
}

extension Segment {
    /// Seals every entry under `keys` (the keys of `epoch`) with the entry's nonce, and signs
    /// the segment as `author` (§7.3).
    package mutating func seal(plaintexts: [[UInt8]], keys: EpochKeys, author: SyncIdentity) throws {
        for i in entries.indices {
            let e = entries[i]
            let sc = e.syncClass
            guard let classKey = keys.keys[sc] else {
                throw KeychainError(
                    .interactionNotAllowed, "the sync key of class \(sc.protection.code) is locked here")
            }
            var key = try Segment.entryKey(classKey, circle: circle, device: device, number: number).copyBytes()
            defer { Crypto.cleanse(&key) }
            let sealed = try Crypto.aesGCMSeal(key: key, nonce: e.nonce, aad: aad(i), plaintext: plaintexts[i])
            entries[i].sealed = sealed.ciphertext + sealed.tag
        }
        signature = try author.sign(signedBytes)
    }
}

extension SegmentEntry {
    /// The class whose key seals the entry: the item's for a put, `dk` for a delete (§7.3).
    package var syncClass: SyncClass { kind == .delete ? .always : SyncClass(rawValue: protection)! }
}

extension Segment {
    /// The plaintext of entry `i` (§7.3); nil when `keys` lack its class (locked here).
    /// - Throws: `SyncFormatError` when it does not decrypt.
    package func openEntry(_ i: Int, keys: EpochKeys) throws -> [UInt8]? {
        let e = entries[i]
        guard let classKey = keys.keys[e.syncClass] else { return nil }
        var key = try Segment.entryKey(classKey, circle: circle, device: device, number: number).copyBytes()
        defer { Crypto.cleanse(&key) }
        do {
            return try Crypto.aesGCMOpen(
                key: key, nonce: e.nonce, aad: aad(i), ciphertext: Array(e.sealed.dropLast(16)),
                tag: Array(e.sealed.suffix(16)))
        } catch {
            throw SyncFormatError("entry \(i) does not decrypt")
        }
    }
}
