@testable import PayhookCore
import PayhookTestSupport
import Synchronization
import Testing

@Suite("BatchCombiner")
struct BatchCombinerTests {
    /// What the flush saw, for the assertions.
    final class FlushLog: Sendable {
        let batches = Mutex<[[Int]]>([])
        let running = Atomic<Int>(0)
        let overlapped = Atomic<Bool>(false)
    }

    @Test("concurrent callers share flushes, one at a time, each getting the output of its own input")
    func combines() async throws {
        let log = FlushLog()
        let combiner = BatchCombiner<Int, Int>(maxBatch: 8) { inputs in
            if log.running.add(1, ordering: .sequentiallyConsistent).newValue > 1 { log.overlapped.store(true, ordering: .sequentiallyConsistent) }
            try? await Task.sleep(for: .milliseconds(5))
            log.batches.withLock { $0.append(inputs) }
            log.running.subtract(1, ordering: .sequentiallyConsistent)
            return inputs.map { $0 * 10 }
        }
        let outputs = await withTaskGroup(of: (Int, Int).self) { group in
            for input in 0..<100 { group.addTask { (input, await combiner.submit(input)) } }
            return await group.reduce(into: [Int: Int]()) { $0[$1.0] = $1.1 }
        }
        #expect(outputs.count == 100)
        #expect(outputs.allSatisfy { $0.value == $0.key * 10 })
        let batches = log.batches.withLock { $0 }
        #expect(batches.flatMap { $0 }.sorted() == Array(0..<100))
        #expect(batches.allSatisfy { $0.count <= 8 })
        // 100 callers against 5 ms flushes: far fewer flushes than callers.
        #expect(batches.count < 50)
        let overlapped = log.overlapped.load(ordering: .sequentiallyConsistent)
        #expect(!overlapped)
    }

    @Test("with several flush slots, flushes overlap up to the limit and never beyond; every caller is answered")
    func severalFlushes() async {
        let log = FlushLog()
        let peak = Mutex(0)
        let combiner = BatchCombiner<Int, Int>(maxBatch: 4, maxFlushes: 3) { inputs in
            let running = log.running.add(1, ordering: .sequentiallyConsistent).newValue
            peak.withLock { $0 = max($0, running) }
            try? await Task.sleep(for: .milliseconds(20))
            log.running.subtract(1, ordering: .sequentiallyConsistent)
            return inputs.map { -$0 }
        }
        let outputs = await withTaskGroup(of: Bool.self) { group in
            for input in 0..<60 { group.addTask { await combiner.submit(input) == -input } }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outputs.count == 60 && outputs.allSatisfy { $0 })
        #expect(peak.withLock { $0 } <= 3)
        #expect(peak.withLock { $0 } >= 2)
    }

    /// Holds every flush until `release()`, recording the batches.
    final class FlushGate: Sendable {
        let batches = Mutex<[[Int]]>([])
        private let held = Mutex<(released: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

        func hold(_ inputs: [Int]) async {
            batches.withLock { $0.append(inputs) }
            await withCheckedContinuation { continuation in
                let passNow = held.withLock { held in
                    if held.released { return true }
                    held.waiting.append(continuation)
                    return false
                }
                if passNow { continuation.resume() }
            }
        }

        func release() {
            let waiting = held.withLock { held in
                held.released = true
                defer { held.waiting = [] }
                return held.waiting
            }
            for continuation in waiting { continuation.resume() }
        }
    }

    @Test("a flush starts beside a running one only once minConcurrentBatch inputs are ready; fewer wait for it")
    func concurrentFlushThreshold() async throws {
        let gate = FlushGate()
        let combiner = BatchCombiner<Int, Int>(maxBatch: 16, maxFlushes: 3, minConcurrentBatch: 3) { inputs in
            await gate.hold(inputs)
            return inputs.map { $0 + 100 }
        }
        let first = Task { await combiner.submit(0) }
        #expect(await eventually { gate.batches.withLock { $0 } == [[0]] })
        let second = Task { await combiner.submit(1) }
        #expect(await eventually { combiner.waitingCount == 1 })
        let third = Task { await combiner.submit(2) }
        #expect(await eventually { combiner.waitingCount == 2 })
        // Two inputs ready, a slot free, yet no second flush: below the threshold.
        #expect(gate.batches.withLock { $0 } == [[0]])
        let fourth = Task { await combiner.submit(3) }
        #expect(await eventually { gate.batches.withLock { $0 }.count == 2 })
        #expect(gate.batches.withLock { $0 }[1] == [3, 1, 2])
        #expect(combiner.waitingCount == 0)
        gate.release()
        #expect(await [first.value, second.value, third.value, fourth.value] == [100, 101, 102, 103])
    }

    @Test("a lone caller is flushed at once, alone")
    func alone() async {
        let combiner = BatchCombiner<String, Int>(maxBatch: 8) { inputs in inputs.map(\.count) }
        #expect(await combiner.submit("four") == 4)
        #expect(await combiner.submit("") == 0)
    }
}
