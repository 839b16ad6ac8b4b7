import ArgumentParser
import LatchkeyFormat

/// The scrypt cost options (`--kdf-log-n`) of the commands that set a passcode or a backup
/// password, and the warning for a cost below the default.
enum KDFCost {
    static let help =
        "scrypt cost of the new passcode or password as log2(N), 10 to 22 (default \(KDFParameters.defaultLogN): 128 MiB and about 0.5 s per guess); a lower cost makes offline guessing cheaper and prints a warning."

    /// The costs the options take.
    static let range: ClosedRange<UInt8> = 10...22

    /// - Throws: a ValidationError naming `option` when `logN` is outside `range`.
    static func validate(_ logN: UInt8, option: String = "--kdf-log-n") throws {
        guard range.contains(logN) else {
            throw ValidationError("\(option) must be between \(range.lowerBound) and \(range.upperBound)")
        }
    }

    /// Warns on stderr when a passcode or password is being protected with less than the default
    /// scrypt cost (spec/SECURITY.md §3).
    static func warnIfWeak(_ logN: UInt8, _ what: String) {
        guard logN < KDFParameters.defaultLogN else { return }
        let factor = 1 << Int(KDFParameters.defaultLogN - logN)
        Output.note(
            "warning: the \(what) is protected with scrypt N=2^\(logN), \(factor)× cheaper to guess offline than the default N=2^\(KDFParameters.defaultLogN)"
        )
    }
}
