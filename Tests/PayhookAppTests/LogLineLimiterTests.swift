@testable import PayhookApp
@testable import PayhookCore
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions
import Synchronization
import Testing

@Suite("LogLineLimiter")
struct LogLineLimiterTests {
    /// A clock the test moves by hand.
    final class ManualClock: Sendable {
        private let offset = Mutex(Duration.zero)
        private let origin = ContinuousClock.now
        var now: ContinuousClock.Instant { origin + offset.withLock { $0 } }
        func advance(_ by: Duration) { offset.withLock { $0 += by } }
    }

    @Test("the first line of a key goes out, repeats within the interval are held back and counted on the next line")
    func holdsBackAndCounts() {
        let clock = ManualClock()
        let limiter = LogLineLimiter(interval: .seconds(1)) { clock.now }

        #expect(limiter.admit("mercadopago/stale_timestamp") == 0)
        for _ in 0..<4 {
            clock.advance(.milliseconds(200))
            #expect(limiter.admit("mercadopago/stale_timestamp") == nil)
        }
        clock.advance(.milliseconds(200))  // 1 s after the admitted line
        #expect(limiter.admit("mercadopago/stale_timestamp") == 4)
        clock.advance(.milliseconds(999))
        #expect(limiter.admit("mercadopago/stale_timestamp") == nil)
        clock.advance(.seconds(5))
        #expect(limiter.admit("mercadopago/stale_timestamp") == 1)
    }

    @Test("keys are limited independently")
    func keysAreIndependent() {
        let clock = ManualClock()
        let limiter = LogLineLimiter(interval: .seconds(1)) { clock.now }

        #expect(limiter.admit("mercadopago/stale_timestamp") == 0)
        #expect(limiter.admit("pxp/stale_timestamp") == 0)
        #expect(limiter.admit("mercadopago/stale_timestamp") == nil)
        #expect(limiter.admit("pxp/stale_timestamp") == nil)
        #expect(limiter.admit("adyen/other") == 0)
    }
}
