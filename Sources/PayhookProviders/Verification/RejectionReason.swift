/// Why a delivery was refused. The raw value is what `rejected_deliveries.reason` stores and
/// what metrics are labelled with, so the set is closed and the spellings are a contract.
public enum RejectionReason: String, Sendable, Equatable, CaseIterable {
    /// No signature header (or, for Adyen batches, an item without `hmacSignature`).
    case missingSignature = "missing_signature"
    /// A signature is present but cannot be parsed (bad hex/base64, missing `ts`/`v1`).
    case malformedSignature = "malformed_signature"
    /// The signature parses but no key in the ring produces it.
    case signatureMismatch = "signature_mismatch"
    /// The signature verifies but its timestamp is outside the tolerance and policy is reject.
    case staleTimestamp = "stale_timestamp"
    /// The body lacks the structure the signature scheme needs (e.g. an empty Adyen batch).
    case malformedBody = "malformed_body"
    /// The signature verifies, but the unsigned body names another resource than the signed
    /// one (Mercado Pago: the body's `data.id` is not the query's signed `data.id`).
    case dataIDMismatch = "data_id_mismatch"
}
