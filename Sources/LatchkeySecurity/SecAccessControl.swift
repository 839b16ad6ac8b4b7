import Foundation
import Latchkey

/// Constraints of a `SecAccessControl`, with Apple's raw values (SecAccessControl.h).
///
/// On Linux there is no biometry and no paired watch: every authentication constraint
/// (`.userPresence`, `.biometryAny`, `.biometryCurrentSet`, `.devicePasscode`, `.watch`,
/// `.applicationPassword`) means the same thing — reading the item's data asks the
/// authentication handler for the keychain passcode again.
public struct SecAccessControlCreateFlags: OptionSet, Sendable, Hashable {
    public let rawValue: CFOptionFlags
    public init(rawValue: CFOptionFlags) { self.rawValue = rawValue }

    /// Biometry or the device passcode.
    public static let userPresence = SecAccessControlCreateFlags(rawValue: 1 << 0)
    /// Any enrolled biometry.
    public static let biometryAny = SecAccessControlCreateFlags(rawValue: 1 << 1)
    /// Deprecated name of `.biometryAny`.
    public static let touchIDAny = SecAccessControlCreateFlags(rawValue: 1 << 1)
    /// The biometry enrolled now.
    public static let biometryCurrentSet = SecAccessControlCreateFlags(rawValue: 1 << 3)
    /// Deprecated name of `.biometryCurrentSet`.
    public static let touchIDCurrentSet = SecAccessControlCreateFlags(rawValue: 1 << 3)
    /// The device passcode.
    public static let devicePasscode = SecAccessControlCreateFlags(rawValue: 1 << 4)
    /// A paired watch.
    public static let watch = SecAccessControlCreateFlags(rawValue: 1 << 5)
    /// A paired companion device.
    public static let companion = SecAccessControlCreateFlags(rawValue: 1 << 5)
    /// At least one of the constraints must be satisfied.
    public static let or = SecAccessControlCreateFlags(rawValue: 1 << 14)
    /// All of the constraints must be satisfied.
    public static let and = SecAccessControlCreateFlags(rawValue: 1 << 15)
    /// Private-key usage (Secure Enclave keys); no authentication by itself.
    public static let privateKeyUsage = SecAccessControlCreateFlags(rawValue: 1 << 30)
    /// An application-provided password; treated as the keychain passcode here.
    public static let applicationPassword = SecAccessControlCreateFlags(rawValue: 1 << 31)

    /// The constraints that ask for authentication before the item's data is returned.
    static let authenticationConstraints: SecAccessControlCreateFlags = [
        .userPresence, .biometryAny, .biometryCurrentSet, .devicePasscode, .watch, .applicationPassword
    ]
}

/// An access control object: a protection class (`kSecAttrAccessible…`) plus constraints,
/// as Apple's `SecAccessControlRef`. Pass it as `kSecAttrAccessControl` to SecItemAdd; items
/// added with an authentication constraint ask for the passcode again whenever their data is
/// read (see `LatchkeySecurityConfiguration.authenticationHandler`).
///
/// Equatable and Hashable as every CF type is on Apple platforms (CFEqual, CFHash): two access
/// controls are equal when they have the same protection and the same constraints, so one can
/// be kept in a `[String: AnyHashable]` query and compared with the `accc` of a result.
public final class SecAccessControl: CustomStringConvertible, Hashable, Sendable {
    /// The protection class (`pdmn`) of items added with this access control.
    public let protection: ProtectionClass
    /// The constraints.
    public let flags: SecAccessControlCreateFlags

    init(protection: ProtectionClass, flags: SecAccessControlCreateFlags) {
        self.protection = protection
        self.flags = flags
    }

    /// Whether reading the data of an item with this access control asks for the passcode.
    public var requiresUserPresence: Bool { !flags.intersection(.authenticationConstraints).isEmpty }

    public var description: String {
        "<SecAccessControlRef: \(protection.code)\(requiresUserPresence ? ";od(cup)" : "")>"
    }

    public static func == (a: SecAccessControl, b: SecAccessControl) -> Bool {
        a.protection == b.protection && a.flags == b.flags
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(protection)
        hasher.combine(flags)
    }
}

/// Creates an access control object, as Apple's `SecAccessControlCreateWithFlags`.
///
/// ```swift
/// var error: Unmanaged<CFError>?
/// let access = SecAccessControlCreateWithFlags(kCFAllocatorDefault,
///     kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, .userPresence, &error)
/// ```
/// - Parameters:
///   - allocator: ignored (pass `kCFAllocatorDefault` or nil).
///   - protection: one of the `kSecAttrAccessible…` values (`ak`, `ck`, `dk`, `aku`, `cku`, `dku`, `akpu`).
///   - flags: the constraints.
///   - error: receives a retained `CFError` (domain `NSOSStatusErrorDomain`, code errSecParam −50)
///     when `protection` is not an accessibility value.
/// - Returns: the object, or nil on error.
public func SecAccessControlCreateWithFlags(
    _ allocator: CFAllocator?, _ protection: CFTypeRef,
    _ flags: SecAccessControlCreateFlags,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> SecAccessControl? {
    guard let code = protection as? String, let pc = SecProtection.parse(code) else {
        let e = NSError(
            domain: NSOSStatusErrorDomain, code: Int(errSecParam),
            userInfo: [
                NSLocalizedDescriptionKey:
                    "the protection of an access control must be one of the kSecAttrAccessible values (ak, ck, dk, aku, cku, dku, akpu)"
            ])
        error?.pointee = Unmanaged.passRetained(e)
        return nil
    }
    return SecAccessControl(protection: pc, flags: flags)
}

/// `pdmn` codes exactly as Apple accepts them (no long names).
enum SecProtection {
    static func parse(_ code: String) -> ProtectionClass? {
        ProtectionClass.allCases.first { $0.code == code }
    }
}
