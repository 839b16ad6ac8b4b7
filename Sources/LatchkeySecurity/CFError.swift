import Foundation

// Core Foundation's CFError accessors, for the `Unmanaged<CFError>` that
// SecAccessControlCreateWithFlags and SecKey functions hand back. `CFError` is an `NSError`
// here (CoreFoundationTypes.swift), so each accessor reads the NSError.

/// `CFErrorDomain`: the domain of a CFError, a string.
public typealias CFErrorDomain = CFString

/// `kCFErrorDomainOSStatus`: errors whose code is an OSStatus (the domain of Security's errors).
nonisolated(unsafe) public let kCFErrorDomainOSStatus: CFErrorDomain! = NSString(string: NSOSStatusErrorDomain)
/// `kCFErrorDomainPOSIX`: errors whose code is an errno value.
nonisolated(unsafe) public let kCFErrorDomainPOSIX: CFErrorDomain! = NSString(string: NSPOSIXErrorDomain)
/// `kCFErrorDomainCocoa`: Foundation's errors.
nonisolated(unsafe) public let kCFErrorDomainCocoa: CFErrorDomain! = NSString(string: NSCocoaErrorDomain)

/// The error's domain, as Apple's `CFErrorGetDomain` (`kCFErrorDomainOSStatus` for the errors
/// of this module).
///
/// ```swift
/// var error: Unmanaged<CFError>?
/// if SecAccessControlCreateWithFlags(nil, "bad" as CFString, [], &error) == nil, let e = error?.takeRetainedValue() {
///     print(CFErrorGetDomain(e) as String, CFErrorGetCode(e))   // NSOSStatusErrorDomain -50
/// }
/// ```
public func CFErrorGetDomain(_ err: CFError!) -> CFErrorDomain! {
    NSString(string: err.domain)
}

/// The error's code, as Apple's `CFErrorGetCode` (an OSStatus for `kCFErrorDomainOSStatus`).
public func CFErrorGetCode(_ err: CFError!) -> CFIndex {
    err.code
}

/// The error's user-info dictionary, as Apple's `CFErrorCopyUserInfo` (empty, never nil, when
/// the error has none).
public func CFErrorCopyUserInfo(_ err: CFError!) -> CFDictionary! {
    NSDictionary(dictionary: err.userInfo)
}

/// A description for a person, as Apple's `CFErrorCopyDescription`: the localized description.
public func CFErrorCopyDescription(_ err: CFError!) -> CFString! {
    NSString(string: err.localizedDescription)
}
