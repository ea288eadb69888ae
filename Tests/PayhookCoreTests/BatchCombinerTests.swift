import PayhookCore
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

    @Test("a lone caller is flushed at once, alone")
    func alone() async {
        let combiner = BatchCombiner<String, Int>(maxBatch: 8) { inputs in inputs.map(\.count) }
        #expect(await combiner.submit("four") == 4)
        #expect(await combiner.submit("") == 0)
    }
}
