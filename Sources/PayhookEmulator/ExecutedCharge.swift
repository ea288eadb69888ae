/// One charge the emulator executed (replays are not charges), as tests and benches list them
/// to assert "exactly one charge per cycle" across all idempotency keys.
public struct ExecutedCharge: Sendable, Equatable {
    /// Mercado Pago `X-Idempotency-Key`, Adyen `Idempotency-Key` (nil when the request had
    /// none), PXP `merchantTransactionId`.
    public let idempotencyKey: String?
    /// The merchant reference: Mercado Pago `external_reference`, Adyen `reference`; nil for
    /// PXP, whose charges carry no reference besides `merchantTransactionId`.
    public let reference: String?
    /// The id the emulator answered with: order id, `pspReference`, `systemTransactionId`.
    public let providerPaymentID: String
    /// The amount as sent: a decimal string (Mercado Pago, PXP) or minor units (Adyen).
    public let amount: String
    /// Upper-case currency code (Mercado Pago: the order's currency).
    public let currency: String
    /// The scripted outcome the charge got.
    public let result: EmulatedChargeResult
    /// The request fields that tell a merchant-initiated charge apart, by dotted path as sent
    /// (Mercado Pago `processing_mode`, `stored_credential.*`, `subscription_data.*`; PXP the
    /// processing model; Adyen `recurringProcessingModel`), numbers and booleans as JSON text.
    /// A few short strings, so the ledger stays small.
    public let requestFields: [String: String]

    init(idempotencyKey: String?, reference: String?, providerPaymentID: String, amount: String, currency: String,
         result: EmulatedChargeResult, requestFields: [String: String] = [:]) {
        self.idempotencyKey = idempotencyKey
        self.reference = reference
        self.providerPaymentID = providerPaymentID
        self.amount = amount
        self.currency = currency
        self.result = result
        self.requestFields = requestFields
    }
}

/// The executed charges of one provider, in execution order.
///
/// Not thread-safe on its own; kept inside the provider emulator's `Mutex`. Unbounded: each
/// record is a few short strings, so a bench of a million charges holds tens of megabytes.
struct ChargeLedger {
    private(set) var records: [ExecutedCharge] = []

    mutating func record(_ charge: ExecutedCharge) { records.append(charge) }

    var count: Int { records.count }
}
