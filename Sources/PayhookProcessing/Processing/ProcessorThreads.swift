/// Where processor workers run; docs/decisions/0007-processor-workers-on-own-threads.md.
public enum ProcessorThreads: String, CaseIterable, Sendable {
    /// A thread per worker, blocking in libpq: one process with W workers drains like W
    /// processes on a machine with CPU to spare.
    case dedicated
    /// The shared cooperative pool, every statement handed to its connection's queue and back:
    /// more CPU per event, but many short-lived threads, which a machine saturated by other
    /// processes schedules sooner than one busy thread per worker (bench/README.md).
    case shared
}
