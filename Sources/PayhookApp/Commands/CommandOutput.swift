import Foundation

/// Where a command writes: results to standard output, problems to standard error.
///
/// Commands take it instead of calling `print`, so a test runs a command line in its own process
/// and reads what it wrote; the `payhook` executable passes `standard`.
public struct CommandOutput: Sendable {
    private let writeOutput: @Sendable (String) -> Void
    private let writeError: @Sendable (String) -> Void

    /// An output whose two streams go to `standardOutput` and `standardError`, one call per
    /// message, text exactly as the command wrote it.
    public init(standardOutput: @escaping @Sendable (String) -> Void, standardError: @escaping @Sendable (String) -> Void) {
        writeOutput = standardOutput
        writeError = standardError
    }

    /// The process's own streams: standard output through `print`'s buffered stream (flushed
    /// when the process exits), standard error written at once.
    public static let standard = CommandOutput(
        standardOutput: { Swift.print($0, terminator: "") },
        standardError: { FileHandle.standardError.write(Data($0.utf8)) })

    /// Writes `text` and `terminator` to standard output.
    func print(_ text: String, terminator: String = "\n") {
        writeOutput(text + terminator)
    }

    /// Writes `text` and `terminator` to standard error.
    func printError(_ text: String, terminator: String = "\n") {
        writeError(text + terminator)
    }
}
