// libFuzzer target: the keybag decoder (spec/FORMAT.md §4, §6.6).
//
// Each input is a keybag (as in a header or a keybag-change record). A keybag that decodes
// must re-encode to exactly the input bytes (the encoding is canonical), pass its own
// validation again, and have KDF parameters whose memory bound fits the 1 GiB limit. With the
// fixtures' device secret, each device-wrapped class key is unwrapped with the device wrap key
// of a fixed file UUID (failures are expected; crashes are not).
import Foundation
import LatchkeyCrypto
import LatchkeyFormat

private let keys: FileKeys = {
    let device = try! DeviceSecret.generate()
    return try! FileKeys(device: device, fileUUID: [UInt8](repeating: 0x42, count: 16))
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzKeybag(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    guard let bag = try? Keybag.decode(input) else {
        // The streaming form (keybag followed by more bytes, as in a header) must not crash either.
        var r = ByteReader(input)
        _ = try? Keybag.decode(&r)
        return 0
    }
    let again = bag.encode()
    precondition(again == input, "a decoded keybag does not re-encode to its bytes")
    precondition((try? Keybag.decode(again)) == bag, "a re-encoded keybag decodes differently")
    if bag.hasPasscode {
        precondition(bag.kdf.maxMemory <= (1 << 30) + (1 << 21), "KDF parameters above the 1 GiB bound were accepted")
    }
    for e in bag.entries where e.wrap == .device {
        _ = try? Crypto.unwrap(e.wrappedKey, with: keys.deviceWrap)
    }
    return 0
}
