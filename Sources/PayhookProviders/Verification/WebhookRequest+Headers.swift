import Foundation
import PayhookCore

extension WebhookRequest {
    /// The named headers that are present, for ``VerifiedDelivery/keptHeaders``; `names` are
    /// lowercase, as every verifier writes them.
    func keptHeaders(_ names: [String]) -> KeptHeaders {
        var kept: [KeptHeaders.Header] = []
        kept.reserveCapacity(names.count)
        for name in names {
            if let value = headers.first(where: { $0.name == name })?.value {
                kept.append(KeptHeaders.Header(name: name, value: value))
            }
        }
        return KeptHeaders(kept)
    }

    /// A header's value exactly as received (it may be signed byte for byte), treating an
    /// empty or all-space value as absent.
    func nonEmptyHeader(_ name: String) -> String? {
        // Checked on bytes: trimming would build a String just to see whether it is empty.
        guard let value = header(name),
              value.utf8.contains(where: { $0 != 32 && $0 != 9 && $0 != 13 && $0 != 10 })
        else { return nil }
        return value
    }
}
