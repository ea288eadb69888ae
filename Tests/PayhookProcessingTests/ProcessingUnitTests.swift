import Foundation
import PayhookFeatureTestSupport
import PayhookTestSupport
import PayhookCore
import PayhookLedger
import PayhookPostgres
import PayhookProviders
import PayhookQueue
import Testing
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing

@Suite("Processing: pure rules")
struct ProcessingUnitTests {
    @Test("backoff doubles from the base, is capped, and jitter spans half to all of it", arguments: [
        (1, 0.0, 0.5), (1, 1.0, 1.0), (2, 0.0, 1.0), (3, 0.5, 3.0), (8, 0.0, 64.0), (11, 0.0, 300.0), (40, 1.0, 600.0),
    ])
    func backoff(attempt: Int, jitter: Double, seconds: Double) {
        let policy = ProcessorSettings().retry
        #expect(abs(policy.delay(afterAttempt: attempt, unitRandom: jitter).seconds - seconds) < 0.001)
    }

    /// Runs the claim loop over `wakes` wake-ups with scripted batch results (`nil`: the batch
    /// fails as a whole) and returns the pauses it asked for after failures, in whole
    /// milliseconds, in order.
    private func claimLoopPauses(wakes: Int, batches: [BatchOutcome?]) async -> [Int] {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
        for _ in 0..<wakes { continuation.yield() }
        continuation.finish()
        var remaining = batches[...]
        var pauses: [Duration] = []
        struct BatchFailed: Error {}
        await InboundEventProcessor.claimLoop(
            wakes: stream, batchSize: 10, backoff: ProcessorSettings().batchFailureBackoff, isStopped: { false },
            batch: {
                guard let next = remaining.popFirst(), let outcome = next else { throw BatchFailed() }
                return outcome
            },
            afterFailure: { _, pause in pauses.append(pause) })
        return pauses.map { Int(($0.seconds * 1000).rounded()) }
    }

    @Test("the claim loop's pause after a failed batch doubles across wakes up to its cap")
    func claimLoopBackoffGrowsAcrossWakes() async {
        let pauses = await claimLoopPauses(wakes: 8, batches: [])
        #expect(pauses == [50, 100, 200, 400, 800, 1600, 2000, 2000])
    }

    @Test("a batch that succeeds starts the claim loop's pause over from its base")
    func claimLoopBackoffResetsAfterSuccess() async {
        let pauses = await claimLoopPauses(wakes: 5, batches: [nil, nil, BatchOutcome(claimed: 3), nil, nil])
        #expect(pauses == [50, 100, 50, 100])
    }

    @Test("the next attempt is due from the injected clock; the last attempt exhausts")
    func nextAttempt() {
        var policy = ProcessorSettings()
        policy.retry = RetryPolicy(base: .seconds(2), maximum: .seconds(60), jitter: 0.5)
        policy.maxAttempts = 3
        let now = Date(timeIntervalSince1970: 1_000_000)
        #expect(policy.nextAttempt(after: 2, now: now, jitter: 0) == now.addingTimeInterval(2))
        #expect(!policy.isExhausted(afterAttempt: 2))
        #expect(policy.isExhausted(afterAttempt: 3))
    }

    @Test("failures are classified: 404 and unsupported are final; payload, timeouts and credentials are retried")
    func classification() {
        let payload = ProcessingFailure.payload(PayloadError(provider: .adyen, code: .malformedJSON))
        #expect(payload.retryable)
        #expect(payload.reason == .payloadInvalid)
        #expect(!ProcessingFailure.provider(ProviderAPIError(.notFound, "x"), resource: "order").retryable)
        #expect(!ProcessingFailure.provider(ProviderAPIError(.unsupported, "x"), resource: "order").retryable)
        for kind in [ProviderAPIError.Kind.timeout, .unavailable, .unauthorized, .invalidResponse] {
            #expect(ProcessingFailure.provider(ProviderAPIError(kind, "x"), resource: "order").retryable)
        }
        #expect(ProcessingFailure.database(PostgresError(kind: .serializationFailure, message: "m")).retryable)
        #expect(ProcessingFailure.provider(ProviderAPIError(.timeout, "x"), resource: "order").reason == .maxAttemptsExceeded)
    }

    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)
    static func fetched(_ status: PaymentStatus, refunded: Int64?, at offset: Double?) -> PaymentSnapshot {
        PaymentSnapshot(provider: .mercadopago, providerPaymentID: "P", amount: .test(1000, "BRL"), transition: .advance(status),
                        occurredAt: offset.map { t0.addingTimeInterval($0) }, refund: refunded.map { .total(.test($0, "BRL")) })
    }

    @Test("older fetched state is refused whole; newer totals replace; undated totals only rise")
    func fetchedMerge() {
        var state = PaymentState()
        state = PaymentMerge.merge(state, with: Self.fetched(.refunded, refunded: 1000, at: 10), fetched: true, adjustments: nil).state
        let stale = PaymentMerge.merge(state, with: Self.fetched(.captured, refunded: 0, at: 5), fetched: true, adjustments: nil)
        #expect(stale.stale && stale.state == state)
        let undated = PaymentMerge.merge(state, with: Self.fetched(.partiallyRefunded, refunded: 300, at: nil), fetched: true, adjustments: nil)
        #expect(undated.state.refundedMinor == 1000 && undated.state.status == .refunded)
        let newer = PaymentMerge.merge(state, with: Self.fetched(.captured, refunded: 400, at: 20), fetched: true, adjustments: nil)
        #expect(newer.state.refundedMinor == 400 && newer.state.status == .refunded, "status never moves backwards")
    }

    @Test("refund increments decide the refund status from the sum, even before the amount is known")
    func increments() {
        let refund = PaymentSnapshot(provider: .adyen, providerPaymentID: "P", transition: .advance(.partiallyRefunded),
                                     refund: .increment(reference: "R", amount: .test(1000, "EUR")))
        let authorisation = PaymentSnapshot(provider: .adyen, providerPaymentID: "P", amount: .test(1000, "EUR"),
                                            transition: .advance(.authorized))
        var state = PaymentMerge.merge(PaymentState(), with: refund, fetched: false,
                                       adjustments: AdjustmentTotals(refundedMinor: 1000)).state
        #expect(state.status == .partiallyRefunded)
        state = PaymentMerge.merge(state, with: authorisation, fetched: false, adjustments: nil).state
        #expect(state.status == .refunded)
        let tombstoned = PaymentMerge.merge(PaymentState(), with: refund, fetched: false, adjustments: AdjustmentTotals()).state
        #expect(tombstoned.status == nil, "a refund already reported failed changes no status")
    }

    @Test("token status: the later report wins when dated, otherwise the more final one", arguments: [
        (VaultTokenStatus.active, 1.0, VaultTokenStatus.disabled, 2.0, true),
        (.disabled, 2.0, .active, 1.0, false),
        (.disabled, 1.0, .active, 2.0, true),
        (.disabled, nil, .active, nil, false),
        (.active, nil, .expired, nil, true),
    ] as [(VaultTokenStatus, Double?, VaultTokenStatus, Double?, Bool)])
    func tokenMerge(stored: VaultTokenStatus, storedAt: Double?, incoming: VaultTokenStatus, incomingAt: Double?, wins: Bool) {
        #expect(VaultTokenMerge.incomingWins(
            stored: stored, storedAt: storedAt.map { Self.t0.addingTimeInterval($0) },
            incoming: incoming, incomingAt: incomingAt.map { Self.t0.addingTimeInterval($0) }) == wins)
    }
}
