import PayhookFeatureTestSupport
import PayhookTestSupport
import Synchronization
@testable import PayhookApp

extension PayhookCLI {
    /// Runs `payhook <arguments>` in this process with exactly `environment`, capturing what it
    /// writes; the result reads as `PayhookBinary.run`'s does, so a test asserts the same either way.
    ///
    /// For everything but the executable's own wiring (stdout, stderr and exit status reaching
    /// the parent) and what needs a separate process (signals, concurrent processes, crashes).
    static func capture(_ arguments: [String], environment: [String: String] = [:]) async -> Subprocess.Captured {
        let standardOutput = CapturedText()
        let standardError = CapturedText()
        let status = await run(arguments, environment: environment,
                               output: CommandOutput(standardOutput: standardOutput.append, standardError: standardError.append))
        return Subprocess.Captured(termination: .exited(status), standardOutput: standardOutput.text, standardError: standardError.text)
    }
}

/// Text written to one captured stream.
private final class CapturedText: Sendable {
    private let written = Mutex("")

    @Sendable func append(_ text: String) { written.withLock { $0 += text } }
    var text: String { written.withLock { $0 } }
}
