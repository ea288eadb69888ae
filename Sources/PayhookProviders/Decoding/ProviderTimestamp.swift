import Foundation

/// Parses the ISO 8601 timestamps providers send, including the variants Foundation's
/// formatters reject: seven fractional digits (PXP `2024-10-27T08:51:04.8264455Z`),
/// milliseconds with an offset (Mercado Pago `2022-07-31T17:04:28.717-04:00`) and offsets
/// without a colon.
enum ProviderTimestamp {
    /// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM|±HHMM|±HH)`; `nil` for anything else.
    static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        var index = 0
        func number(_ count: Int) -> Int? {
            guard index + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<(index + count)] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            index += count
            return value
        }
        func literal(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }
        guard let year = number(4), literal(0x2D), let month = number(2), literal(0x2D), let day = number(2),
              literal(0x54) || literal(0x74), let hour = number(2), literal(0x3A), let minute = number(2),
              literal(0x3A), let second = number(2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var fraction = 0.0
        if literal(0x2E) {
            var scale = 0.1
            let start = index
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                fraction += Double(bytes[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        var offsetSeconds = 0
        if literal(0x5A) || literal(0x7A) {
            // UTC
        } else if index < bytes.count, bytes[index] == 0x2B || bytes[index] == 0x2D {
            let sign = bytes[index] == 0x2D ? -1 : 1
            index += 1
            guard let offsetHours = number(2), offsetHours < 24 else { return nil }
            var offsetMinutes = 0
            if index < bytes.count {
                _ = literal(0x3A)
                guard let minutes = number(2), minutes < 60 else { return nil }
                offsetMinutes = minutes
            }
            offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60)
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
