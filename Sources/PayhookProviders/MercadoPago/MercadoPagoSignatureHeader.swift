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
        // One pass over the header's UTF-8 bytes (the separators are ASCII), making Strings for
        // the two values only: splitting into an array of slices and trimming each part into
        // a String was the largest single cost of Mercado Pago verification (bench/VerifyBench).
        var header = header
        return header.withUTF8 { bytes -> MercadoPagoSignatureHeader? in
            var ts: String?
            var v1: String?
            var partStart = 0
            while partStart < bytes.count {
                var partEnd = partStart
                while partEnd < bytes.count, bytes[partEnd] != UInt8(ascii: ",") { partEnd += 1 }
                defer { partStart = partEnd + 1 }
                guard let equals = bytes[partStart..<partEnd].firstIndex(of: UInt8(ascii: "=")) else { continue }
                let key = bytes.trimmingASCIIWhitespace(partStart..<equals)
                let isTS = matches(bytes, key, "ts")
                guard isTS || matches(bytes, key, "v1") else { continue }
                let valueRange = bytes.trimmingASCIIWhitespace((equals + 1)..<partEnd)
                let value = String(decoding: UnsafeBufferPointer(rebasing: bytes[valueRange]), as: UTF8.self)
                if isTS {
                    guard ts == nil else { return nil }
                    ts = value
                } else {
                    guard v1 == nil else { return nil }
                    v1 = value
                }
            }
            guard let ts, !ts.isEmpty, let v1, !v1.isEmpty else { return nil }
            return MercadoPagoSignatureHeader(ts: ts, v1: v1)
        }
    }

    private static func matches(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ literal: StaticString) -> Bool {
        range.count == literal.utf8CodeUnitCount
            && (0..<range.count).allSatisfy { bytes[range.lowerBound + $0] == literal.utf8Start[$0] }
    }
}
