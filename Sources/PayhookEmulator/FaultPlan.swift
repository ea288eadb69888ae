/// Armed faults of one provider, keyed by endpoint name and optional resource id.
///
/// Not thread-safe on its own; each provider emulator keeps it inside its `Mutex`.
struct FaultPlan {
    private struct Entry {
        let endpoint: String
        let id: String?
        let fault: EmulatorFault
        var remaining: Int
    }

    private var entries: [Entry] = []

    mutating func arm(_ fault: EmulatorFault, count: Int, endpoint: String, id: String?) {
        guard count > 0 else { return }
        entries.append(Entry(endpoint: endpoint, id: id, fault: fault, remaining: count))
    }

    /// The fault for this request, consumed once: a fault armed for the exact resource wins
    /// over one armed for the whole endpoint; among equals, the earliest armed.
    mutating func consume(endpoint: String, id: String?) -> EmulatorFault? {
        let index = entries.firstIndex { $0.endpoint == endpoint && $0.id != nil && $0.id == id }
            ?? entries.firstIndex { $0.endpoint == endpoint && $0.id == nil }
        guard let index else { return nil }
        let fault = entries[index].fault
        entries[index].remaining -= 1
        if entries[index].remaining == 0 { entries.remove(at: index) }
        return fault
    }

    mutating func removeAll() { entries.removeAll() }
}
