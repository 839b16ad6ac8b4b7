import ArgumentParser
import Latchkey
import LatchkeyFormat

/// `update`'s new values: a `--set-X` for every attribute that is not derived from the data.
typealias NewValueOptions = AttributeOptions<NewValueForm>

extension AttributeOptions where Form == NewValueForm {
    var protection: ProtectionClass? { common.accessible?.protection }

    /// Whether no new value was given.
    var isEmpty: Bool {
        protection == nil && common.synchronizable == nil && groups.allSatisfy { $0.given.isEmpty }
    }

    /// The new attribute values for items of class `c`.
    /// - Throws: `UsageError` for an option of another class, a value that does not parse, or
    ///   `--set-synchronizable any`.
    func attributes(for c: ItemClass, command: String) throws -> [String: AttributeValue] {
        var attributes = try parsedAttributes(groups, prefix: "set-", in: c, command: command)
        if let sync = common.synchronizable {
            guard let value = sync.storedValue else {
                throw UsageError("--set-synchronizable takes yes or no", command: command)
            }
            attributes["sync"] = value
        }
        return attributes
    }
}
