import Foundation
import PayhookFeatureTestSupport
import PayhookTestSupport
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions
import Testing

/// Mercado Pago signs no body, so any body travels under a valid signature. Whatever it
/// contains, a verified delivery is stored (processing decides) and never drags down the
/// genuine deliveries group-committed with it.
@Suite("Ingress with hostile but verified bodies", .timeLimit(.minutes(5)))
struct IngressPoisonTests {
    @Test("a verified Mercado Pago body with U+0000 in type is stored, and the deliveries committed with it still get 200")
    func nulCharacterInUnsignedBody() async throws {
        try await IngressHarness.with("poison_nul") { (ingress) async throws in
            // Valid JSON: "\u0000" is a legal escape. It ends up in the dedup key (a text column).
            let body = Array(#"{"id":7,"type":"pay\u0000ment","action":"payment.updated","data":{"id":"7"}}"#.utf8)
            let poison = Sign.mercadoPago(dataID: "7", body: body)
            let genuine = (0..<10).map { _ in Sign.pxp() }
            async let poisonResponse = ingress.send(poison)
            async let genuineStatuses = withTaskGroup(of: Int.self) { group in
                for delivery in genuine { group.addTask { await ingress.send(delivery)?.status ?? -1 } }
                return await group.reduce(into: [Int]()) { $0.append($1) }
            }
            let (answer, statuses) = await (poisonResponse, genuineStatuses)

            #expect(statuses == Array(repeating: 200, count: 10), "genuine deliveries batched with the poison one were refused")
            #expect(answer?.status == 200, "verified delivery refused: \(String(describing: answer))")
            #expect(try await ingress.database.inboundCount(body: body) == 1)
            // A retry of the same delivery must not stay refused forever either.
            #expect(await ingress.send(poison)?.status == 200)
        }
    }
}
