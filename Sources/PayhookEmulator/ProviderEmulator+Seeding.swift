import Foundation
import PayhookCore
import PayhookHTTP

extension ProviderEmulator {
    /// `PUT /_emulator/seed/{provider}/{collection}/{id}`: what ``MercadoPagoEmulator/putOrder(id:json:)``,
    /// ``MercadoPagoEmulator/putPayment(id:json:)`` and ``PXPEmulator/putTransaction(id:json:)``
    /// do in-process, for a separate `payhook-emulator` process. `payhook send-test --emulator`
    /// seeds the order, payment or transaction a thin webhook points at, so processing can
    /// fetch it. Not a provider API; the emulator only listens on a test or demo machine.
    ///
    /// | path                                   | serves                                   |
    /// |----------------------------------------|------------------------------------------|
    /// | `mercadopago/orders/{id}`              | `GET /mercadopago/v1/orders/{id}`        |
    /// | `mercadopago/payments/{id}`            | `GET /mercadopago/v1/payments/{id}`      |
    /// | `pxp/transactions/{systemTransactionId}` | the PXP lookups by either id           |
    ///
    /// The body, a JSON object, is served byte for byte (replacing an earlier one); the answer
    /// is 201 `{"seeded":"<provider>/<collection>/<id>"}`, 400 for a body that is not a JSON
    /// object, 404 for another collection, 405 for a method other than `PUT`.
    public static let seedPathPrefix = "/_emulator/seed/"

    /// Handles a seeding request; `nil` when `request` is not one.
    static func seed(_ request: HTTPRequest, mercadoPago: MercadoPagoEmulator, pxp: PXPEmulator) -> EmulatorReply? {
        guard request.path.hasPrefix(seedPathPrefix) else { return nil }
        let segments = request.path.dropFirst(seedPathPrefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count == 3, !segments.contains(where: \.isEmpty) else {
            return .json(404, .object([.init("error", .string("seed paths are {provider}/{collection}/{id}"))]))
        }
        let (provider, collection, id) = (String(segments[0]), String(segments[1]), String(segments[2]))
        let put: ([UInt8]) -> Void
        switch (provider, collection) {
        case ("mercadopago", "orders"): put = { mercadoPago.putOrder(id: id, json: $0) }
        case ("mercadopago", "payments"): put = { mercadoPago.putPayment(id: id, json: $0) }
        case ("pxp", "transactions"): put = { pxp.putTransaction(id: id, json: $0) }
        default:
            return .json(404, .object([.init("error", .string("nothing to seed at \(provider)/\(collection); see ProviderEmulator.seedPathPrefix"))]))
        }
        guard request.method == "PUT" else {
            return .json(405, .object([.init("error", .string("seeding takes PUT"))]))
        }
        guard JSONRequestBody(request.body) != nil else {
            return .json(400, .object([.init("error", .string("the body must be a JSON object"))]))
        }
        put(request.body)
        return .json(201, .object([.init("seeded", .string("\(provider)/\(collection)/\(id)"))]))
    }
}
