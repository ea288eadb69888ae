/// The billing cycle a merchant-initiated charge pays, for providers that want it with the
/// charge (Mercado Pago's payment-level `subscription_data`).
///
/// Built by the charge handler from the subscription and the cycle; the same for every attempt
/// of a cycle, so a retry with the same idempotency key sends the same request.
public struct RecurringBilling: Sendable, Hashable {
    /// How often the subscription bills.
    public enum PeriodUnit: String, Sendable, CaseIterable {
        case day, week, month
    }

    /// The merchant's id of this cycle's invoice (payhook: `{subscription reference}-c{cycle}`).
    public var invoiceID: String
    /// The day the cycle is due, `YYYY-MM-DD` in UTC.
    public var billingDate: String
    /// This cycle's number, from 1.
    public var sequenceNumber: Int
    /// The number of cycles when the subscription has a fixed count, else nil.
    public var sequenceTotal: Int?
    /// Cycles are `period` `unit`s apart.
    public var unit: PeriodUnit
    public var period: Int

    public init(invoiceID: String, billingDate: String, sequenceNumber: Int, sequenceTotal: Int? = nil,
                unit: PeriodUnit, period: Int) {
        self.invoiceID = invoiceID
        self.billingDate = billingDate
        self.sequenceNumber = sequenceNumber
        self.sequenceTotal = sequenceTotal
        self.unit = unit
        self.period = period
    }
}
