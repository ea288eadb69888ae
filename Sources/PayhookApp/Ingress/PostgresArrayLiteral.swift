/// The text form of a one-dimensional PostgreSQL array (`{"a","b",NULL}`), built by appends.
///
/// Why: the ingest INSERT sends each column of a batch as one array bind, so its text is built
/// for every batch. Every string element is quoted with `"` and `\` escaped, which is all the
/// array parser needs (quoted elements may hold commas, braces and spaces as they are);
/// `nil` is an unquoted `NULL`. The literal is sent as a bind value, never spliced into SQL.
struct PostgresArrayLiteral {
    private var bytes: [UInt8] = []
    private var isEmpty = true

    init(capacity: Int) {
        bytes.reserveCapacity(capacity + 2)
        bytes.append(UInt8(ascii: "{"))
    }

    /// Appends a text element, or `NULL` for `nil`.
    mutating func append(_ text: String?) {
        separate()
        guard var text else {
            bytes.append(contentsOf: "NULL".utf8)
            return
        }
        bytes.append(UInt8(ascii: "\""))
        text.withUTF8 { utf8 in
            func needsEscape(_ byte: UInt8) -> Bool { byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") }
            // Most elements need no escape: one copy instead of a byte-by-byte append.
            guard utf8.contains(where: needsEscape) else {
                bytes.append(contentsOf: utf8)
                return
            }
            // The stored headers JSON quotes every name and value, so it always takes this path:
            // copy the runs between escapes whole rather than byte by byte.
            var runStart = 0
            for index in 0..<utf8.count where needsEscape(utf8[index]) {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                bytes.append(UInt8(ascii: "\\"))
                runStart = index
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends an integer element in decimal.
    mutating func append(_ number: Int64) {
        separate()
        if number < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = number.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            for index in stride(from: count - 1, through: 0, by: -1) { bytes.append(buffer[index]) }
        }
    }

    /// Closes the array and returns its text; append nothing afterwards.
    mutating func finish() -> String {
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }

    private mutating func separate() {
        if isEmpty {
            isEmpty = false
        } else {
            bytes.append(UInt8(ascii: ","))
        }
    }
}
