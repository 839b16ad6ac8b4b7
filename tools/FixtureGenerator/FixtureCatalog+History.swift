import LatchkeyCrypto
import LatchkeyFormat

extension FixtureCatalog {
    // MARK: History records (spec §7.7)

    static let day: UInt64 = 86_400
    /// The time the history fixtures' history is listed at: 2025-01-31T00:00:00Z, thirty days
    /// after the fixtures were made.
    static let historyNow = KeychainBuilder.createdAt + 30 * day

    /// The history fixture's keychain, as a writer that keeps history writes it: three genp items
    /// (ak, dk, ck); the ak item updated twice (each update a transaction of a kind-1 history
    /// record, then the put), the dk item deleted (a kind-2 history record, then the delete),
    /// the ck item updated once. Each record carries its own bound and a time one day apart:
    /// at `historyNow` the ak item's first record is expired by the version rule (k = 1, a later
    /// record of the item follows), the ck item's by age (d = 7), and the other two are listed.
    /// `malformedDelete`: the delete's history record names the ck item's UUID over the dk
    /// item's put, validly tagged (history_malformed).
    static func buildHistory(malformedDelete: Bool = false) throws -> (KeychainBuilder, defect: String?) {
        let b = try KeychainBuilder(seed: "history", passcode: goldenPasscode)
        func item(_ name: String, _ pc: ProtectionClass, minute: Int) -> FixtureItem {
            b.makeItem(
                .genericPassword,
                [
                    "acct": .string(name), "svce": .string("fixtures.latchkey.example/history"),
                    "labl": .string("History \(name) v1")
                ], data: "\(name)-v1", protection: pc, minute: minute)
        }
        let rotated = item("rotated", .whenUnlocked, minute: 0)
        let deleted = item("deleted", .always, minute: 1)
        let aged = item("aged", .afterFirstUnlock, minute: 2)
        for i in [rotated, deleted, aged] { try b.commit([.put(i)]) }

        /// The item's next version: data and label `vN`, mdat at `at`, cdat kept.
        func next(_ uuid: [UInt8], _ n: Int, at: UInt64) -> FixtureItem {
            var v = b.item(uuid)
            guard case .string(let acct) = v.plaintext.attributes["acct"] else { preconditionFailure() }
            v.plaintext.data = Array("\(acct)-v\(n)".utf8)
            v.plaintext.attributes["labl"] = .string("History \(acct) v\(n)")
            v.plaintext.attributes["mdat"] = .date(Double(at) - 978_307_200)
            return v
        }
        let t1 = KeychainBuilder.createdAt + day, t2 = t1 + day, t3 = t2 + day, t4 = t3 + day
        try b.commit([
            .history(uuid: rotated.uuid, kind: .replaced, keepVersions: 1, keepDays: 0, at: t1),
            .put(next(rotated.uuid, 2, at: t1))
        ])
        try b.commit([
            .history(uuid: rotated.uuid, kind: .replaced, keepVersions: 10, keepDays: 365, at: t2),
            .put(next(rotated.uuid, 3, at: t2))
        ])
        var defect: String?
        if malformedDelete {
            let record = HistoryRecord(
                uuid: aged.uuid, kind: .deleted, keepVersions: 10, keepDays: 365, supersededAt: t3,
                put: b.newestPutPayload(deleted.uuid))
            try b.commit([
                .raw(type: RecordType.history.rawValue, payload: record.encode()), .delete(uuid: deleted.uuid)
            ])
            let at = b.records[b.records.count - 2]
            defect =
                "the history record at byte \(at.offset), sequence \(at.sequence), names item \(hexString(aged.uuid)) (the ck item) in its bytes 0–15 and embeds the put of item \(hexString(deleted.uuid)) (the dk item), whose UUID is at its bytes 32–47"
        } else {
            try b.commit([
                .history(uuid: deleted.uuid, kind: .deleted, keepVersions: 10, keepDays: 365, at: t3),
                .delete(uuid: deleted.uuid)
            ])
        }
        try b.commit([
            .history(uuid: aged.uuid, kind: .replaced, keepVersions: 10, keepDays: 7, at: t4),
            .put(next(aged.uuid, 2, at: t4))
        ])
        return (b, defect)
    }

    /// The history at `now` as §7.7 defines it, computed here from the records' own fields (a
    /// second implementation of the bound, beside LatchkeyFormat's `HistoryBound`).
    static func history(of versions: [FixtureVersion], at now: UInt64) -> FixtureHistory {
        var listed: [FixtureVersion] = []
        for (i, v) in versions.enumerated() {
            let later = versions[(i + 1)...].filter { $0.record.uuid == v.record.uuid }.count
            let byAge =
                v.record.keepDays != 0 && now >= v.record.supersededAt + UInt64(v.record.keepDays) * day
            if !byAge && later < Int(v.record.keepVersions) { listed.append(v) }
        }
        return FixtureHistory(now: now, listed: listed, expired: versions.count - listed.count)
    }

    static func historyCases() throws -> [Fixture] {
        let (b, _) = try buildHistory()
        var history = try Fixture(
            name: "history", expect: .success,
            description:
                "passcode; three genp items (ak, dk, ck) written by a writer that keeps history (spec §7.7): the ak item updated twice and the ck item once, each update a transaction of a kind-1 history record (type 0x81) right before the put, and the dk item deleted, a kind-2 history record right before the delete; the records' own bounds and times make, at the manifest's historyNow (\(isoDate(historyNow))), the ak item's first record expired by the version rule (k = 1, a later record of the item follows) and the ck item's by age (d = 7), so a reader lists the two others, those of expected-history.json; a reader that lists no history reads the same live items",
            builder: b)
        history.history = Self.history(of: b.versions, at: historyNow)
        history.feature = "history"
        history.notes = zip(1..., b.versions).map { n, v in
            (
                "history-record-\(n)",
                "byte \(v.offset), sequence \(v.sequence): item \(hexString(v.record.uuid)), kind \(v.record.kind.rawValue), k = \(v.record.keepVersions), d = \(v.record.keepDays), superseded at \(v.record.supersededAt) (\(isoDate(v.record.supersededAt)))"
            )
        }
        let example = b.versions[1]
        history.extraFiles = [("hexdump.txt", Array(try historyHexDump(b, example).utf8))]

        let (bad, defect) = try buildHistory(malformedDelete: true)
        var malformed = try Fixture(
            name: "history_malformed", expect: .integrityError,
            description:
                "history with its kind-2 history record (the delete's) naming another item's UUID (the ck item's) than the put it embeds (the deleted dk item's), validly tagged, as only the device can write it; the file opens and its live items read (a history record is never applied), and a full verification, the last step of opening a fixture, refuses it as not well-formed (spec §7.7), as a history listing and a compaction do",
            defect: defect, builder: bad)
        malformed.feature = "history"
        return [history, malformed]
    }
}

/// `YYYY-MM-DDThh:mm:ssZ` for Unix seconds (the proleptic Gregorian calendar, UTC).
func isoDate(_ t: UInt64) -> String {
    let days = Int64(t / 86_400), secs = Int(t % 86_400)
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let doe = z - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let d = doy - (153 * mp + 2) / 5 + 1
    let m = mp < 10 ? mp + 3 : mp - 9
    let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
    func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
    return
        "\(y)-\(two(m))-\(two(d))T\(two(Int64(secs / 3600))):\(two(Int64(secs / 60 % 60))):\(two(Int64(secs % 60)))Z"
}
