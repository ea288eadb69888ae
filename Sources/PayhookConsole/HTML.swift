import Foundation
import PayhookAdmin
import PayhookCore
import PayhookOperations
import PayhookProcessing
import PayhookProviders
import PayhookSubscriptions

/// A fragment of HTML whose interpolated `String`s are escaped.
///
/// Webhook bodies, error texts and references are attacker-controlled, so escaping is the
/// default rather than something each page remembers: a `String` interpolated into an `HTML`
/// literal is always escaped, and only another `HTML` value is inserted as markup.
/// ```swift
/// let row: HTML = "<td>\(letter.error ?? "")</td>"   // escaped: `<script>` shows as text
/// let page: HTML = "<tr>\(row)</tr>"                  // markup built from escaped parts
/// ```
struct HTML: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    private(set) var rendered: String

    init(stringLiteral value: String) { rendered = value }
    init(stringInterpolation: Interpolation) { rendered = stringInterpolation.text }
    private init(raw: String) { rendered = raw }

    var description: String { rendered }

    struct Interpolation: StringInterpolationProtocol {
        var text = ""
        init(literalCapacity: Int, interpolationCount: Int) { text.reserveCapacity(literalCapacity + interpolationCount * 16) }
        mutating func appendLiteral(_ literal: String) { text += literal }
        mutating func appendInterpolation(_ value: String) { text += HTML.escape(value) }
        mutating func appendInterpolation(_ value: HTML) { text += value.rendered }
        mutating func appendInterpolation(_ values: [HTML]) { for value in values { text += value.rendered } }
        mutating func appendInterpolation(_ value: Int64) { text += String(value) }
        mutating func appendInterpolation(_ value: Int) { text += String(value) }
    }

    /// Escapes the five characters that matter in text and in quoted attribute values.
    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        escaped.append(text, escaping: { scalar in
            switch scalar {
            case "&": "&amp;"
            case "<": "&lt;"
            case ">": "&gt;"
            case "\"": "&quot;"
            case "'": "&#39;"
            default: nil
            }
        })
        return escaped
    }

    static func join(_ parts: [HTML], separator: HTML = "") -> HTML {
        HTML(raw: parts.map(\.rendered).joined(separator: separator.rendered))
    }

    /// `text`, or a muted dash when absent.
    static func text(_ text: String?) -> HTML {
        guard let text, !text.isEmpty else { return "<span class=\"muted\">—</span>" }
        return "\(text)"
    }

    /// An instant in UTC with its age, e.g. `2025-03-20 12:00:05 UTC (3 min ago)`; the script
    /// keeps the age current from `datetime`.
    static func time(_ date: Date?, now: Date = Date()) -> HTML {
        guard let date else { return "<span class=\"muted\">—</span>" }
        let iso = JSONOutput.format(date)
        return "<time datetime=\"\(iso)\" title=\"\(iso)\">\(utc(date))</time> <span class=\"age\" data-age=\"\(iso)\">\(age(date, now: now))</span>"
    }

    static func utc(_ date: Date) -> String {
        var style = Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC")!)
        style = style.dateSeparator(.dash).timeSeparator(.colon).dateTimeSeparator(.space)
        return date.formatted(style).replacingOccurrences(of: "Z", with: "") + " UTC"
    }

    /// `12 s ago`, `3 min ago`, `5 h ago`, `2 d ago`; `in 4 min` for the future.
    static func age(_ date: Date, now: Date) -> String {
        let seconds = Int(now.timeIntervalSince(date).rounded())
        let magnitude = abs(seconds)
        let amount = magnitude < 60 ? "\(magnitude) s"
            : magnitude < 3600 ? "\(magnitude / 60) min"
            : magnitude < 86400 ? "\(magnitude / 3600) h"
            : "\(magnitude / 86400) d"
        return seconds >= 0 ? "(\(amount) ago)" : "(in \(amount))"
    }

    /// `seconds` as an age: `45 s`, `12 min`, `3 h`.
    static func duration(_ seconds: Int) -> String {
        seconds < 60 ? "\(seconds) s" : seconds < 3600 ? "\(seconds / 60) min" : seconds < 86400 ? "\(seconds / 3600) h" : "\(seconds / 86400) d"
    }

    /// JSON text indented for reading, escaped; text that is not JSON is shown as it is.
    static func prettyJSON(_ text: String) -> HTML {
        guard let value = JSONValue.parse(Array(text.utf8)) else { return "<pre class=\"raw\">\(text)</pre>" }
        var output = ""
        PrettyJSON.write(value, indent: 0, into: &output)
        return "<pre class=\"json\">\(output)</pre>"
    }
}

/// Renders a parsed JSON value with two-space indentation, members in their original order.
enum PrettyJSON {
    static func write(_ value: JSONValue, indent: Int, into output: inout String) {
        let pad = String(repeating: "  ", count: indent + 1)
        let closePad = String(repeating: "  ", count: indent)
        switch value {
        case .object(let object):
            guard !object.members.isEmpty else { output += "{}"; return }
            output += "{\n"
            for (index, member) in object.members.enumerated() {
                output += pad + JSONString.quote(member.key) + ": "
                write(member.value, indent: indent + 1, into: &output)
                output += index == object.members.count - 1 ? "\n" : ",\n"
            }
            output += closePad + "}"
        case .array(let items):
            guard !items.isEmpty else { output += "[]"; return }
            output += "[\n"
            for (index, item) in items.enumerated() {
                output += pad
                write(item, indent: indent + 1, into: &output)
                output += index == items.count - 1 ? "\n" : ",\n"
            }
            output += closePad + "]"
        case .string(let text): output += JSONString.quote(text)
        case .number(let text): output += text
        case .bool(let flag): output += flag ? "true" : "false"
        case .null: output += "null"
        }
    }
}
