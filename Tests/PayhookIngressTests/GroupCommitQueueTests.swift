import Synchronization
import Testing
@testable import PayhookIngress
import PayhookTestSupport

@Suite("GroupCommitQueue")
struct GroupCommitQueueTests {
    final class Flushes: Sendable {
        let batches = Mutex<[[Int]]>([])
        var all: [[Int]] { batches.withLock { $0 } }
    }

    @Test("items queued while a flush runs are taken together by the next flush")
    func batchesWhileBusy() async {
        let flushes = Flushes()
        let firstFlushEntered = Latch()
        let releaseFirstFlush = Latch()
        let queue = GroupCommitQueue<Int>(maxBatch: 100, capacity: 1000) { batch in
            let isFirst = flushes.batches.withLock { batches in
                batches.append(batch)
                return batches.count == 1
            }
            if isFirst {
                firstFlushEntered.open()
                await releaseFirstFlush.wait()
            }
        }
        let worker = Task { await queue.runWorker() }
        #expect(queue.submit(0))
        await firstFlushEntered.wait()
        for item in 1...50 { #expect(queue.submit(item)) }
        releaseFirstFlush.open()
        queue.stop()
        await worker.value
        #expect(flushes.all == [[0], Array(1...50)])
    }

    @Test("a batch never exceeds maxBatch, and every item is flushed exactly once")
    func respectsMaxBatch() async {
        let flushes = Flushes()
        let queue = GroupCommitQueue<Int>(maxBatch: 7, capacity: 1000) { batch in
            flushes.batches.withLock { $0.append(batch) }
        }
        for item in 0..<100 { #expect(queue.submit(item)) }
        queue.stop()
        await queue.runWorker()
        #expect(flushes.all.allSatisfy { $0.count <= 7 })
        #expect(flushes.all.flatMap { $0 } == Array(0..<100))
    }

    @Test("a full or stopped queue refuses items instead of growing without bound")
    func refusesWhenFullOrStopped() async {
        let queue = GroupCommitQueue<Int>(maxBatch: 10, capacity: 3) { _ in }
        #expect(queue.submit(1))
        #expect(queue.submit(2))
        #expect(queue.submit(3))
        #expect(!queue.submit(4))
        #expect(queue.depth == 3)
        queue.stop()
        #expect(!queue.submit(5))
        await queue.runWorker()
        #expect(queue.depth == 0)
    }

    @Test("several workers drain one queue with each item flushed once")
    func severalWorkers() async {
        let flushes = Flushes()
        let queue = GroupCommitQueue<Int>(maxBatch: 5, capacity: 10_000) { batch in
            flushes.batches.withLock { $0.append(batch) }
            await Task.yield()
        }
        let workers = (0..<3).map { _ in Task { await queue.runWorker() } }
        for item in 0..<1000 { #expect(queue.submit(item)) }
        queue.stop()
        for worker in workers { await worker.value }
        #expect(flushes.all.flatMap { $0 }.sorted() == Array(0..<1000))
    }

    @Test("a flush starts beside a running one only once enough items wait", arguments: [
        // (queued, flushing, stopped, may start)
        (0, 0, false, false),
        (1, 0, false, true),
        (1, 1, false, false),
        (63, 1, false, false),
        (64, 1, false, true),
        (200, 1, false, true),
        (1, 1, true, true),
        (0, 1, true, false),
    ])
    func concurrentFlushThreshold(queued: Int, flushing: Int, stopped: Bool, mayStart: Bool) {
        #expect(GroupCommitQueue<Int>.mayStartFlush(
            queued: queued, flushing: flushing, stopped: stopped, minConcurrentBatch: 64) == mayStart)
    }

    @Test("items too few for a concurrent flush are taken when the running flush ends")
    func fewItemsWaitForRunningFlush() async {
        let flushes = Flushes()
        let firstFlushEntered = Latch()
        let releaseFirstFlush = Latch()
        let secondFlushDone = Latch()
        let queue = GroupCommitQueue<Int>(maxBatch: 100, capacity: 1000, minConcurrentBatch: 10) { batch in
            let count = flushes.batches.withLock { batches in
                batches.append(batch)
                return batches.count
            }
            if count == 1 {
                firstFlushEntered.open()
                await releaseFirstFlush.wait()
            }
            if count == 2 { secondFlushDone.open() }
        }
        let workers = (0..<2).map { _ in Task { await queue.runWorker() } }
        #expect(queue.submit(0))
        await firstFlushEntered.wait()
        for item in 1...3 { #expect(queue.submit(item)) }
        releaseFirstFlush.open()
        await secondFlushDone.wait()
        queue.stop()
        for worker in workers { await worker.value }
        #expect(flushes.all == [[0], [1, 2, 3]])
    }
}
