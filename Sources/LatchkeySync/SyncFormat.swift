import LatchkeyCrypto
import LatchkeyFormat

// The files a machine writes into the remote (spec/SYNC.md §4–§7): circle statements, join
// applications, key envelopes and segments. Each is written once, by one machine, under its
// own directory, and signed by it; each layout is read and written here only.

/// A 16-byte identifier (circle, device, sync id).
package typealias SyncID = [UInt8]

/// The version of every file of spec/SYNC.md.
package enum SyncVersion {
    package static let major: UInt16 = 1
    package static let minor: UInt16 = 0
}

/// Protection classes that can sync: the migratory ones (ak, ck, dk).
package enum SyncClass: UInt8, CaseIterable, Sendable, Comparable {
    case whenUnlocked = 6, afterFirstUnlock = 7, always = 8

    package init?(_ pc: ProtectionClass) { self.init(rawValue: pc.rawValue) }
    package var protection: ProtectionClass { ProtectionClass(rawValue: rawValue)! }
    /// The ThisDeviceOnly class that holds this machine's private key for the class.
    package var localProtection: ProtectionClass { ProtectionClass(rawValue: rawValue + 3)! }
    package static func < (a: SyncClass, b: SyncClass) -> Bool { a.rawValue < b.rawValue }
}

/// Why a remote file was refused: every case is a reason to apply nothing from it.
package struct SyncFormatError: Error, CustomStringConvertible, Equatable {
    package let description: String
    package init(_ d: String) { description = d }
}

extension ByteReader {
    /// Reads magic and version; returns the minor version.
    @discardableResult
    mutating func readFilePreamble(_ magic: [UInt8], _ what: String) throws -> UInt16 {
        guard try readBytes(count: 8, "\(what) magic") == magic else { throw SyncFormatError("\(what): wrong magic") }
        let major: UInt16 = try readInteger("\(what) major version")
        let minor: UInt16 = try readInteger("\(what) minor version")
        guard major == SyncVersion.major else { throw SyncFormatError("\(what): unsupported major version \(major)") }
        return minor
    }
}

extension ByteWriter {
    mutating func writeFilePreamble(_ magic: [UInt8], minor: UInt16 = SyncVersion.minor) {
        writeBytes(magic)
        writeInteger(SyncVersion.major)
        writeInteger(minor)
    }
}

/// Splits signed bytes into the signed part and the 64-byte signature.
func splitSignature(_ bytes: [UInt8], _ what: String) throws -> (body: [UInt8], signature: [UInt8]) {
    guard bytes.count > 64 else { throw SyncFormatError("\(what): too short") }
    return (Array(bytes[..<(bytes.count - 64)]), Array(bytes[(bytes.count - 64)...]))
}

// MARK: Members

/// A machine (or the recovery key) in the circle: its identity's public keys.
package struct Member: Equatable, Sendable {
    package enum Role: UInt8, Sendable { case machine = 0, recovery = 1 }
    package var device: SyncID
    package var signingKey: [UInt8]
    /// One X25519 key per syncing class, in `SyncClass` order (ak, ck, dk).
    package var exchangeKeys: [[UInt8]]
    package var role: Role
    package var name: String

    package static let maxNameBytes = 64

    /// A machine name as the circle holds it: at most 64 bytes of UTF-8, cut at a character.
    /// - Throws: `SyncFormatError` for an empty name or one with control characters.
    package static func checkedName(_ name: String) throws -> String {
        guard !name.isEmpty, !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw SyncFormatError("a machine name must be non-empty text without control characters")
        }
        var out = ""
        for c in name {
            if out.utf8.count + String(c).utf8.count > maxNameBytes { break }
            out.append(c)
        }
        return out
    }

    func write(into w: inout ByteWriter) {
        w.writeBytes(device)
        w.writeBytes(signingKey)
        for k in exchangeKeys { w.writeBytes(k) }
        w.writeInteger(role.rawValue)
        let n = Array(name.utf8)
        w.writeInteger(UInt8(n.count))
        w.writeBytes(n)
    }

    static func read(_ r: inout ByteReader) throws -> Member {
        let device = try r.readBytes(count: 16, "member device")
        let sign = try r.readBytes(count: 32, "member signing key")
        var kex: [[UInt8]] = []
        for _ in SyncClass.allCases { kex.append(try r.readBytes(count: 32, "member exchange key")) }
        guard let role = Role(rawValue: try r.readInteger(as: UInt8.self, "member role")) else {
            throw SyncFormatError("member: unknown role")
        }
        let n = Int(try r.readInteger(as: UInt8.self, "member name length"))
        guard n <= maxNameBytes else { throw SyncFormatError("member: name too long") }
        let raw = try r.readBytes(count: n, "member name")
        guard let name = String(validating: raw, as: UTF8.self), (try? checkedName(name)) == name else {
            throw SyncFormatError("member: the name is not valid text")
        }
        return Member(device: device, signingKey: sign, exchangeKeys: kex, role: role, name: name)
    }
}

// MARK: Circle statements (§4)

/// One epoch of the circle: who is in it, who said so, signed by a member of the epoch before.
package struct CircleStatement: Equatable, Sendable {
    package enum Action: UInt8, Sendable { case founded = 1, approved = 2, removed = 3, recovered = 4 }
    static let magic = Array("LKsyncCS".utf8)

    package var circle: SyncID
    package var epoch: UInt32
    package var previous: [UInt8]
    package var author: SyncID
    package var action: Action
    package var subject: SyncID
    /// For a removal: how many of the removed machine's segments the circle keeps (those the
    /// remover had applied); 0 otherwise (§4.1).
    package var subjectSegments: UInt64 = 0
    package var members: [Member]
    package var signature: [UInt8] = []
    /// The minor version it was written with (its bytes are signed as they are).
    package var minor: UInt16 = SyncVersion.minor

    package init(
        circle: SyncID, epoch: UInt32, previous: [UInt8], author: SyncID, action: Action, subject: SyncID,
        subjectSegments: UInt64 = 0, members: [Member], signature: [UInt8] = [], minor: UInt16 = SyncVersion.minor
    ) {
        self.circle = circle
        self.epoch = epoch
        self.previous = previous
        self.author = author
        self.action = action
        self.subject = subject
        self.subjectSegments = subjectSegments
        self.members = members
        self.signature = signature
        self.minor = minor
    }

    package var signedBytes: [UInt8] {
        var w = ByteWriter(capacity: 256)
        w.writeFilePreamble(Self.magic, minor: minor)
        w.writeBytes(circle)
        w.writeInteger(epoch)
        w.writeBytes(previous)
        w.writeBytes(author)
        w.writeInteger(action.rawValue)
        w.writeBytes(subject)
        w.writeInteger(subjectSegments)
        w.writeInteger(UInt16(members.count))
        for m in members.sorted(by: { $0.device.lexicographicallyPrecedes($1.device) }) { m.write(into: &w) }
        return w.bytes
    }
    package var bytes: [UInt8] { signedBytes + signature }
    package var hash: [UInt8] { Crypto.sha256(bytes) }
    package func member(_ id: SyncID) -> Member? { members.first { $0.device == id } }

    package static func decode(_ bytes: [UInt8]) throws -> CircleStatement {
        let (body, sig) = try splitSignature(bytes, "circle statement")
        var r = ByteReader(body)
        let minor = try r.readFilePreamble(magic, "circle statement")
        let circle = try r.readBytes(count: 16, "circle id")
        let epoch: UInt32 = try r.readInteger("epoch")
        let prev = try r.readBytes(count: 32, "previous statement")
        let author = try r.readBytes(count: 16, "author")
        guard let action = Action(rawValue: try r.readInteger(as: UInt8.self, "action")) else {
            throw SyncFormatError("circle statement: unknown action")
        }
        let subject = try r.readBytes(count: 16, "subject")
        let subjectSegments: UInt64 = try r.readInteger("subject segments")
        guard action == .removed || subjectSegments == 0 else {
            throw SyncFormatError("circle statement: segments kept for a machine not removed")
        }
        let count = Int(try r.readInteger(as: UInt16.self, "member count"))
        var members: [Member] = []
        for _ in 0..<count { members.append(try Member.read(&r)) }
        try r.expectEnd("circle statement")
        guard zip(members, members.dropFirst()).allSatisfy({ $0.device.lexicographicallyPrecedes($1.device) }) else {
            throw SyncFormatError("circle statement: members not in order, or one twice")
        }
        let s = CircleStatement(
            circle: circle, epoch: epoch, previous: prev, author: author, action: action, subject: subject,
            subjectSegments: subjectSegments, members: members, signature: sig, minor: minor)
        guard s.signedBytes == body else { throw SyncFormatError("circle statement: not in canonical form") }
        return s
    }
}

// MARK: Join applications (§5)

/// What a new machine publishes to ask to join: its keys and the circle it saw.
package struct Application: Equatable, Sendable {
    static let magic = Array("LKsyncAP".utf8)
    package var circle: SyncID
    package var sawHead: [UInt8]
    package var member: Member
    package var signature: [UInt8] = []

    package var signedBytes: [UInt8] {
        var w = ByteWriter(capacity: 200)
        w.writeFilePreamble(Self.magic)
        w.writeBytes(circle)
        w.writeBytes(sawHead)
        member.write(into: &w)
        return w.bytes
    }
    package var bytes: [UInt8] { signedBytes + signature }

    /// The code both machines show; the user compares them (§5.2): 60 bits of a hash of the
    /// joiner's keys and the circle it saw, as 12 base-32 characters in groups of four.
    package var code: String {
        var input = Array("LKsync code".utf8)
        input += circle + sawHead + member.device + member.signingKey
        for k in member.exchangeKeys { input += k }
        let h = Crypto.sha256(input)
        let alphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
        var bits: UInt64 = 0
        for b in h.prefix(8) { bits = bits << 8 | UInt64(b) }
        var out = ""
        for i in 0..<12 {
            if i > 0, i % 4 == 0 { out += "-" }
            out.append(alphabet[Int((bits >> UInt64(59 - 5 * i)) & 31)])
        }
        return out
    }

    package static func decode(_ bytes: [UInt8]) throws -> Application {
        let (body, sig) = try splitSignature(bytes, "application")
        var r = ByteReader(body)
        try r.readFilePreamble(magic, "application")
        let a = Application(
            circle: try r.readBytes(count: 16, "circle id"), sawHead: try r.readBytes(count: 32, "head"),
            member: try Member.read(&r), signature: sig)
        try r.expectEnd("application")
        guard Crypto.ed25519Verify(publicKey: a.member.signingKey, message: body, signature: sig) else {
            throw SyncFormatError("application: bad signature")
        }
        return a
    }
}

// MARK: Key envelopes (§6)

/// The epoch's class keys, wrapped to each member's exchange key of the same class.
package struct KeyEnvelope: Equatable, Sendable {
    static let magic = Array("LKsyncKE".utf8)
    package struct Entry: Equatable, Sendable {
        package var member: SyncID
        /// AES key wrap of the 32-byte class key, one per class in `SyncClass` order.
        package var wrapped: [[UInt8]]
    }
    package var circle: SyncID
    package var epoch: UInt32
    package var statement: [UInt8]
    package var author: SyncID
    /// One ephemeral X25519 public key per class.
    package var ephemeral: [[UInt8]]
    package var entries: [Entry]
    package var signature: [UInt8] = []

    package var signedBytes: [UInt8] {
        var w = ByteWriter(capacity: 512)
        w.writeFilePreamble(Self.magic)
        w.writeBytes(circle)
        w.writeInteger(epoch)
        w.writeBytes(statement)
        w.writeBytes(author)
        for e in ephemeral { w.writeBytes(e) }
        w.writeInteger(UInt16(entries.count))
        for e in entries {
            w.writeBytes(e.member)
            for k in e.wrapped { w.writeBytes(k) }
        }
        return w.bytes
    }
    package var bytes: [UInt8] { signedBytes + signature }

    package static func decode(_ bytes: [UInt8]) throws -> KeyEnvelope {
        let (body, sig) = try splitSignature(bytes, "key envelope")
        var r = ByteReader(body)
        try r.readFilePreamble(magic, "key envelope")
        let circle = try r.readBytes(count: 16, "circle id")
        let epoch: UInt32 = try r.readInteger("epoch")
        let statement = try r.readBytes(count: 32, "statement")
        let author = try r.readBytes(count: 16, "author")
        var eph: [[UInt8]] = []
        for _ in SyncClass.allCases { eph.append(try r.readBytes(count: 32, "ephemeral key")) }
        let n = Int(try r.readInteger(as: UInt16.self, "entry count"))
        var entries: [Entry] = []
        for _ in 0..<n {
            let m = try r.readBytes(count: 16, "entry member")
            var w: [[UInt8]] = []
            for _ in SyncClass.allCases { w.append(try r.readBytes(count: 40, "wrapped key")) }
            entries.append(Entry(member: m, wrapped: w))
        }
        try r.expectEnd("key envelope")
        return KeyEnvelope(
            circle: circle, epoch: epoch, statement: statement, author: author, ephemeral: eph, entries: entries,
            signature: sig)
    }

    /// The key-encryption key for `member`'s class-`c` key (§6.2).
    static func kek(shared: SecretKey, statement: [UInt8], member: SyncID, _ c: SyncClass) throws -> SecretKey {
        try Crypto.hkdfSHA256(
            ikm: shared, salt: statement, info: Array("LKsync kek".utf8) + member + [c.rawValue], count: 32)
    }
}

// MARK: Segments (§7)

/// One change to one item, as a machine wrote it.
package struct SegmentEntry: Equatable, Sendable {
    package enum Kind: UInt8, Sendable { case put = 1, delete = 2 }
    package var syncID: SyncID
    package var hlc: UInt64
    package var kind: Kind
    /// The item's class (6–8) for a put; 0 for a delete.
    package var protection: UInt8
    package var nonce: [UInt8]
    /// AES-256-GCM ciphertext of the item plaintext (FORMAT §8) with its 16-byte tag; for a
    /// delete, the tag of an empty plaintext.
    package var sealed: [UInt8]

    package init(syncID: SyncID, hlc: UInt64, kind: Kind, protection: UInt8, nonce: [UInt8], sealed: [UInt8]) {
        self.syncID = syncID
        self.hlc = hlc
        self.kind = kind
        self.protection = protection
        self.nonce = nonce
        self.sealed = sealed
    }

    /// The clear fields the AAD and the merge read.
    func writeClear(into w: inout ByteWriter) {
        w.writeBytes(syncID)
        w.writeInteger(hlc)
        w.writeInteger(kind.rawValue)
        w.writeInteger(protection)
        w.writeZeros(2)
    }

    /// The entry as §7.1 lays it out: clear fields, nonce, sealed length, sealed.
    func write(into w: inout ByteWriter) {
        writeClear(into: &w)
        w.writeBytes(nonce)
        w.writeInteger(UInt32(sealed.count))
        w.writeBytes(sealed)
    }

    /// Reads an entry laid out as §7.1 says, refusing what §7.1 rules 5 and 6 refuse.
    static func read(from r: inout ByteReader, _ what: String) throws -> SegmentEntry {
        let id = try r.readBytes(count: 16, "sync id")
        let hlc: UInt64 = try r.readInteger("hlc")
        guard let kind = SegmentEntry.Kind(rawValue: try r.readInteger(as: UInt8.self, "kind")) else {
            throw SyncFormatError("\(what): unknown entry kind")
        }
        let pc: UInt8 = try r.readInteger("protection")
        try r.readReserved(count: 2, "entry reserved")
        guard kind == .put ? SyncClass(rawValue: pc) != nil : pc == 0 else {
            throw SyncFormatError("\(what): an entry's protection class is not one that syncs")
        }
        let nonce = try r.readBytes(count: 12, "nonce")
        let n = Int(try r.readInteger(as: UInt32.self, "sealed length"))
        guard n >= 16, n <= r.remaining else { throw SyncFormatError("\(what): bad sealed length") }
        guard kind == .put || n == 16 else { throw SyncFormatError("\(what): a delete carries data") }
        return SegmentEntry(
            syncID: id, hlc: hlc, kind: kind, protection: pc, nonce: nonce, sealed: try r.readBytes(count: n, "sealed"))
    }
}

/// A machine's numbered, hash-chained, signed batch of changes.
package struct Segment: Equatable, Sendable {
    static let magic = Array("LKsyncSG".utf8)
    package struct Seen: Equatable, Sendable {
        package var device: SyncID
        package var number: UInt64
        package var hash: [UInt8]

        /// `u16` count, then each record (§7.1), as segments and acknowledgements hold them.
        static func write(_ seen: [Seen], into w: inout ByteWriter) {
            w.writeInteger(UInt16(seen.count))
            for s in seen {
                w.writeBytes(s.device)
                w.writeInteger(s.number)
                w.writeBytes(s.hash)
            }
        }

        static func read(from r: inout ByteReader) throws -> [Seen] {
            try (0..<Int(try r.readInteger(as: UInt16.self, "seen count"))).map { _ in
                Seen(
                    device: try r.readBytes(count: 16, "seen device"), number: try r.readInteger("seen number"),
                    hash: try r.readBytes(count: 32, "seen hash"))
            }
        }
    }
    package var circle: SyncID
    package var device: SyncID
    package var number: UInt64
    package var previous: [UInt8]
    package var epoch: UInt32
    package var seen: [Seen]
    package var entries: [SegmentEntry]
    package var signature: [UInt8] = []

    package static let maxEntries = 1 << 20

    package init(
        circle: SyncID, device: SyncID, number: UInt64, previous: [UInt8], epoch: UInt32, seen: [Seen],
        entries: [SegmentEntry], signature: [UInt8] = []
    ) {
        self.circle = circle
        self.device = device
        self.number = number
        self.previous = previous
        self.epoch = epoch
        self.seen = seen
        self.entries = entries
        self.signature = signature
    }

    package var signedBytes: [UInt8] {
        var w = ByteWriter(capacity: 128 + entries.reduce(0) { $0 + 48 + $1.sealed.count })
        w.writeFilePreamble(Self.magic)
        w.writeBytes(circle)
        w.writeBytes(device)
        w.writeInteger(number)
        w.writeBytes(previous)
        w.writeInteger(epoch)
        Segment.Seen.write(seen, into: &w)
        w.writeInteger(UInt32(entries.count))
        for e in entries { e.write(into: &w) }
        return w.bytes
    }
    package var bytes: [UInt8] { signedBytes + signature }

    package static func decode(_ bytes: [UInt8]) throws -> Segment {
        let (body, sig) = try splitSignature(bytes, "segment")
        var r = ByteReader(body)
        try r.readFilePreamble(magic, "segment")
        let circle = try r.readBytes(count: 16, "circle id")
        let device = try r.readBytes(count: 16, "device")
        let number: UInt64 = try r.readInteger("number")
        let prev = try r.readBytes(count: 32, "previous segment")
        let epoch: UInt32 = try r.readInteger("epoch")
        let seen = try Seen.read(from: &r)
        let count = Int(try r.readInteger(as: UInt32.self, "entry count"))
        guard count <= maxEntries, count * 52 <= r.remaining else {
            throw SyncFormatError("segment: entry count too large")
        }
        var entries: [SegmentEntry] = []
        entries.reserveCapacity(count)
        for _ in 0..<count { entries.append(try SegmentEntry.read(from: &r, "segment")) }
        try r.expectEnd("segment")
        return Segment(
            circle: circle, device: device, number: number, previous: prev, epoch: epoch, seen: seen,
            entries: entries, signature: sig)
    }

    /// The AAD of entry `index` (§7.3).
    func aad(_ index: Int) -> [UInt8] {
        var w = ByteWriter(capacity: 80)
        w.writeBytes(Array("LKsyncEN".utf8))
        w.writeBytes(circle)
        w.writeBytes(device)
        w.writeInteger(number)
        w.writeInteger(epoch)
        w.writeInteger(UInt32(index))
        entries[index].writeClear(into: &w)
        return w.bytes
    }

    /// The key entries of this segment are sealed with, from the epoch's class key (§7.3).
    static func entryKey(_ classKey: SecretKey, circle: SyncID, device: SyncID, number: UInt64) throws -> SecretKey {
        var info = Array("LKsync segment".utf8) + device
        withUnsafeBytes(of: number.bigEndian) { info += $0 }
        return try Crypto.hkdfSHA256(ikm: classKey, salt: circle, info: info, count: 32)
    }
}

// MARK: Bases and acknowledgements (§7.5)

/// One chunk of a machine's **base** (§7.5): the entries it keeps of its own segments 1…`through`,
/// each as it was sealed in its segment (number, epoch, index), signed again by the machine, so
/// that those segments can leave the remote. A base is chunks 1…`count`, all with the same
/// `through` and `lastHash`.
package struct BaseChunk: Equatable, Sendable {
    static let magic = Array("LKsyncBS".utf8)
    /// An entry kept from segment `number` (sealed under `epoch`) at `index`.
    package struct Kept: Equatable, Sendable {
        package var number: UInt64
        package var epoch: UInt32
        package var index: UInt32
        package var entry: SegmentEntry

        package init(number: UInt64, epoch: UInt32, index: UInt32, entry: SegmentEntry) {
            self.number = number
            self.epoch = epoch
            self.index = index
            self.entry = entry
        }
    }
    package var circle: SyncID
    package var device: SyncID
    /// The last segment the base stands for; the next one's previous is `lastHash`.
    package var through: UInt64
    package var lastHash: [UInt8]
    /// This chunk's number (from 1) and how many the base has.
    package var chunk: UInt32
    package var count: UInt32
    package var kept: [Kept]
    package var signature: [UInt8] = []

    package init(
        circle: SyncID, device: SyncID, through: UInt64, lastHash: [UInt8], chunk: UInt32, count: UInt32,
        kept: [Kept], signature: [UInt8] = []
    ) {
        self.circle = circle
        self.device = device
        self.through = through
        self.lastHash = lastHash
        self.chunk = chunk
        self.count = count
        self.kept = kept
        self.signature = signature
    }

    package var signedBytes: [UInt8] {
        var w = ByteWriter(capacity: 128 + kept.reduce(0) { $0 + 64 + $1.entry.sealed.count })
        w.writeFilePreamble(Self.magic)
        w.writeBytes(circle)
        w.writeBytes(device)
        w.writeInteger(through)
        w.writeBytes(lastHash)
        w.writeInteger(chunk)
        w.writeInteger(count)
        w.writeInteger(UInt32(kept.count))
        for k in kept {
            w.writeInteger(k.number)
            w.writeInteger(k.epoch)
            w.writeInteger(k.index)
            k.entry.write(into: &w)
        }
        return w.bytes
    }
    package var bytes: [UInt8] { signedBytes + signature }

    /// Refuses what §7.5 refuses: besides the rules of §7.1 for each entry, a chunk number
    /// outside 1…count, and kept entries not in strictly ascending (number, index) order or
    /// numbered outside 1…through.
    package static func decode(_ bytes: [UInt8]) throws -> BaseChunk {
        let (body, sig) = try splitSignature(bytes, "base")
        var r = ByteReader(body)
        _ = try r.readFilePreamble(magic, "base")
        var b = BaseChunk(
            circle: try r.readBytes(count: 16, "circle id"), device: try r.readBytes(count: 16, "device"),
            through: try r.readInteger("through"), lastHash: try r.readBytes(count: 32, "last hash"),
            chunk: try r.readInteger("chunk"), count: try r.readInteger("chunk count"), kept: [], signature: sig)
        guard b.through >= 1, b.chunk >= 1, b.chunk <= b.count, b.count <= 1 << 16 else {
            throw SyncFormatError("base: its numbers are out of range")
        }
        let n = Int(try r.readInteger(as: UInt32.self, "entry count"))
        guard n <= Segment.maxEntries, n * 68 <= r.remaining else {
            throw SyncFormatError("base: entry count too large")
        }
        b.kept.reserveCapacity(n)
        var last: (UInt64, UInt32)?
        for _ in 0..<n {
            let number: UInt64 = try r.readInteger("number")
            let epoch: UInt32 = try r.readInteger("epoch")
            let index: UInt32 = try r.readInteger("index")
            guard number >= 1, number <= b.through, last.map({ $0 < (number, index) }) ?? true else {
                throw SyncFormatError("base: its entries are not in order")
            }
            last = (number, index)
            b.kept.append(
                Kept(number: number, epoch: epoch, index: index, entry: try SegmentEntry.read(from: &r, "base")))
        }
        try r.expectEnd("base")
        return b
    }
}

/// What a machine has applied of the others (§7.5), signed: lets a machine that writes no
/// segment hold back no pruning. A replayed older one only holds pruning back.
package struct Acknowledgement: Equatable, Sendable {
    static let magic = Array("LKsyncAK".utf8)
    package var circle: SyncID
    package var device: SyncID
    package var seen: [Segment.Seen]
    package var signature: [UInt8] = []

    package var signedBytes: [UInt8] {
        var w = ByteWriter(capacity: 64 + seen.count * 56)
        w.writeFilePreamble(Self.magic)
        w.writeBytes(circle)
        w.writeBytes(device)
        Segment.Seen.write(seen, into: &w)
        return w.bytes
    }
    package var bytes: [UInt8] { signedBytes + signature }

    package static func decode(_ bytes: [UInt8]) throws -> Acknowledgement {
        let (body, sig) = try splitSignature(bytes, "acknowledgement")
        var r = ByteReader(body)
        _ = try r.readFilePreamble(magic, "acknowledgement")
        let a = Acknowledgement(
            circle: try r.readBytes(count: 16, "circle id"), device: try r.readBytes(count: 16, "device"),
            seen: try Segment.Seen.read(from: &r), signature: sig)
        try r.expectEnd("acknowledgement")
        return a
    }
}
