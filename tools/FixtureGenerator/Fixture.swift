import LatchkeyCrypto
import LatchkeyFormat

/// What a conforming reader must do with a fixture (FIXTURE.txt `expect:`): success, or one of
/// the outcomes of spec/FORMAT.md §1.4, spelled as the spec names them.
enum Expectation: String {
    case success
    case notALatchkeyFile = "not-a-latchkey-file"
    case unsupportedVersion = "unsupported-version"
    case integrityError = "integrity-error"
    case authenticationError = "authentication-error"
    case rolledBack = "rolled-back"
}

/// One directory under fixtures/keychain/.
struct Fixture {
    var name: String
    var expect: Expectation
    var description: String
    /// For a negative fixture: the one defect, with its offset and the bytes before and after.
    var defect: String?
    var keychain: [UInt8]
    var device: DeviceSecret
    var fileUUID: [UInt8]
    /// Device state file contents, nil for none.
    var state: [UInt8]?
    var passcode: String?
    /// For `success`: every live item a reader must find, and nothing else.
    var items: [FixtureItem] = []
    /// For `success`: bytes of an incomplete tail the reader cuts off on open.
    var recoveredTailBytes = 0
    /// Further `key: value` lines for FIXTURE.txt.
    var notes: [(String, String)] = []
    /// The index file beside the keychain (spec §17), written as `keychain.index`; nil for none.
    var index: [UInt8]?
    /// For `success`: the history a reader lists at a fixed time (spec §7.7), written as
    /// `expected-history.json`; nil when the fixture makes no claim about history.
    var history: FixtureHistory?
    /// Further files of the directory, by name (an annotated dump).
    var extraFiles: [(name: String, bytes: [UInt8])] = []
    /// The part of the format beyond the rules every reader follows that the fixture tests
    /// (spec/CONFORMANCE.md §3 `feature`): "history" (FORMAT.md §7.7); nil for none.
    var feature: String?

    init(
        name: String, expect: Expectation, description: String, defect: String? = nil, builder: KeychainBuilder,
        keychain: [UInt8]? = nil, stateSequence: UInt64? = nil
    ) throws {
        self.name = name
        self.expect = expect
        self.description = description
        self.defect = defect
        self.keychain = keychain ?? builder.file
        self.device = builder.device
        self.fileUUID = builder.fileUUID
        self.state = try builder.stateFile(newestSequence: stateSequence ?? builder.sequence)
        self.passcode = builder.passcode
        if expect == .success { items = builder.liveItems }
    }
}

/// The history of a fixture (spec §7.7) at `now`: the history records that are not expired
/// then, in file order, each with the version it keeps.
struct FixtureHistory {
    /// Unix seconds.
    var now: UInt64
    var listed: [FixtureVersion]
    /// How many of the file's history records are expired at `now`.
    var expired: Int
}

/// Flips bit 0 of `bytes[offset]` and describes the change.
func flip(_ bytes: inout [UInt8], at offset: Int, what: String) -> String {
    let before = bytes[offset]
    bytes[offset] ^= 0x01
    return "byte \(offset) (\(what)) changed from 0x\(hexString([before])) to 0x\(hexString([bytes[offset]]))"
}
