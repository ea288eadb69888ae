import Foundation
import PayhookCore

extension WebhookRequest {
    /// The named headers that are present, for ``VerifiedDelivery/keptHeaders``; `names` are
    /// lowercase, as every verifier writes them.
    func keptHeaders(_ names: [String]) -> KeptHeaders {
        KeptHeaders(headers, keeping: names)
    }

    /// A header's value exactly as received (it may be signed byte for byte), treating an
    /// empty or all-space value as absent.
    func nonEmptyHeader(_ name: String) -> String? {
        guard let value = header(name), !value.isASCIIBlank else { return nil }
        return value
    }
}
