import PayhookCore
import Foundation

/// The parts of Mercado Pago's `x-signature` header (`ts=<ts>,v1=<hex>`).
struct MercadoPagoSignatureHeader: Equatable {
    /// The timestamp exactly as sent (it goes into the manifest unchanged).
    let ts: String
    /// The `v1` hex signature as sent.
    let v1: String

    /// Splits on `,`, then each part on its first `=`, trimming spaces and ignoring unknown
    /// keys (a future `v2` must not break `v1` checking).
    ///
    /// Returns `nil` when `ts` or `v1` is absent or empty, or when either appears twice: the
    /// SDKs disagree on which duplicate wins, so a duplicated field is refused, not guessed.
    static func parse(_ header: String) -> MercadoPagoSignatureHeader? {
        var ts: String?
        var v1: String?
        // Split on UTF-8 bytes: `String.split` walks grapheme clusters, which profiling showed
        // as a visible cost on the ingress path, and the separators are ASCII.
        for part in header.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: true) {
            guard let equals = part.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let key = Substring(part[..<equals]).trimmingASCIIWhitespace()
            let value = Substring(part[part.index(after: equals)...]).trimmingASCIIWhitespace()
            switch key {
            case "ts":
                guard ts == nil else { return nil }
                ts = value
            case "v1":
                guard v1 == nil else { return nil }
                v1 = value
            default:
                continue
            }
        }
        guard let ts, !ts.isEmpty, let v1, !v1.isEmpty else { return nil }
        return MercadoPagoSignatureHeader(ts: ts, v1: v1)
    }
}
