import Foundation
import PayhookCore
import PayhookProviders

/// One claimed `inbound_events` row, as much of it as processing needs.
package struct ClaimedInboundEvent: Sendable {
    let id: Int64
    let provider: ProviderID?
    /// The stored provider text, kept for messages when it is not a known provider.
    let providerText: String
    let account: String
    let body: [UInt8]
    /// Attempts made before this one.
    let attempts: Int
    let receivedAt: Date
}

/// Turns one raw inbound event into canonical events, fetching provider state where the
/// webhook is thin or must be confirmed.
///
/// - Mercado Pago: the body only points at a resource; `order` and `payment` topics are
///   fetched (`fetchOrder`, `fetchPayment`) and the fetched state is what gets applied.
///   Other topics are recorded as `unknown`.
/// - PXP: Transaction events are confirmed with `fetchPayment(systemTransactionId)` (PXP's
///   guidance); the fetched transaction is applied and the webhook's own state word is kept
///   as history. Token and other events are self-contained.
/// - Adyen: self-contained; no call is made.
/// - A provider sweep's ``ProviderLookupRequest`` (any provider with a lookup): the named
///   order or payment is fetched and applied like the fetches above.
///
/// No I/O other than the provider client; errors come back classified as
/// ``ProcessingFailure``.
package struct InboundEventInterpreter: Sendable {
    let clients: PaymentProviderClients

    func interpret(_ event: ClaimedInboundEvent) async -> Result<[ApplicableEvent], ProcessingFailure> {
        guard let provider = event.provider else {
            return .failure(ProcessingFailure(retryable: false, reason: .unknownProvider,
                                              message: "inbound event names an unknown provider"))
        }
        if let lookup = ProviderLookupRequest(body: event.body) {
            return await lookUp(lookup, provider: provider, account: event.account)
        }
        do {
            switch provider {
            case .adyen:
                return .success(try AdyenEventDecoder.decode(body: event.body).map { ApplicableEvent(event: $0, fetched: false) })
            case .mercadopago:
                let notification = try MercadoPagoNotification.decode(body: event.body)
                return await mercadoPago(notification, account: event.account)
            case .pxp:
                // One delivery may carry several events (a JSON array): each is its own event,
                // applied together with the others; one failure retries the whole delivery.
                var events: [ApplicableEvent] = []
                for notification in try PXPEventDecoder.decodeAll(body: event.body) {
                    switch await pxp(notification) {
                    case .success(let applicable): events += applicable
                    case .failure(let failure): return .failure(failure)
                    }
                }
                return .success(events)
            }
        } catch {
            return .failure(.payload(error))
        }
    }

    private func mercadoPago(_ notification: MercadoPagoNotification, account: String) async -> Result<[ApplicableEvent], ProcessingFailure> {
        let note = notification.action.map { "action=" + $0 }
        switch notification.resource {
        case .order(let id):
            guard let client = clients.client(for: .mercadopago) else { return .failure(.noClient("mercadopago")) }
            do {
                let order = try await client.fetchOrder(id: id, account: account)
                return .success([ApplicableEvent(event: .order(order), fetched: true, note: note)])
            } catch {
                return .failure(.provider(error, resource: "mercadopago order"))
            }
        case .payment(let id):
            guard let client = clients.client(for: .mercadopago) else { return .failure(.noClient("mercadopago")) }
            do {
                let payment = try await client.fetchPayment(id: id)
                return .success([ApplicableEvent(event: .payment(payment), fetched: true, note: note)])
            } catch {
                return .failure(.provider(error, resource: "mercadopago payment"))
            }
        case .other(let topic, let id):
            return .success([ApplicableEvent(
                event: .unknown(provider: .mercadopago, eventType: topic, reference: id), fetched: false, note: note)])
        }
    }

    private func pxp(_ notification: PXPNotification) async -> Result<[ApplicableEvent], ProcessingFailure> {
        guard case .payment(let provisional) = notification.event else {
            return .success([ApplicableEvent(event: notification.event, fetched: false)])
        }
        guard let client = clients.client(for: .pxp) else { return .failure(.noClient("pxp")) }
        do {
            let confirmed = try await client.fetchPayment(id: provisional.providerPaymentID)
            let note = notification.state.map { "webhook_state=" + $0 }
            return .success([ApplicableEvent(event: .payment(confirmed), fetched: true, note: note)])
        } catch {
            return .failure(.provider(error, resource: "pxp transaction"))
        }
    }
}
