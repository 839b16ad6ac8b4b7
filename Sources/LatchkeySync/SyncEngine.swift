#if canImport(Glibc)
    import Glibc
#endif
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import Latchkey
import LatchkeyCrypto
import LatchkeyFormat

/// What one `sync` did.
package struct SyncReport: Equatable, Sendable {
    /// Local changes sent: puts and deletes.
    package var sentPuts = 0
    package var sentDeletes = 0
    /// Remote changes written into this keychain: puts and deletes.
    package var receivedPuts = 0
    package var receivedDeletes = 0
    /// Items whose newest version waits for its class to be unlocked here.
    package var waiting = 0
    /// Items that lost to another with the same unique key (kept in history).
    package var conflicts = 0
    /// Items restored here (a backup) that another machine had deleted: removed again.
    package var resurrectionsRemoved = 0
    /// Pushes retried because another machine pushed first.
    package var retries = 0
    /// What the remote did that was refused or looks withheld.
    package var warnings: [String] = []
}

/// Sync of a keychain's synchronizable items with the other machines of its circle (spec/SYNC.md).
///
/// Over the library's seam: it reads the keychain's changes (the change feed,
/// `KeychainStore.changedItems(since:)`, or every live item when that cannot answer), writes
/// remote changes in one streaming transaction, and keeps its own state beside the keychain
/// in `<keychain>.sync/`. The change feed is all that sync added to the keychain's Store.
package final class SyncEngine {
    package let keychain: Keychain
    let store: KeychainStore
    package let directory: String
    /// The disk of the keychain (the seam the fault and power-loss tests replace): every file
    /// of `<keychain>.sync/` but the git checkout is read and written through it.
    let files: any FileSystem
    package var now: () -> Double = { Date().timeIntervalSince1970 }
    /// Extra environment for git (tests).
    package var gitEnvironment: [String: String] = [:]
    /// How many times a push refused because another machine pushed first is retried.
    package var maxRetries = 8
    /// Runs the part of a sync that reads or writes the keychain (not the fetch or push): the
    /// agent holds its keychain only for that long, so a slow remote delays no request.
    package var withKeychain: (_ body: () throws -> Void) throws -> Void = { try $0() }
    /// Called between the steps of a sync (fault tests stop a sync there).
    package var checkpoint: (String) throws -> Void = { _ in }
    /// LATCHKEY_SYNC_TIMING=1: the time of each step of a sync on stderr (for profiling).
    let timing = getenv("LATCHKEY_SYNC_TIMING") != nil
    var stepStart = 0.0
    func step(_ name: String) throws {
        if timing {
            let t = Date().timeIntervalSince1970
            if stepStart > 0 {
                let line = "sync step \(name): \(Int((t - stepStart) * 1000)) ms, \(Self.residentMiB()) MiB peak\n"
                _ = line.withCString { Glibc.write(2, $0, strlen($0)) }
            }
            stepStart = t
        }
        try checkpoint(name)
    }

    /// This process's peak resident memory so far (for the timing lines).
    static func residentMiB() -> Int {
        var usage = rusage()
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return 0 }
        return usage.ru_maxrss >> 10
    }

    private var identity: SyncIdentity?
    var keyCache: [UInt32: EpochKeys] = [:]
    /// The bases read in this operation, by device (nil: none, or refused).
    var baseCache: [SyncID: VerifiedBase?] = [:]
    /// How many of its segments that every other machine applied a machine keeps before it
    /// writes a new base and removes them (§7.5).
    package var compactEvery = 64
    /// Seconds after which a sync that publishes nothing else publishes this machine's
    /// acknowledgement when what it applied changed (§7.5).
    package var acknowledgeEvery: Double = 86_400
    /// The segment last verified again (§7.2), for the puts of one segment applied in a row.
    var segmentCache: (device: SyncID, number: UInt64, segment: Segment)?
    /// The key of the unique digests (§9.1), derived once per operation.
    var uniqueKey: SecretKey?
    /// The bytes of plaintext that `Fresh` holds in this round, at most `freshBudget`: beyond, a
    /// put is read from its segment again when applied (a first sync of 100,000 items would
    /// otherwise hold them all).
    var freshBytes = 0
    static let freshBudget = 2 << 20

    /// - Throws: errSecParam when the keychain was opened through the agent (sync needs the
    ///   file: run it where the keychain is opened directly).
    package init(keychain: Keychain) throws {
        guard let store = keychain.localStore else {
            throw KeychainError(.param, "sync needs the keychain file opened by this process, not through the agent")
        }
        self.keychain = keychain
        self.store = store
        self.directory = Self.directory(for: store.path)
        self.files = store.fs
    }

    package static func directory(for keychainPath: String) -> String { keychainPath + ".sync" }
    var statePath: String { directory + "/state" }
    /// Where git keeps its checkout of the remote (on the real disk, whatever `files` is).
    package lazy var clonePath: String = directory + "/remote"

    /// Whether this keychain is in a circle (or has applied to join one).
    package var isConfigured: Bool { (try? files.identity(path: statePath)) != nil }

    /// The transport of a remote: `dir:/path` a shared folder, anything else a git URL.
    func transport(_ url: String) -> any SyncTransport {
        if url.hasPrefix("dir:") { return FolderTransport(directory: String(url.dropFirst(4))) }
        let t = GitTransport(url: url, directory: clonePath)
        t.environment = gitEnvironment
        return t
    }

    // MARK: Set-up

    /// Founds a circle on an empty remote with this machine as its first member. Returns the
    /// recovery key (shown once; spec/SYNC.md §3.2).
    package func initialize(remote: String, name: String) throws -> String {
        return try locked {
            guard !isConfigured else {
                throw KeychainError(.duplicateItem, "this keychain already syncs; see 'latchkey sync status'")
            }
            let t = transport(remote)
            if try t.fetch(), !RemoteTree(root: t.directory).devices().isEmpty {
                throw KeychainError(
                    .duplicateItem,
                    "the remote \(redacted(remote)) already holds a Latchkey circle; to add this machine to it run 'latchkey sync join --remote URL'"
                )
            }
            let (me, member) = try SyncIdentity.generate(name: name)
            var recoverySecret = try Crypto.randomBytes(32)
            defer { Crypto.cleanse(&recoverySecret) }
            let recovery = try SyncIdentity.recovery(SecretKey(copying: recoverySecret))
            let circleID = try Crypto.randomBytes(16)
            var s = CircleStatement(
                circle: circleID, epoch: 1, previous: [UInt8](repeating: 0, count: 32), author: me.device,
                action: .founded, subject: me.device, members: [member, try recovery.member(role: .recovery)])
            s.signature = try me.sign(s.signedBytes)
            let keys = try EpochKeys.generate()
            let envelope = try keys.envelope(
                circle: circleID, epoch: 1, statement: s.hash, author: me, members: s.members, previous: nil)
            try replaceIdentity(with: me)
            identity = me
            try publishingFirst(me) {
                try t.publish(
                    [
                        ("LATCHKEY-SYNC", Array(Self.readme.utf8)),
                        (RemoteTree.statementPath(me.device, epoch: 1), s.bytes),
                        (RemoteTree.envelopePath(me.device, epoch: 1), envelope.bytes)
                    ], removing: [], message: "latchkey: circle founded by \(name)")
            }
            var state = SyncState(remote: remote, circle: circleID, device: me.device, chain: [s.hash])
            try save(&state)
            return Self.formatRecoveryKey(recoverySecret)
        }
    }

    static let readme = """
        This repository holds a Latchkey sync circle: items encrypted end to end, signed by the
        machines that wrote them (spec/SYNC.md of Latchkey). Do not edit it by hand; every
        machine refuses what it cannot verify.

        """

    /// Asks to join the circle on `remote`: publishes this machine's keys and returns the code
    /// to compare with the one `latchkey sync approve` shows on a member.
    package func join(remote: String, name: String) throws -> String {
        try locked {
            guard !isConfigured else {
                throw KeychainError(
                    .duplicateItem, "this keychain already syncs or has applied to; see 'latchkey sync status'")
            }
            let t = transport(remote)
            guard try t.fetch() else {
                throw KeychainError(
                    .itemNotFound,
                    "the remote \(redacted(remote)) holds no circle yet; found one with 'latchkey sync init'")
            }
            let circle = try Circle.verify(RemoteTree(root: t.directory), circle: nil, pinned: [])
            let (me, member) = try SyncIdentity.generate(name: name)
            var app = Application(circle: circle.head.circle, sawHead: circle.head.hash, member: member)
            app.signature = try me.sign(app.signedBytes)
            try replaceIdentity(with: me)
            identity = me
            try publishingFirst(me) {
                try t.publish(
                    [(RemoteTree.applicationPath(me.device), app.bytes)], removing: [],
                    message: "latchkey: \(name) asks to join")
            }
            var state = SyncState(remote: remote, circle: circle.head.circle, device: me.device, chain: circle.hashes)
            state.appliedAt = circle.head.hash
            try save(&state)
            return app.code
        }
    }

    /// Joins with the recovery key: no other member needed (§5.3).
    package func join(remote: String, name: String, recoveryKey: String) throws {
        try locked {
            guard !isConfigured else {
                throw KeychainError(
                    .duplicateItem, "this keychain already syncs or has applied to; see 'latchkey sync status'")
            }
            guard var secret = Self.parseRecoveryKey(recoveryKey) else {
                throw KeychainError(
                    .param, "that is not a Latchkey recovery key (52 characters of A–Z and 2–7, dashes allowed)")
            }
            defer { Crypto.cleanse(&secret) }
            let recovery = try SyncIdentity.recovery(SecretKey(copying: secret))
            let t = transport(remote)
            guard try t.fetch() else {
                throw KeychainError(.itemNotFound, "the remote \(redacted(remote)) holds no circle")
            }
            let tree = RemoteTree(root: t.directory)
            let circle = try Circle.verify(tree, circle: nil, pinned: [])
            let recoveryMember = try recovery.member(role: .recovery)
            guard circle.statements[0].member(recovery.device) == recoveryMember else {
                throw KeychainError(
                    .authFailed, "this recovery key does not belong to the circle on \(redacted(remote))")
            }
            identity = recovery
            let oldKeys = try keys(epoch: circle.epoch, circle: circle, tree: tree)
            let (me, member) = try SyncIdentity.generate(name: name)
            let written = try advance(
                circle, action: .recovered, subject: member.device, members: circle.head.members + [member],
                author: recovery, previousKeys: oldKeys)
            try replaceIdentity(with: me)
            identity = me
            keyCache = [:]
            try publishingFirst(me) {
                try t.publish(written.files, removing: [], message: "latchkey: \(name) joined with the recovery key")
            }
            var state = SyncState(
                remote: remote, circle: circle.head.circle, device: me.device, chain: circle.hashes + [written.hash])
            try save(&state)
        }
        _ = try sync()
    }

    /// The state, the fetched remote and its circle verified against the state's pins; call with
    /// the lock held.
    private func fetchedCircle() throws -> (SyncState, RemoteTree, Circle) {
        let state = try load()
        let t = transport(state.remote)
        try t.fetch()
        let tree = RemoteTree(root: t.directory)
        return (state, tree, try Circle.verify(tree, circle: state.circle, pinned: state.chain))
    }

    /// The pending applications, with their codes.
    package func applications() throws -> [(application: Application, code: String)] {
        try locked {
            let (_, tree, circle) = try fetchedCircle()
            return Self.applications(tree, circle).map { ($0, $0.code) }
        }
    }

    static func applications(_ tree: RemoteTree, _ circle: Circle) -> [Application] {
        tree.devices().compactMap { d in
            guard circle.anyMember(d) == nil, let b = tree.contents(RemoteTree.applicationPath(d)),
                let a = try? Application.decode(b), a.member.device == d, a.circle == circle.head.circle
            else { return nil }
            return a
        }
    }

    /// Adds the machine whose application shows `code` (§5.2).
    package func approve(code: String) throws -> Member {
        try changeCircle { tree, circle, me, state in
            let wanted = code.uppercased().filter { $0.isLetter || $0.isNumber }
            let apps = Self.applications(tree, circle)
            guard let app = apps.first(where: { $0.code.filter { $0 != "-" } == wanted }) else {
                throw KeychainError(
                    .itemNotFound,
                    apps.isEmpty
                        ? "no machine has asked to join; run 'latchkey sync join --remote URL' on it first"
                        : "no application shows the code \(code); compare the code on the new machine again (pending: \(apps.count))"
                )
            }
            guard app.member.role == .machine else {
                throw KeychainError(.param, "that application is not a machine's; it was not added")
            }
            guard circle.hashes.contains(app.sawHead) else {
                throw KeychainError(
                    .authFailed,
                    "the machine asking to join saw a circle that is not this one (the remote may have shown it another); it was not added"
                )
            }
            let written = try advance(
                circle, action: .approved, subject: app.member.device, members: circle.head.members + [app.member],
                author: me, previousKeys: try keys(epoch: circle.epoch, circle: circle, tree: tree))
            return (app.member, written, "latchkey: \(app.member.name) approved")
        }
    }

    /// Removes a machine (by name or id prefix): a new epoch with new keys that it never gets (§5.4).
    package func remove(_ who: String) throws -> Member {
        try changeCircle { tree, circle, me, state in
            let machines = circle.head.members.filter { $0.role == .machine }
            let named = machines.filter { $0.name == who }
            let matches = named.isEmpty ? machines.filter { hexString($0.device).hasPrefix(who.lowercased()) } : named
            guard matches.count == 1, let gone = matches.first else {
                throw KeychainError(
                    matches.isEmpty ? .itemNotFound : .param,
                    matches.isEmpty
                        ? "no machine of the circle is named \(who); 'latchkey sync devices' lists them"
                        : "\(matches.count) machines match \(who); give more of the id")
            }
            guard gone.device != me.device else {
                throw KeychainError(.param, "a machine cannot remove itself; remove it from another member")
            }
            let written = try advance(
                circle, action: .removed, subject: gone.device,
                members: circle.head.members.filter { $0.device != gone.device }, author: me,
                previousKeys: try keys(epoch: circle.epoch, circle: circle, tree: tree),
                subjectSegments: state.applied[gone.device]?.number ?? 0)
            return (gone, written, "latchkey: \(gone.name) removed")
        }
    }

    /// A change of the circle by this member: fetch, verify, let `decide` write the new epoch,
    /// publish it, and pin it; when another machine published first, all of it again.
    private func changeCircle(
        _ decide: (RemoteTree, Circle, SyncIdentity, SyncState) throws -> (
            Member, (hash: [UInt8], files: [(String, [UInt8])]), String
        )
    ) throws -> Member {
        try locked {
            var state = try load()
            let me = try requireIdentity()
            let t = transport(state.remote)
            var attempt = 0
            while true {
                try t.fetch()
                let tree = RemoteTree(root: t.directory)
                let circle = try Circle.verify(tree, circle: state.circle, pinned: state.chain)
                try requireMember(circle, state)
                let (member, written, message) = try decide(tree, circle, me, state)
                do {
                    try t.publish(written.files, removing: [], message: message)
                    state.chain = circle.hashes + [written.hash]
                    try save(&state)
                    return member
                } catch TransportError.behind where attempt < maxRetries {
                    attempt += 1
                }
            }
        }
    }

    /// Stores a new identity. This keychain is not configured (no state), so an identity
    /// found in it is a leftover of a set-up that stopped between publishing and saving its
    /// state (a kill, a power cut): it syncs nothing and is replaced (§12).
    private func replaceIdentity(with me: SyncIdentity) throws {
        try SyncIdentity.remove(from: keychain)
        try me.store(in: keychain)
    }

    /// Runs `publish`; when it fails, the identity just stored is taken out again, so that a
    /// machine is never left configured for a circle that does not know it.
    private func publishingFirst(_ me: SyncIdentity, _ publish: () throws -> Void) throws {
        do {
            try publish()
        } catch {
            try? SyncIdentity.remove(from: keychain)
            identity = nil
            if case TransportError.behind = error {
                throw KeychainError(.io, "another machine changed the remote at the same moment; run the command again")
            }
            throw error
        }
    }

    /// A new epoch: its statement and key envelope, signed by `author`.
    private func advance(
        _ circle: Circle, action: CircleStatement.Action, subject: SyncID, members: [Member], author: SyncIdentity,
        previousKeys: EpochKeys, subjectSegments: UInt64 = 0
    ) throws -> (hash: [UInt8], files: [(String, [UInt8])]) {
        var s = CircleStatement(
            circle: circle.head.circle, epoch: circle.epoch + 1, previous: circle.head.hash, author: author.device,
            action: action, subject: subject, subjectSegments: subjectSegments, members: members)
        s.signature = try author.sign(s.signedBytes)
        guard Circle.follows(s, circle.head) else {
            throw KeychainError(
                .param, "the circle change would not verify (is the machine already a member?); nothing was changed")
        }
        let envelope = try EpochKeys.generate().envelope(
            circle: s.circle, epoch: s.epoch, statement: s.hash, author: author, members: members,
            previous: previousKeys)
        return (
            s.hash,
            [
                (RemoteTree.statementPath(author.device, epoch: s.epoch), s.bytes),
                (RemoteTree.envelopePath(author.device, epoch: s.epoch), envelope.bytes)
            ]
        )
    }

    /// The members of the circle as this machine verified it.
    package func members() throws -> (members: [Member], epoch: UInt32, pending: [(Application, String)]) {
        try locked {
            let (_, tree, circle) = try fetchedCircle()
            return (circle.head.members, circle.epoch, Self.applications(tree, circle).map { ($0, $0.code) })
        }
    }

    /// The sync state as last saved (status); nil when this keychain does not sync.
    /// Sets how many days of this machine's versions the history keeps (§8.6); nil: leaves it.
    /// - Returns: the bound now.
    @discardableResult
    package func configure(historyDays: UInt32?) throws -> UInt32 {
        try locked {
            var state = try load()
            if let days = historyDays, days != state.historyDays {
                guard days >= 1 else { throw KeychainError(.param, "the history keeps at least 1 day") }
                state.historyDays = days
                try save(&state)
            }
            return state.historyDays
        }
    }

    package func status() throws -> SyncState? {
        guard isConfigured else { return nil }
        return try locked { try load() }
    }

    // MARK: Keys

    /// The class keys of `epoch` that this machine holds (§6.3).
    func keys(epoch e: UInt32, circle: Circle, tree: RemoteTree) throws -> EpochKeys {
        if let k = keyCache[e] { return k }
        let me = try requireIdentity()
        guard let st = circle.statement(e) else { throw SyncFormatError("no statement for epoch \(e)") }
        let env = try envelope(e, circle: circle, tree: tree)
        let k: EpochKeys
        if st.member(me.device) != nil {
            k = try EpochKeys.open(env, as: me)
        } else if e < circle.epoch {
            let next = try keys(epoch: e + 1, circle: circle, tree: tree)
            k = try next.previous(in: try envelope(e + 1, circle: circle, tree: tree))
        } else {
            throw SyncFormatError("this machine is not a member of the circle's newest epoch")
        }
        keyCache[e] = k
        return k
    }

    func envelope(_ e: UInt32, circle: Circle, tree: RemoteTree) throws -> KeyEnvelope {
        let st = circle.statement(e)!
        let signer = (circle.statement(e - 1) ?? st).member(st.author)
        guard let b = tree.contents(RemoteTree.envelopePath(st.author, epoch: e)), let env = try? KeyEnvelope.decode(b),
            env.circle == st.circle, env.epoch == e, env.statement == st.hash, env.author == st.author, let signer,
            Crypto.ed25519Verify(publicKey: signer.signingKey, message: env.signedBytes, signature: env.signature)
        else {
            throw SyncFormatError("the key envelope of epoch \(e) is missing or does not verify")
        }
        return env
    }

    // MARK: State

    func requireIdentity() throws -> SyncIdentity {
        if let identity { return identity }
        guard let i = try SyncIdentity.load(from: keychain) else {
            throw KeychainError(
                .itemNotFound,
                "this keychain holds no sync identity (its ThisDeviceOnly item was deleted?); leave the circle on another member with 'latchkey sync remove' and join again"
            )
        }
        identity = i
        return i
    }

    func requireMember(_ circle: Circle, _ state: SyncState) throws {
        guard circle.head.member(state.device) != nil else {
            if state.appliedAt != nil {
                throw KeychainError(
                    .interactionNotAllowed,
                    "this machine has asked to join and is not approved yet; run 'latchkey sync approve CODE' on a member"
                )
            }
            throw KeychainError(
                .authFailed,
                "this machine was removed from the circle (epoch \(circle.epoch)); it receives nothing more")
        }
    }

    private func stateKey() throws -> SecretKey {
        let me = try requireIdentity()
        return try Crypto.hkdfSHA256(
            ikm: me.signingSeed, salt: Array("LKsync state".utf8), info: me.device, count: 32)
    }

    func load() throws -> SyncState {
        guard let bytes = try readWhole(statePath) else {
            throw KeychainError(
                .itemNotFound, "this keychain does not sync; start with 'latchkey sync init' or 'latchkey sync join'")
        }
        guard let plain = try unseal(bytes, magic: SyncState.magic), var state = try? SyncState.decode(plain) else {
            throw KeychainError(.decode, "the sync state \(statePath) is damaged or not this machine's")
        }
        state.items.reader = { [unowned self] kind, page, generation in
            let path = self.pagePath(kind, page, generation)
            guard let bytes = try self.readWhole(path),
                let plain = try self.unseal(
                    bytes, magic: Self.pageMagic, context: Self.pageContext(kind, page, generation))
            else { throw KeychainError(.decode, "\(path) is missing or damaged") }
            return plain
        }
        let pushed = loadPushed()
        if pushed > state.pushed, pushed <= state.own.number {
            state.pushed = pushed
            state.outbox = state.outbox.filter { $0.key > pushed }
        }
        return state
    }

    /// Saves the state (§9.1): the item pages that changed, each as a new file of the next
    /// generation, synced to disk with their directory; then the state, which names them,
    /// written beside the old one and renamed into place. A crash before that rename leaves the
    /// old state and the pages it names, untouched; the pages no state names are removed after.
    func save(_ state: inout SyncState) throws {
        try state.items.check()
        let generation = state.generation + 1
        let changed = state.items.isDirty
        if changed {
            try makeDirectory(pagesPath)
            try state.items.forEachChangedPage { kind, page, plaintext in
                guard let plaintext else { return }
                let sealed = try seal(
                    plaintext, magic: Self.pageMagic, context: Self.pageContext(kind, page, generation))
                try writeNew(pagePath(kind, page, generation), sealed, what: "a page of the sync state")
            }
            do { try files.syncDirectory(pagesPath) } catch {
                throw KeychainError(.io, "cannot sync \(pagesPath) to disk: \(error)")
            }
        }
        state.items.saved(generation: generation)
        state.generation = generation
        try writeAtomically(statePath, try seal(state.encode(), magic: SyncState.magic), what: "the sync state")
        if changed { removeOldPages(state) }
    }

    static let pageMagic = Array("LKsyncPg".utf8)
    var pagesPath: String { directory + "/pages" }

    /// `pages/<i|u><page, 2 hex digits>.<generation, 16 hex digits>`.
    func pagePath(_ kind: ItemTable.Kind, _ page: Int, _ generation: UInt64) -> String {
        let g = String(generation, radix: 16)
        let p = String(page, radix: 16)
        return pagesPath + "/" + String(UnicodeScalar(kind.rawValue)) + String(repeating: "0", count: 2 - p.count) + p
            + "." + String(repeating: "0", count: 16 - g.count) + g
    }

    /// What a page's seal binds besides its magic: its kind, number and generation, so that no
    /// page file can stand for another.
    static func pageContext(_ kind: ItemTable.Kind, _ page: Int, _ generation: UInt64) -> [UInt8] {
        var w = ByteWriter(capacity: 10)
        w.writeInteger(kind.rawValue)
        w.writeInteger(UInt8(page))
        w.writeInteger(generation)
        return w.bytes
    }

    /// Removes the page files that the saved state does not name (older generations, and those
    /// of a save that stopped before its state was written). Best effort: what is left is
    /// removed by a later save.
    func removeOldPages(_ state: SyncState) {
        var current = Set<String>()
        for p in 0..<ItemTable.pageCount {
            if state.items.itemGenerations[p] != 0 {
                current.insert(pagePath(.items, p, state.items.itemGenerations[p]))
            }
            if state.items.uniqueGenerations[p] != 0 {
                current.insert(pagePath(.unique, p, state.items.uniqueGenerations[p]))
            }
        }
        for name in files.list(pagesPath) {
            let path = pagesPath + "/" + name
            if !current.contains(path) { try? files.remove(path) }
        }
    }

    /// Writes a new file (replacing one a stopped save left under that name) and syncs it.
    func writeNew(_ path: String, _ bytes: [UInt8], what: String) throws {
        do {
            if try files.identity(path: path) != nil { try files.remove(path) }
            let fd = try files.openNoFollow(path, writable: true, create: true, mode: 0o600)
            defer { files.close(fd) }
            try files.write(fd, offset: 0, bytes)
            try files.sync(fd)
        } catch let e as IOFailure {
            throw KeychainError(.io, "cannot write \(what) \(path): \(e)")
        }
    }

    static let pushedMagic = Array("LKsyncPu".utf8)

    /// Records that this machine's segments up to `number` are on the remote (§9.3), in a
    /// small sealed file beside the state, so that a push costs no rewrite of the whole state.
    func savePushed(_ number: UInt64) throws {
        var w = ByteWriter(capacity: 8)
        w.writeInteger(number)
        try writeAtomically(
            directory + "/pushed", try seal(w.bytes, magic: Self.pushedMagic), what: "the push record")
    }

    /// The number in the push record; 0 when there is none (or it does not open).
    func loadPushed() -> UInt64 {
        guard let bytes = try? readWhole(directory + "/pushed", limit: 64),
            let plain = try? unseal(bytes, magic: Self.pushedMagic), plain.count == 8
        else { return 0 }
        return plain.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// `magic ‖ nonce ‖ AES-256-GCM(state key, aad = magic, plaintext) ‖ tag` (§9.1).
    private func seal(_ plaintext: [UInt8], magic: [UInt8], context: [UInt8] = []) throws -> [UInt8] {
        let nonce = try Crypto.randomBytes(12)
        var key = try stateKey().copyBytes()
        defer { Crypto.cleanse(&key) }
        let sealed = try Crypto.aesGCMSeal(key: key, nonce: nonce, aad: magic + context, plaintext: plaintext)
        return magic + nonce + sealed.ciphertext + sealed.tag
    }

    /// The plaintext of `seal`'s bytes; nil when they are not such bytes or do not open.
    private func unseal(_ bytes: [UInt8], magic: [UInt8], context: [UInt8] = []) throws -> [UInt8]? {
        let m = magic.count
        guard bytes.count >= m + 12 + 16, Array(bytes[0..<m]) == magic else { return nil }
        var key = try stateKey().copyBytes()
        defer { Crypto.cleanse(&key) }
        return try? Crypto.aesGCMOpen(
            key: key, nonce: Array(bytes[m..<(m + 12)]), aad: magic + context,
            ciphertext: Array(bytes[(m + 12)..<(bytes.count - 16)]),
            tag: Array(bytes.suffix(16)))
    }

    /// The whole of a file of `<keychain>.sync/` (not through a symlink); nil when it is absent.
    /// - Throws: errSecIO when it cannot be read, or is longer than `limit`.
    func readWhole(_ path: String, limit: Int = 1 << 30) throws -> [UInt8]? {
        try Self.readWhole(files, path, limit: limit)
    }

    static func readWhole(_ files: any FileSystem, _ path: String, limit: Int) throws -> [UInt8]? {
        do {
            guard try files.identity(path: path) != nil else { return nil }
            let fd = try files.openNoFollow(path, writable: false, create: false, mode: 0)
            defer { files.close(fd) }
            let size = try files.size(fd)
            guard size <= UInt64(limit) else {
                throw KeychainError(.io, "\(path) is larger than it can be; remove it")
            }
            return try files.read(fd, offset: 0, count: Int(size))
        } catch let e as IOFailure {
            throw KeychainError(.io, "cannot read \(path): \(e)")
        }
    }

    /// How the last sync ended (the CLI's `sync status`).
    package func lastOutcome() -> SyncStatus { (try? loadStatus()) ?? SyncStatus() }

    /// Whether the keychain at `keychainPath` is in a circle (or has applied to one), without
    /// opening it: its state file exists (§9.1).
    package static func isConfigured(keychainPath: String, files: any FileSystem = PosixFileSystem.shared) -> Bool {
        (try? files.identity(path: directory(for: keychainPath) + "/state")) != nil
    }

    /// How the last sync of the keychain at `keychainPath` ended, read without opening it
    /// (`latchkey status`); nil when it does not sync or has not synced yet.
    package static func lastOutcome(keychainPath: String, files: any FileSystem = PosixFileSystem.shared)
        -> SyncStatus?
    {
        guard isConfigured(keychainPath: keychainPath, files: files) else { return nil }
        return (try? readWhole(files, directory(for: keychainPath) + "/status", limit: 1 << 22)).flatMap(
            SyncStatus.decode)
    }

    func loadStatus() throws -> SyncStatus? {
        try readWhole(directory + "/status", limit: 1 << 22).flatMap(SyncStatus.decode)
    }

    func saveStatus(_ s: SyncStatus) throws {
        try writeAtomically(directory + "/status", s.encode(), what: "the sync status")
    }

    /// Writes `bytes` beside `path` and renames them into place, with fsyncs of the file and
    /// the directory (a crash leaves the old file or the new one).
    func writeAtomically(_ path: String, _ bytes: [UInt8], what: String) throws {
        try makeDirectory()
        do {
            try files.writeFileAtomically(path, bytes, mode: 0o600)
        } catch let e as IOFailure {
            throw KeychainError(.io, "cannot write \(what) \(path): \(e)")
        }
    }

    /// `<keychain>.sync/`, created 0700 (its name made durable) when missing; refused when it is
    /// not a private directory of this user.
    func makeDirectory(_ directory: String? = nil) throws {
        let directory = directory ?? self.directory
        do {
            try files.makeDirectory(directory, mode: 0o700)
            guard let o = try files.ownership(path: directory), o.kind == .directory, o.owner == files.userID else {
                throw KeychainError(
                    .io, "\(directory) is not a directory of this user; refusing to keep sync state there")
            }
            guard o.mode & 0o077 == 0 else {
                throw KeychainError(
                    .io, "\(directory) is open to other users; make it private (chmod 700 \(directory)) and run again")
            }
        } catch let e as IOFailure {
            throw KeychainError(.io, "cannot create \(directory): \(e)")
        }
    }

    /// Runs `body` holding `<keychain>.sync/lock`: one sync at a time per keychain.
    func locked<T>(_ body: () throws -> T) throws -> T {
        // The identity is read again for each operation: the classes unlocked may have changed.
        identity = nil
        keyCache = [:]
        segmentCache = nil
        uniqueKey = nil
        baseCache = [:]
        defer {
            baseCache = [:]
            uniqueKey = nil
            segmentCache = nil
        }
        try makeDirectory()
        let path = directory + "/lock"
        let fd: Int32
        do {
            if try files.identity(path: path) == nil {
                fd = try files.openNoFollow(path, writable: true, create: true, mode: 0o600)
            } else {
                fd = try files.openNoFollow(path, writable: true, create: false, mode: 0)
            }
        } catch let e as IOFailure {
            throw KeychainError(.io, "cannot open \(path): \(e)")
        }
        defer { files.close(fd) }
        do { try files.lock(fd) } catch { throw KeychainError(.io, "cannot lock \(path): \(error)") }
        defer { files.unlock(fd) }
        return try body()
    }

    // MARK: Recovery key text

    static let base32 = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")

    static func formatRecoveryKey(_ bytes: [UInt8]) -> String {
        var bits = 0
        var value = 0
        var out = ""
        for b in bytes {
            value = value << 8 | Int(b)
            bits += 8
            while bits >= 5 {
                out.append(base32[(value >> (bits - 5)) & 31])
                bits -= 5
            }
        }
        if bits > 0 { out.append(base32[(value << (5 - bits)) & 31]) }
        return stride(from: 0, to: out.count, by: 4).map {
            String(out.dropFirst($0).prefix(4))
        }.joined(separator: "-")
    }

    static func parseRecoveryKey(_ text: String) -> [UInt8]? {
        let chars = text.uppercased().filter { $0 != "-" && !$0.isWhitespace }
        guard chars.count == 52 else { return nil }
        var bits = 0
        var value = 0
        var out: [UInt8] = []
        for c in chars {
            guard let v = base32.firstIndex(of: c) else { return nil }
            value = (value << 5 | v) & 0xFFFF
            bits += 5
            if bits >= 8 {
                out.append(UInt8((value >> (bits - 8)) & 0xFF))
                bits -= 8
            }
        }
        return out.count == 32 ? out : nil
    }
}
