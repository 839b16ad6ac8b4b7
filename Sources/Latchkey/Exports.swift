// The typed API speaks in the format's vocabulary (ItemClass, ProtectionClass,
// AttributeValue), so importing Latchkey brings it along.
@_exported import LatchkeyFormat
