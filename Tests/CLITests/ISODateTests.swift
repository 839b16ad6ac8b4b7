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

    @Test func format_outsideYears1583To9999_andNonFinite_useFoundation() {
        for v in [-1e12, 1e12, -13_190_860_800.0, Double.infinity, -Double.infinity] {
            #expect(ISODate.format(v) == ISODate.foundationFormat(v))
        }
    }
}
