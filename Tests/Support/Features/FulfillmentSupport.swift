import Foundation
package import PayhookCore
import PayhookCrypto
import PayhookHTTP
package import PayhookPostgres
import PayhookProviders
package import PayhookQueue
import Synchronization
import Testing
import PayhookTestSupport
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable package import PayhookProcessing
@testable import PayhookSubscriptions
@testable import PayhookCallbacks

/// A merchant's callback endpoint: records every request and answers the scripted statuses
/// (then 200).
package final class MerchantEndpoint: Sendable {
    package struct Received: Sendable {
        package let headers: [(name: String, value: String)]
        package let body: [UInt8]
        package func header(_ name: String) -> String? { headers.first { $0.name == name.lowercased() }?.value }
    }

    private final class State: Sendable {
        package let value = Mutex<(received: [Received], script: [Int])>(([], []))
    }

    private let server: HTTPServer
    private let state = State()

    /// - Parameter delay: how long each answer is held (a slow merchant).
    package init(delay: Duration = .zero) throws {
        var configuration = HTTPServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.threadCount = 1
        let state = self.state
        server = try HTTPServer(configuration: configuration) { request, respond in
            let status = state.value.withLock { state in
                state.received.append(Received(headers: request.headers, body: request.body))
                return state.script.isEmpty ? 200 : state.script.removeFirst()
            }
            if delay == .zero {
                respond(.text(status, "status \(status)\n"))
            } else {
                let (seconds, attoseconds) = delay.components
                let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
                DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) {
                    respond(.text(status, "status \(status)\n"))
                }
            }
        }
        try server.start()
    }

    package var url: String { "http://127.0.0.1:\(server.boundPort)/hooks/payhook" }
    package var received: [Received] { state.value.withLock { $0.received } }
    /// The next requests are answered with these statuses, in order.
    package func answer(_ statuses: [Int]) { state.value.withLock { $0.script += statuses } }
    package func stop() { server.stop() }
}

/// A processing harness plus the job queue, a merchant endpoint and the fulfillment jobs.
package struct FulfillmentHarness: Sendable {
    package static let secret = "whsec_" + Base64.encode(Array("payhook-test-fulfillment-key-32b".utf8))

    package let processing: ProcessingHarness
    package let endpoint: MerchantEndpoint
    package let settings: FulfillmentSettings
    package let metrics = MetricsRegistry()

    package static func make(_ label: String, settings: FulfillmentSettings = FulfillmentSettings()) async throws -> FulfillmentHarness {
        FulfillmentHarness(processing: try await ProcessingHarness.make(label), endpoint: try MerchantEndpoint(),
                           settings: settings)
    }

    /// An order registration body as the merchant's backend posts it.
    package static func registration(_ reference: String, value: Int64 = 1999, currency: String = "EUR",
                                     provider: String = "adyen", extra: String = "") -> String {
        """
        {"provider": "\(provider)", "merchant_reference": "\(reference)", "provider_order_id": null,
         "amount": {"value": \(value), "currency": "\(currency)"}, "callback_url": null\(extra)}
        """
    }

    package var pool: PostgresPool { processing.pool }
    /// Fast retries, so "fails then recovers" takes seconds.
    package func queue(pool: PostgresPool? = nil) -> JobQueue {
        JobQueue(pool: pool ?? self.pool, retryPolicy: RetryPolicy(base: .milliseconds(100), maximum: .milliseconds(400), jitter: 0))
    }

    package func processor() -> InboundEventProcessor {
        var processorSettings = ProcessorSettings()
        processorSettings.pollInterval = .milliseconds(200)
        let clock = processing.clock
        return InboundEventProcessor(
            pool: pool, conninfo: processing.database.url,
            clients: PaymentProviderClients([processing.mercadoPago, processing.pxp]),
            hooks: .fulfillment(settings, pool: pool).then(.subscriptions), settings: processorSettings,
            logger: .silent, now: { clock.now }, jitter: { 0.5 })
    }

    package func handlers(pool: PostgresPool? = nil) throws -> [AnyJobHandler] {
        let pool = pool ?? self.pool
        return [
            AnyJobHandler(FulfillOrderHandler(pool: pool, queue: queue(pool: pool), settings: settings, metrics: metrics, logger: .silent)),
            AnyJobHandler(MerchantCallbackDelivery(
                pool: pool, http: CurlHTTPClient(maxConcurrent: 8), signer: try StandardWebhookSigner(secret: Self.secret),
                defaultURL: endpoint.url, timeout: .seconds(5), metrics: metrics, logger: .silent,
                destinations: settings.callbackDestinations)),
        ]
    }

    package func startWorker(name: String, pool: PostgresPool? = nil, lease: Duration = .seconds(30),
                     rescueInterval: Duration? = nil) throws -> (JobWorker, Task<Void, Never>) {
        let worker = try JobWorker(
            queue: queue(pool: pool), handlers: try handlers(pool: pool),
            configuration: .init(name: name, concurrency: 4, lease: lease, pollInterval: .milliseconds(100),
                                 listenConninfo: processing.database.url, rescueInterval: rescueInterval),
            logger: .silent)
        return (worker, Task { await worker.run() })
    }

    /// Runs one worker until order `orderID` reaches fulfillment `status` (false after 60 s),
    /// with `settle` keeps it running until the queue is quiet (to catch anything sent twice),
    /// then stops it gracefully.
    package func runWorker(until orderID: Int64, reaches status: String, name: String = "w",
                   rescueInterval: Duration? = nil, settle: Bool = false) async throws -> Bool {
        let (worker, task) = try startWorker(name: name, rescueInterval: rescueInterval)
        let reached = await eventually(timeout: .seconds(60)) {
            (try? await order(orderID).fulfillmentStatus) == status
        }
        let settled = settle ? await quietQueue() : true
        worker.shutdown(gracePeriod: .seconds(5))
        await task.value
        return reached && settled
    }

    /// Waits (bounded) until the queue is quiet (`QuietQueue`); false when it is still busy.
    package func quietQueue(timeout: Duration = .seconds(60)) async -> Bool {
        await QuietQueue.wait(pool: pool, timeout: timeout)
    }

    package func register(_ body: String) async throws -> OrderRecord {
        let service = OrderService(pool: pool, trigger: FulfillmentTrigger(queue: queue(), settings: settings))
        return try await service.register(try OrderRegistration.parse(Array(body.utf8))).order
    }

    package func order(_ id: Int64) async throws -> OrderRecord {
        try await OrderService(pool: pool, trigger: FulfillmentTrigger(queue: queue(), settings: settings)).order(id: id)
    }

    /// Adyen authorisation and capture of one payment.
    package static func adyenPaid(psp: String, reference: String, value: Int64, currency: String = "EUR") -> [String] {
        [Bodies.adyen(Bodies.adyenItem(psp: psp, code: "AUTHORISATION", value: value, currency: currency, reference: reference)),
         Bodies.adyen(Bodies.adyenItem(psp: "CAP-\(psp)", original: psp, code: "CAPTURE", value: value, currency: currency,
                                       reference: reference))]
    }

    package func deliver(_ bodies: [String], processor: InboundEventProcessor) async throws {
        for body in bodies { try await processing.insert(.adyen, body) }
        try await processing.drain(processor)
    }
}
