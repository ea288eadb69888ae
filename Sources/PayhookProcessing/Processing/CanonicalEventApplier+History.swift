import Foundation
import PayhookCore
import PayhookPostgres

/// History: the `payment_events` rows every entity adds.
extension CanonicalEventApplier {
    // MARK: History

    /// One `payment_events` row; the pass writes it with the rest of its history.
    func history(type: String, payment: ApplyPass.PaymentKey?, orderID: Int64?, tokenID: Int64?, occurredAt: Date?,
                         data: EventData, source: EventSource) -> ApplyPass.HistoryRow {
        ApplyPass.HistoryRow(payment: payment, orderID: orderID, tokenID: tokenID, inboundEventID: source.inboundEventID,
                             type: type, occurredAt: occurredAt ?? source.receivedAt, data: data.json())
    }
}

/// `payment_events.data`: provider ids, status words, amounts and references only.
package struct EventData: Sendable {
    package struct Refund: Sendable {
        let kind: String
        let reference: String?
        let amountMinor: Int64?
    }

    let provider: String
    var providerPaymentID: String?
    var providerOrderID: String?
    var providerStatus: String?
    var providerEventType: String?
    var statusDetail: String?
    var reportedStatus: String?
    var statusBefore: String?
    var statusAfter: String?
    var amountMinor: Int64?
    var currency: String?
    var modificationAmountMinor: Int64?
    var merchantReference: String?
    var reference: String?
    var refund: Refund?
    var token: String?
    var tokenStatus: String?
    var tokenChange: String?
    var fetched: Bool?
    var stale: Bool?
    var note: String?


    init(provider: String) { self.provider = provider }

    /// Built by hand rather than with `JSONEncoder`, which dominated the per-event CPU time
    /// on Linux; keys are sorted like the encoder's `.sortedKeys` output.
    func json() -> String {
        var fields: [(String, String)] = [("provider", JSONString.quote(provider))]
        func add(_ key: String, _ value: String?) { if let value { fields.append((key, JSONString.quote(value))) } }
        func add(_ key: String, _ value: Int64?) { if let value { fields.append((key, String(value))) } }
        func add(_ key: String, _ value: Bool?) { if let value { fields.append((key, value ? "true" : "false")) } }
        add("provider_payment_id", providerPaymentID)
        add("provider_order_id", providerOrderID)
        add("provider_status", providerStatus)
        add("provider_event_type", providerEventType)
        add("status_detail", statusDetail)
        add("reported_status", reportedStatus)
        add("status_before", statusBefore)
        add("status_after", statusAfter)
        add("amount_minor", amountMinor)
        add("currency", currency)
        add("modification_amount_minor", modificationAmountMinor)
        add("merchant_reference", merchantReference)
        add("reference", reference)
        if let refund {
            var parts = ["\"kind\":" + JSONString.quote(refund.kind)]
            if let reference = refund.reference { parts.append("\"reference\":" + JSONString.quote(reference)) }
            if let amount = refund.amountMinor { parts.append("\"amount_minor\":" + String(amount)) }
            fields.append(("refund", "{" + parts.sorted().joined(separator: ",") + "}"))
        }
        add("token", token)
        add("token_status", tokenStatus)
        add("token_change", tokenChange)
        add("fetched", fetched)
        add("stale", stale)
        add("note", note)
        fields.sort { $0.0 < $1.0 }
        return "{" + fields.map { JSONString.quote($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
    }
}
