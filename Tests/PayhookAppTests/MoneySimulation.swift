import Foundation
import PayhookCore
import PayhookCrypto
import PayhookEmulator
import PayhookHTTP
import PayhookPostgres
import PayhookProviders
import PayhookQueue
import PayhookFeatureTestSupport
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

/// A seeded, deterministic run of payhook's money paths against the provider emulator and a real
/// PostgreSQL: the real processor, charge, fulfillment and callback handlers, scheduler, rescuer
/// and dead-letter operations, driven one step at a time by a random schedule of what happens in
/// production (webhooks late, twice and out of order; provider timeouts after executing, 5xx
/// and declines; keys the providers forget after their window; workers that crash mid-job; operators replaying anything, twice; pauses,
/// cancels, disabled tokens; refunds, chargebacks and failed captures after fulfillment; operators
/// acting while a charge is in flight; a database backup restored mid-run; webhooks never
/// delivered, for the provider sweep to find). Then it checks, from the emulator's ledger, the
/// merchant endpoint and the database, the invariants money depends on.
///
/// Every step runs to completion before the next, so a seed replays exactly the same schedule.
/// (What the machine adds, a provider call that times out because the host stalled, only adds
/// unknown outcomes, which the invariants must survive too.)
struct MoneySimulation {
    /// SplitMix64: small, fast, and the same sequence for a seed on every platform.
    struct Random {
        private var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func int(_ range: ClosedRange<Int>) -> Int {
            range.lowerBound + Int(next() % UInt64(range.count))
        }
        mutating func chance(_ percent: Int) -> Bool { int(0...99) < percent }
        mutating func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[int(0...(items.count - 1))] }
    }

    /// What one run found.
    struct Report: Sendable {
        var seed: UInt64
        var steps: [String] = []
        var checks = 0
        var violations: [String] = []
        /// What the run exercised, counted at the end (so a schedule that tested nothing shows).
        var exercised: [String: Int] = [:]
        var passed: Bool { violations.isEmpty }
    }

    let seed: UInt64
    let database: TestDatabase
    let pool: PostgresPool
    let steps: Int

    // MARK: The world

    /// Everything one run drives; made fresh per run (emulator, clock, endpoint), on a schema
    /// emptied before the run.
    private struct World {
        let clock: TestClock
        let emulator: ProviderEmulator
        let clients: PaymentProviderClients
        let queue: JobQueue
        let endpoint: MerchantEndpoint
        let processor: InboundEventProcessor
        let scheduler: SubscriptionScheduler
        let handlers: [String: AnyJobHandler]
        let operations: SubscriptionOperations
        let letters: DeadLetterOperations
        let charges: ChargeOperations
        let orders: OrderService
        /// What an operator does while the provider's answer to a charge is in flight.
        let inFlight: InFlightAction
    }

    /// An operator action armed to land in a charge's in-flight window: after the provider
    /// answered and before the charge handler writes the answer (the handler's
    /// `afterProviderCall`). Taken by the first charge that gets there.
    final class InFlightAction: Sendable {
        enum Action: String, Sendable { case pause, pauseThenResume = "pause then resume", cancel }
        private let armed = Mutex<Action?>(nil)
        private let landed = Mutex<Int>(0)
        func arm(_ action: Action) { armed.withLock { $0 = action } }
        func disarm() { armed.withLock { $0 = nil } }
        func take() -> Action? { armed.withLock { value in defer { value = nil }; return value } }
        func recordLanded() { landed.withLock { $0 += 1 } }
        var landedCount: Int { landed.withLock { $0 } }
    }

    /// A webhook the provider will deliver, possibly more than once.
    private struct Delivery {
        let provider: ProviderID
        let body: String
        var account = ""
    }

    /// A documented lifecycle drawn from the provider corpus (`Fixtures/providers`): its
    /// webhooks arrive late, twice and out of order among everything else.
    private struct CorpusLifecycle {
        let file: String
        let testCase: CorpusCase
        let orderID: Int64?
    }

    /// An order the merchant registered, and what its payment really is.
    private struct SimulatedOrder {
        let id: Int64
        let reference: String
        let psp: String
        let expected: Int64
        let paid: Int64
    }

    /// What a run with a database restore remembers across it.
    ///
    /// A restore rolls the database back to the backup while the providers and the merchant
    /// keep what they saw. What payhook guarantees then, and the invariants check:
    /// - no idempotency key it sent names two different charges, and no callback `webhook-id`
    ///   names two different messages, across the whole run (invariants 10 and 11, in every run);
    /// - every charge the restored database knows it sent keeps invariants 1 and 2: a key
    ///   resent after the restore gets the provider's stored answer, never a second charge;
    /// - a charge the provider executed between the backup and the restore is a lost answer:
    ///   the restored database may not know it was ever sent, its cycle may be charged again
    ///   under a new key, and nothing in payhook can tell (only the provider's records can).
    ///   Those executions, and only in runs with a restore, are left out of invariants 1 and 2
    ///   and counted instead ("restore: charges executed and forgotten").
    /// - The webhooks payhook acknowledged between the backup and the restore are lost with the
    ///   database too; the run sends them again after the restore, as an operator asks the
    ///   providers to resend what they sent since the backup, so invariants 5 to 9 keep their
    ///   meaning. (Left unsent, the sweep could recover some from Mercado Pago and PXP, and
    ///   nothing could recover Adyen's: its payments have no lookup.)
    private struct RestoreRecord {
        /// Each provider's ledger length when the backup was taken and when it was restored.
        var executedAtBackup: [ProviderID: Int] = [:]
        var executedAtRestore: [ProviderID: Int] = [:]
        /// Every idempotency key a database state of the run held (just before the restore,
        /// and at the end), with the charges it named and their merchant references.
        var chargesOfKey: [String: Set<String>] = [:]
        var referencesOfKey: [String: Set<String>] = [:]
        var amountOfKey: [String: Set<Int64>] = [:]

        var restored: Bool { !executedAtRestore.isEmpty }

        /// Whether the provider's `index`th execution happened between the backup and the restore.
        func forgotten(_ provider: ProviderID, index: Int) -> Bool {
            guard let from = executedAtBackup[provider], let to = executedAtRestore[provider] else { return false }
            return index >= from && index < to
        }

        mutating func recordCharges(_ pool: PostgresPool) async throws {
            for row in try await pool.query(
                """
                SELECT c.idempotency_key, c.subscription_id, s.reference, c.cycle, c.attempt, c.amount_minor, c.currency,
                       c.merchant_reference
                FROM charges c JOIN subscriptions s ON s.id = c.subscription_id
                """).rows {
                let key: String = try row.decode("idempotency_key")
                let subscription: Int64 = try row.decode("subscription_id"), reference: String = try row.decode("reference")
                let cycle: Int = try row.decode("cycle"), attempt: Int = try row.decode("attempt")
                let amount: Int64 = try row.decode("amount_minor"), currency: String = try row.decode("currency")
                chargesOfKey[key, default: []].insert("subscription \(subscription) (\(reference)) cycle \(cycle) attempt \(attempt) \(amount) \(currency)")
                amountOfKey[key, default: []].insert(amount)
                if let reference = try row.decode("merchant_reference", as: String?.self) { referencesOfKey[key, default: []].insert(reference) }
            }
        }
    }

    /// Minor units of an amount as a provider's request carried it: minor units for Adyen
    /// ("1001"), a decimal for Mercado Pago and PXP ("10.01", and "11" for 11.00); two
    /// decimals, as every simulated charge is in euros.
    static func minorUnits(_ amount: String, _ provider: ProviderID) -> Int64? {
        if provider == .adyen { return Int64(amount) }
        let parts = amount.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count <= 2, let whole = Int64(parts[0]) else { return nil }
        guard parts.count == 2 else { return whole * 100 }
        let fraction = String(parts[1]).padding(toLength: 2, withPad: "0", startingAt: 0)
        guard fraction.count == 2, let cents = Int64(fraction) else { return nil }
        return whole * 100 + cents
    }

    private static func ledgerCounts(_ world: World) -> [ProviderID: Int] {
        Dictionary(uniqueKeysWithValues: ProviderID.allCases.map { ($0, world.emulator.executed($0).count) })
    }

    /// Rolls the run's schema back to the backup, as an operator restoring it would: every row
    /// written since is gone and the id sequences are where they were. Rows only (the schema
    /// itself is unchanged), so the pool's sessions and the handlers keep working.
    private func restoreBackup(_ dumpPath: String) async throws {
        let tables = try await pool.query("SELECT tablename FROM pg_tables WHERE schemaname = $1", [.text(database.schema)])
            .map { try $0.decode("tablename", as: String.self) }
        try await pool.query("TRUNCATE \(tables.map { "\"\($0)\"" }.joined(separator: ", ")) RESTART IDENTITY CASCADE")
        try await Self.runPostgresTool(["pg_restore", "--data-only", "--disable-triggers", "--exit-on-error",
                                        "--dbname=\(try TestDatabase.baseURL())", dumpPath])
    }

    /// Runs one of PostgreSQL's client programs from `PG_BIN` (ops/lib.sh's default).
    private static func runPostgresTool(_ arguments: [String]) async throws {
        let bin = ProcessInfo.processInfo.environment["PG_BIN"] ?? "/usr/lib/postgresql/15/bin"
        let result = try await Subprocess.capture(["\(bin)/\(arguments[0])"] + arguments.dropFirst(),
                                                  environment: ProcessInfo.processInfo.environment)
        try #require(result.termination == .exited(0), "\(arguments[0]): \(result.standardError)")
    }

    static let secret = "whsec_" + Base64.encode(Array("payhook-simulation-callback-key32".utf8))

    /// Empties every table a run writes (not the migrations or the installation namespace).
    /// `sweep_checks` too: its rows name payments and charges by id, and the ids restart.
    static func reset(_ pool: PostgresPool) async throws {
        try await pool.query("""
            TRUNCATE inbound_events, rejected_deliveries, payment_events, payment_adjustments, payments, orders,
                     vault_tokens, subscriptions, charges, jobs, dead_letters, audit_log, merchant_callbacks,
                     sweep_checks
            RESTART IDENTITY CASCADE
            """)
    }

    private func makeWorld() throws -> World {
        let clock = TestClock(SubscriptionHarness.epoch)
        let emulator = try ProviderEmulator()
        try emulator.start()
        // A short deadline: an emulated "timeout after executing" costs this much real time.
        let http = CurlHTTPClient(maxConcurrent: 16)
        let clients = emulator.clients(http: http, timeout: .milliseconds(400))
        let queue = JobQueue(pool: pool, retryPolicy: RetryPolicy(base: .milliseconds(100), maximum: .seconds(1), jitter: 0),
                             unitRandom: { 1 })
        let endpoint = try MerchantEndpoint()
        var settings = SubscriptionSettings()
        settings.chargeMaxAttempts = 6
        settings.maxPendingChecks = 4
        let fulfillment = FulfillmentSettings()
        var processorSettings = ProcessorSettings()
        processorSettings.maxAttempts = 3
        let now: @Sendable () -> Date = { clock.now }
        let processor = InboundEventProcessor(pool: pool, conninfo: database.url, clients: clients, hooks: .fulfillment(fulfillment, pool: pool).then(.subscriptions),
                                              settings: processorSettings, logger: .silent, now: now, jitter: { 0.5 })
        let operations = SubscriptionOperations(pool: pool, now: now)
        let inFlight = InFlightAction()
        let chargesPool = pool
        let charge = ChargeRecurringHandler(pool: pool, queue: queue, clients: clients, settings: settings, metrics: nil,
                                            logger: .silent, now: now, afterProviderCall: { key in
            guard let action = inFlight.take(),
                  let subscription = try await chargesPool.query("SELECT subscription_id FROM charges WHERE idempotency_key = $1", [.text(key)])
                    .rows.first?.decode("subscription_id", as: Int64.self) else { return }
            try await Self.perform(action, on: subscription, operations)
            inFlight.recordLanded()
        })
        let fulfill = FulfillOrderHandler(pool: pool, queue: queue, settings: fulfillment, metrics: MetricsRegistry(), logger: .silent)
        var callback = MerchantCallbackDelivery(
            pool: pool, http: http, signer: try StandardWebhookSigner(secret: Self.secret), defaultURL: endpoint.url,
            timeout: .seconds(5), metrics: MetricsRegistry(), logger: .silent)
        callback.now = now
        let handlers = [AnyJobHandler(charge), AnyJobHandler(fulfill), AnyJobHandler(callback)]
        return World(
            clock: clock, emulator: emulator, clients: clients, queue: queue, endpoint: endpoint, processor: processor,
            scheduler: SubscriptionScheduler(pool: pool, queue: queue, settings: settings, logger: .silent, now: now),
            handlers: Dictionary(uniqueKeysWithValues: handlers.map { ($0.kind, $0) }),
            operations: operations, letters: DeadLetterOperations(pool: pool),
            charges: ChargeOperations(pool: pool, queue: queue, settings: settings, now: now),
            orders: OrderService(pool: pool, trigger: FulfillmentTrigger(queue: queue, settings: fulfillment)),
            inFlight: inFlight)
    }

    /// An operator's pause, pause and resume, or cancel of one subscription. Refusals (already
    /// paused, canceled) are part of the schedule, not failures.
    static func perform(_ action: InFlightAction.Action, on subscription: Int64, _ operations: SubscriptionOperations) async throws {
        let sim = OperatorAction(actor: "sim")
        switch action {
        case .pause: _ = try? await operations.pause(id: subscription, by: sim)
        case .pauseThenResume:
            _ = try? await operations.pause(id: subscription, by: sim)
            _ = try? await operations.resume(id: subscription, by: sim)
        case .cancel: _ = try? await operations.cancel(id: subscription, by: sim)
        }
    }

    // MARK: Running

    func run() async throws -> Report {
        var random = Random(seed: seed)
        var report = Report(seed: seed)
        try await Self.reset(pool)
        let world = try makeWorld()
        defer {
            world.emulator.stop()
            world.endpoint.stop()
        }
        var pending: [Delivery] = []
        var delivered = 0
        var subscriptions: [(id: Int64, provider: ProviderID, token: String)] = []
        var orders: [SimulatedOrder] = []

        // Cast: a few subscriptions on each provider, a few registered orders (one of them
        // underpaid, which must never be fulfilled).
        for index in 0..<random.int(2...4) {
            let provider: ProviderID = [.adyen, .mercadopago, .pxp][index % 3]
            let token = "tok-\(seed)-\(index)"
            let tokenID = try #require(try await pool.query("""
                INSERT INTO vault_tokens (provider, token, shopper_reference, customer_id, brand, last4, status)
                VALUES ($1, $2, 'shopper-1', 'customer-1', 'visa', '1111', 'active') RETURNING id
                """, [.text(provider.rawValue), .text(token)]).rows.first?.decode("id", as: Int64.self))
            let draft = NewSubscription(
                token: .id(tokenID), amount: try Money(minorUnits: 1000 + Int64(index), currency: "EUR"),
                interval: try #require(SubscriptionInterval(every: 1, unit: .day)), startAt: world.clock.now,
                reference: "sim-\(seed)-\(index)", maxCycles: nil, endAt: nil, actor: nil)
            let id = try await world.operations.create(draft, by: OperatorAction(actor: "sim")).id
            subscriptions.append((id, provider, token))
        }
        for index in 0..<random.int(2...4) {
            let reference = "order-\(seed)-\(index)"
            let paid: Int64 = 2500
            let expected = index == 0 && random.chance(50) ? 2600 : paid
            let registration = try OrderRegistration.parse(Array("""
                {"provider": "adyen", "merchant_reference": "\(reference)", "amount": {"value": \(expected), "currency": "EUR"}}
                """.utf8))
            let order = try await world.orders.register(registration).order
            let psp = "PSP-\(seed)-\(index)"
            orders.append(SimulatedOrder(id: order.id, reference: reference, psp: psp, expected: expected, paid: paid))
            for code in ["AUTHORISATION", "CAPTURE"] {
                pending.append(Delivery(provider: .adyen, body: Bodies.adyen(Bodies.adyenItem(
                    psp: code == "CAPTURE" ? "CAP-\(psp)" : psp, original: code == "CAPTURE" ? psp : nil, code: code,
                    value: paid, reference: reference))))
            }
        }

        // Corpus lifecycles draw from a stream of their own, so the schedule above stays what
        // each fixed seed has always replayed.
        var corpusRandom = Random(seed: seed ^ 0x5EED_C0A9_05C0_A905)
        var corpusPending: [Delivery] = []
        let lifecycles = try await drawCorpusLifecycles(world, random: &corpusRandom, into: &corpusPending)
        report.exercised["corpus lifecycles"] = lifecycles.count

        // Money edges, from a stream of their own too: Adyen orders captured in part (sometimes
        // completed by a second capture) and orders paid twice (a duplicate checkout). Checked
        // by invariants 5b and 5c.
        var edgeRandom = Random(seed: seed ^ 0xED6E_5EED_0000_0001)
        var edgePending: [Delivery] = []
        for index in 0..<edgeRandom.int(1...3) {
            let reference = "edge-\(seed)-\(index)", psp = "EDGE-\(seed)-\(index)"
            _ = try await world.orders.register(try OrderRegistration.parse(Array("""
                {"provider": "adyen", "merchant_reference": "\(reference)", "amount": {"value": 3000, "currency": "EUR"}}
                """.utf8)))
            func item(_ psp: String, _ code: String, _ value: Int64, original: String? = nil) -> Delivery {
                Delivery(provider: .adyen, body: Bodies.adyen(Bodies.adyenItem(psp: psp, original: original, code: code, value: value,
                                                                               reference: reference)))
            }
            if edgeRandom.chance(50) {
                edgePending += [item(psp, "AUTHORISATION", 3000), item("CAP1-\(psp)", "CAPTURE", 1200, original: psp)]
                if edgeRandom.chance(50) { edgePending.append(item("CAP2-\(psp)", "CAPTURE", 1800, original: psp)) }
                report.exercised["partial captures", default: 0] += 1
            } else {
                for attempt in ["A", "B"] {
                    edgePending += [item("\(psp)-\(attempt)", "AUTHORISATION", 3000),
                                    item("CAP-\(psp)-\(attempt)", "CAPTURE", 3000, original: "\(psp)-\(attempt)")]
                }
                report.exercised["second payments", default: 0] += 1
            }
        }

        // Webhooks the providers never deliver, from a stream of their own: the provider sweep at
        // the end must find each case (invariant 12).
        var lostRandom = Random(seed: seed ^ 0x1057_0EB0_5EED_0004)
        var lostWebhooks: [LostWebhook] = []
        for index in 0..<lostRandom.int(1...3) {
            lostWebhooks.append(try await loseWebhook(world, provider: lostRandom.pick(ProviderID.allCases) ?? .adyen, index: index))
        }
        for lost in lostWebhooks { report.exercised["lost webhooks (\(lost.provider.rawValue))", default: 0] += 1 }

        // Operators acting while a charge is in flight draw from a stream of their own too.
        var inFlightRandom = Random(seed: seed ^ 0x1F11_6A7E_5EED_0002)

        // A database restore in the middle of a run, in about one run in six (its own stream):
        // a backup is taken at one step and restored at a later one, while the provider
        // emulator and the merchant endpoint, the outside world, keep everything they saw.
        var restoreRandom = Random(seed: seed ^ 0x2E57_02ED_5EED_0003)
        var restorePlan: (backup: Int, restore: Int)?
        if restoreRandom.chance(17) {
            let backup = restoreRandom.int(5...(steps / 2))
            restorePlan = (backup, backup + restoreRandom.int(5...(steps / 2 - 2)))
        }
        let restoreProvider = restoreRandom.pick(ProviderID.allCases) ?? .adyen
        var restore = RestoreRecord()
        let dumpPath = FileManager.default.temporaryDirectory.appendingPathComponent("payhook-sim-\(database.schema)-\(seed).dump").path
        defer { try? FileManager.default.removeItem(atPath: dumpPath) }
        // Deliveries acknowledged since the backup: the restore loses them with everything else
        // written since, and they are sent again after it (see `RestoreRecord`).
        var acknowledgedSinceBackup: [Delivery]?
        var sentAgain: [Delivery] = []

        for step in 0..<steps {
            if let plan = restorePlan, step == plan.backup {
                try await Self.runPostgresTool(["pg_dump", "--format=custom", "--data-only", "--schema=\(database.schema)",
                                                "--file=\(dumpPath)", "--dbname=\(try TestDatabase.baseURL())"])
                restore.executedAtBackup = Self.ledgerCounts(world)
                acknowledgedSinceBackup = []
                report.steps.append("backup taken")
                // A customer subscribes after the backup and is charged: the restore forgets
                // them, and the next subscription gets their id back (see below).
                let late = try await subscribeLate(world, provider: restoreProvider, name: "late-before-restore", amount: 1_100)
                report.steps.append("subscription \(late) created and charged after the backup")
            }
            if let plan = restorePlan, step == plan.restore {
                try await restore.recordCharges(pool)
                restore.executedAtRestore = Self.ledgerCounts(world)
                try await restoreBackup(dumpPath)
                sentAgain += acknowledgedSinceBackup ?? []
                acknowledgedSinceBackup = nil
                report.exercised["database restores", default: 0] += 1
                report.steps.append("backup restored; \(sentAgain.count) deliveries acknowledged since will be sent again")
                // A new customer after the restore: the id sequences rolled back, so their
                // subscription, cycles and callbacks repeat the forgotten customer's ids, and
                // only the restore-safe part of keys and webhook-ids tells them apart
                // (invariants 10 and 11).
                let late = try await subscribeLate(world, provider: restoreProvider, name: "late-after-restore", amount: 1_200)
                subscriptions.append((late, restoreProvider, "tok-\(seed)-late-after-restore"))
                report.steps.append("subscription \(late) created and charged after the restore")
            }
            if !edgePending.isEmpty, edgeRandom.chance(25) {
                let delivery = edgePending.remove(at: edgeRandom.int(0...(edgePending.count - 1)))
                try await pool.query("INSERT INTO inbound_events (provider, dedup_key, body, next_attempt_at) VALUES ($1, $2, $3, $4)",
                                     [.text(delivery.provider.rawValue), .text("sim-edge-\(delivered)"),
                                      .bytea(Array(delivery.body.utf8)), .timestamptz(world.clock.now)])
                acknowledgedSinceBackup?.append(delivery)
                delivered += 1
                report.steps.append("deliver money edge")
                _ = try await world.processor.processBatch()
            }
            if !corpusPending.isEmpty, corpusRandom.chance(30) {
                let index = corpusRandom.int(0...(corpusPending.count - 1))
                let delivery = corpusRandom.chance(25) ? corpusPending[index] : corpusPending.remove(at: index)
                try await insertCorpusDelivery(delivery, number: delivered, world)
                acknowledgedSinceBackup?.append(delivery)
                delivered += 1
                report.steps.append("deliver corpus \(delivery.provider.rawValue)")
                _ = try await world.processor.processBatch()
            }
            if inFlightRandom.chance(8) {
                try await chargeWithActionInFlight(world, subscriptions: subscriptions, random: &inFlightRandom, report: &report)
            }
            let roll = random.int(0...99)
            switch roll {
            case 0..<22:
                // A webhook arrives: any pending one (reordering), sometimes kept for later (a duplicate).
                if pending.isEmpty { break }
                let index = random.int(0...(pending.count - 1))
                let delivery = random.chance(25) ? pending[index] : pending.remove(at: index)
                try await pool.query("INSERT INTO inbound_events (provider, dedup_key, body, next_attempt_at) VALUES ($1, $2, $3, $4)",
                                     [.text(delivery.provider.rawValue), .text("sim-\(delivery.provider.rawValue)-\(delivered)"),
                                      .bytea(Array(delivery.body.utf8)), .timestamptz(world.clock.now)])
                acknowledgedSinceBackup?.append(delivery)
                delivered += 1
                report.steps.append("deliver \(delivery.provider.rawValue)")
                _ = try await world.processor.processBatch()
            case 22..<40:
                let crash = random.chance(12)
                report.steps.append(crash ? "worker crashes mid-job" : "worker runs jobs")
                try await runJobs(world, limit: random.int(1...6), crashOne: crash)
            case 40..<52:
                if random.chance(15) {
                    // Eight days pass at once: longer than every provider keeps an idempotency
                    // key, so the providers forget every key sent so far (each is now older than
                    // its window by payhook's clock too). A resend would now charge again.
                    world.clock.advance(by: 8 * 86_400)
                    world.emulator.forgetIdempotencyKeys()
                    report.steps.append("time +8d, providers forget their keys")
                } else {
                    let hours = random.int(1...60)
                    world.clock.advance(by: Double(hours) * 3_600)
                    report.steps.append("time +\(hours)h")
                }
                try await world.scheduler.tick(now: world.clock.now)
            case 52..<60:
                guard let provider = random.pick(ProviderID.allCases) else { break }
                switch random.int(0...4) {
                case 0:
                    // The answer of an executed charge is lost, and the provider stays down for a
                    // while: the charge is unknown until long after.
                    world.emulator.failCharges(provider, with: .timeout(after: .milliseconds(900)))
                    world.emulator.failCharges(provider, next: random.int(0...8), with: .status(503))
                case 1: world.emulator.failCharges(provider, with: .status(503))
                case 2: world.emulator.script(provider, [.declined(code: provider.softDeclineCode)])
                case 3: world.emulator.script(provider, [.declined(code: provider.hardDeclineCode)])
                default: world.emulator.script(provider, [.error])
                }
                report.steps.append("provider \(provider.rawValue) fault armed")
            case 60..<68:
                let letters = try await world.letters.list(DeadLetterFilter())
                if random.chance(30) {
                    for letter in letters { _ = try? await world.letters.replay(id: letter.id, by: OperatorAction(actor: "sim", note: "simulated on-call replay")) }
                    report.steps.append("operator replays all (\(letters.count))")
                } else if let letter = random.pick(letters) {
                    if letter.reason == "charge_outcome_unknown", random.chance(50) {
                        try await resolveFromLedger(world, letter)
                        report.steps.append("operator resolves charge letter \(letter.id)")
                    } else {
                        _ = try? await world.letters.replay(id: letter.id, by: OperatorAction(actor: "sim", note: "simulated on-call replay"))
                        report.steps.append("operator replays letter \(letter.id)")
                    }
                }
            case 68..<75:
                guard let subscription = random.pick(subscriptions) else { break }
                let action = OperatorAction(actor: "sim")
                switch random.int(0...4) {
                case 0, 1: _ = try? await world.operations.pause(id: subscription.id, by: action)
                case 2, 3: _ = try? await world.operations.resume(id: subscription.id, by: action)
                default: _ = try? await world.operations.cancel(id: subscription.id, by: action)
                }
                report.steps.append("operator changes subscription \(subscription.id)")
            case 75..<80:
                guard let subscription = random.pick(subscriptions), subscription.provider == .adyen else { break }
                pending.append(Delivery(provider: .adyen, body: Bodies.adyenToken(
                    type: "recurring.token.disabled", token: subscription.token, eventID: "evt-\(seed)-\(delivered)",
                    createdAt: "2030-01-01T10:00:00+01:00")))
                report.steps.append("token of subscription \(subscription.id) disabled")
            case 80..<88:
                guard let order = random.pick(orders) else { break }
                let code = random.pick(["REFUND", "CHARGEBACK", "CAPTURE_FAILED"]) ?? "REFUND"
                pending.append(Delivery(provider: .adyen, body: Bodies.adyen(Bodies.adyenItem(
                    psp: "\(code)-\(order.psp)", original: order.psp, code: code, value: order.paid, reference: order.reference))))
                report.steps.append("\(code) of \(order.reference) on its way")
            case 88..<93:
                world.endpoint.answer([random.chance(50) ? 410 : 500])
                report.steps.append("merchant endpoint fails once")
            default:
                // The provider's webhook for a charge it executed (Adyen, Mercado Pago).
                guard let executed = random.pick(world.emulator.executed(.adyen) + world.emulator.executed(.mercadopago)) else { break }
                if executed.providerPaymentID.hasPrefix("ORD") {
                    pending.append(Delivery(provider: .mercadopago, body: Bodies.mercadoPago(
                        type: "order", action: "order.processed", id: executed.providerPaymentID, notification: delivered)))
                } else if let reference = executed.reference {
                    let success = executed.result == .approved
                    pending.append(Delivery(provider: .adyen, body: Bodies.adyen(Bodies.adyenItem(
                        psp: executed.providerPaymentID, code: "AUTHORISATION", success: success,
                        value: Int64(executed.amount) ?? 0, reference: reference))))
                }
                report.steps.append("provider webhook for a charge on its way")
            }
        }

        // Settle: every delivery arrives, time passes, workers and operators finish their work.
        for delivery in corpusPending + sentAgain {
            try await insertCorpusDelivery(delivery, number: delivered, world)
            delivered += 1
        }
        for delivery in pending + edgePending {
            try await pool.query("INSERT INTO inbound_events (provider, dedup_key, body, next_attempt_at) VALUES ($1, $2, $3, $4)",
                                 [.text(delivery.provider.rawValue), .text("sim-\(delivery.provider.rawValue)-\(delivered)"),
                                  .bytea(Array(delivery.body.utf8)), .timestamptz(world.clock.now)])
            delivered += 1
        }
        for round in 0..<4 {
            for _ in 0..<6 {
                world.clock.advance(by: 3_600)
                while try await world.processor.processBatch().claimed > 0 {}
                try await runJobs(world, limit: 200, crashOne: false)
            }
            if round < 3 {
                for letter in try await world.letters.list(DeadLetterFilter()) {
                    if letter.reason == "charge_outcome_unknown" {
                        try await resolveFromLedger(world, letter)
                    } else {
                        _ = try? await world.letters.replay(id: letter.id, by: OperatorAction(actor: "sim", note: "simulated on-call replay"))
                    }
                }
            }
        }
        // The provider sweep, past every deadline: what was never delivered is asked for where
        // the provider has a lookup, and raised for a person where it has none. Its lookups go
        // through the processor and its fulfillments and callbacks through the workers.
        let sweep = ProviderSweep(pool: pool, settings: ProviderSweepSettings(), fulfillment: FulfillmentSettings(),
                                  queue: world.queue, metrics: nil, logger: .silent)
        let swept = try await sweep.sweep(now: world.clock.now.addingTimeInterval(31 * 86_400))
        report.exercised["sweep lookups", default: 0] += swept.lookups.values.reduce(0, +)
        report.exercised["sweep raised", default: 0] += swept.raised
        for _ in 0..<3 {
            world.clock.advance(by: 3_600)
            while try await world.processor.processBatch().claimed > 0 {}
            try await runJobs(world, limit: 200, crashOne: false)
        }
        try await check(world, orders: orders, restore: restore, into: &report)
        try await check(world, lost: lostWebhooks, into: &report)
        try await check(world, lifecycles: lifecycles, into: &report)
        return report
    }

    /// A charge job runs while an operator pauses, pauses and resumes, or cancels its
    /// subscription inside the charge's in-flight window, checked by invariants 1 to 4b:
    /// - approved, soft or hard declined: the action lands through the handler's
    ///   `afterProviderCall`, after the provider answered and before the handler writes the answer;
    /// - timeout after executing: the emulator has executed the charge and holds its answer past
    ///   the client's deadline; the action lands as soon as the ledger shows the charge, while
    ///   the handler still waits (its deadline leaves hundreds of milliseconds for a one-row
    ///   update);
    /// - about to send: the action lands after the job was claimed and before the call.
    private func chargeWithActionInFlight(_ world: World, subscriptions: [(id: Int64, provider: ProviderID, token: String)],
                                          random: inout Random, report: inout Report) async throws {
        let kind = ChargeRecurringHandler.kind
        try await pool.query("UPDATE jobs SET run_at = now() WHERE kind = $1 AND state IN ('available', 'retryable') AND run_at <= $2",
                             [.text(kind), .timestamptz(world.clock.now)])
        guard let job = try await world.queue.claim(limit: 1, kinds: [kind], worker: "sim-in-flight", lease: .seconds(300)).first,
              let handler = world.handlers[kind] else { return }
        let subscriptionID = try await pool.query("SELECT subscription_id FROM charges WHERE idempotency_key = $1",
                                                  [.text(job.uniqueKey ?? "")]).rows.first?.decode("subscription_id", as: Int64.self)
        guard let subscriptionID, let subscription = subscriptions.first(where: { $0.id == subscriptionID }) else {
            try await world.queue.record(try await handler.run(job), for: job)
            return
        }
        let action = random.pick([InFlightAction.Action.pause, .pause, .pauseThenResume, .cancel]) ?? .pause
        let provider = subscription.provider
        let outcome: JobOutcome
        switch random.int(0...4) {
        case 0...2:
            let answer = ["approved", "soft decline", "hard decline"][random.int(0...2)]
            switch answer {
            case "soft decline": world.emulator.script(provider, [.declined(code: provider.softDeclineCode)])
            case "hard decline": world.emulator.script(provider, [.declined(code: provider.hardDeclineCode)])
            default: world.emulator.script(provider, [.approved])
            }
            let landedBefore = world.inFlight.landedCount
            world.inFlight.arm(action)
            do { outcome = try await handler.run(job) } catch { outcome = .retry(error: "\(error)") }
            world.inFlight.disarm()
            if world.inFlight.landedCount > landedBefore {
                report.exercised["in-flight operator actions after an answer", default: 0] += 1
            }
            report.steps.append("\(action.rawValue) of subscription \(subscriptionID) lands after the \(answer) of its charge")
        case 3:
            world.emulator.failCharges(provider, with: .timeout(after: .milliseconds(900)))
            let executedBefore = world.emulator.executed(provider).count
            let running = Task { try await handler.run(job) }
            var landed = false
            let deadline = ContinuousClock.now + .seconds(3)
            while ContinuousClock.now < deadline {
                if world.emulator.executed(provider).count > executedBefore {
                    try await Self.perform(action, on: subscriptionID, world.operations)
                    landed = true
                    break
                }
                try await Task.sleep(for: .milliseconds(2))
            }
            do { outcome = try await running.value } catch { outcome = .retry(error: "\(error)") }
            if landed {
                report.exercised["in-flight operator actions during a timeout", default: 0] += 1
            } else {
                try await Self.perform(action, on: subscriptionID, world.operations)
            }
            report.steps.append("\(action.rawValue) of subscription \(subscriptionID) lands while its charge times out")
        default:
            try await Self.perform(action, on: subscriptionID, world.operations)
            do { outcome = try await handler.run(job) } catch { outcome = .retry(error: "\(error)") }
            report.exercised["in-flight operator actions before the call", default: 0] += 1
            report.steps.append("\(action.rawValue) of subscription \(subscriptionID) lands as its charge is about to be sent")
        }
        try await world.queue.record(outcome, for: job)
    }

    /// A subscription created, scheduled and charged at once (the jobs due then run too).
    private func subscribeLate(_ world: World, provider: ProviderID, name: String, amount: Int64) async throws -> Int64 {
        let tokenID = try #require(try await pool.query("""
            INSERT INTO vault_tokens (provider, token, shopper_reference, customer_id, brand, last4, status)
            VALUES ($1, $2, 'shopper-1', 'customer-1', 'visa', '1111', 'active') RETURNING id
            """, [.text(provider.rawValue), .text("tok-\(seed)-\(name)")]).rows.first?.decode("id", as: Int64.self))
        let draft = NewSubscription(
            token: .id(tokenID), amount: try Money(minorUnits: amount, currency: "EUR"),
            interval: try #require(SubscriptionInterval(every: 1, unit: .day)), startAt: world.clock.now,
            reference: "sim-\(seed)-\(name)", maxCycles: nil, endAt: nil, actor: nil)
        let id = try await world.operations.create(draft, by: OperatorAction(actor: "sim")).id
        try await world.scheduler.tick(now: world.clock.now)
        try await runJobs(world, limit: 20, crashOne: false)
        return id
    }

    /// A provider resource whose webhook never arrives, and what its provider holds.
    private struct LostWebhook {
        let provider: ProviderID
        /// Mercado Pago: the order's payment; PXP: the transaction; Adyen: the authorisation.
        let paymentID: String
        /// The merchant order registered for it (Mercado Pago).
        let orderID: Int64?
    }

    /// Sets up one lost webhook: a Mercado Pago order registered by the merchant and paid at
    /// the provider, whose notification never comes; a PXP transaction delivered pending and
    /// captured since, whose webhook never comes; an Adyen authorisation delivered and its
    /// capture never (Adyen has no lookup for payments).
    private func loseWebhook(_ world: World, provider: ProviderID, index: Int) async throws -> LostWebhook {
        let number = String(format: "%020llu%06ld", seed, index)
        switch provider {
        case .mercadopago:
            let order = "ORD" + number, payment = "PAY" + number, reference = "lost-mp-\(seed)-\(index)"
            world.emulator.mercadoPago.putOrder(id: order, json: """
                {"id":"\(order)","type":"online","processing_mode":"automatic","external_reference":"\(reference)",\
                "total_amount":"25.00","total_paid_amount":"25.00","country_code":"BRA","user_id":"1873904477",\
                "status":"processed","status_detail":"accredited","capture_mode":"automatic",\
                "created_date":"2029-12-31T14:05:09.120Z","last_updated_date":"2029-12-31T14:05:11.482Z",\
                "transactions":{"payments":[{"id":"\(payment)","amount":"25.00","paid_amount":"25.00","status":"processed",\
                "status_detail":"accredited","payment_method":{"id":"master","type":"credit_card","installments":1}}]}}
                """)
            let registered = try await world.orders.register(try OrderRegistration.parse(Array("""
                {"provider": "mercadopago", "merchant_reference": "\(reference)", "provider_order_id": "\(order)",
                 "amount": {"value": 2500, "currency": "BRL"}}
                """.utf8))).order
            return LostWebhook(provider: .mercadopago, paymentID: payment, orderID: registered.id)
        case .pxp:
            let id = String(format: "%08llx-0000-4000-8000-%012llx", seed & 0xFFFF_FFFF, UInt64(index))
            let configuration = world.emulator.configuration
            world.emulator.pxp.putTransaction(id: id, json: ProviderSweepTests.pxpTransaction(
                id, state: "Pending", merchant: configuration.pxpMerchant, site: configuration.pxpSite))
            try await insertCorpusDelivery(Delivery(provider: .pxp, body: Bodies.pxpTransaction(id, state: "Pending")),
                                           number: -1 - index, world)
            while try await world.processor.processBatch().claimed > 0 {}
            world.emulator.pxp.putTransaction(id: id, json: ProviderSweepTests.pxpTransaction(
                id, state: "Captured", merchant: configuration.pxpMerchant, site: configuration.pxpSite))
            return LostWebhook(provider: .pxp, paymentID: id, orderID: nil)
        case .adyen:
            let psp = "LOST-\(seed)-\(index)"
            try await insertCorpusDelivery(Delivery(provider: .adyen, body: Bodies.adyen(Bodies.adyenItem(
                psp: psp, code: "AUTHORISATION", value: 4_000, reference: "lost-adyen-\(seed)-\(index)"))), number: -1 - index, world)
            while try await world.processor.processBatch().claimed > 0 {}
            return LostWebhook(provider: .adyen, paymentID: psp, orderID: nil)
        }
    }

    /// 12. What was never delivered is found: a Mercado Pago order and a PXP transaction end as
    /// their provider holds them (captured; the order fulfilled), and an Adyen authorisation
    /// that never moved waits on the provider in front of a person.
    private func check(_ world: World, lost: [LostWebhook], into report: inout Report) async throws {
        func expect(_ condition: Bool, _ message: @autoclosure () -> String) {
            report.checks += 1
            if !condition { report.violations.append(message()) }
        }
        let waiting = try await ProviderSweep.waiting(limit: 1_000, on: pool)
        for item in lost {
            let status = try await pool.query("SELECT status FROM payments WHERE provider = $1 AND provider_payment_id = $2",
                                              [.text(item.provider.rawValue), .text(item.paymentID)]).rows.first?.decode("status", as: String.self)
            switch item.provider {
            case .mercadopago, .pxp:
                expect(status == "captured", "lost \(item.provider.rawValue) webhook: payment \(item.paymentID) is \(status ?? "missing"), the provider holds it captured")
                if let orderID = item.orderID {
                    let record = try await world.orders.order(id: orderID)
                    expect(record.callbacks.contains { $0.type == "order.paid" },
                           "lost \(item.provider.rawValue) webhook: order \(orderID) paid at the provider but order.paid never sent")
                }
            case .adyen:
                expect(status != "authorized" || waiting.contains { $0.provider == "adyen" && $0.providerReference == item.paymentID },
                       "lost adyen capture: \(item.paymentID) is \(status ?? "missing") and not waiting on the provider")
            }
        }
    }

    /// Up to two corpus cases: the provider holds each seeded resource in its final state (a
    /// late webhook's lookup sees what the provider holds now), the merchant registers the
    /// case's order, and its webhooks wait in `pending` to be delivered in any order.
    private func drawCorpusLifecycles(_ world: World, random: inout Random, into pending: inout [Delivery]) async throws
        -> [CorpusLifecycle] {
        var files = ProviderCorpus.caseFiles()
        var lifecycles: [CorpusLifecycle] = []
        var referencesInUse: Set<String> = []
        while lifecycles.count < 2, !files.isEmpty {
            let file = files.remove(at: random.int(0...(files.count - 1)))
            let testCase = try ProviderCorpus.load(file)
            // Cases reuse their provider's sample references (many Adyen cases pay
            // `adyen-order-1`): two drawn together would share one order, and a second payment
            // on it is rightly an overpayment neither case documents. Draw another instead.
            let references = Self.merchantReferences(testCase)
            guard referencesInUse.isDisjoint(with: references) else { continue }
            referencesInUse.formUnion(references)
            for step in testCase.steps {
                switch step {
                case .seed(let collection, let id, let body):
                    let answer = await HTTPTestClient.send(
                        port: world.emulator.port, method: "PUT",
                        path: ProviderEmulator.seedPathPrefix + "\(testCase.provider.rawValue)/\(collection)/\(id)",
                        headers: [("Content-Type", "application/json")], body: Array(renderJSON(body).utf8))
                    #expect(answer?.status == 201, "seeding \(file): \(answer.map(String.init(describing:)) ?? "no answer")")
                case .deliver(let body, _, let expectStatus) where (200..<300).contains(expectStatus):
                    pending.append(Delivery(provider: testCase.provider, body: renderJSON(body), account: testCase.account ?? ""))
                case .deliver:
                    break  // refused at ingress: never reaches processing
                }
            }
            var orderID: Int64?
            if let order = testCase.order { orderID = try await world.orders.register(try testCase.registration(order)).order.id }
            lifecycles.append(CorpusLifecycle(file: file, testCase: testCase, orderID: orderID))
        }
        return lifecycles
    }

    /// The merchant references a case registers or pays, scoped by provider.
    private static func merchantReferences(_ testCase: CorpusCase) -> Set<String> {
        var references: Set<String> = []
        let scope = testCase.provider.rawValue + ":"
        if let reference = testCase.order?.merchantReference { references.insert(scope + reference) }
        for step in testCase.steps {
            guard case .deliver(let body, _, _) = step else { continue }
            var text = Substring(renderJSON(body))
            while let range = text.range(of: "\"merchantReference\":\"") {
                text = text[range.upperBound...]
                guard let end = text.firstIndex(of: "\"") else { break }
                references.insert(scope + String(text[..<end]))
            }
        }
        return references
    }

    private func insertCorpusDelivery(_ delivery: Delivery, number: Int, _ world: World) async throws {
        try await pool.query(
            "INSERT INTO inbound_events (provider, account, dedup_key, body, next_attempt_at) VALUES ($1, $2, $3, $4, $5)",
            [.text(delivery.provider.rawValue), .text(delivery.account), .text("sim-corpus-\(number)"),
             .bytea(Array(delivery.body.utf8)), .timestamptz(world.clock.now)])
    }

    /// 9. Corpus lifecycles, whatever the arrival order and duplicates: each payment ends with
    /// the documented status and amounts, and the merchant hears of nothing the lifecycle does
    /// not produce, nor more often.
    private func check(_ world: World, lifecycles: [CorpusLifecycle], into report: inout Report) async throws {
        func expect(_ condition: Bool, _ message: @autoclosure () -> String) {
            report.checks += 1
            if !condition { report.violations.append(message()) }
        }
        for lifecycle in lifecycles {
            let provider = lifecycle.testCase.provider.rawValue
            for expected in lifecycle.testCase.expect.payments ?? [] {
                guard let id = expected["provider_payment_id"]?.scalarText else { continue }
                let text = try await pool.query(
                    "SELECT row_to_json(p)::text AS row FROM payments p WHERE provider = $1 AND provider_payment_id = $2",
                    [.text(provider), .text(id)]).rows.first?.decode("row", as: String.self)
                guard let row = text.flatMap({ JSONValue.parse(Array($0.utf8)) }) else {
                    expect(false, "\(lifecycle.file): payment \(id) missing")
                    continue
                }
                // Columns that describe money, not the last event to arrive.
                let columns = expected.keys.filter { $0 == "status" || $0 == "currency" || $0.hasSuffix("_minor") }
                for column in columns {
                    guard let value = expected[column] else { continue }
                    let stored = row[column] ?? .null
                    expect(CorpusRunner.sameValue(stored, value),
                           "\(lifecycle.file): payment \(id) \(column) is \(renderJSON(stored)), documented \(renderJSON(value))")
                }
            }
            guard let orderID = lifecycle.orderID, let documented = lifecycle.testCase.expect.callbacks else { continue }
            let sent = try await pool.query("SELECT type FROM merchant_callbacks WHERE order_id = $1", [.int(orderID)])
                .map { try $0.decode("type", as: String.self) }
            for type in Set(sent) {
                let count = sent.filter { $0 == type }.count, allowed = documented.filter { $0 == type }.count
                expect(count <= allowed, "\(lifecycle.file): \(type) sent \(count) times, the documented lifecycle sends it \(allowed)")
            }
        }
    }

    /// Claims due jobs of every kind and runs them one by one, as a worker would. With
    /// `crashOne`, the first job's handler runs but its outcome is never recorded, and its lease
    /// expires (a worker killed between the provider's answer and the database), so the
    /// rescuer hands it to the next worker.
    private func runJobs(_ world: World, limit: Int, crashOne: Bool) async throws {
        try await pool.query("UPDATE jobs SET run_at = now() WHERE state IN ('available', 'retryable') AND run_at <= $1",
                             [.timestamptz(world.clock.now)])
        let jobs = try await world.queue.claim(limit: limit, kinds: Array(world.handlers.keys).sorted(), worker: "sim",
                                               lease: .seconds(300))
        for (index, job) in jobs.enumerated() {
            guard let handler = world.handlers[job.kind] else { continue }
            let outcome: JobOutcome
            do {
                outcome = try await handler.run(job)
            } catch {
                outcome = .retry(error: "\(error)")
            }
            if crashOne, index == 0 { continue }
            try await world.queue.record(outcome, for: job)
        }
        if crashOne {
            try await pool.query("UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE state = 'running'")
            _ = try await JobRescuer(queue: world.queue).rescueExpired()
        }
    }

    /// An operator settling a `charge_outcome_unknown` from the provider's own records (the
    /// emulator's ledger): succeeded with the payment when the key was executed and approved,
    /// failed otherwise.
    private func resolveFromLedger(_ world: World, _ letter: DeadLetter) async throws {
        guard let payload = try await pool.query("SELECT payload->>'idempotency_key' AS key FROM jobs WHERE id = $1",
                                                 [.int(letter.sourceID)]).rows.first?.decode("key", as: String?.self),
              let row = try await pool.query("SELECT id, provider FROM charges WHERE idempotency_key = $1", [.text(payload)]).rows.first
        else { return }
        let chargeID: Int64 = try row.decode("id")
        let provider = ProviderID(rawValue: try row.decode("provider", as: String.self)) ?? .adyen
        let executed = world.emulator.executed(provider).first { $0.idempotencyKey == payload }
        let action = OperatorAction(actor: "sim", note: "checked the provider's records")
        if let executed, executed.result == .approved {
            _ = try? await world.charges.resolve(id: chargeID, as: .succeeded, providerPaymentID: executed.providerPaymentID, by: action)
        } else {
            _ = try? await world.charges.resolve(id: chargeID, as: .failed, providerPaymentID: nil, by: action)
        }
    }

    // MARK: Invariants

    private func check(_ world: World, orders: [SimulatedOrder], restore: RestoreRecord, into report: inout Report) async throws {
        func expect(_ condition: Bool, _ message: @autoclosure () -> String) {
            report.checks += 1
            if !condition { report.violations.append(message()) }
        }
        // 1. At most one executed, approved charge per subscription cycle (the provider's ledger).
        //    With a restore, leaving out the charges executed between the backup and the restore
        //    (lost answers, see `RestoreRecord`); every other run counts every charge.
        var approvedPerCycle: [String: Int] = [:]
        var forgotten: Set<String> = []
        for provider in ProviderID.allCases {
            for (index, charge) in world.emulator.executed(provider).enumerated() where charge.result == .approved {
                guard let key = charge.idempotencyKey, let range = key.range(of: "-a", options: .backwards) else { continue }
                if restore.forgotten(provider, index: index) {
                    forgotten.insert(key)
                    continue
                }
                approvedPerCycle[String(key[..<range.lowerBound]), default: 0] += 1
            }
        }
        if restore.restored { report.exercised["restore: charges executed and forgotten", default: 0] += forgotten.count }
        for (cycle, count) in approvedPerCycle.sorted(by: { $0.key < $1.key }) {
            expect(count <= 1, "\(count) approved charges at the provider for \(cycle)")
        }
        // 2. Every executed, approved charge is known as this cycle's success, or still open
        //    and in front of an operator (never declined or skipped while the money was taken).
        for provider in ProviderID.allCases {
            for charge in world.emulator.executed(provider) where charge.result == .approved {
                guard let key = charge.idempotencyKey, !forgotten.contains(key) else { continue }
                let status = try await pool.query("SELECT status FROM charges WHERE idempotency_key = $1", [.text(key)])
                    .rows.first?.decode("status", as: String.self)
                expect(status == "succeeded" || status == "unknown" || status == "pending",
                       "charge \(key) was approved at the provider but is \(status ?? "missing") here")
            }
        }
        // 3. No charge left without a final outcome unless an operator has it.
        let open = try await pool.query("""
            SELECT c.idempotency_key, c.status FROM charges c
            WHERE c.status IN ('pending', 'unknown') AND c.attempted_at IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM jobs j JOIN dead_letters d ON d.source = 'job' AND d.source_id = j.id AND d.status = 'open'
                              WHERE j.unique_key = c.idempotency_key)
              AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.unique_key = c.idempotency_key AND j.state IN ('available', 'retryable'))
            """).rows
        for row in open {
            let key: String = try row.decode("idempotency_key"), status: String = try row.decode("status")
            expect(false, "charge \(key) is \(status) with no job and no open dead letter")
        }
        // 4. Every skipped attempt was reported.
        let silentSkips = try await pool.query("""
            SELECT c.idempotency_key FROM charges c WHERE c.status = 'skipped'
              AND NOT EXISTS (SELECT 1 FROM merchant_callbacks m WHERE m.subscription_id = c.subscription_id
                              AND m.type = 'subscription.charge_skipped'
                              AND m.fact_key = 'subscription.charge_skipped:' || c.subscription_id || ':c' || c.cycle || ':a' || c.attempt)
            """).rows
        for row in silentSkips {
            let key: String = try row.decode("idempotency_key")
            expect(false, "charge \(key) skipped silently")
        }
        // 4b. Every cycle the scheduler passed has a charge or was reported skipped.
        let missing = try await pool.query("""
            SELECT s.id, g.cycle FROM subscriptions s CROSS JOIN LATERAL generate_series(1, s.cycle - 1) AS g(cycle)
            WHERE NOT EXISTS (SELECT 1 FROM charges c WHERE c.subscription_id = s.id AND c.cycle = g.cycle)
              AND NOT EXISTS (SELECT 1 FROM merchant_callbacks m
                              WHERE m.subscription_id = s.id AND m.type = 'subscription.cycles_skipped'
                                AND g.cycle BETWEEN (m.body::jsonb -> 'data' ->> 'first_cycle')::int
                                                AND (m.body::jsonb -> 'data' ->> 'last_cycle')::int)
            """).rows
        expect(missing.isEmpty, "\(missing.count) cycles passed with neither a charge nor a report")
        // 5. Orders: fulfilled only when paid exactly; every reversal after order.paid reported.
        for order in orders {
            let record = try await world.orders.order(id: order.id)
            let paidCallback = record.callbacks.contains { $0.type == "order.paid" }
            if order.expected != order.paid {
                expect(!paidCallback, "order \(order.reference) expects \(order.expected) but was paid \(order.paid), and order.paid was sent")
            }
            guard paidCallback, let payment = record.payments.first(where: { $0.providerPaymentID == order.psp }) else { continue }
            expect(order.expected == order.paid, "order \(order.reference) fulfilled with a mismatched amount")
            let types = Set(record.callbacks.map(\.type))
            if payment.refundedMinor > 0 { expect(types.contains("order.refunded"), "refund of \(order.reference) after order.paid not reported") }
            if payment.chargebacks > payment.chargebackReversals {
                expect(types.contains("order.charged_back"), "chargeback of \(order.reference) after order.paid not reported")
            }
            if payment.status == "failed" || payment.status == "canceled" {
                expect(types.contains("order.payment_reversed"), "\(payment.status) \(order.reference) after order.paid not reported")
            }
        }
        // 5b. No order.paid before the captured money covered the order: what the frozen body
        //     reported as captured (its captured sum where captures were reported one by one)
        //     adds up to the order's amount. (Default settings: authorisations do not count.)
        let paidShort = try await pool.query("""
            SELECT o.merchant_reference, o.expected_amount_minor,
                   (SELECT coalesce(sum(coalesce((p -> 'captured' ->> 'value')::bigint, (p -> 'amount' ->> 'value')::bigint)), 0)
                    FROM jsonb_array_elements((c.body::jsonb) -> 'data' -> 'payments') AS p
                    WHERE p ->> 'status' = 'captured')::bigint AS counted
            FROM orders o JOIN merchant_callbacks c ON c.order_id = o.id AND c.type = 'order.paid'
            """).rows
        for row in paidShort {
            let reference: String? = try row.decode("merchant_reference")
            let expected: Int64? = try row.decode("expected_amount_minor"), counted: Int64 = try row.decode("counted")
            expect(expected.map { counted >= $0 } ?? false,
                   "order \(reference ?? "?") reported paid with \(counted) captured of \(expected.map(String.init) ?? "no amount")")
        }
        // 5c. Every extra payment reported: a captured payment of an order (or of a provider order
        //     linked to it) that order.paid did not report paid has its order.overpaid.
        let unreported = try await pool.query("""
            SELECT p.provider_payment_id FROM payments p
            JOIN orders po ON po.id = p.order_id
            JOIN merchant_callbacks c ON c.order_id = coalesce(po.merchant_order_id, po.id) AND c.type = 'order.paid'
            WHERE p.status = 'captured'
              AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements((c.body::jsonb) -> 'data' -> 'payments') AS r
                              WHERE r ->> 'provider_payment_id' = p.provider_payment_id AND r ->> 'status' = 'captured')
              AND NOT EXISTS (SELECT 1 FROM merchant_callbacks m WHERE m.type = 'order.overpaid' AND m.order_id = c.order_id
                                AND m.fact_key = 'order.overpaid.' || c.order_id || '.' || p.id)
            """).rows
        for row in unreported {
            let payment: String = try row.decode("provider_payment_id")
            expect(false, "extra payment \(payment) after order.paid not reported")
        }
        report.exercised["order.overpaid sent"] = Int(try await pool.query(
            "SELECT count(*) AS n FROM merchant_callbacks WHERE type = 'order.overpaid'").rows.first?.decode("n", as: Int64.self) ?? 0)
        // 6. Nothing acknowledged is lost or stuck: every delivery processed or in front of an operator.
        let stuck = try await pool.query("""
            SELECT count(*) AS n FROM inbound_events e
            WHERE e.status = 'pending'
               OR (e.status = 'dead' AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.source = 'inbound_event' AND d.source_id = e.id))
            """).rows.first?.decode("n", as: Int64.self) ?? 0
        expect(stuck == 0, "\(stuck) deliveries neither processed nor dead-lettered")
        report.exercised["executed charges"] = ProviderID.allCases.map { world.emulator.executed($0).count }.reduce(0, +)
        for row in try await pool.query("""
            SELECT 'charges ' || status AS k, count(*) AS n FROM charges GROUP BY status
            UNION ALL SELECT 'callbacks ' || type, count(*) FROM merchant_callbacks GROUP BY type
            UNION ALL SELECT 'letters ' || reason || ' ' || status, count(*) FROM dead_letters GROUP BY reason, status
            UNION ALL SELECT 'audit ' || action, count(*) FROM audit_log GROUP BY action
            """).rows {
            report.exercised[try row.decode("k"), default: 0] += Int(try row.decode("n", as: Int64.self))
        }
        // 10. No idempotency key names two charges, across the whole run and any restore: every
        //     key a database state held names one subscription, cycle and attempt, and every
        //     charge a provider executed was sent under a key payhook holds, for that charge's
        //     amount and merchant reference (the ledger records them as the request sent them).
        var keys = restore
        try await keys.recordCharges(pool)
        for (key, charges) in keys.chargesOfKey.sorted(by: { $0.key < $1.key }) {
            expect(charges.count == 1, "idempotency key \(key) named \(charges.count) charges: \(charges.sorted())")
        }
        for provider in ProviderID.allCases {
            for charge in world.emulator.executed(provider) {
                guard let key = charge.idempotencyKey else { continue }
                guard let amounts = keys.amountOfKey[key] else {
                    expect(false, "\(provider.rawValue) executed key \(key), which no database state of the run held")
                    continue
                }
                let sent = Self.minorUnits(charge.amount, provider)
                expect(sent.map { amounts == [$0] } ?? false,
                       "\(provider.rawValue) executed key \(key) for \(charge.amount), payhook's charge is \(amounts.sorted())")
                if let reference = charge.reference, let references = keys.referencesOfKey[key] {
                    expect(references == [reference],
                           "\(provider.rawValue) executed key \(key) for reference \(reference), payhook's charge has \(references.sorted())")
                }
            }
        }
        // 11. No callback webhook-id names two messages: what the merchant received under one
        //     id (retries, and resends after a restore, included) is one body.
        var bodiesOfWebhookID: [String: Set<[UInt8]>] = [:]
        for received in world.endpoint.received {
            guard let id = received.header("webhook-id") else {
                expect(false, "a callback without a webhook-id")
                continue
            }
            bodiesOfWebhookID[id, default: []].insert(received.body)
        }
        for (id, bodies) in bodiesOfWebhookID.sorted(by: { $0.key < $1.key }) {
            expect(bodies.count == 1, "webhook-id \(id) named \(bodies.count) different messages")
        }
        // Several Mercado Pago orders per reference: a cycle's declined attempts and its paid
        // one each create an order under the cycle's reference.
        let ordersPerReference = Dictionary(grouping: world.emulator.executed(.mercadopago).compactMap(\.reference), by: { $0 })
        report.exercised["Mercado Pago references with several orders", default: 0] += ordersPerReference.values.filter { $0.count > 1 }.count
        // And a merchant order registered by reference that several Mercado Pago orders link to
        // (the corpus case of a failed attempt, then a paid one, on one reference).
        report.exercised["Mercado Pago merchant orders with several provider orders", default: 0] += Int(try await pool.query("""
            SELECT count(*) AS n FROM (SELECT merchant_order_id FROM orders
                                       WHERE provider = 'mercadopago' AND merchant_order_id IS NOT NULL
                                       GROUP BY merchant_order_id HAVING count(*) > 1) AS shared
            """).rows.first?.decode("n", as: Int64.self) ?? 0)
        // 7. No job left running.
        let running = try await pool.query("SELECT count(*) AS n FROM jobs WHERE state = 'running'").rows.first?.decode("n", as: Int64.self) ?? 0
        expect(running == 0, "\(running) jobs left running")
        // 8. History points at rows that exist: payment_events references payments, orders and
        //    tokens by id without foreign keys (docs/decisions/0008), so this is the check.
        let dangling = try await pool.query("""
            SELECT count(*) AS n FROM payment_events e
            WHERE (e.payment_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.id = e.payment_id))
               OR (e.order_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.id = e.order_id))
               OR (e.vault_token_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM vault_tokens t WHERE t.id = e.vault_token_id))
            """).rows.first?.decode("n", as: Int64.self) ?? 0
        expect(dangling == 0, "\(dangling) history rows point at a payment, order or token that does not exist")
    }
}
