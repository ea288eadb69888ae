import Dispatch
import Foundation
import Synchronization

/// Turns the first SIGTERM or SIGINT into the start of a graceful shutdown.
///
/// The default handlers are ignored and the signals are read through Dispatch sources, so the
/// handler code runs on a normal queue rather than in signal context.
final class ShutdownSignal: Sendable {
    private let state = Mutex<(fired: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    // Sources must stay alive for as long as the process listens for the signals.
    // Safe as `nonisolated(unsafe)`: written once in init, never mutated afterwards.
    nonisolated(unsafe) private var sources: [any DispatchSourceSignal] = []

    init() {
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [weak self] in self?.fire() }
            source.resume()
            sources.append(source)
        }
    }

    private func fire() {
        let waiters = state.withLock { state in
            state.fired = true
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let firedAlready = state.withLock { state in
                if state.fired { return true }
                state.waiters.append(continuation)
                return false
            }
            if firedAlready { continuation.resume() }
        }
    }
}
