import Foundation
import PayhookCore

/// A position in a parsed payload that remembers its path, so that every error can name the
/// field without quoting the payload.
///
/// Built on the strict ``JSONValue`` reader, which keeps numbers as the text that was sent:
/// amounts are parsed from that text by `Money`, never through `Double`.
struct PayloadNode {
    let value: JSONValue?
    let path: String
    let provider: ProviderID

    /// Parses a body that must be a JSON object.
    static func parse(_ body: [UInt8], provider: ProviderID) throws(PayloadError) -> PayloadNode {
        guard let value = JSONValue.parse(body), case .object = value else {
            throw PayloadError(provider: provider, code: .malformedJSON)
        }
        return PayloadNode(value: value, path: "", provider: provider)
    }

    subscript(key: String) -> PayloadNode {
        PayloadNode(value: value?[key], path: path.isEmpty ? key : path + "." + key, provider: provider)
    }

    /// `true` when the field exists and is not null.
    var isPresent: Bool {
        switch value {
        case nil, .null?: false
        default: true
        }
    }

    func error(_ code: PayloadError.Code) -> PayloadError {
        PayloadError(provider: provider, code: code, field: path)
    }

    /// Strings as they are, numbers as their text; `nil` for absent, null or empty.
    /// Throws for objects and arrays, which no scalar field should be.
    func string() throws(PayloadError) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?: return text.isEmpty ? nil : text
        case .number(let text)?: return text
        case .bool(let flag)?: return flag ? "true" : "false"
        case .object?, .array?: throw error(.invalidField)
        }
    }

    func requiredString() throws(PayloadError) -> String {
        guard let text = try string() else { throw error(.missingField) }
        return text
    }

    /// A JSON boolean or the strings `"true"`/`"false"` (Adyen sends both forms).
    func bool() throws(PayloadError) -> Bool? {
        switch value {
        case nil, .null?: return nil
        case .bool(let flag)?: return flag
        case .string(let text)?:
            switch text.lowercased() {
            case "true": return true
            case "false": return false
            default: throw error(.invalidField)
            }
        default: throw error(.invalidField)
        }
    }

    /// The elements of an array, each with its indexed path; `[]` when absent or null.
    func elements() throws(PayloadError) -> [PayloadNode] {
        switch value {
        case nil, .null?: return []
        case .array(let items)?:
            return items.enumerated().map { PayloadNode(value: $1, path: "\(path)[\($0)]", provider: provider) }
        default: throw error(.invalidField)
        }
    }

    /// An ISO 8601 timestamp; `nil` when absent or unparseable. Timestamps order snapshots
    /// but never decide money, so a provider's odd format must not block the event.
    func date() -> Date? {
        guard case .string(let text)? = value else { return nil }
        return ProviderTimestamp.parse(text)
    }

    /// A card's expiry from this object's `month` and `year` fields, as `MM/YYYY`
    /// (``VaultTokenSnapshot/normalizedExpiry(month:year:)``); `nil` when either is absent or
    /// not a valid month or year. Every provider sends the two apart.
    /// - Throws: `.invalidField` when either field is an object or an array.
    func cardExpiry(month monthKey: String, year yearKey: String) throws(PayloadError) -> String? {
        let month = try self[monthKey].string()
        let year = try self[yearKey].string()
        return month.flatMap { month in year.flatMap { VaultTokenSnapshot.normalizedExpiry(month: month, year: $0) } }
    }

    /// A decimal amount given as a string (`"100.10"`) or a JSON number (`100.1`), parsed
    /// exactly in `currency`; `nil` when absent.
    func decimalMoney(currency: String?) throws(PayloadError) -> Money? {
        let text: String
        switch value {
        case nil, .null?: return nil
        case .string(let s)?: text = s
        case .number(let s)?: text = s
        default: throw error(.invalidField)
        }
        guard let currency else { throw error(.invalidField) }
        do {
            return try Money.parse(decimal: text, currency: currency)
        } catch {
            throw self.error(.invalidField)
        }
    }

    /// An amount already in integer minor units (Adyen `amount.value`); `nil` when absent.
    func minorUnitsMoney(currency: String?) throws(PayloadError) -> Money? {
        guard let text = try string() else { return nil }
        guard let currency, let units = Int64(text) else { throw error(.invalidField) }
        do {
            return try Money(minorUnits: units, currency: currency)
        } catch {
            throw self.error(.invalidField)
        }
    }
}

extension PayloadNode {
    /// The first of several alternative fields that holds a value; for providers that name
    /// the same fact differently across versions (Adyen `tokenization.*` vs `recurring.*`).
    static func firstString(_ nodes: PayloadNode...) throws(PayloadError) -> String? {
        for node in nodes {
            if let text = try node.string() { return text }
        }
        return nil
    }

    /// The first of several alternative fields that is present.
    static func firstPresent(_ nodes: PayloadNode...) -> PayloadNode? {
        nodes.first(where: \.isPresent)
    }
}
