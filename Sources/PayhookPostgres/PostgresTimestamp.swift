package import Foundation

/// Converts between `Date` and PostgreSQL's ISO `timestamptz` text.
///
/// Done by hand with integer calendar arithmetic rather than `DateFormatter`/`ISO8601DateFormatter`,
/// which drop microseconds and are costly to create; the connection pins `DateStyle=ISO` and
/// `TimeZone=UTC`, so the server's output has one shape: `2024-02-29 12:34:56.789012+00`.
enum PostgresTimestamp {
    /// Formats `date` in UTC with microsecond precision; nil outside years 1...9999.
    static func format(_ date: Date) -> String? {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, seconds > -62_135_596_800, seconds < 253_402_300_800 else { return nil }
        let totalMicros = Int64((seconds * 1_000_000).rounded())
        let (days, microsOfDay) = floorDivide(totalMicros, 86_400_000_000)
        let (year, month, day) = civil(fromDays: days)
        let secondOfDay = microsOfDay / 1_000_000
        let micros = microsOfDay % 1_000_000
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + " "
            + pad(secondOfDay / 3600, 2) + ":" + pad(secondOfDay / 60 % 60, 2) + ":"
            + pad(secondOfDay % 60, 2) + "." + pad(micros, 6) + "+00"
    }

    /// Parses ISO output such as `2024-02-29 12:34:56.789012+05:30`; nil when malformed,
    /// infinite or BC (which have no meaningful `Date`).
    static func parse(_ text: String) -> Date? {
        var scanner = DigitScanner(Array(text.utf8))
        guard let year = scanner.number(minDigits: 4, maxDigits: 6), scanner.take(UInt8(ascii: "-")),
              let month = scanner.number(minDigits: 2, maxDigits: 2), scanner.take(UInt8(ascii: "-")),
              let day = scanner.number(minDigits: 2, maxDigits: 2),
              scanner.take(UInt8(ascii: " ")) || scanner.take(UInt8(ascii: "T")),
              let hour = scanner.number(minDigits: 2, maxDigits: 2), scanner.take(UInt8(ascii: ":")),
              let minute = scanner.number(minDigits: 2, maxDigits: 2), scanner.take(UInt8(ascii: ":")),
              let second = scanner.number(minDigits: 2, maxDigits: 2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var micros: Int64 = 0
        if scanner.take(UInt8(ascii: ".")) {
            var digits = 0
            while let digit = scanner.digit() {
                if digits < 6 { micros = micros * 10 + Int64(digit) }
                digits += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 6) { micros *= 10 }
        }
        var offsetSeconds: Int64 = 0
        if let sign = scanner.peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            _ = scanner.take(sign)
            guard let offsetHours = scanner.number(minDigits: 2, maxDigits: 2) else { return nil }
            var offset = offsetHours * 3600
            if scanner.take(UInt8(ascii: ":")) {
                guard let offsetMinutes = scanner.number(minDigits: 2, maxDigits: 2) else { return nil }
                offset += offsetMinutes * 60
                if scanner.take(UInt8(ascii: ":")) {
                    guard let offsetSecs = scanner.number(minDigits: 2, maxDigits: 2) else { return nil }
                    offset += offsetSecs
                }
            }
            offsetSeconds = sign == UInt8(ascii: "-") ? -offset : offset
        }
        guard scanner.atEnd else { return nil }
        let days = days(fromCivil: year, month, day)
        let wholeSeconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return Date(timeIntervalSince1970: Double(wholeSeconds) + Double(micros) / 1_000_000)
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let quotient = value / divisor
        let remainder = value % divisor
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }

    /// Days since 1970-01-01 to proleptic Gregorian (H. Hinnant's `civil_from_days`).
    private static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Proleptic Gregorian to days since 1970-01-01 (H. Hinnant's `days_from_civil`).
    private static func days(fromCivil year0: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let year = month <= 2 ? year0 - 1 : year0
        let era = (year >= 0 ? year : year - 399) / 400
        let yearOfEra = year - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}

/// A cursor over ASCII bytes for the fixed-shape formats PostgreSQL emits.
struct DigitScanner {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { index == bytes.count }

    func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func take(_ byte: UInt8) -> Bool {
        guard peek() == byte else { return false }
        index += 1
        return true
    }

    mutating func digit() -> Int64? {
        guard let byte = peek(), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
        index += 1
        return Int64(byte - UInt8(ascii: "0"))
    }

    mutating func number(minDigits: Int, maxDigits: Int) -> Int64? {
        var value: Int64 = 0
        var count = 0
        while count < maxDigits, let digit = digit() {
            value = value * 10 + digit
            count += 1
        }
        return count >= minDigits ? value : nil
    }
}

extension PostgresValue {
    /// The date a `timestamptz` column bound to `.timestamptz(date)` reads back as: rounded to
    /// the microsecond and parsed as a read parses it. For code that keeps a row it has written
    /// instead of reading it back, so that what it compares later is what a read would return.
    package static func storedTimestamp(_ date: Date) -> Date? {
        PostgresTimestamp.format(date).flatMap(PostgresTimestamp.parse)
    }
}
