@testable import PayhookCore
import Synchronization
import Testing

@Suite("ServiceGroup")
struct ServiceGroupTests {
    /// What happened, in order, across every service of one test.
    final class Journal: Sendable {
        let entries = Mutex<[String]>([])
        func note(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    /// Runs until stopped, or returns at once when `endsAlone`.
    final class Part: Service {
        let serviceName: String
        let journal: Journal
        let endsAlone: Bool
        let notesIntake: Bool
        private let stopped = Mutex<CheckedContinuation<Void, Never>?>(nil)
        private let stopRequested = Atomic<Bool>(false)

        init(_ name: String, journal: Journal, endsAlone: Bool = false, notesIntake: Bool = false) {
            self.serviceName = name
            self.journal = journal
            self.endsAlone = endsAlone
            self.notesIntake = notesIntake
        }

        func stopIntake() {
            if notesIntake { journal.note("\(serviceName) intake stopped") }
        }

        func run() async {
            if endsAlone {
                journal.note("\(serviceName) ended")
                return
            }
            await withCheckedContinuation { continuation in
                let stopNow = stopped.withLock { waiting -> Bool in
                    if stopRequested.load(ordering: .sequentiallyConsistent) { return true }
                    waiting = continuation
                    return false
                }
                if stopNow { continuation.resume() }
            }
            journal.note("\(serviceName) returned")
        }

        func stop() {
            journal.note("\(serviceName) stopped")
            let waiting = stopped.withLock { waiting -> CheckedContinuation<Void, Never>? in
                stopRequested.store(true, ordering: .sequentiallyConsistent)
                defer { waiting = nil }
                return waiting
            }
            waiting?.resume()
        }
    }

    @Test("a requested shutdown stops every service in the order given and waits for each")
    func requestedShutdown() async {
        let journal = Journal()
        let services = ["writer", "processor", "worker"].map { Part($0, journal: journal) }
        let ending = await ServiceGroup(services, logger: .silent).run(until: {}) { journal.note("listeners closed") }
        #expect(ending == .requested)
        let entries = journal.all
        #expect(Array(entries.prefix(4)) == ["listeners closed", "writer stopped", "processor stopped", "worker stopped"])
        #expect(Set(entries.dropFirst(4)) == ["writer returned", "processor returned", "worker returned"])
    }

    @Test("a service that ends on its own stops the others, and the group says which one ended")
    func serviceEndingEarly() async {
        let journal = Journal()
        let services = [Part("writer", journal: journal), Part("processor", journal: journal, endsAlone: true),
                        Part("worker", journal: journal)]
        // The shutdown signal never comes: only the processor's ending can end this run.
        let ending = await ServiceGroup(services, logger: .silent).run(until: {
            try? await Task.sleep(for: .seconds(3600))
        })
        #expect(ending == .serviceEnded("processor"))
        let entries = journal.all
        #expect(entries.first == "processor ended")
        #expect(entries.filter { $0.hasSuffix("stopped") } == ["writer stopped", "processor stopped", "worker stopped"])
        #expect(entries.contains("writer returned") && entries.contains("worker returned"))
    }

    @Test("shutdown stops every intake first, then stops each stage only once every service of the stage before has returned")
    func stagedShutdown() async throws {
        let journal = Journal()
        let part = { (name: String) in Part(name, journal: journal, notesIntake: true) }
        let stages = [[part("writer"), part("worker")], [part("listener"), part("client")], [part("pool")]]
        let ending = await ServiceGroup(stages: stages, logger: .silent).run(until: {})
        #expect(ending == .requested)
        let entries = journal.all
        #expect(Array(entries.prefix(5)) == ["writer", "worker", "listener", "client", "pool"].map { "\($0) intake stopped" })
        func position(_ entry: String) throws -> Int { try #require(entries.firstIndex(of: entry)) }
        for earlier in ["writer returned", "worker returned"] {
            #expect(try position(earlier) < position("listener stopped"))
        }
        for earlier in ["listener returned", "client returned"] {
            #expect(try position(earlier) < position("pool stopped"))
        }
        #expect(try position("listener stopped") < position("client stopped"))
        #expect(entries.last == "pool returned")
    }
}
