import Foundation
import PayhookCore
import PayhookCrypto
import PayhookHTTP
import PayhookPostgres
import PayhookProviders
import PayhookQueue
import PayhookTestSupport
import Synchronization
import Testing
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions
@testable import PayhookCallbacks

/// A merchant's callback endpoint: records every request and answers the scripted statuses
/// (then 200).
final class MerchantEndpoint: Sendable {
    struct Received: Sendable {
        let headers: [(name: String, value: String)]
        let body: [UInt8]
        func header(_ name: String) -> String? { headers.first { $0.name == name.lowercased() }?.value }
    }

    private final class State: Sendable {
        let value = Mutex<(received: [Received], script: [Int])>(([], []))
    }

    private let server: HTTPServer
    private let state = State()

    /// - Parameter delay: how long each answer is held (a slow merchant).
    init(delay: Duration = .zero) throws {
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

    var url: String { "http://127.0.0.1:\(server.boundPort)/hooks/payhook" }
    var received: [Received] { state.value.withLock { $0.received } }
    /// The next requests are answered with these statuses, in order.
    func answer(_ statuses: [Int]) { state.value.withLock { $0.script += statuses } }
    func stop() { server.stop() }
}

/// A processing harness plus the job queue, a merchant endpoint and the fulfillment jobs.
struct FulfillmentHarness: Sendable {
    static let secret = "whsec_" + Base64.encode(Array("payhook-test-fulfillment-key-32b".utf8))

    let processing: ProcessingHarness
    let endpoint: MerchantEndpoint
    let settings: FulfillmentSettings
    let metrics = MetricsRegistry()

    static func make(_ label: String, settings: FulfillmentSettings = FulfillmentSettings()) async throws -> FulfillmentHarness {
        FulfillmentHarness(processing: try await ProcessingHarness.make(label), endpoint: try MerchantEndpoint(),
                           settings: settings)
    }

    var pool: PostgresPool { processing.pool }
    /// Fast retries, so "fails then recovers" takes seconds.
    func queue(pool: PostgresPool? = nil) -> JobQueue {
        JobQueue(pool: pool ?? self.pool, retryPolicy: RetryPolicy(base: .milliseconds(100), maximum: .milliseconds(400), jitter: 0))
    }

    func processor() -> InboundEventProcessor {
        var processorSettings = ProcessorSettings()
        processorSettings.pollInterval = .milliseconds(200)
        let clock = processing.clock
        return InboundEventProcessor(
            pool: pool, conninfo: processing.database.url,
            clients: PaymentProviderClients([processing.mercadoPago, processing.pxp]),
            hooks: .fulfillment(settings, pool: pool).then(.subscriptions), settings: processorSettings,
            logger: .silent, now: { clock.now }, jitter: { 0.5 })
    }

    func handlers(pool: PostgresPool? = nil) throws -> [AnyJobHandler] {
        let pool = pool ?? self.pool
        return [
            AnyJobHandler(FulfillOrderHandler(pool: pool, queue: queue(pool: pool), settings: settings, metrics: metrics, logger: .silent)),
            AnyJobHandler(MerchantCallbackDelivery(
                pool: pool, http: CurlHTTPClient(maxConcurrent: 8), signer: try StandardWebhookSigner(secret: Self.secret),
                defaultURL: endpoint.url, timeout: .seconds(5), metrics: metrics, logger: .silent,
                destinations: settings.callbackDestinations)),
        ]
    }

    func startWorker(name: String, pool: PostgresPool? = nil, lease: Duration = .seconds(30),
                     rescueInterval: Duration? = nil) throws -> (JobWorker, Task<Void, Never>) {
        let worker = try JobWorker(
            queue: queue(pool: pool), handlers: try handlers(pool: pool),
            configuration: .init(name: name, concurrency: 4, lease: lease, pollInterval: .milliseconds(100),
                                 listenConninfo: processing.database.url, rescueInterval: rescueInterval),
            logger: .silent)
        return (worker, Task { await worker.run() })
    }

    /// Runs one worker until order `orderID` reaches fulfillment `status` (false after 60 s),
    /// lets it run `settle` longer (to catch anything sent twice), then stops it gracefully.
    func runWorker(until orderID: Int64, reaches status: String, name: String = "w",
                   rescueInterval: Duration? = nil, settle: Duration = .zero) async throws -> Bool {
        let (worker, task) = try startWorker(name: name, rescueInterval: rescueInterval)
        let reached = await eventually(timeout: .seconds(60)) {
            (try? await order(orderID).fulfillmentStatus) == status
        }
        try await Task.sleep(for: settle)
        worker.shutdown(gracePeriod: .seconds(5))
        await task.value
        return reached
    }

    func register(_ body: String) async throws -> OrderRecord {
        let service = OrderService(pool: pool, trigger: FulfillmentTrigger(queue: queue(), settings: settings))
        return try await service.register(try OrderRegistration.parse(Array(body.utf8))).order
    }

    func order(_ id: Int64) async throws -> OrderRecord {
        try await OrderService(pool: pool, trigger: FulfillmentTrigger(queue: queue(), settings: settings)).order(id: id)
    }

    /// Adyen authorisation and capture of one payment.
    static func adyenPaid(psp: String, reference: String, value: Int64, currency: String = "EUR") -> [String] {
        [Bodies.adyen(Bodies.adyenItem(psp: psp, code: "AUTHORISATION", value: value, currency: currency, reference: reference)),
         Bodies.adyen(Bodies.adyenItem(psp: "CAP-\(psp)", original: psp, code: "CAPTURE", value: value, currency: currency,
                                       reference: reference))]
    }

    func deliver(_ bodies: [String], processor: InboundEventProcessor) async throws {
        for body in bodies { try await processing.insert(.adyen, body) }
        try await processing.drain(processor)
    }
}
