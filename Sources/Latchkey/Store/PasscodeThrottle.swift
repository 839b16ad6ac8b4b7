#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LatchkeyFormat

/// Delays between passcode attempts, as iOS escalates them (spec/SECURITY.md §2.4).
///
/// The count of consecutive wrong passcodes and the time of the last one live in the device
/// state (spec/FORMAT.md §9), beside the device secret: restarting, or copying the keychain
/// file elsewhere on this device, does not reset them. A correct passcode resets the count.
package enum PasscodeThrottle {
    /// Wrong passcodes allowed in a row before the first delay.
    package static let freeAttempts: UInt32 = 5

    /// Seconds that must pass after the `failures`-th wrong passcode in a row before the next
    /// attempt: none for the first four, then 1 minute, 5 minutes, 15 minutes, and 1 hour for
    /// every later one.
    package static func delay(afterFailures failures: UInt32) -> Int64 {
        switch failures {
        case 0..<freeAttempts: return 0
        case freeAttempts: return 60
        case freeAttempts + 1: return 5 * 60
        case freeAttempts + 2: return 15 * 60
        default: return 60 * 60
        }
    }

    /// Seconds still to wait at `now` before the next attempt (0: an attempt may run now).
    /// A last failure in the future (the clock was set back) counts as having happened now
    /// (and `throttledPasscodeAttempt` records it so), so setting the clock back never
    /// lengthens a delay beyond its length.
    package static func remaining(_ state: DeviceState?, now: Int64) -> Int64 {
        guard let state else { return 0 }
        let delay = delay(afterFailures: state.failedAttempts)
        guard delay > 0 else { return 0 }
        let elapsed = max(0, now - state.lastFailureAt)
        return max(0, delay - elapsed)
    }

    /// The sentence that ends an errSecAuthFailed message while a delay runs.
    static func waitText(_ failures: UInt32, _ seconds: Int64) -> String {
        "\(failures) wrong passcodes in a row; try again in \(seconds) seconds"
    }
}

extension KeychainStore {
    /// Runs one passcode attempt (`attempt` runs scrypt and throws errSecAuthFailed for a wrong
    /// passcode) under the throttle, holding the device state's lock throughout so that
    /// attempts from several processes are counted one after the other:
    ///
    /// 1. while a delay runs, refuses at once with errSecAuthFailed "try again in N seconds",
    ///    before any scrypt work, without counting the refusal;
    /// 2. counts a wrong passcode (and says how long to wait when that starts a delay);
    /// 3. resets the count after a correct passcode.
    ///
    /// An attempt is counted once it has failed and before the error is reported, so killing
    /// the process cannot both learn the answer and skip the count. When the device state
    /// cannot be read or written (a read-only disk) the attempt runs unthrottled: someone who can
    /// do that to the device state holds the device secret and can guess offline anyway (§2.4).
    func throttledPasscodeAttempt<T>(_ attempt: () throws -> T) throws -> T {
        let now = clock()
        let fileUUID = header.fileUUID
        let newest = lastSequence
        let outcome: Result<T, Error>
        do {
            outcome = try device.withLockedState(fileUUID: fileUUID) { state -> Result<T, Error> in
                // A last failure in the future (the clock was set back) is moved to now, so the
                // delay runs from now instead of until the clock catches up.
                if let s = state, s.lastFailureAt > now { state!.lastFailureAt = now }
                let wait = PasscodeThrottle.remaining(state, now: now)
                if wait > 0, let s = state {
                    return .failure(
                        KeychainError(
                            .authFailed,
                            "too many wrong passcodes for the keychain \(path): \(PasscodeThrottle.waitText(s.failedAttempts, wait))"
                        ))
                }
                return Self.recordingAttempt(&state, fileUUID: fileUUID, newest: newest, now: now, attempt)
            }
        } catch let e as KeychainError where e.status == .io {
            outcome = Result { try attempt() }
        }
        return try outcome.get()
    }

    private static func recordingAttempt<T>(
        _ state: inout DeviceState?, fileUUID: [UInt8], newest: UInt64, now: Int64,
        _ attempt: () throws -> T
    ) -> Result<T, Error> {
        do {
            let value = try attempt()
            if let s = state, s.failedAttempts != 0 || s.lastFailureAt != 0 {
                state!.failedAttempts = 0
                state!.lastFailureAt = 0
            }
            return .success(value)
        } catch let e as KeychainError where e.status == .authFailed {
            var s = state ?? DeviceState(fileUUID: fileUUID, newestSequence: newest)
            s.failedAttempts = s.failedAttempts == .max ? .max : s.failedAttempts + 1
            s.lastFailureAt = now
            state = s
            let delay = PasscodeThrottle.delay(afterFailures: s.failedAttempts)
            guard delay > 0 else { return .failure(e) }
            return .failure(
                KeychainError(
                    .authFailed, "\(e.message); \(PasscodeThrottle.waitText(s.failedAttempts, delay))",
                    underlying: e.underlying))
        } catch {
            return .failure(error)
        }
    }
}
