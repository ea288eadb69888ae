/// The scripted outcomes of one provider's charges: a FIFO queue, then a default.
///
/// Not thread-safe on its own; kept inside the provider emulator's `Mutex`.
struct ChargeScript {
    var queued: [EmulatedChargeResult] = []
    var fallback: EmulatedChargeResult = .approved

    mutating func next() -> EmulatedChargeResult {
        queued.isEmpty ? fallback : queued.removeFirst()
    }
}
