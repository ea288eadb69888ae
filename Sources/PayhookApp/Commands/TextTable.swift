/// Rows for a terminal: each column padded to its widest cell, two spaces between columns, the
/// last column left unpadded so long text does not leave trailing blanks.
enum TextTable {
    /// The header line and one line per row, joined by newlines, with no final newline.
    static func render(header: [String], rows: [[String]]) -> String {
        var widths = header.map(\.count)
        for row in rows { for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) } }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                index == cells.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        return ([line(header)] + rows.map(line)).joined(separator: "\n")
    }

    /// What a `list` subcommand prints: the table and a count line (`2 dead letter(s)`), or
    /// only `none` (`no dead letters match`) when there are no rows, rather than a bare header.
    static func listing(header: [String], rows: [[String]], counting noun: String, none: String) -> String {
        guard !rows.isEmpty else { return none + "\n" }
        return render(header: header, rows: rows) + "\n\(rows.count) \(noun)(s)\n"
    }
}
