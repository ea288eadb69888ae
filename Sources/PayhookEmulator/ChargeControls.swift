/// The charge side every provider emulator keeps under its lock: the idempotency store, the
/// scripted outcomes and the ledger of executed charges. Opaque outside this module; tests use
/// ``ChargeControls``.
public struct ChargeBook: Sendable {
    var charges = IdempotencyStore()
    var script = ChargeScript()
    var ledger = ChargeLedger()
}

/// Scripting a provider emulator's charges and reading what it executed: the same for the
/// three providers, so written once. The idempotency key is the provider's own (Mercado Pago's
/// `X-Idempotency-Key`, Adyen's `Idempotency-Key`, PXP's `merchantTransactionId`).
public protocol ChargeControls: Sendable {
    /// Runs `body` on the emulator's charge book under the emulator's lock.
    func withChargeBook<R: Sendable>(_ body: (inout ChargeBook) -> R) -> R
}

extension ChargeControls {
    /// Queues outcomes for the next new charges, in order; afterwards the default applies.
    public func scriptCharges(_ results: [EmulatedChargeResult]) {
        withChargeBook { $0.script.queued += results }
    }

    /// The outcome of new charges once the script is empty (initially `.approved`).
    public func setDefaultChargeResult(_ result: EmulatedChargeResult) {
        withChargeBook { $0.script.fallback = result }
    }

    /// How long this provider remembers an idempotency key (nil: forever). A charge resent with
    /// the same key after the window executes again, as at the real provider; the defaults are
    /// in ``ProviderEmulator/Configuration``.
    public func setIdempotencyWindow(_ window: Duration?) {
        withChargeBook { $0.charges.window = window }
    }

    /// Expires every idempotency key this provider holds, at once: the next request with any
    /// earlier key executes a NEW charge, listed in ``allExecutedCharges`` beside the first.
    /// Money tests use it to play a resend after the provider's window, without waiting.
    ///
    /// ```swift
    /// _ = try await client.charge(…, idempotencyKey: "k")   // executes
    /// emulator.pxp.forgetIdempotencyKeys()
    /// _ = try await client.charge(…, idempotencyKey: "k")   // executes again
    /// #expect(emulator.pxp.executedCharges(idempotencyKey: "k") == 2)
    /// ```
    public func forgetIdempotencyKeys() {
        withChargeBook { $0.charges.forgetAll() }
    }

    /// How many times a charge with this idempotency key actually executed.
    public func executedCharges(idempotencyKey: String) -> Int {
        withChargeBook { $0.charges.executions(idempotencyKey) }
    }

    /// How many requests with this idempotency key were answered from the idempotency store.
    public func replayedCharges(idempotencyKey: String) -> Int {
        withChargeBook { $0.charges.replays(idempotencyKey) }
    }

    /// How many charges executed, across all idempotency keys and those sent without one
    /// (replays excluded).
    public var totalExecutedCharges: Int { withChargeBook { $0.ledger.count } }

    /// Every executed charge in execution order, with its idempotency key and reference.
    public var allExecutedCharges: [ExecutedCharge] { withChargeBook { $0.ledger.records } }
}
