import PayhookCore
import PayhookPostgres
import Synchronization

/// Records successes in batches: every job finished while a batch is being written goes into
/// the next one, so under load one statement completes many jobs.
///
/// Threading: `complete` is called from handler tasks; `run` is the worker's single flusher task.
final class CompletionBatcher: Sendable {
    private struct Pending {
        let job: Job
        let continuation: CheckedContinuation<Bool?, Never>
    }

    private struct State {
        var pending: [Pending] = []
        var closed = false
        var batches = 0
        var jobs = 0
    }

    /// Statements run and jobs completed by them.
    var statistics: (batches: Int, jobs: Int) { state.withLock { ($0.batches, $0.jobs) } }

    private static let maxBatch = 1000
    private let queue: JobQueue
    private let logger: Logger
    private let state = Mutex(State())
    private let signal: AsyncStream<Void>
    private let signalContinuation: AsyncStream<Void>.Continuation

    init(queue: JobQueue, logger: Logger) {
        self.queue = queue
        self.logger = logger
        (signal, signalContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Waits until the job's success is written. Returns true when written, false when the claim
    /// was lost, nil when the database could not be reached (or the flusher has stopped).
    func complete(_ job: Job) async -> Bool? {
        await withCheckedContinuation { continuation in
            let accepted = state.withLock { state in
                guard !state.closed else { return false }
                state.pending.append(Pending(job: job, continuation: continuation))
                return true
            }
            if accepted { signalContinuation.yield(()) } else { continuation.resume(returning: nil) }
        }
    }

    /// Flushes until cancelled; then answers anything still pending with nil.
    func run() async {
        for await _ in signal {
            while true {
                let batch: [Pending] = state.withLock { state in
                    let count = min(state.pending.count, Self.maxBatch)
                    defer { state.pending.removeFirst(count) }
                    return Array(state.pending.prefix(count))
                }
                if batch.isEmpty { break }
                let jobs = batch.map(\.job)
                let done = await JobWorker.persist("completing jobs", logger: logger) { () throws(PostgresError) in
                    try await self.queue.complete(jobs)
                }
                state.withLock { state in
                    state.batches += 1
                    state.jobs += done?.count ?? 0
                }
                for item in batch { item.continuation.resume(returning: done.map { $0.contains(item.job.id) }) }
            }
        }
        let left = state.withLock { state in
            state.closed = true
            defer { state.pending = [] }
            return state.pending
        }
        for item in left { item.continuation.resume(returning: nil) }
    }
}
