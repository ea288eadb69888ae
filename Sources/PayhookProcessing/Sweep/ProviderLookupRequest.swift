import Foundation
import PayhookCore

/// A lookup the provider sweep queued in `inbound_events`: "ask the provider for this order or
/// payment and apply what it says".
///
/// Why a row in the inbox rather than a call from the sweep: what the provider answers is then
/// applied exactly as a thin webhook's fetched state is (the same fetch, locks, merge, history,
/// fulfillment and charge follow-ups, retries and dead letters), by whichever processor claims
/// it, outside the sweep's transaction. docs/decisions/0012-provider-sweep.md.
///
/// The body is payhook's own: `{"payhook_lookup":{"resource":"order"|"payment","id":"…"}}`.
/// It carries no state, only what to fetch, so a provider delivery that happened to look like
/// it could cause nothing but a fetch of the provider's own authoritative state.
package struct ProviderLookupRequest: Sendable, Equatable {
    package enum Resource: String, Sendable {
        /// Mercado Pago `GET /v1/orders/{id}`.
        case order
        /// Mercado Pago `GET /v1/payments/{id}`, PXP `GET /transactions/{merchant}/{site}?systemTransactionId=…`.
        case payment
    }

    package var resource: Resource
    package var id: String

    package init(resource: Resource, id: String) {
        self.resource = resource
        self.id = id
    }

    private static let marker = Array("{\"payhook_lookup\":".utf8)

    /// The stored body.
    var body: [UInt8] {
        Array(JSONOutput.object([.init("payhook_lookup", .object([
            .init("resource", .string(resource.rawValue)), .init("id", .string(id)),
        ]))]).rendered.utf8)
    }

    /// The request a body holds; `nil` for any other body (a provider's delivery). The prefix
    /// check keeps the cost off every ordinary delivery.
    init?(body: [UInt8]) {
        guard body.starts(with: Self.marker), let lookup = JSONValue.parse(body)?["payhook_lookup"],
              case .string(let resourceText)? = lookup["resource"], let resource = Resource(rawValue: resourceText),
              case .string(let id)? = lookup["id"], !id.isEmpty
        else { return nil }
        self.init(resource: resource, id: id)
    }
}
