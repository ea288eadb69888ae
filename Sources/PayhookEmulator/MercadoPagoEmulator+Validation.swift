import Foundation

extension MercadoPagoEmulator {
    /// The request fields the ledger keeps (``ExecutedCharge/requestFields``).
    static let recordedFields = [
        "processing_mode", "stored_credential.payment_initiator", "stored_credential.reason",
        "stored_credential.first_payment", "stored_credential.previous_transaction_reference",
        "subscription_data.invoice_id", "subscription_data.billing_date", "subscription_data.subscription_sequence.number",
        "subscription_data.subscription_sequence.total", "subscription_data.invoice_period.type",
        "subscription_data.invoice_period.period", "payment_method.token", "automatic_payments.payment_profile_id",
    ]

    static let processingModes: Set<String> = ["automatic", "automatic_async", "manual"]
    static let invoicePeriodTypes: Set<String> = ["daily", "weekly", "monthly", "yearly"]

    /// Checks `POST /v1/orders` as Mercado Pago's reference and SDKs describe the Automatic
    /// Payments steps; nil when the request is acceptable, else the reason (a `cause` entry of
    /// Mercado Pago's 400 body).
    ///
    /// - `type` `online`, `processing_mode` one of `automatic`, `automatic_async`, `manual`;
    ///   `total_amount` a decimal string; `transactions.payments` a non-empty array whose
    ///   payments carry an `amount` string.
    /// - A merchant-initiated payment (`stored_credential.payment_initiator` `merchant`) goes
    ///   with `processing_mode` `automatic_async`, `first_payment` false, no card token
    ///   (`payment_method.token`), and a `previous_transaction_reference` (when sent) that
    ///   names a payment, never an order (order ids start with `ORD`).
    /// - A customer-initiated one (`customer`) is the first payment: `automatic`, with a token.
    /// - `automatic_payments.payment_profile_id`, when sent, names a payment profile: a card id
    ///   (all digits) there is refused.
    /// - Subscription details go in the payment-level `subscription_data` or in
    ///   `automatic_payments.subscription` (both published; see
    ///   ``automaticPaymentsSubscriptionProblem(_:at:)``); for `subscription_data` its `invoice_id`,
    ///   `billing_date` (`YYYY-MM-DD`), `subscription_sequence.number` (integer ≥ 1, `total`
    ///   optional, ≥ number) and `invoice_period{type, period}` are checked.
    func orderRequestProblem(_ body: JSONRequestBody, knownOrder: (String) -> Bool) -> (code: String, description: String)? {
        guard body.string("type") == "online" else { return ("invalid_type", "type must be online") }
        guard let mode = body.string("processing_mode"), Self.processingModes.contains(mode) else {
            return ("invalid_processing_mode", "processing_mode must be one of automatic, automatic_async, manual")
        }
        guard let total = body.string("total_amount"), Self.isDecimal(total) else {
            return ("invalid_total_amount", "total_amount must be a decimal string")
        }
        guard let payments = body.array("transactions", "payments"), !payments.isEmpty else {
            return ("invalid_transactions", "transactions.payments must hold at least one payment")
        }
        for (index, element) in payments.enumerated() {
            guard case .object(let object) = element else { return ("invalid_payment", "transactions.payments[\(index)] must be an object") }
            let payment = JSONRequestBody(root: object)
            if let problem = paymentProblem(payment, mode: mode, index: index, knownOrder: knownOrder) { return problem }
        }
        return nil
    }

    private func paymentProblem(
        _ payment: JSONRequestBody, mode: String, index: Int, knownOrder: (String) -> Bool
    ) -> (code: String, description: String)? {
        let at = "transactions.payments[\(index)]"
        guard let amount = payment.string("amount"), Self.isDecimal(amount) else {
            return ("invalid_amount", "\(at).amount must be a decimal string")
        }
        if let profile = payment.value(["automatic_payments", "payment_profile_id"]) {
            // A payment profile (POST /v1/customers/{id}/payment-profiles) is its own resource;
            // a card id (numeric, from payment_method.card_id or card.id) is not one.
            guard case .string(let text) = profile, !text.isEmpty else {
                return ("invalid_payment_profile_id", "\(at).automatic_payments.payment_profile_id must be a payment profile id")
            }
            if text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
                return ("invalid_payment_profile_id",
                        "\(at).automatic_payments.payment_profile_id names a card id, not a payment profile")
            }
        }
        if payment.value(["automatic_payments", "subscription"]) != nil,
           let problem = Self.automaticPaymentsSubscriptionProblem(payment, at: at) {
            return problem
        }
        if payment.value(["stored_credential"]) != nil {
            switch payment.string("stored_credential", "payment_initiator") {
            case "merchant":
                guard mode == "automatic_async" else {
                    return ("invalid_processing_mode", "merchant-initiated payments need processing_mode automatic_async")
                }
                guard payment.isBoolean(["stored_credential", "first_payment"], equalTo: false) else {
                    return ("invalid_stored_credential", "\(at).stored_credential.first_payment must be false for a merchant-initiated payment")
                }
                guard payment.value(["payment_method", "token"]) == nil else {
                    return ("invalid_payment_method", "\(at).payment_method.token is not allowed in a merchant-initiated payment")
                }
                if let reference = payment.value(["stored_credential", "previous_transaction_reference"]) {
                    guard case .string(let text) = reference, !text.isEmpty else {
                        return ("invalid_stored_credential", "\(at).stored_credential.previous_transaction_reference must be a payment id")
                    }
                    if text.hasPrefix("ORD") || knownOrder(text) {
                        return ("invalid_stored_credential", "\(at).stored_credential.previous_transaction_reference names an order, not a payment")
                    }
                }
            case "customer":
                guard mode == "automatic" else {
                    return ("invalid_processing_mode", "the customer-initiated first payment needs processing_mode automatic")
                }
                guard payment.string("payment_method", "token") != nil else {
                    return ("invalid_payment_method", "\(at).payment_method.token is required for the first payment")
                }
            default:
                return ("invalid_stored_credential", "\(at).stored_credential.payment_initiator must be customer or merchant")
            }
            guard payment.string("stored_credential", "reason") == "recurring" else {
                return ("invalid_stored_credential", "\(at).stored_credential.reason must be recurring")
            }
        }
        if payment.value(["subscription_data"]) != nil {
            let data = ["subscription_data"]
            guard let invoice = payment.string("subscription_data", "invoice_id"), !invoice.isEmpty else {
                return ("invalid_subscription_data", "\(at).subscription_data.invoice_id is required")
            }
            guard let date = payment.string("subscription_data", "billing_date"), Self.isDay(date) else {
                return ("invalid_subscription_data", "\(at).subscription_data.billing_date must be YYYY-MM-DD")
            }
            guard payment.isInteger(data + ["subscription_sequence", "number"]),
                  let number = payment.scalarText(data + ["subscription_sequence", "number"]).flatMap(Int.init), number >= 1
            else {
                return ("invalid_subscription_data", "\(at).subscription_data.subscription_sequence.number must be an integer from 1")
            }
            if payment.value(data + ["subscription_sequence", "total"]) != nil {
                guard payment.isInteger(data + ["subscription_sequence", "total"]),
                      let total = payment.scalarText(data + ["subscription_sequence", "total"]).flatMap(Int.init), total >= number
                else {
                    return ("invalid_subscription_data", "\(at).subscription_data.subscription_sequence.total must be an integer not below number")
                }
            }
            guard let type = payment.string("subscription_data", "invoice_period", "type"), Self.invoicePeriodTypes.contains(type),
                  payment.isInteger(data + ["invoice_period", "period"]),
                  let period = payment.scalarText(data + ["invoice_period", "period"]).flatMap(Int.init), period >= 1
            else {
                return ("invalid_subscription_data", "\(at).subscription_data.invoice_period needs a type (daily, weekly, monthly, yearly) and a period from 1")
            }
        }
        return nil
    }

    /// Mercado Pago's process-recurring-payments page, and the Node SDK's order answers
    /// (`src/clients/order/get/get.spec.ts`), carry the subscription as
    /// `automatic_payments.subscription{id, sequence{number, total}, invoice{id, billing_date,
    /// period{interval, type}}}`, while the SDKs' request types use payment-level
    /// `subscription_data`: both are accepted (docs/providers.md, UNCONFIRMED).
    static func automaticPaymentsSubscriptionProblem(_ payment: JSONRequestBody, at: String) -> (code: String, description: String)? {
        let base = ["automatic_payments", "subscription"]
        let field = "\(at).automatic_payments.subscription"
        guard case .object? = payment.value(base) else { return ("invalid_automatic_payments", "\(field) must be an object") }
        if payment.value(base + ["sequence"]) != nil {
            guard payment.isInteger(base + ["sequence", "number"]),
                  let number = payment.scalarText(base + ["sequence", "number"]).flatMap(Int.init), number >= 1
            else { return ("invalid_automatic_payments", "\(field).sequence.number must be an integer from 1") }
            if payment.value(base + ["sequence", "total"]) != nil {
                guard payment.isInteger(base + ["sequence", "total"]),
                      let total = payment.scalarText(base + ["sequence", "total"]).flatMap(Int.init), total >= number
                else { return ("invalid_automatic_payments", "\(field).sequence.total must be an integer not below number") }
            }
        }
        if let date = payment.value(base + ["invoice", "billing_date"]) {
            guard case .string(let text) = date, isDay(text) else {
                return ("invalid_automatic_payments", "\(field).invoice.billing_date must be YYYY-MM-DD")
            }
        }
        return nil
    }

    static func isDecimal(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), !parts[0].isEmpty,
              parts.allSatisfy({ $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }) else { return false }
        return parts.count == 1 || (1...2).contains(parts[1].count)
    }

    static func isDay(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return false }
        return bytes.enumerated().allSatisfy { index, byte in index == 4 || index == 7 || (byte >= 0x30 && byte <= 0x39) }
    }
}
