/// The payment providers payhook understands. The raw value is the route segment, the
/// `provider` column value and the name used in configuration.
public enum ProviderID: String, Sendable, Hashable, CaseIterable, Codable {
    case mercadopago
    case adyen
    case pxp
}
