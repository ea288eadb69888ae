/// How the emulator decides a new (not replayed) charge, in provider-neutral words.
///
/// Each provider emulator translates it into its own vocabulary: Mercado Pago order
/// `processed`/`processing`/`failed`, Adyen `resultCode` `Authorised`/`Pending`/`Refused`/
/// `Error`, PXP state `Authorised` or `Captured`/`Pending`/`Refused`/`Error`.
public enum EmulatedChargeResult: Sendable, Equatable {
    /// Approved.
    case approved
    /// Accepted but not final; the outcome arrives later by webhook.
    case pending
    /// Declined with the provider's own code: a Mercado Pago `status_detail`
    /// (`insufficient_amount`), an Adyen `refusalReasonCode` (`"12"`) or a PXP reason code.
    case declined(code: String)
    /// A technical error without a decline code (Adyen `Error`, Mercado Pago
    /// `processing_error`, PXP `Error`).
    case error
}
