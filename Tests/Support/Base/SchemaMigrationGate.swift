import Foundation
import PayhookCore

/// Lets a few schema migrations run at once across the whole test run, first come first served.
///
/// Why: nearly every suite migrates a fresh schema as it starts, and they all start together.
/// A migration is about 0.2 s of PostgreSQL CPU (mostly CREATE TABLE), so 150 of them at once
/// kept the database busy for the first ~30 s of a run, and every migration in flight finished
/// only near the end of that crush. A `payhook serve --migrate` child started then could not
/// report its port within its startup window on a slower CI machine. Queued in order, each
/// migration finishes in turn, and a child's startup waits for the few ahead of it, not for all.
public enum SchemaMigrationGate {
    /// Twice the cores: a migration is a series of round trips, so one per core leaves the
    /// server idle between statements.
    public static let width = max(2, 2 * ProcessInfo.processInfo.activeProcessorCount)

    private static let slots = AsyncSemaphore(permits: width)

    /// Runs `body` once fewer than `width` gated bodies are running; waiters go in arrival order.
    /// A task cancelled while waiting throws `CancellationError` without running `body`.
    @discardableResult
    public static func run<T>(_ body: () async throws -> T) async throws -> T {
        guard await slots.acquire() else { throw CancellationError() }
        defer { slots.release() }
        return try await body()
    }
}
