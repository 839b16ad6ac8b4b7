import Foundation
import Testing
@testable import latchkey

/// The hand-written date formatting of the CLI's JSON and tables must print exactly what
/// Foundation's ISO8601DateFormatter prints.
@Suite struct ISODateTests {
    @Test func format_matchesISO8601DateFormatter() {
        var values: [Double] = [0, -1, 1, 0.0005, 0.9999, 0.999_999_9, -0.0005, -978_307_200, -978_307_200.5,
                                 86_399.999, 86_400, 1_000_000_000.123, 815_000_000.5, 63_113_904_000 - 0.001,
                                 -63_114_076_800, -63_114_076_800 + 0.001, 2_000_000_000.25, 1e9 + 0.0015]
        var x: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<4000 {
            x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            // Seconds since 2001 across years 1..9999 (Foundation's answer below 1583), with
            // sub-millisecond parts.
            values.append(Double(Int64(bitPattern: x >> 1) % 316_000_000_000_000_000) / 1_000_000 - 63_000_000_000)
        }
        var mismatches: [String] = []
        for v in values where ISODate.format(v) != ISODate.foundationFormat(v) {
            mismatches.append("\(v): \(ISODate.format(v)) vs \(ISODate.foundationFormat(v))")
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) of \(values.count) differ, e.g. \(mismatches.prefix(5))")
    }

    /// dump's MODIFIED column: what `prefix(16)` with every "T" replaced by a space gives.
    @Test func dumpMinutes_matchesPrefixAndReplace() {
        let samples = ["2026-01-31T12:34:56.789Z", "0001-01-01T00:00:00.000Z", "-10000-01-01T00:00:00Z", "short", "",
                       "2026-01-31T1", "TTTTTTTTTTTTTTTTTTTT", "é2026-01-31T12:34:56Z", "+12345-06-07T08:09:10.000Z"]
            + [-1e12, 0, 815_000_000.5, 1e12, .infinity].map(ISODate.format)
        for s in samples {
            #expect(DumpCommand.minutes(s) == String(s.prefix(16)).replacingOccurrences(of: "T", with: " "), "\(s)")
        }
    }

    @Test func format_outsideYears1583To9999_andNonFinite_useFoundation() {
        for v in [-1e12, 1e12, -13_190_860_800.0, Double.infinity, -Double.infinity] {
            #expect(ISODate.format(v) == ISODate.foundationFormat(v))
        }
    }
}
