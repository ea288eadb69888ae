import PayhookCore
import PayhookProviders

extension InboundEventInterpreter {
    /// A provider sweep's lookup (``ProviderLookupRequest``): the provider's current state of
    /// the order or payment, applied as fetched (authoritative) state, with `sweep` in its
    /// history so an operator can tell it from a webhook's.
    func lookUp(_ request: ProviderLookupRequest, provider: ProviderID, account: String) async -> Result<[ApplicableEvent], ProcessingFailure> {
        guard let client = clients.client(for: provider) else { return .failure(.noClient(provider.rawValue)) }
        let note = "sweep_lookup=" + request.resource.rawValue
        do {
            switch request.resource {
            case .order:
                let order = try await client.fetchOrder(id: request.id, account: account)
                return .success([ApplicableEvent(event: .order(order), fetched: true, note: note)])
            case .payment:
                let payment = try await client.fetchPayment(id: request.id)
                return .success([ApplicableEvent(event: .payment(payment), fetched: true, note: note)])
            }
        } catch {
            return .failure(.provider(error, resource: "\(provider.rawValue) \(request.resource.rawValue) (sweep)"))
        }
    }
}
