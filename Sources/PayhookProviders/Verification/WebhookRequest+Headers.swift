import Foundation
import PayhookCore

extension WebhookRequest {
    /// The named headers that are present, keyed by lowercased name, for
    /// ``VerifiedDelivery/keptHeaders``.
    func keptHeaders(_ names: [String]) -> [String: String] {
        var kept: [String: String] = [:]
        for name in names {
            if let value = header(name) { kept[name.asciiLowercased()] = value }
        }
        return kept
    }

    /// A header's value exactly as received (it may be signed byte for byte), treating an
    /// empty or all-space value as absent.
    func nonEmptyHeader(_ name: String) -> String? {
        guard let value = header(name), !value.trimmingASCIIWhitespace().isEmpty else { return nil }
        return value
    }
}
