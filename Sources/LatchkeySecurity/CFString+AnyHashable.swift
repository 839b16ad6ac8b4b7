import Foundation

// On Apple platforms an NSString in an AnyHashable is its String (NSString has a custom
// AnyHashable representation), so `result[kSecAttrAccount]` finds the "acct" entry of an
// `[AnyHashable: Any]` SecItem result: the CFString constant and the String key are one key.
// swift-corelibs-foundation does not give NSString that representation, so on Linux
// AnyHashable(kSecAttrAccount) != AnyHashable("acct") and such look-ups find nothing.
//
// LatchkeySecurity gives NSString (and so every kSec… constant, which is a CFString, an
// NSString) Apple's behaviour: wherever NSString becomes AnyHashable, it becomes the String of
// its characters. This holds in the whole process once LatchkeySecurity is linked, as it does on
// Apple platforms for every program; an NSMutableString is taken as its characters at that
// moment, as there.
extension NSString: @retroactive _HasCustomAnyHashableRepresentation {
    public func _toCustomAnyHashable() -> AnyHashable? {
        AnyHashable(String._unconditionallyBridgeFromObjectiveC(self))
    }
}
