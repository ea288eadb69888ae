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

    @Test("a lone caller is flushed at once, alone")
    func alone() async {
        let combiner = BatchCombiner<String, Int>(maxBatch: 8) { inputs in inputs.map(\.count) }
        #expect(await combiner.submit("four") == 4)
        #expect(await combiner.submit("") == 0)
    }
}
