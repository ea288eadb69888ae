import Foundation
public import PayhookCallbacks
/// How payhook decides that an order is paid and tells the merchant.
public struct FulfillmentSettings: Sendable, Equatable {
    /// Count `authorized` payments as paid (`PAYHOOK_FULFILL_ON_AUTHORIZED=true`); by default
    /// only `captured` money fulfills, because an authorisation can still be cancelled or expire.
    public var fulfillOnAuthorized = false
    /// Funding types that may fulfill (`PAYHOOK_FULFILLMENT_FUNDING=credit,debit`); `nil`
    /// allows any, including payments whose funding the provider did not report.
    public var allowedFunding: Set<String>?
    /// Deadline of one callback POST (`PAYHOOK_FULFILLMENT_TIMEOUT_SECONDS`, default 10).
    public var callbackTimeout: Duration = .seconds(10)
    /// Where an order's own `callback_url` may point (`PAYHOOK_CALLBACK_ALLOWED_CIDRS` admits
    /// internal networks); `PAYHOOK_FULFILLMENT_URL` is not subject to it.
    public var callbackDestinations = CallbackDestinationPolicy()
    /// How long an order whose check lacks a fact (a capture without its amount, a payment
    /// still pending) waits for it before it goes to review
    /// (`PAYHOOK_FULFILLMENT_REVIEW_AFTER_SECONDS`, default 1020: the 17 minutes ten checks
    /// took with the standard backoff). Every re-check waits afresh.
    public var reviewAfter: Duration = .seconds(1020)

    public init() {}

    /// The canonical payment statuses that count as money received.
    var paidStatuses: [String] { fulfillOnAuthorized ? ["captured", "authorized"] : ["captured"] }
}
