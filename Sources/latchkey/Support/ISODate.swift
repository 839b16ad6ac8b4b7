#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// ISO 8601 dates ↔ CFAbsoluteTime (seconds since 2001-01-01 UTC), as the keychain keeps them.
enum ISODate {
    /// `2026-01-31`, `2026-01-31T12:00:00Z`, with fractional seconds or an offset: what
    /// ISO8601DateFormatter read with `[.withInternetDateTime, .withFractionalSeconds]`,
    /// `[.withInternetDateTime]` and then `[.withFullDate]`, here through FoundationEssentials'
    /// ISO8601FormatStyle with ICU's habits kept: fractional seconds cut to the millisecond, a
    /// time field out of range (`T25:00`) leaves only the date, leading spaces are skipped before a
    /// date alone. `ISODateTests` compare the two on a corpus.
    static func parse(_ text: String) -> Double? {
        if timeFieldsInRange(text) {
            for style in [Date.ISO8601FormatStyle(includingFractionalSeconds: true), Date.ISO8601FormatStyle()] {
                guard let date = try? style.parse(text) else { continue }
                let millis = ((date.timeIntervalSince1970 * 1_000_000).rounded() / 1000).rounded(.down)
                return millis / 1000 - 978_307_200
            }
        }
        let date = String(text.drop { $0 == " " })
        return (try? Date.ISO8601FormatStyle().year().month().day().parse(date))?.timeIntervalSinceReferenceDate
    }

    /// Whether the hour, minute and second of `YYYY-MM-DDTHH:MM:SS…` are in range (ICU refuses
    /// `T25:00:00`; ISO8601FormatStyle carries it into the next day).
    static func timeFieldsInRange(_ text: String) -> Bool {
        let u = Array(text.utf8)
        guard u.count >= 19, u[10] == UInt8(ascii: "T") else { return true }
        func field(_ at: Int) -> Int? {
            guard (0x30...0x39).contains(u[at]), (0x30...0x39).contains(u[at + 1]) else { return nil }
            return Int(u[at] - 0x30) * 10 + Int(u[at + 1] - 0x30)
        }
        guard let h = field(11), let m = field(14), let s = field(17) else { return true }
        return h <= 23 && m <= 59 && s <= 59
    }

    /// `2025-01-02T03:04:05.678Z` (to the nearest millisecond, halves up), exactly as
    /// ISO8601DateFormatter with `[.withInternetDateTime, .withFractionalSeconds]` in UTC prints
    /// it (ICU's calendar), written out: the CLI does not link Foundation, and `dump` formats two
    /// dates an item, too many for a formatter each. So, as ICU: the Julian
    /// calendar before 1582-10-15, years before 1 as era years (1 BC is `0001`), times clamped to
    /// ICU's range (±5.8 million years, which infinities reach), NaN as an empty string.
    /// `ISODateTests` compare the two.
    static func format(_ absolute: Double) -> String {
        guard !absolute.isNaN else { return "" }
        // ICU's GregorianCalendar limits, in milliseconds since 1970.
        let unixMillis = min(max((absolute + 978_307_200) * 1000, -184_303_902_528_000_000), 183_882_168_921_600_000)
        let millis = Int64((unixMillis + 0.5).rounded(.down))
        func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }
        let days = floorDiv(millis, 86_400_000)
        let ms = millis - days * 86_400_000
        var year: Int64, month: Int64, day: Int64
        if millis >= -12_219_292_800_000 {
            // Gregorian, from 1582-10-15: civil date from days since 1970-01-01 (H. Hinnant,
            // "chrono-Compatible Low-Level Date Algorithms", days_from_civil inverted).
            let z = days + 719_468
            let era = floorDiv(z, 146_097)
            let doe = z - era * 146_097
            let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
            let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
            let mp = (5 * doy + 2) / 153
            day = doy - (153 * mp + 2) / 5 + 1
            month = mp < 10 ? mp + 3 : mp - 9
            year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        } else {
            // Julian, from the Julian day number (Richards' algorithm).
            let c = days + 2_440_588 + 32_082
            let d = floorDiv(4 * c + 3, 1461)
            let e = c - floorDiv(1461 * d, 4)
            let m = floorDiv(5 * e + 2, 153)
            day = e - floorDiv(153 * m + 2, 5) + 1
            month = m + 3 - 12 * floorDiv(m, 10)
            year = d - 4800 + floorDiv(m, 10)
        }
        if year <= 0 { year = 1 - year }  // era year: 0 is 1 BC
        func pad(_ v: Int64, _ width: Int) -> String {
            let digits = String(v)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T" + pad(ms / 3_600_000, 2) + ":"
            + pad(ms / 60_000 % 60, 2) + ":" + pad(ms / 1000 % 60, 2) + "." + pad(ms % 1000, 3) + "Z"
    }
}
