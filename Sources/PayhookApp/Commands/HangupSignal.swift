import Dispatch
import Foundation

/// Runs an action on every SIGHUP (`systemctl reload` sends one through the unit's ExecReload),
/// instead of the default, which ends the process.
///
/// Read through a Dispatch source, so the action runs on a normal queue, not in signal context.
final class HangupSignal: Sendable {
    // Safe as `nonisolated(unsafe)`: written once in init, only cancelled afterwards.
    nonisolated(unsafe) private var source: (any DispatchSourceSignal)?

    init(_ action: @escaping @Sendable () -> Void) {
        signal(SIGHUP, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        source.setEventHandler(handler: action)
        source.resume()
        self.source = source
    }

    /// Stops listening; a later SIGHUP is ignored (not fatal) while the process shuts down.
    func cancel() {
        source?.cancel()
    }
}
