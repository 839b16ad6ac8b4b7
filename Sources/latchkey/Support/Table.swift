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
        let headerCounts = header.map(Table.length)
        let rowCounts = rows.map { $0.map(Table.length) }
        var widths = header.indices.map { column in
            max(headerCounts[column], rowCounts.lazy.map { $0[column] }.max() ?? 0)
        }
        if let width {
            // Take a column off the widest one until it fits, down to 8 characters each.
            let gaps = 2 * (widths.count - 1)
            while widths.reduce(0, +) + gaps > width - 1,
                  let widest = widths.indices.max(by: { widths[$0] < widths[$1] }), widths[widest] > 8 {
                widths[widest] -= 1
            }
        }
        func line(_ cells: [String], _ counts: [Int]) -> String {
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
        return [style.bold(line(header, headerCounts))] + zip(rows, rowCounts).map(line)
    }

    /// The length in characters: the UTF-8 length for printable ASCII, else `count`.
    static func length(_ s: String) -> Int {
        var s = s
        return s.withUTF8 { bytes in bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7f } } ? s.utf8.count : s.count
    }
}
