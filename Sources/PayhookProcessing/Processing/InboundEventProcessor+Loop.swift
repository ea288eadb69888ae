import Foundation
import PayhookCore
import PayhookPostgres
import PayhookProviders
import PayhookQueue
import Synchronization

/// The claim loops: workers, wake-ups and stopping.
extension InboundEventProcessor {
    // MARK: Loop

    /// Runs the workers until ``stop()``.
    package func run() async {
        let workerCount = max(1, settings.workers)
        var streams: [AsyncStream<Void>] = []
        let registered: Bool = control.withLock { control in
            guard !control.stopped else { return false }
            for _ in 0..<workerCount {
                let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
                continuation.yield()  // look once at start: rows may be waiting already
                control.wakers.append(continuation)
                streams.append(stream)
            }
            return true
        }
        guard registered else { return }
        let listener = conninfo.map { PostgresListener.start(conninfo: $0, channels: [Self.channel]) }
        await withTaskGroup(of: Void.self) { group in
            if let listener {
                group.addTask {
                    for await _ in listener.notifications { self.wake() }
                }
            }
            // The fallback poll, for missed notifications and retries whose time has come; the
            // start already looked once, so the first poll is one interval later.
            group.addTask {
                await PeriodicLoop().run(every: self.settings.pollInterval, first: .afterInterval) { self.wake() }
            }
            await withTaskGroup(of: Void.self) { workers in
                for (index, stream) in streams.enumerated() {
                    guard settings.threads == .dedicated else {
                        workers.addTask { await self.work(stream) }
                        continue
                    }
                    // Each claim loop on a thread of its own: it issues a few statements per
                    // event and blocks in libpq for each, as a single-threaded process would
                    // (DedicatedThreadExecutor says why; docs/decisions/0007).
                    let executor = DedicatedThreadExecutor(name: "processor-\(index)")
                    workers.addTask(executorPreference: executor) {
                        await self.work(stream)
                        executor.shutdown()
                    }
                }
            }
            listener?.stop()
            group.cancelAll()
        }
    }

    /// Stops taking new batches; batches in progress commit, then `run` returns.
    package func stop() {
        let wakers = control.withLock { control in
            control.stopped = true
            let wakers = control.wakers
            control.wakers = []
            return wakers
        }
        for waker in wakers { waker.finish() }
    }

    private var isStopped: Bool { control.withLock { $0.stopped } }

    private func wake() {
        let wakers = control.withLock { $0.wakers }
        for waker in wakers { waker.yield() }
    }

    private func work(_ wakes: AsyncStream<Void>) async {
        await Self.claimLoop(wakes: wakes, batchSize: settings.batchSize, backoff: settings.batchFailureBackoff,
                             isStopped: { self.isStopped },
                             batch: { try await self.processBatch() },
                             afterFailure: { error, pause in
            self.logger.error("inbound event batch failed", ["error": .string(String(describing: error))])
            try? await Task.sleep(for: pause)
        })
    }

    /// One worker's claim loop: on each wake, runs batches while they come back full.
    ///
    /// When a batch fails as a whole (the database is unreachable), `afterFailure` gets the error
    /// and how long to pause, rather than spin; the next wake or poll tries again. The pause grows
    /// by `backoff` with each consecutive failed batch, whichever wake ran it.
    /// Separate from the processor so that tests drive it with scripted batches and record the
    /// pauses instead of sleeping.
    static func claimLoop(wakes: AsyncStream<Void>, batchSize: Int, backoff: RetryPolicy, isStopped: () -> Bool,
                          batch: () async throws -> BatchOutcome,
                          afterFailure: (any Error, Duration) async -> Void) async {
        var consecutiveFailures = 0
        for await _ in wakes {
            while !isStopped() {
                do {
                    let outcome = try await batch()
                    consecutiveFailures = 0
                    if outcome.claimed < batchSize { break }
                } catch {
                    consecutiveFailures += 1
                    await afterFailure(error, backoff.delay(afterAttempt: consecutiveFailures, unitRandom: 1))
                    break
                }
            }
        }
    }
}
