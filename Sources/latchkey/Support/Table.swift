/// A table for people: a header row and left-aligned columns two spaces apart, the header in
/// bold when styling is on. On a terminal the widest columns are shortened (with `…`) to fit
/// its width; elsewhere nothing is cut (scripts should use `--json` anyway). Cells are shown
/// through `TerminalText.quoted`, so a control character in an attribute value is printed as
/// an escape, never sent to the terminal.
struct Table {
    var header: [String]
    var rows: [[String]] = []
    /// Columns aligned to the right (numbers).
    var rightAligned: Set<Int>

    init(_ header: [String], rightAligned: Set<Int> = []) {
        self.header = header
        self.rightAligned = rightAligned
    }

    mutating func append(_ row: [String]) { rows.append(row.map(TerminalText.quoted)) }

    /// The lines of the table, without newlines.
    func render(width: Int? = nil, style: Style = .plain) -> [String] {
        // Each cell's length is counted once (String.count walks grapheme clusters; it was
        // counted three times per cell, a tenth of a 10,000-item dump).
        var sizing = Sizing(header)
        let rowCounts = rows.map { sizing.measure($0) }
        let widths = sizing.widths(fitting: width)
        return [style.bold(Table.line(header, sizing.headerCounts, widths, rightAligned))]
            + zip(rows, rowCounts).map { Table.line($0, $1, widths, rightAligned) }
    }

    /// Column widths measured one row at a time, for a table printed as it streams (`dump`):
    /// measure every row first, then print each with `Table.line` at `widths(fitting:)`.
    struct Sizing {
        let header: [String]
        let headerCounts: [Int]
        private var widest: [Int]

        init(_ header: [String]) {
            self.header = header
            headerCounts = header.map(Table.length)
            widest = headerCounts
        }

        /// Takes a row (of quoted cells) into account; returns its cells' lengths.
        @discardableResult
        mutating func measure(_ cells: [String]) -> [Int] {
            let counts = cells.map(Table.length)
            for (column, n) in counts.enumerated() where n > widest[column] { widest[column] = n }
            return counts
        }

        /// The widths; with `width`, the widest columns shortened until the table fits, down
        /// to 8 characters each.
        func widths(fitting width: Int?) -> [Int] {
            var widths = widest
            if let width {
                let gaps = 2 * (widths.count - 1)
                while widths.reduce(0, +) + gaps > width - 1,
                    let widest = widths.indices.max(by: { widths[$0] < widths[$1] }), widths[widest] > 8
                {
                    widths[widest] -= 1
                }
            }
            return widths
        }
    }

    /// One line of a table at fixed widths: a cell longer than its column is cut with `…`.
    static func line(_ cells: [String], _ counts: [Int], _ widths: [Int], _ rightAligned: Set<Int> = []) -> String {
        var out = ""
        for (column, cell) in cells.enumerated() {
            let cut = counts[column] > widths[column]
            let text = cut ? String(cell.prefix(widths[column] - 1)) + "…" : cell
            let padding = String(repeating: " ", count: cut ? 0 : widths[column] - counts[column])
            if rightAligned.contains(column) {
                out += padding + text
            } else {
                out += text
                if column < cells.count - 1 { out += padding }
            }
            if column < cells.count - 1 { out += "  " }
        }
        return out
    }

    /// The length in characters: the UTF-8 length for printable ASCII, else `count`.
    static func length(_ s: String) -> Int {
        var s = s
        return s.withUTF8 { bytes in bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7f } } ? s.utf8.count : s.count
    }
}
