import Testing
@testable import latchkey

/// The CLI's small pieces on their own: progress lines, tables, styling rules, value syntax.
@Suite struct SupportTests {
    @Test func progress_rendersBarCountsRateAndTime() {
        let line = Progress.render(
            label: "import", completed: 4_500, total: 10_000, unit: .items, elapsed: 3, width: 100)
        #expect(line == "import  [##################----------------------]  4,500/10,000 items  1,500/s  0:03")
        let bytes = Progress.render(
            label: "compact", completed: 3 << 20, total: 12 << 20, unit: .bytes, elapsed: 2, width: 100)
        #expect(bytes.contains("3.0 MiB/12.0 MiB") && bytes.contains("1.5 MiB/s"))
        let spinner = Progress.render(
            label: "writing", completed: nil, total: nil, unit: .items, elapsed: 61, width: 80)
        #expect(spinner == "writing  |  1:01")
        let narrow = Progress.render(label: "import", completed: 1, total: 4, unit: .items, elapsed: 0, width: 30)
        #expect(narrow.count < 30 && narrow.contains("25%"))
    }

    @Test func progress_drawsNothingWhenDisabled_andRunsTheWork() {
        let progress = Progress("x", total: 10, enabled: false, delay: 0)
        progress.advance(by: 5)
        #expect(progress.whileRunning { 42 } == 42)
        progress.finish()
    }

    @Test func grouped_putsCommasEveryThreeDigits() {
        #expect(Progress.grouped(0) == "0")
        #expect(Progress.grouped(999) == "999")
        #expect(Progress.grouped(1_234_567) == "1,234,567")
    }

    @Test func table_alignsColumns_andShortensToTheWidth() {
        var table = Table(["A", "LONG HEADER", "N"], rightAligned: [2])
        table.append(["x", "y", "5"])
        table.append(["wide cell", "z", "123"])
        #expect(
            table.render() == [
                "A          LONG HEADER    N", "x          y              5", "wide cell  z            123"
            ])
        var wide = Table(["NAME", "VALUE"])
        wide.append([String(repeating: "n", count: 30), String(repeating: "v", count: 30)])
        let fitted = wide.render(width: 40)
        #expect(fitted.allSatisfy { $0.count < 40 })
        #expect(fitted[1].contains("…"))
        #expect(Table(["H"]).render(style: Style(enabled: true)) == ["\u{1B}[1mH\u{1B}[0m"])
    }

    /// Cells are measured in characters: combining marks, emoji and the escaped form of
    /// control characters (`TerminalText.quoted`) line up as `String.count` says.
    @Test func table_measuresCharacters_notBytes() {
        let cells = ["e\u{301}", "👩‍👩‍👧", "a\r\nb", "tab\there", "plain", "ü", ""]
        for cell in cells { #expect(Table.length(cell) == cell.count, "\(cell.debugDescription)") }
        var table = Table(["N", "X"])
        for cell in cells { table.append([cell, "x"]) }
        let lines = table.render()
        let shown = cells.map(TerminalText.quoted)
        #expect(shown[2] == #""a\r\nb""# && shown[3] == #""tab\there""#, "controls are shown escaped")
        let widest = shown.map(\.count).max()!
        for (line, cell) in zip(lines.dropFirst(), shown) {
            #expect(
                line == cell + String(repeating: " ", count: widest - cell.count) + "  x", "\(cell.debugDescription)")
        }
        var cut = Table(["NAME", "VALUE"])
        cut.append([String(repeating: "é", count: 30), "v"])
        #expect(cut.render(width: 20)[1].count < 20)
    }

    @Test func style_onlyOnATerminal_andNeverWithNO_COLOR() {
        #expect(Style.allowed(isTerminal: true, environment: [:]))
        #expect(!Style.allowed(isTerminal: false, environment: [:]))
        #expect(!Style.allowed(isTerminal: true, environment: ["NO_COLOR": "1"]))
        #expect(
            Style.allowed(isTerminal: true, environment: ["NO_COLOR": ""]),
            "no-color.org: an empty value does not count")
        #expect(!Style.allowed(isTerminal: true, environment: ["TERM": "dumb"]))
        #expect(Style.plain.red("x") == "x")
    }

    @Test func valueSyntax_hexDatesAndNames() throws {
        #expect(Hex.decode("0x0A:1b 2C") == [0x0A, 0x1B, 0x2C])
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.encode([0, 255]) == "00ff")
        #expect(ISODate.parse("2001-01-01") == 0)
        #expect(ISODate.parse("2001-01-01T00:00:01.5Z") == 1.5)
        #expect(ISODate.format(0) == "2001-01-01T00:00:00.000Z")
        #expect(
            try AttributeOption.named("key-type")!.value("EC", option: "--key-type", command: "find") == .integer(73))
        #expect(
            try AttributeOption.named("key-class")!.value("private", option: "--key-class", command: "find")
                == .integer(1))
        #expect(try AttributeOption.named("port")!.value("443", option: "--port", command: "find") == .integer(443))
        #expect(
            try AttributeOption.named("protocol")!.value("htps", option: "--protocol", command: "find")
                == .string("htps"))
    }
}
