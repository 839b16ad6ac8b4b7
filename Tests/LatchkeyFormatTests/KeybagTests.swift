import LatchkeyFormat
import Testing

/// The class-key bag and its validation rules (spec §4, §4.3).
@Suite struct KeybagTests {
    /// Offsets inside an encoded keybag (spec §4).
    enum At {
        static let kdf = 0, logN = 1, r = 4, p = 8, salt = 16, count = 32
        static func entry(_ i: Int) -> Int { 34 + 42 * i }
    }

    @Test(arguments: [false, true])
    func keybag_roundTrips(passcode: Bool) throws {
        let bag = Sample.keybag(passcode: passcode)
        let bytes = bag.encode()
        #expect(bytes.count == (passcode ? 328 : 286), "K = 34 + 42 n")
        #expect(try Keybag.decode(bytes) == bag)
        #expect(bag.hasPasscode == passcode)
    }

    @Test func init_sortsEntriesByClass() {
        let bag = Sample.keybag(passcode: true)
        let shuffled = Keybag(kdf: bag.kdf, entries: bag.entries.reversed())
        #expect(shuffled == bag)
        #expect(shuffled.encode() == bag.encode())
    }

    @Test(arguments: [false, true])
    func truncatedKeybag_atEveryLength_isTruncated(passcode: Bool) {
        let bytes = Sample.keybag(passcode: passcode).encode()
        for length in 0..<bytes.count {
            expectRejection(.truncated, "length \(length)") { try Keybag.decode(Array(bytes.prefix(length))) }
        }
    }

    @Test func trailingBytes_areRejected() {
        expectRejection(.invalidField) { try Keybag.decode(Sample.keybag(passcode: false).encode() + [0]) }
    }

    @Test(arguments: [2, 3, 0xFF] as [UInt8])
    func unknownKDF_isRejected(id: UInt8) {
        expectRejection(.invalidField) {
            try Keybag.decode(Sample.keybag(passcode: true).encode().setting(id, at: At.kdf))
        }
    }

    @Test(arguments: [2, 3, 12, 13, 14, 15, 33])
    func reservedByteNonZero_isRejected(offset: Int) {
        for passcode in [false, true] {
            expectRejection(.invalidField, "byte \(offset)") {
                try Keybag.decode(Sample.keybag(passcode: passcode).encode().flipping(offset))
            }
        }
    }

    @Test func noPasscodeKDF_withNonZeroParameters_isRejected() {
        let bytes = Sample.keybag(passcode: false).encode()
        expectRejection(.invalidField, "logN") { try Keybag.decode(bytes.setting(UInt8(15), at: At.logN)) }
        expectRejection(.invalidField, "r") { try Keybag.decode(bytes.setting(UInt32(8), at: At.r)) }
        expectRejection(.invalidField, "p") { try Keybag.decode(bytes.setting(UInt32(1), at: At.p)) }
        for i in 0..<16 {
            expectRejection(.invalidField, "salt byte \(i)") { try Keybag.decode(bytes.flipping(At.salt + i)) }
        }
    }

    struct ScryptCase: CustomStringConvertible, Sendable {
        var logN: UInt8, r: UInt32, p: UInt32
        var description: String { "logN \(logN) r \(r) p \(p)" }
    }

    @Test(arguments: [
        ScryptCase(logN: 9, r: 8, p: 1), ScryptCase(logN: 23, r: 1, p: 1), ScryptCase(logN: 0, r: 8, p: 1),
        ScryptCase(logN: 15, r: 0, p: 1), ScryptCase(logN: 15, r: 33, p: 1),
        ScryptCase(logN: 15, r: 8, p: 0), ScryptCase(logN: 15, r: 8, p: 17),
        // 128 · r · N above 1 GiB with each parameter in range.
        ScryptCase(logN: 21, r: 8, p: 1), ScryptCase(logN: 22, r: 3, p: 1), ScryptCase(logN: 19, r: 32, p: 1)
    ])
    func scryptParametersOutOfRange_areRejected(_ c: ScryptCase) {
        let bytes = Sample.keybag(passcode: true).encode().setting(c.logN, at: At.logN).setting(c.r, at: At.r).setting(
            c.p, at: At.p)
        expectRejection(.invalidField) { try Keybag.decode(bytes) }
    }

    @Test(arguments: [
        ScryptCase(logN: 10, r: 1, p: 1), ScryptCase(logN: 22, r: 2, p: 16), ScryptCase(logN: 20, r: 8, p: 1),
        ScryptCase(logN: 17, r: 32, p: 1), ScryptCase(logN: 15, r: 8, p: 16)
    ])
    func scryptParametersAtTheBounds_areAccepted(_ c: ScryptCase) throws {
        let bytes = Sample.keybag(passcode: true).encode().setting(c.logN, at: At.logN).setting(c.r, at: At.r).setting(
            c.p, at: At.p)
        let bag = try Keybag.decode(bytes)
        #expect(bag.kdf.logN == c.logN && bag.kdf.r == c.r && bag.kdf.p == c.p)
    }

    @Test(arguments: [0, 5, 13, 0xFF] as [UInt8])
    func unknownProtectionClass_isRejected(rawClass: UInt8) {
        // The last entry (dku without a passcode) replaced by an unknown class number.
        let bytes = Sample.keybag(passcode: false).encode().setting(rawClass, at: At.entry(5))
        expectRejection(.invalidField) { try Keybag.decode(bytes) }
    }

    @Test(arguments: [0, 3, 0xFF] as [UInt8])
    func unknownWrapKind_isRejected(wrap: UInt8) {
        let bytes = Sample.keybag(passcode: false).encode().setting(wrap, at: At.entry(0) + 1)
        expectRejection(.invalidField) { try Keybag.decode(bytes) }
    }

    @Test func duplicateClass_isRejected() {
        // ck's entry made a second ak.
        let bytes = Sample.keybag(passcode: false).encode().setting(
            ProtectionClass.whenUnlocked.rawValue, at: At.entry(1))
        expectRejection(.invalidField) { try Keybag.decode(bytes) }
    }

    @Test func unsortedClasses_areRejected() {
        var bytes = Sample.keybag(passcode: false).encode()
        let first = Array(bytes[At.entry(0)..<At.entry(1)])
        bytes.replaceSubrange(At.entry(0)..<At.entry(1), with: bytes[At.entry(1)..<At.entry(2)])
        bytes.replaceSubrange(At.entry(1)..<At.entry(2), with: first)
        expectRejection(.invalidField) { try Keybag.decode(bytes) }
    }

    @Test(arguments: ProtectionClass.allCases.filter { $0 != .whenPasscodeSetThisDeviceOnly })
    func missingClass_isRejected(_ missing: ProtectionClass) {
        for passcode in [false, true] {
            let full = Sample.keybag(passcode: passcode)
            let bag = Keybag(kdf: full.kdf, entries: full.entries.filter { $0.protectionClass != missing })
            expectRejection(.invalidField, "\(missing.code), passcode \(passcode)") { try Keybag.decode(bag.encode()) }
        }
    }

    @Test func akpu_isRequiredWithAPasscodeAndForbiddenWithout() {
        let with = Sample.keybag(passcode: true)
        let withoutAkpu = Keybag(
            kdf: with.kdf, entries: with.entries.filter { $0.protectionClass != .whenPasscodeSetThisDeviceOnly })
        expectRejection(.invalidField, "passcode keybag without akpu") { try Keybag.decode(withoutAkpu.encode()) }

        let without = Sample.keybag(passcode: false)
        let extra = KeybagEntry(
            protectionClass: .whenPasscodeSetThisDeviceOnly, wrap: .device, wrappedKey: [UInt8](repeating: 1, count: 40)
        )
        expectRejection(.invalidField, "no-passcode keybag with akpu") {
            try Keybag.decode(Keybag(kdf: without.kdf, entries: without.entries + [extra]).encode())
        }
    }

    @Test(arguments: ProtectionClass.allCases)
    func wrongWrapKind_isRejected(_ pc: ProtectionClass) {
        for passcode in [false, true] {
            let bag = Sample.keybag(passcode: passcode)
            guard let index = bag.entries.firstIndex(where: { $0.protectionClass == pc }) else { continue }
            var entries = bag.entries
            entries[index].wrap = entries[index].wrap == .device ? .passcode : .device
            expectRejection(.invalidField, "\(pc.code), passcode \(passcode)") {
                try Keybag.decode(Keybag(kdf: bag.kdf, entries: entries).encode())
            }
        }
    }

    @Test func entryCountThatLies_isRejected() {
        let bytes = Sample.keybag(passcode: false).encode()
        expectRejection(.truncated, "one entry more than present") {
            try Keybag.decode(bytes.setting(UInt8(7), at: At.count))
        }
        expectRejection(.anyFormatError, "one entry fewer than present") {
            try Keybag.decode(bytes.setting(UInt8(5), at: At.count))
        }
        expectRejection(.anyFormatError, "no entries") {
            try Keybag.decode(Array(bytes.prefix(34)).setting(UInt8(0), at: At.count))
        }
    }
}
