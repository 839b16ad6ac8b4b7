// LatchkeySecurity is the Apple-compatible face of Latchkey; the typed API (Keychain, Query,
// Item, KeychainError, CallerIdentity, ItemClass, ProtectionClass, …) comes along with it, so
// one import gives both the SecItem functions and the Swift types they are built on.
@_exported import Latchkey
