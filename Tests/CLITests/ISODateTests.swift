import Foundation
import Testing
@testable import latchkey

/// The hand-written date formatting of the CLI's JSON and tables must print exactly what
/// Foundation's ISO8601DateFormatter prints, and its parsing (FoundationEssentials'
/// ISO8601FormatStyle, as the CLI does not link Foundation) must read what it read.
@Suite struct ISODateTests {
    /// ISO8601DateFormatter as the CLI used it before it stopped linking Foundation: the reference.
    static func iso8601DateFormatter(_ absolute: Double) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSinceReferenceDate: absolute))
    }

    /// ISO8601DateFormatter's reading of `text` with the CLI's former three option sets.
    static func iso8601DateFormatterParse(_ text: String) -> Double? {
        let full = ISO8601DateFormatter()
        for options: ISO8601DateFormatter.Options in [
            [.withInternetDateTime, .withFractionalSeconds], [.withInternetDateTime],
            [.withFullDate]
        ] {
            full.formatOptions = options
            if let date = full.date(from: text) { return date.timeIntervalSinceReferenceDate }
        }
        return nil
    }

    @Test func format_matchesISO8601DateFormatter() {
        var values: [Double] = [
            0, -1, 1, 0.0005, 0.9999, 0.999_999_9, -0.0005, -978_307_200, -978_307_200.5,
            86_399.999, 86_400, 1_000_000_000.123, 815_000_000.5, 63_113_904_000 - 0.001,
            -63_114_076_800, -63_114_076_800 + 0.001, 2_000_000_000.25, 1e9 + 0.0015
        ]
        var x: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<4000 {
            x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            // Seconds since 2001 across years 1..9999 (Foundation's answer below 1583), with
            // sub-millisecond parts.
            values.append(Double(Int64(bitPattern: x >> 1) % 316_000_000_000_000_000) / 1_000_000 - 63_000_000_000)
        }
        var mismatches: [String] = []
        for v in values where ISODate.format(v) != Self.iso8601DateFormatter(v) {
            mismatches.append("\(v): \(ISODate.format(v)) vs \(Self.iso8601DateFormatter(v))")
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) of \(values.count) differ, e.g. \(mismatches.prefix(5))")
    }

    /// dump's MODIFIED column: what `prefix(16)` with every "T" replaced by a space gives.
    @Test func dumpMinutes_matchesPrefixAndReplace() {
        let samples =
            [
                "2026-01-31T12:34:56.789Z", "0001-01-01T00:00:00.000Z", "-10000-01-01T00:00:00Z", "short", "",
                "2026-01-31T1", "TTTTTTTTTTTTTTTTTTTT", "é2026-01-31T12:34:56Z", "+12345-06-07T08:09:10.000Z"
            ]
            + [-1e12, 0, 815_000_000.5, 1e12, .infinity].map(ISODate.format)
        for s in samples {
            #expect(DumpCommand.minutes(s) == String(s.prefix(16)).replacingOccurrences(of: "T", with: " "), "\(s)")
        }
    }

    @Test func format_outsideYears1583To9999_andNonFinite_asISO8601DateFormatter() {
        for v in [
            -1e12, 1e12, -13_190_860_800.0, Double.infinity, -Double.infinity, .nan, 1e15, -1e15, 1.8e14, -1.9e14,
            -63_148_636_800, -63_114_076_800.0005, -63_114_076_800 - 86_400 * 366 * 3000.5
        ] {
            #expect(ISODate.format(v) == Self.iso8601DateFormatter(v))
        }
    }

    @Test func parse_readsWhatISO8601DateFormatterRead() {
        let texts = [
            "2026-01-31", "2026-01-31T12:00:00Z", "2026-01-31T12:00:00.5Z", "2026-01-31T12:00:00.123456Z",
            "2026-01-31T12:00:00+02:00", "2026-01-31T12:00:00-0530", "2026-01-31T12:00:00.25+01:00",
            "2001-01-01", "2001-01-01T00:00:01.5Z", "1970-01-01T00:00:00Z", "1600-02-29", "1582-10-15",
            "9999-12-31T23:59:59.999Z", "0001-01-01", "2024-02-29", "2026-12-31T23:59:59Z",
            "", "x", "2026", "2026-01", "20260131", "2026-01-31T12:00Z", "2026-01-31 12:00:00Z",
            "2026-13-01", "2026-01-32", "2026-01-31T25:00:00Z", "2026-01-31T12:00:00", "12:00:00Z",
            "2026-01-31T12:00:00ZZ", " 2026-01-31", "2026-01-31 ", "2026-1-5", "2026-01-31T12:00:00.Z"
        ]
        var mismatches: [String] = []
        for t in texts where ISODate.parse(t) != Self.iso8601DateFormatterParse(t) {
            mismatches.append(
                "\(t.debugDescription): \(String(describing: ISODate.parse(t))) vs \(String(describing: Self.iso8601DateFormatterParse(t)))"
            )
        }
        #expect(mismatches.isEmpty, "\(mismatches)")
    }
}
