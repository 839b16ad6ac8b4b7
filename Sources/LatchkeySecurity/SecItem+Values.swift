import Foundation
import Latchkey

/// A value of a SecItem dictionary, after the bridging of swift-corelibs-foundation has been
/// looked through: `NSString`/`String`, `NSData`/`Data`, `NSNumber` (which arrives as `Bool`
/// when it holds a boolean), Swift integers and floating point numbers, `Date`/`NSDate`,
/// `NSNull`, and `SecAccessControl`.
enum SecValue {
    case string(String)
    case data([UInt8])
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case date(Double)
    case null
    case accessControl(SecAccessControl)
    /// A SecCertificate, SecKey or SecIdentity (kSecValueRef; SecCertificate.swift).
    case ref(AnyObject)
    /// Anything else (an array, a dictionary, an unknown object): always errSecParam.
    case other(String)

    init(_ raw: Any) {
        // An implicitly unwrapped optional stored in `[String: Any]` (e.g. `kCFBooleanTrue`
        // in a dictionary literal) keeps its Optional box; look through it.
        if let optional = raw as? AnyOptional {
            if let inner = optional.wrapped {
                self.init(inner)
            } else {
                self = .null
            }
            return
        }
        // Exact Bool first: NSNumber and Swift integers also cast to Bool through bridging.
        if type(of: raw) == Bool.self, let b = raw as? Bool {
            self = .bool(b)
            return
        }
        switch raw {
        case let s as String: self = .string(s)
        case let d as Data: self = .data([UInt8](d))
        case let d as Date: self = .date(d.timeIntervalSinceReferenceDate)
        case is NSNull: self = .null
        case let ac as SecAccessControl: self = .accessControl(ac)
        case let r as any SecItemReference: self = .ref(r)
        case let i as any BinaryInteger:
            if let v = Int64(exactly: i) { self = .integer(v) } else { self = .other("an integer out of range") }
        case let f as any BinaryFloatingPoint: self = .double(Double(f))
        case let n as NSNumber: self = SecValue(number: n)
        default: self = .other(String(describing: type(of: raw)))
        }
    }

    /// An `NSNumber` that did not bridge to a Swift type: its objCType decides.
    init(number n: NSNumber) {
        let type = String(cString: n.objCType)
        switch type {
        case "c", "B":
            // swift-corelibs-foundation gives booleans the char type.
            if n.int64Value == 0 || n.int64Value == 1 {
                self = .bool(n.boolValue)
            } else {
                self = .integer(n.int64Value)
            }
        case "f", "d": self = .double(n.doubleValue)
        case "Q", "L", "I", "S", "C":
            if let v = Int64(exactly: n.uint64Value) {
                self = .integer(v)
            } else {
                self = .other("an integer out of range")
            }
        default: self = .integer(n.int64Value)
        }
    }

    /// A short name of the value's type for error messages.
    var typeName: String {
        switch self {
        case .string: return "a string"
        case .data: return "data"
        case .bool: return "a boolean"
        case .integer: return "an integer"
        case .double: return "a floating point number"
        case .date: return "a date"
        case .null: return "null"
        case .accessControl: return "a SecAccessControl"
        case .ref(let r): return "a \(type(of: r))"
        case .other(let t): return t
        }
    }

    /// The value as the typed API's input, for coercion to an attribute's kind (reference §1.2).
    /// - Throws: errSecParam for values no attribute accepts (null, access control, arrays,
    ///   a number with a fraction).
    func input(for code: String) throws -> InputValue {
        switch self {
        case .string(let s): return .string(s)
        case .data(let d): return .data(d)
        case .bool(let b): return .bool(b)
        case .integer(let i): return .integer(i)
        case .double(let d):
            if let i = Int64(exactly: d) { return .integer(i) }
            throw SecFailure.param("attribute '\(code)' takes whole numbers; \(d) has a fraction")
        case .date(let t): return .date(t)
        default:
            throw SecFailure.param("attribute '\(code)' cannot take \(typeName)")
        }
    }

    /// A boolean as Apple's CFBoolean checks want it (kSecReturn…, kSecMatchCaseInsensitive).
    func boolean(for key: String) throws -> Bool {
        if case .bool(let b) = self { return b }
        throw SecFailure.param(
            "the value of \(key) must be a boolean (kCFBooleanTrue / kCFBooleanFalse), not \(typeName)")
    }
}

/// Any `Optional`, seen through `Any` (cheaper than reflecting on every value).
private protocol AnyOptional {
    var wrapped: Any? { get }
}

extension Optional: AnyOptional {
    var wrapped: Any? { self.map { $0 as Any } }
}

/// A failed SecItem call: the OSStatus to return and the message kept in
/// `LatchkeySecurityConfiguration.lastError`.
struct SecFailure: Error {
    let error: KeychainError

    init(_ error: KeychainError) { self.error = error }
    init(_ status: KeychainStatus, _ message: String) { self.error = KeychainError(status, message) }

    static func param(_ message: String) -> SecFailure { SecFailure(.param, message) }
    static func noSuchAttr(_ message: String) -> SecFailure { SecFailure(.noSuchAttr, message) }

    /// Any error as a failure: `KeychainError` keeps its status, anything else is errSecInternal.
    static func from(_ error: Error) -> SecFailure {
        switch error {
        case let f as SecFailure: return f
        case let e as KeychainError: return SecFailure(e)
        default: return SecFailure(KeychainError(.internal, "unexpected error", underlying: String(describing: error)))
        }
    }
}

/// The entries of a CFDictionary with their values normalised.
/// - Throws: errSecParam for a key that is not a string.
func secEntries(_ dictionary: CFDictionary) throws -> [String: SecValue] {
    var out: [String: SecValue] = [:]
    for (key, value) in dictionary {
        guard let k = key as? String else {
            throw SecFailure.param(
                "every key of a SecItem dictionary must be a string (a kSec… constant); found \(type(of: key))")
        }
        out[k] = SecValue(value)
    }
    return out
}
