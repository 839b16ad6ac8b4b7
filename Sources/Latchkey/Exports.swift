// The typed API speaks in a few of the format's types: importing Latchkey brings exactly those
// along. The format's encoders, record frames and key schedule stay in LatchkeyFormat, which
// code outside the package has no reason to import.
@_exported import enum LatchkeyFormat.AttributeValue
@_exported import enum LatchkeyFormat.ItemClass
@_exported import enum LatchkeyFormat.ProtectionClass
@_exported import struct LatchkeyFormat.KDFParameters
