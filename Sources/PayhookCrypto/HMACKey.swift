import COpenSSL
import Synchronization

/// An HMAC key prepared once and used for many messages.
///
/// Why: ``HMAC/authenticationCode(_:key:message:)`` fetches the algorithm, builds a context and
/// runs the key schedule on every call; a verifier checks every delivery against the same few
/// keys, so this keeps keyed OpenSSL contexts (`EVP_MAC`) and only restarts one per message.
/// The result is byte for byte the one-shot function's.
///
/// Threading: safe from any thread. Each call borrows a context from a small pool under a
/// `Mutex` (making one when all are in use) and returns it afterwards, so concurrent callers
/// never share a context.
///
/// ```swift
/// HMAC.authenticationCode(.sha256, key: secret, message: m)   // key schedule per message
/// let key = HMACKey(.sha256, key: secret)                       // once, at configuration time
/// key.authenticationCode(m)                                     // then per message
/// ```
public final class HMACKey: Sendable, CustomStringConvertible, CustomReflectable {
    /// The underlying hash.
    public let algorithm: HashAlgorithm
    private let key: [UInt8]
    private let idle = Mutex<[HMACContext]>([])
    /// Contexts kept for reuse; more are made when callers overlap, and freed on return.
    private static let poolLimit = 8

    /// Never the key: `HMACKey(sha256)`.
    public var description: String { "HMACKey(\(algorithm))" }
    /// Reflection (`dump`, `Mirror`) shows the algorithm only; by default it would list `key`.
    public var customMirror: Mirror { Mirror(self, children: ["algorithm": algorithm]) }

    /// Keeps a copy of `key`; no OpenSSL work happens until the first message.
    public init(_ algorithm: HashAlgorithm = .sha256, key: [UInt8]) {
        self.algorithm = algorithm
        self.key = key
    }

    /// The HMAC of `message`: `algorithm.digestLength` bytes, equal to
    /// `HMAC.authenticationCode(algorithm, key: key, message: message)`.
    public func authenticationCode(_ message: [UInt8]) -> [UInt8] {
        guard let context = idle.withLock({ $0.popLast() }) ?? HMACContext(algorithm, key: key) else {
            return HMAC.authenticationCode(algorithm, key: key, message: message)
        }
        guard let code = context.authenticationCode(message, length: algorithm.digestLength) else {
            // OpenSSL refused to restart the context (an environment fault): drop it and let
            // the one-shot function answer, which traps if OpenSSL itself is broken.
            return HMAC.authenticationCode(algorithm, key: key, message: message)
        }
        idle.withLock { contexts in
            if contexts.count < Self.poolLimit { contexts.append(context) }
        }
        return code
    }
}

/// Owns one keyed `EVP_MAC_CTX`.
///
/// `@unchecked Sendable` invariant: a context is used by one caller at a time: it is either
/// listed in an `HMACKey`'s pool (behind its `Mutex`) or borrowed by exactly one call.
private final class HMACContext: @unchecked Sendable {
    private let pointer: OpaquePointer

    init?(_ algorithm: HashAlgorithm, key: [UInt8]) {
        // Never hand C a null key pointer: for EVP_MAC_init that means "keep the old key".
        let keyBytes: [UInt8] = key.isEmpty ? [0] : key
        let created = keyBytes.withUnsafeBufferPointer { buffer in
            payhook_hmac_context_new(algorithm.openSSLName, buffer.baseAddress, key.count)
        }
        guard let created else { return nil }
        pointer = created
    }

    deinit {
        EVP_MAC_CTX_free(pointer)
    }

    /// `nil` if OpenSSL fails, which only an environment fault can cause.
    func authenticationCode(_ message: [UInt8], length: Int) -> [UInt8]? {
        let messageBytes: [UInt8] = message.isEmpty ? [0] : message
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Int(EVP_MAX_MD_SIZE)) { output -> [UInt8]? in
            var written = 0
            let ok = messageBytes.withUnsafeBufferPointer { buffer in
                payhook_hmac_context_compute(pointer, buffer.baseAddress, message.count, output.baseAddress, output.count, &written)
            }
            guard ok == 1, written == length else { return nil }
            return Array(output[..<written])
        }
    }
}
