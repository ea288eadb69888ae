import PayhookCore
import Testing

@Suite("Retry backoff")
struct RetryPolicyTests {
    let policy = RetryPolicy(base: .seconds(1), maximum: .seconds(60), jitter: 0.5)

    @Test("the delay doubles with each failed attempt", arguments: [(1, 1.0), (2, 2.0), (3, 4.0), (6, 32.0)])
    func doubles(attempt: Int, seconds: Double) {
        #expect(policy.delay(afterAttempt: attempt, unitRandom: 1) == .seconds(seconds))
    }

    @Test("the delay never exceeds the maximum, however many attempts", arguments: [7, 30, 1023, 1024, 5000, Int.max])
    func capped(attempt: Int) {
        #expect(policy.delay(afterAttempt: attempt, unitRandom: 1) == .seconds(60))
        #expect(policy.delay(afterAttempt: attempt, unitRandom: 0) == .seconds(30))
    }

    @Test("jitter takes away at most its fraction of the delay")
    func jitterBounds() {
        #expect(policy.delay(afterAttempt: 3, unitRandom: 0) == .seconds(2))
        #expect(policy.delay(afterAttempt: 3, unitRandom: 0.5) == .seconds(3))
        for _ in 0..<100 {
            let delay = policy.delay(afterAttempt: 3)
            #expect(delay >= .seconds(2) && delay <= .seconds(4))
        }
    }

    @Test("out-of-range inputs are clamped, not trusted", arguments: [-1.0, 2.0, .nan, .infinity])
    func clampsRandom(random: Double) {
        let delay = policy.delay(afterAttempt: 1, unitRandom: random)
        #expect(delay >= .milliseconds(500) && delay <= .seconds(1))
        #expect(policy.delay(afterAttempt: 0, unitRandom: 1) == .seconds(1))
        #expect(RetryPolicy(base: .seconds(1), maximum: .seconds(9), jitter: 7).jitter == 1)
    }
}
