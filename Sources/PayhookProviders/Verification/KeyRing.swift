import Foundation
import PayhookCrypto

/// The secrets a verifier accepts: the first is current, the rest are still accepted while a
/// rotation is in progress.
///
/// Its descriptions never show key material (`KeyRing(2 keys)`), so a ring interpolated into a
/// log line or dumped in a test failure leaks nothing.
public struct KeyRing: Sendable {
    /// Raw key bytes, current key first.
    public let keys: [[UInt8]]
    /// The same keys prepared for HMAC, per algorithm, in ring order: verifiers check every
    /// delivery against them, and a prepared key skips OpenSSL's per-call key setup.
    let hmacKeys: [HashAlgorithm: [HMACKey]]

    /// A ring of already-decoded keys. An empty ring verifies nothing.
    public init(keys: [[UInt8]]) {
        self.keys = keys
        var prepared: [HashAlgorithm: [HMACKey]] = [:]
        for algorithm in HashAlgorithm.allCases {
            prepared[algorithm] = keys.map { HMACKey(algorithm, key: $0) }
        }
        self.hmacKeys = prepared
    }
}

extension KeyRing: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `KeyRing(n keys)`; never the key material.
    public var description: String { "KeyRing(\(keys.count) key\(keys.count == 1 ? "" : "s"))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["count": keys.count]) }
}

/// How configured key strings are turned into bytes.
///
/// Mercado Pago secrets are used as UTF-8 text, Adyen HMAC keys are hex, PXP is UNCONFIRMED
/// (UTF-8 assumed), so the encoding is part of configuration.
public enum KeyEncoding: String, Sendable, CaseIterable {
    /// The configured text's UTF-8 bytes (Mercado Pago, PXP by assumption).
    case utf8
    /// Hex digits, either case (Adyen).
    case hex
    /// Standard padded base64.
    case base64
}

/// Why a key ring could not be read from configuration. Names the entry, never its content.
public struct KeyRingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The closed set of problems.
    public enum Code: String, Sendable {
        /// No keys at all.
        case empty
        /// An entry that is empty after trimming (e.g. `a,,b` or a trailing comma).
        case emptyEntry = "empty_entry"
        /// An entry that is not valid text in the configured ``KeyEncoding``.
        case invalidEncoding = "invalid_encoding"
    }

    /// What is wrong.
    public let code: Code
    /// 1-based position of the offending entry, when there is one.
    public let position: Int?
    /// How many entries the configured value had.
    public let entryCount: Int
    /// The encoding that was expected.
    public let encoding: KeyEncoding

    /// A message fit for logs and CLI output: position and encoding only.
    public var description: String {
        switch code {
        case .empty:
            "key ring is empty"
        case .emptyEntry:
            "key ring entry \(position ?? 0) of \(entryCount) is empty"
        case .invalidEncoding:
            "key ring entry \(position ?? 0) of \(entryCount) is not valid \(encoding.rawValue)"
        }
    }
}

extension KeyRing {
    /// Reads a comma-separated list of keys from configuration, current key first.
    ///
    /// Spaces and newlines around each entry are trimmed (values often come from files that
    /// end with a newline).
    /// - Throws: ``KeyRingError`` naming the first bad entry by position; the message never
    ///   contains key material.
    public static func parse(_ commaSeparated: String, encoding: KeyEncoding) throws(KeyRingError) -> KeyRing {
        let entries = commaSeparated.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        if entries.allSatisfy(\.isEmpty) && entries.count == 1 {
            throw KeyRingError(code: .empty, position: nil, entryCount: 0, encoding: encoding)
        }
        var keys: [[UInt8]] = []
        for (offset, entry) in entries.enumerated() {
            guard !entry.isEmpty else {
                throw KeyRingError(code: .emptyEntry, position: offset + 1, entryCount: entries.count, encoding: encoding)
            }
            do throws(EncodingError) {
                switch encoding {
                case .utf8: keys.append(Array(entry.utf8))
                case .hex: keys.append(try Hex.decode(entry))
                case .base64: keys.append(try Base64.decode(entry))
                }
            } catch {
                throw KeyRingError(code: .invalidEncoding, position: offset + 1, entryCount: entries.count, encoding: encoding)
            }
        }
        return KeyRing(keys: keys)
    }
}
