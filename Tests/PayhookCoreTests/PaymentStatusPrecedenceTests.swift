import PayhookTestSupport
import Testing
@testable import PayhookCore

/// Every ordered pair of statuses, with the expected answer written out by hand from the
/// table in the doc comment rather than computed from the ranks under test.
private let allowedSuccessors: [PaymentStatus: Set<PaymentStatus>] = [
    .pending: [.authorized, .expired, .canceled, .declined, .failed, .captured, .partiallyRefunded, .refunded, .chargedBack],
    .authorized: [.expired, .canceled, .declined, .failed, .captured, .partiallyRefunded, .refunded, .chargedBack],
    .expired: [.canceled, .declined, .failed, .captured, .partiallyRefunded, .refunded, .chargedBack],
    .canceled: [.declined, .failed, .captured, .partiallyRefunded, .refunded, .chargedBack],
    .declined: [.failed, .captured, .partiallyRefunded, .refunded, .chargedBack],
    .failed: [.captured, .partiallyRefunded, .refunded, .chargedBack],
    .captured: [.partiallyRefunded, .refunded, .chargedBack],
    .partiallyRefunded: [.refunded, .chargedBack],
    .refunded: [.chargedBack],
    .chargedBack: [],
]

@Suite("Payment status precedence")
struct PaymentStatusPrecedenceTests {
    @Test("raw values are the canonical snake_case set")
    func rawValues() {
        #expect(PaymentStatus.allCases.map(\.rawValue) == [
            "pending", "authorized", "captured", "partially_refunded", "refunded", "canceled", "declined",
            "failed", "expired", "charged_back",
        ])
    }

    @Test("every ordered pair follows the documented table",
          arguments: PaymentStatus.allCases, PaymentStatus.allCases)
    func pair(current: PaymentStatus, incoming: PaymentStatus) {
        let expected = allowedSuccessors[current]!.contains(incoming)
        #expect(PaymentStatus.shouldReplace(current: current, with: incoming) == expected)
    }

    @Test("any status replaces an empty one", arguments: PaymentStatus.allCases)
    func fromNothing(incoming: PaymentStatus) {
        #expect(PaymentStatus.shouldReplace(current: nil, with: incoming))
    }

    @Test("a status never replaces itself, so duplicates change nothing", arguments: PaymentStatus.allCases)
    func duplicate(status: PaymentStatus) {
        #expect(!PaymentStatus.shouldReplace(current: status, with: status))
    }

    @Test("captured survives late authorizations, pendings and terminal failures",
          arguments: [PaymentStatus.pending, .authorized, .declined, .failed, .expired, .canceled])
    func capturedIsSticky(late: PaymentStatus) {
        #expect(PaymentStatus.resolve(current: .captured, applying: .advance(late)) == .captured)
    }

    @Test("every permutation of a realistic sequence converges to the same status", arguments: [
        ("adyen card life", [PaymentStatus.pending, .authorized, .captured, .partiallyRefunded, .refunded], PaymentStatus.refunded),
        ("adyen decline", [.pending, .declined], .declined),
        ("adyen expiry", [.pending, .authorized, .expired], .expired),
        ("adyen dispute", [.authorized, .captured, .partiallyRefunded, .chargedBack], .chargedBack),
        ("mercado pago order with retry", [.pending, .failed, .pending, .captured, .partiallyRefunded], .partiallyRefunded),
        ("mercado pago cancel", [.pending, .authorized, .canceled], .canceled),
        ("pxp capture", [.authorized, .captured, .refunded], .refunded),
        ("pxp refused", [.pending, .declined, .failed], .failed),
    ])
    func permutations(name: String, sequence: [PaymentStatus], expected: PaymentStatus) {
        var finals: Set<PaymentStatus?> = []
        for order in PayhookTestSupport.permutations(sequence) {
            var status: PaymentStatus?
            for event in order {
                status = PaymentStatus.resolve(current: status, applying: .advance(event))
            }
            finals.insert(status)
        }
        #expect(finals == [expected], "\(name)")
    }

    @Test("random shuffles of every status, with duplicates, end on charged_back")
    func randomShuffles() {
        var generator = SplitMix64(seed: 0x5EED)
        for _ in 0..<2_000 {
            var events = PaymentStatus.allCases + PaymentStatus.allCases.shuffled(using: &generator).prefix(4)
            events.shuffle(using: &generator)
            let final = events.reduce(nil as PaymentStatus?) { PaymentStatus.resolve(current: $0, applying: .advance($1)) }
            #expect(final == .chargedBack)
        }
    }

    @Test("only an explicit reversal leaves charged_back; it restores captured or the refund state")
    func chargebackReversal() {
        #expect(PaymentStatus.resolve(current: .chargedBack, applying: .advance(.captured)) == .chargedBack)
        #expect(PaymentStatus.resolve(current: .chargedBack, applying: .chargebackReversed) == .captured)
        #expect(PaymentStatus.resolve(current: .chargedBack, applying: .chargebackReversed,
                                      refundedMinorUnits: 500, amountMinorUnits: 1_000) == .partiallyRefunded)
        #expect(PaymentStatus.resolve(current: .authorized, applying: .chargebackReversed) == .captured)
        #expect(PaymentStatus.resolve(current: .refunded, applying: .chargebackReversed) == .refunded)
    }

    @Test("a failed capture is the only way from captured to failed")
    func captureFailure() {
        #expect(PaymentStatus.resolve(current: .captured, applying: .advance(.failed)) == .captured)
        #expect(PaymentStatus.resolve(current: .captured, applying: .captureFailed) == .failed)
        #expect(PaymentStatus.resolve(current: nil, applying: .captureFailed) == .failed)
        #expect(PaymentStatus.resolve(current: .refunded, applying: .captureFailed) == .refunded)
        #expect(PaymentStatus.resolve(current: .chargedBack, applying: .captureFailed) == .chargedBack)
    }

    @Test("a failed refund recomputes the refund state from what remains")
    func refundFailure() {
        #expect(PaymentStatus.resolve(current: .refunded, applying: .advance(.partiallyRefunded)) == .refunded)
        #expect(PaymentStatus.resolve(current: .refunded, applying: .refundFailed,
                                      refundedMinorUnits: 300, amountMinorUnits: 1_000) == .partiallyRefunded)
        #expect(PaymentStatus.resolve(current: .partiallyRefunded, applying: .refundFailed) == .captured)
        #expect(PaymentStatus.resolve(current: .captured, applying: .refundFailed) == .captured)
        #expect(PaymentStatus.resolve(current: .chargedBack, applying: .refundFailed) == .chargedBack)
    }

    @Test("a refused modification never changes the status", arguments: PaymentStatus.allCases)
    func refusedModification(current: PaymentStatus) {
        #expect(PaymentStatus.resolve(current: current, applying: .modificationRefused) == current)
    }

    @Test("the refunded sum against the amount decides partial or full refund", arguments: [
        (Int64(0), Int64?(1_000), PaymentStatus?.none),
        (1, 1_000, .partiallyRefunded),
        (999, 1_000, .partiallyRefunded),
        (1_000, 1_000, .refunded),
        (1_200, 1_000, .refunded),
        (400, nil, .partiallyRefunded),
    ])
    func refundStatus(refunded: Int64, amount: Int64?, expected: PaymentStatus?) {
        #expect(PaymentStatus.refundStatus(refundedMinorUnits: refunded, amountMinorUnits: amount) == expected)
    }
}
