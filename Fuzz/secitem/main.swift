// libFuzzer target: the SecItem dictionary parser (Sources/LatchkeySecurity).
//
// The input is a program that builds one or two dictionaries — keys from the kSec… vocabulary
// (read from Sources/LatchkeySecurity/SecItemConstants.swift) or arbitrary strings or non-string
// keys; values of every type a Swift caller can put in a `[String: Any]` or NSDictionary:
// strings, Data, Bool, integers of several widths, NSNumber, Double, Date, NSNull, nil
// optionals, arrays, nested dictionaries, SecAccessControl — and passes them to SecItemAdd,
// SecItemCopyMatching, SecItemUpdate or SecItemDelete.
//
// Mode bit 0x80 of the first byte clear: no keychain exists and none is created, so every call
// stops after parsing (errSecNotAvailable for a well-formed dictionary). Set: the calls run on a
// real keychain without a passcode in a temporary directory, recreated every 256 inputs.
// Any crash or trap is a bug; every status is an acceptable outcome.
import Foundation
import Latchkey
import LatchkeySecurity

private let vocabulary: [String] = {
    let path =
        ProcessInfo.processInfo.environment["LATCHKEY_FUZZ_CONSTANTS"]
        ?? "Sources/LatchkeySecurity/SecItemConstants.swift"
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
        fatalError("fuzz-secitem: cannot read \(path); run from the package root or set LATCHKEY_FUZZ_CONSTANTS")
    }
    var words: Set<String> = ["idnt", "class", "", "v_Data", "acct", "svce", "agrp", "latchkey.fuzz", "other.group"]
    for line in text.split(separator: "\n") where line.contains("CFString = \"") {
        let parts = line.split(separator: "\"", omittingEmptySubsequences: false)
        if parts.count >= 2 { words.insert(String(parts[1])) }
    }
    return words.sorted()
}()
private let protections = ["ak", "ck", "dk", "aku", "cku", "dku", "akpu", "bogus"]

/// Reads the input byte by byte; past the end every read is zero.
private struct Program {
    let bytes: [UInt8]
    var at = 0
    mutating func byte() -> UInt8 {
        defer { at += 1 }
        return at < bytes.count ? bytes[at] : 0
    }
    mutating func u64() -> UInt64 { (0..<8).reduce(0) { v, _ in v << 8 | UInt64(byte()) } }
    mutating func blob() -> [UInt8] { (0..<Int(byte() % 24)).map { _ in byte() } }
    var done: Bool { at >= bytes.count }

    mutating func word() -> String { vocabulary[Int(byte()) % vocabulary.count] }

    mutating func value(depth: Int = 0) -> Any {
        switch byte() % 20 {
        case 0, 1, 2: return word()
        case 3: return String(decoding: blob(), as: UTF8.self)
        case 4: return Data(blob())
        case 5: return byte() & 1 == 1
        case 6: return Int(truncatingIfNeeded: u64())
        case 7: return Int8(truncatingIfNeeded: byte())
        case 8: return u64()
        case 9: return Double(bitPattern: u64())
        case 10: return Date(timeIntervalSinceReferenceDate: Double(Int32(truncatingIfNeeded: u64())))
        case 11: return NSNull()
        case 12: return Optional<Any>.none as Any
        case 13: return NSNumber(value: Int64(bitPattern: u64()))
        case 14: return NSNumber(value: byte() & 1 == 1)
        case 15: return NSString(string: word())
        case 16 where depth < 2: return [value(depth: depth + 1), value(depth: depth + 1)]
        case 17 where depth < 2: return [word(): value(depth: depth + 1)] as [String: Any]
        case 18:
            let flags = SecAccessControlCreateFlags(rawValue: CFOptionFlags(byte()))
            return SecAccessControlCreateWithFlags(
                nil, protections[Int(byte()) % protections.count] as CFString, flags, nil) as Any
        default: return Float(Int16(truncatingIfNeeded: u64()))
        }
    }

    mutating func dictionary() -> NSDictionary {
        let d = NSMutableDictionary()
        // Most dictionaries name a class, as real ones do.
        if byte() % 4 != 0 {
            d[kSecClass as String] =
                [
                    kSecClassGenericPassword, kSecClassInternetPassword, kSecClassCertificate, kSecClassKey,
                    kSecClassIdentity
                ][Int(byte()) % 5]
        }
        for _ in 0..<Int(byte() % 10) {
            switch byte() % 16 {
            case 0: d[NSNumber(value: byte())] = value()  // a key that is not a string
            case 1: d[String(decoding: blob(), as: UTF8.self)] = value()
            default: d[word()] = value()
            }
        }
        return d
    }
}

private var runs = 0
private var directory: String?

/// The configuration of mode 1: a fresh keychain without a passcode every 256 inputs.
private func liveConfiguration() -> LatchkeySecurityConfiguration {
    runs += 1
    if runs % 256 == 1 || directory == nil {
        if let d = directory { try? FileManager.default.removeItem(atPath: d) }
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        let d = base + "/latchkey-fuzz-secitem-\(getpid())"
        try? FileManager.default.removeItem(atPath: d)
        try? FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        directory = d
        liveConfig = nil
    }
    if let c = liveConfig { return c }
    let c = LatchkeySecurityConfiguration(
        keychainPath: directory! + "/fuzz.keychain", devicePath: directory! + "/device.secret",
        caller: CallerIdentity(
            applicationIdentifier: "latchkey.fuzz", keychainAccessGroups: ["latchkey.fuzz", "other.group"]),
        passcodeSource: .noPasscode, authenticationHandler: { _ in nil })
    liveConfig = c
    return c
}
private var liveConfig: LatchkeySecurityConfiguration?

private let parseOnly: LatchkeySecurityConfiguration = {
    let c = LatchkeySecurityConfiguration(
        keychainPath: "/nonexistent/latchkey-fuzz/none.keychain",
        devicePath: "/nonexistent/latchkey-fuzz/device.secret",
        caller: CallerIdentity(applicationIdentifier: "latchkey.fuzz"))
    c.createsKeychainIfAbsent = false
    return c
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSecItem(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var p = Program(bytes: Array(UnsafeBufferPointer(start: data, count: size)))
    let mode = p.byte()
    let config = mode & 0x80 != 0 ? liveConfiguration() : parseOnly
    config.use {
        var calls = 0
        while !p.done && calls < 4 {
            calls += 1
            var result: CFTypeRef?
            switch p.byte() % 4 {
            case 0: SecItemAdd(p.dictionary(), &result)
            case 1: SecItemCopyMatching(p.dictionary(), &result)
            case 2: SecItemUpdate(p.dictionary(), p.dictionary())
            default: SecItemDelete(p.dictionary())
            }
            _ = result
        }
    }
    return 0
}
