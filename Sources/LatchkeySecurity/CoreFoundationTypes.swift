import Foundation
import Latchkey

// Core Foundation does not exist for Swift on Linux, so the CF types that Apple's Security
// API speaks in are aliases of their toll-free-bridged Foundation classes. Code written for
// Apple platforms (`"x" as CFString`, `dict as CFDictionary`, `result as! Data`,
// `kCFBooleanTrue`) then compiles unchanged.

/// A result code: 0 is success, negative values are `errSec…` errors (Apple's MacTypes.h).
public typealias OSStatus = Int32

/// `CFStringRef`: an `NSString`. `"abc" as CFString` and `kSecClass as String` work as on Apple platforms.
public typealias CFString = NSString
/// `CFDictionaryRef`: an `NSDictionary`. `[String: Any]` bridges with `as CFDictionary`.
public typealias CFDictionary = NSDictionary
/// `CFMutableDictionaryRef`: an `NSMutableDictionary`.
public typealias CFMutableDictionary = NSMutableDictionary
/// `CFDataRef`: an `NSData`. `Data` bridges with `as CFData`.
public typealias CFData = NSData
/// `CFArrayRef`: an `NSArray`.
public typealias CFArray = NSArray
/// `CFNumberRef`: an `NSNumber`.
public typealias CFNumber = NSNumber
/// `CFBooleanRef`: an `NSNumber` holding a Bool (Swift sees it as `Bool` after bridging).
public typealias CFBoolean = NSNumber
/// `CFDateRef`: an `NSDate`.
public typealias CFDate = NSDate
/// `CFErrorRef`: an `NSError`.
public typealias CFError = NSError
/// `CFTypeRef`: any object.
public typealias CFTypeRef = AnyObject
/// `CFIndex`.
public typealias CFIndex = Int
/// `CFOptionFlags`, the raw type of `SecAccessControlCreateFlags`.
public typealias CFOptionFlags = UInt

/// `kCFBooleanTrue`, Apple's `CFBoolean!` true value.
public let kCFBooleanTrue: CFBoolean! = NSNumber(value: true)
/// `kCFBooleanFalse`, Apple's `CFBoolean!` false value.
public let kCFBooleanFalse: CFBoolean! = NSNumber(value: false)

/// `CFAllocatorRef`. Latchkey allocates with Swift; allocators exist so that Apple's
/// signatures (`SecAccessControlCreateWithFlags(kCFAllocatorDefault, …)`) compile. Ignored.
public final class CFAllocator: Sendable {
    init() {}
}

/// `kCFAllocatorDefault`: nil, as on Apple platforms (NULL means "the default allocator").
public let kCFAllocatorDefault: CFAllocator! = nil
