import Foundation
import PayhookCore
import PayhookHTTP
import PayhookPostgres
import PayhookProviders
import PayhookQueue
import PayhookAdmin
import PayhookIngress
import PayhookOperations
import PayhookConsole
import PayhookProcessing
import PayhookSubscriptions

/// The running `payhook serve` process: listeners and background loops, owned in one place so
/// that shutdown is explicit: stop intake, drain, then close.
final class PayhookServer: Sendable {
    let configuration: Configuration
    let logger: Logger
    let metrics: MetricsRegistry
    let pool: PostgresPool
    let migrator: PostgresMigrator
    private let writer: InboundEventWriter
    private let rejections: RejectedDeliveryRecorder
    private let ingressServer: HTTPServer
    private let adminServer: HTTPServer
    /// Shared by the provider API clients (processor fetches, charges, token registration).
    private let providerHTTP: CurlHTTPClient
    /// Sends merchant callbacks; `nil` unless the `worker` role is on.
    private let callbackHTTP: CurlHTTPClient?
    /// Roles this process runs (`serve --roles`); the admin listener always runs.
    let roles: Set<ServeRole>
    /// Normalizes inbound events; `nil` unless the `processor` role is on.
    let processor: InboundEventProcessor?
    /// Runs jobs (fulfillment, merchant callbacks, recurring charges); `nil` unless the `worker`
    /// role is on.
    let worker: JobWorker?
    /// Turns due subscriptions into charge jobs; `nil` unless the `scheduler` role is on.
    let scheduler: SubscriptionScheduler?
    /// Looks for orders, payments and charges no provider reported on; `nil` unless the
    /// `scheduler` role is on and `PAYHOOK_SWEEP_INTERVAL_SECONDS` is not 0.
    let sweep: ProviderSweep?
    /// Retention and the database-backed gauges; run in every role.
    let maintenance: BackgroundMaintenance
    /// Warns when a 2xx would not survive a failover; exports the replication settings.
    let durability: DatabaseDurability
    /// The on-call console under `/console` on the admin listener.
    let console: OnCallConsole
    /// Rolls up the console's hourly delivery counts, so its pages only read.
    let consoleRollUp: ConsoleRollUp
    /// The admin credentials accepted now; `reloadAdminCredentials()` re-reads them.
    let adminCredentials: AdminCredentialStore
    /// Every operation of the admin listener and the scope it needs (its route table's);
    /// docs/admin-api.openapi.json documents exactly these.
    let adminOperations: [AdminOperation]

    init(configuration: Configuration, databaseURL: String, logger: Logger,
         roles: Set<ServeRole> = Set(ServeRole.allCases)) throws {
        self.configuration = configuration
        self.logger = logger
        self.roles = roles
        let metrics = MetricsRegistry()
        self.metrics = metrics
        // Job handlers (up to PAYHOOK_CHARGE_CONCURRENCY in flight) hold a connection only per
        // statement; a few more connections keep them from queueing behind ingress and processing.
        // Every call has a deadline, so a hung primary cannot hold one (docs/deployment.md).
        let pool = PostgresPool(conninfo: databaseURL,
                                maxConnections: configuration.databasePoolSize ?? (roles.contains(.worker) ? 16 : 8),
                                pooling: configuration.databasePooling,
                                callDeadline: configuration.databaseCallTimeout)
        self.pool = pool
        let migrator = PostgresMigrator(conninfo: databaseURL, migrations: try SchemaMigrations.all(),
                                        pooling: configuration.databasePooling)
        self.migrator = migrator
        let writer = InboundEventWriter(pool: pool, logger: logger, metrics: metrics)
        self.writer = writer
        let rejections = RejectedDeliveryRecorder(pool: pool, metrics: metrics, logger: logger)
        self.rejections = rejections
        let needsClients = !roles.isDisjoint(with: [.processor, .worker])
        let providerHTTP = Self.providerHTTPClient(configuration: configuration)
        self.providerHTTP = providerHTTP
        // Registering a saved token asks the provider first, so the admin API needs the API
        // clients even in a process without the processor or worker role.
        let apiClients = Self.providerClients(configuration: configuration, http: providerHTTP, logger: logger)
        let clients = needsClients ? apiClients : PaymentProviderClients([])
        self.processor = roles.contains(.processor)
            ? Self.makeProcessor(configuration: configuration, databaseURL: databaseURL, pool: pool, clients: clients,
                                 logger: logger, metrics: metrics)
            : nil
        let subscriptions = SubscriptionRuntime(settings: configuration.subscriptions, pool: pool, queue: JobQueue(pool: pool),
                                                clients: clients, metrics: metrics, logger: logger)
        self.scheduler = roles.contains(.scheduler) ? subscriptions.scheduler : nil
        self.sweep = roles.contains(.scheduler) && configuration.sweep.interval != nil
            ? ProviderSweep(pool: pool, settings: configuration.sweep, fulfillment: configuration.fulfillment,
                            queue: JobQueue(pool: pool), metrics: metrics, logger: logger.with(["role": "sweep"]))
            : nil
        let callbackHTTP = roles.contains(.worker) ? CurlHTTPClient(maxConcurrent: 64, name: "callback HTTP client") : nil
        self.callbackHTTP = callbackHTTP
        self.worker = try callbackHTTP.map { http in
            try Self.makeWorker(configuration: configuration, databaseURL: databaseURL, pool: pool, http: http,
                                subscriptions: subscriptions, metrics: metrics, logger: logger)
        }

        if !roles.isDisjoint(with: [.processor, .worker]), configuration.listenURL(databaseURL: databaseURL) == nil {
            logger.warning("""
                PAYHOOK_DATABASE_POOLING=transaction and no PAYHOOK_SESSION_DATABASE_URL: LISTEN cannot run \
                through a transaction-mode pooler, so the processor and the job worker poll instead of being woken
                """)
        }

        metrics.describe("payhook_db_pool_connections", type: "gauge", help: "Database pool connections by state.")
        metrics.describe("payhook_ingest_queue_depth", type: "gauge", help: "Verified deliveries waiting for the next commit.")
        metrics.addCollector {
            let stats = pool.statistics
            return [
                ("payhook_db_pool_connections", [("state", "in_use")], Double(stats.inUse)),
                ("payhook_db_pool_connections", [("state", "idle")], Double(stats.idle)),
                ("payhook_db_pool_connections", [("state", "waiting")], Double(stats.waiting)),
                ("payhook_ingest_queue_depth", [], Double(writer.queueDepth)),
            ]
        }

        self.durability = DatabaseDurability(pool: pool, metrics: metrics, logger: logger)
        self.maintenance = BackgroundMaintenance(pool: pool, policy: configuration.retention, metrics: metrics, logger: logger)
        let adminAPIs: [AdminRoute] = [
            .api(DeadLetterAdminAPI(operations: DeadLetterOperations(pool: pool))),
            .api(OrderAdminAPI(service: OrderService(
                pool: pool, trigger: FulfillmentTrigger(queue: JobQueue(pool: pool), settings: configuration.fulfillment)))),
            .api(SubscriptionAdminAPI(pool: pool)),
            .api(VaultTokenAdminAPI(pool: pool, clients: apiClients)),
        ]

        let ingress = WebhookIngress(
            verifiers: WebhookVerifiers(configuration: configuration), writer: writer, rejections: rejections,
            rejectionQuota: RejectedDeliveryQuota(settings: configuration.ingress.rejectedRecording),
            allowedAddresses: configuration.ingress.allowedAddresses,
            metrics: IngressMetrics(registry: metrics), logger: logger, now: { Date() })
        let readiness = ReadinessProbe(pool: pool, migrator: migrator)

        var ingressConfig = HTTPServerConfiguration()
        ingressConfig.name = "ingress listener"
        ingressConfig.host = configuration.listen.host
        ingressConfig.port = configuration.listen.port
        ingressConfig.maxBodyBytes = configuration.maxBodyBytes
        ingressConfig.tlsCertificatePath = configuration.tlsCertificatePath
        ingressConfig.tlsKeyPath = configuration.tlsKeyPath
        // One epoll-driven thread rather than two poll(2) threads: at paced rates over many
        // keep-alive connections each poll(2) wake-up walked every connection of its thread
        // (docs/decisions/0009-ingress-event-loop-and-writer-threads.md).
        ingressConfig.threadCount = 1
        // One client address gets a share of the connections, and a request must arrive whole
        // within its deadline however it trickles (docs/decisions/0004-ingress-limits.md).
        ingressConfig.connectionLimit = configuration.ingress.maxConnections
        ingressConfig.perIPConnectionLimit = configuration.ingress.maxConnectionsPerIP
        ingressConfig.requestTimeoutSeconds = configuration.ingress.requestTimeoutSeconds
        ingressConfig.connectionTimeoutSeconds = configuration.ingress.idleTimeoutSeconds
        ingressConfig.maxBufferedBodyBytes = configuration.ingress.maxBodyMemoryBytes
        // Webhook headers are small; libmicrohttpd zeroes each connection's memory pool per
        // request, so a smaller pool is measurably cheaper (bench/ingest).
        ingressConfig.maxHeaderBytes = 8 << 10
        self.ingressServer = try HTTPServer(configuration: ingressConfig) { request, respond in
            if ingress.handle(request, respond: respond) { return }
            Task { respond(await Self.health(request, readiness: readiness)) }
        }
        let ingressServer = self.ingressServer
        metrics.describe("payhook_ingress_requests_cut_off_total", type: "counter",
                         help: "Ingress requests whose headers and body did not arrive within PAYHOOK_REQUEST_TIMEOUT_SECONDS.")
        metrics.describe("payhook_ingress_requests_over_body_budget_total", type: "counter",
                         help: "Ingress requests refused (503) or closed because PAYHOOK_MAX_BODY_MEMORY_BYTES was reached.")
        metrics.describe("payhook_ingress_body_bytes", type: "gauge", help: "Request body bytes held in memory now.")
        metrics.addCollector {
            [
                ("payhook_ingress_requests_cut_off_total", [], Double(ingressServer.requestsCutOff)),
                ("payhook_ingress_requests_over_body_budget_total", [], Double(ingressServer.requestsOverBodyBudget)),
                ("payhook_ingress_body_bytes", [], Double(ingressServer.bufferedBodyBytes)),
            ]
        }

        var adminConfig = HTTPServerConfiguration()
        adminConfig.name = "admin listener"
        adminConfig.host = configuration.adminListen.host
        adminConfig.port = configuration.adminListen.port
        adminConfig.maxBodyBytes = 1 << 20
        let credentials = AdminCredentialStore(configuration: configuration, logger: logger, metrics: metrics)
        self.adminCredentials = credentials
        let console = OnCallConsole(configuration: configuration, pool: pool, credentials: credentials)
        self.console = console
        self.consoleRollUp = ConsoleRollUp(pool: pool, logger: logger.with(["role": "console"]))
        // The admin listener's route table, matched in this order; each entry says who may call it.
        let adminRouter = AdminRouter([
            .publicProbe("/healthz", operations: [AdminOperation("GET", "/healthz", nil)]) { await Self.health($0, readiness: readiness) },
            .publicProbe("/readyz", operations: [AdminOperation("GET", "/readyz", nil)]) { await Self.health($0, readiness: readiness) },
            // The console signs browsers in with a session of its own, before the bearer check.
            console.route,
        ] + adminAPIs + [
            .bearer("/metrics", operations: [AdminOperation("GET", "/metrics", .metrics)]) { request, _, _ in
                guard request.method == "GET" else { return .text(404, "not found\n") }
                return HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4")],
                                    body: Array(metrics.renderPrometheus().utf8))
            },
        ], gate: AdminGate(store: credentials, metrics: metrics, logger: logger))
        self.adminOperations = adminRouter.operations
        self.adminServer = try HTTPServer(configuration: adminConfig) { request, respond in
            adminRouter.dispatch(request, respond: respond)
        }
    }

    /// The health checks, on both listeners: `/healthz` (the process answers) and `/readyz`
    /// (the database answers and the schema is current); any other method or path is 404.
    static func health(_ request: HTTPRequest, readiness: ReadinessProbe) async -> HTTPResponse {
        switch (request.method, request.path) {
        case ("GET", "/healthz"):
            return .text(200, "ok\n")
        case ("GET", "/readyz"):
            let status = await readiness.check()
            return .text(status.ready ? 200 : 503, status.detail + "\n")
        default:
            return .text(404, "not found\n")
        }
    }

    /// Starts listening and runs until `shutdown` resolves; then drains and returns.
    /// - Throws: ``ServiceEndedEarly`` when a part of the process stopped on its own (the
    ///   process then exits non-zero, so its supervisor restarts it).
    func run(until shutdown: @escaping @Sendable () async -> Void) async throws {
        let ingressOn = roles.contains(.ingress)
        if ingressOn { try ingressServer.start() }
        try adminServer.start()
        logger.info("payhook serving", [
            "listen": .string(ingressOn ? "\(configuration.listen.host):\(ingressServer.boundPort)" : "off"),
            "roles": .string(roles.sorted().map(\.rawValue).joined(separator: ",")),
            "admin_listen": .string("\(configuration.adminListen.host):\(adminServer.boundPort)"),
            "providers": .string(configuration.webhookSecrets.rings.keys.map(\.rawValue).sorted().joined(separator: ",")),
        ])
        if adminCredentials.credentials.all.isEmpty {
            logger.warning("neither PAYHOOK_ADMIN_TOKEN nor PAYHOOK_ADMIN_CREDENTIALS_FILE gives a credential: the admin API and /metrics refuse every request")
        }
        let ending = await ServiceGroup(stages: shutdownStages, logger: logger).run(until: shutdown) {
            logger.info("shutting down: no new connections; draining queued deliveries")
        }
        logger.info("payhook stopped")
        if case .serviceEnded(let name) = ending { throw ServiceEndedEarly(service: name) }
    }

    /// The parts of this process, in graceful-shutdown order. First every part stops its intake
    /// (the listeners stop accepting, the console's bulk replay is cancelled). Then:
    /// 1. what does the work, the ingress writers first (an acknowledged delivery is stored
    ///    before anything else stops), then what consumes the inbox and the jobs, maintenance last;
    /// 2. once all of those have returned, what they used: the listeners' open connections
    ///    (answered by then) and the HTTP clients;
    /// 3. last, the database pool.
    var shutdownStages: [[any Service]] {
        var drain: [any Service] = [writer, rejections]
        if let processor { drain.append(processor) }
        if let scheduler { drain.append(scheduler) }
        if let sweep { drain.append(sweep) }
        if let worker { drain.append(worker) }
        drain += [maintenance, consoleRollUp, durability, console.bulkReplay]
        var connections: [any Service] = roles.contains(.ingress) ? [ingressServer] : []
        connections.append(adminServer)
        connections.append(providerHTTP)
        if let callbackHTTP { connections.append(callbackHTTP) }
        return [drain, connections, [pool]]
    }

    /// Every part of this process, in the order `shutdownStages` stops them.
    var services: [any Service] { shutdownStages.flatMap { $0 } }

    /// Re-reads `PAYHOOK_ADMIN_CREDENTIALS_FILE` (on SIGHUP); requests under way finish with the
    /// credential they started with. Returns whether the new file is in force.
    @discardableResult
    func reloadAdminCredentials() -> Bool {
        adminCredentials.reload()
    }

    var ingressPort: Int { ingressServer.boundPort }
    var adminPort: Int { adminServer.boundPort }
}

/// A long-running part of `payhook serve` returned before shutdown; the process stopped the
/// rest and exits, rather than keep acknowledging webhooks nobody processes.
struct ServiceEndedEarly: Error, CustomStringConvertible {
    let service: String
    var description: String { "the \(service) stopped on its own; payhook shut down" }
}
