import COpenSSL

/// Keyed-hash message authentication codes (RFC 2104) computed by OpenSSL.
///
/// Uses OpenSSL's one-shot `HMAC()`, which is not deprecated in 3.0 (the `HMAC_CTX_*` family
/// is). Compare a computed code with a received one through ``ConstantTime/equals(_:_:)``,
/// never with `==`:
///
/// ```swift
/// HMAC.authenticationCode(key: k, message: m) == received          // wrong: leaks timing
/// ConstantTime.equals(HMAC.authenticationCode(key: k, message: m), received)  // right
/// ```
public enum HMAC {
    /// Computes the HMAC of `message` under `key`.
    ///
    /// Safe to call from any thread; no state is shared between calls.
    /// - Parameters:
    ///   - algorithm: the underlying hash; SHA-256 unless a provider says otherwise.
    ///   - key: the secret key bytes; any length, including empty.
    ///   - message: the bytes to authenticate.
    /// - Returns: `algorithm.digestLength` bytes.
    public static func authenticationCode(
        _ algorithm: HashAlgorithm = .sha256, key: [UInt8], message: [UInt8]
    ) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var outputLength: UInt32 = 0
        // An empty Swift array may hand C a null pointer, which OpenSSL does not always treat
        // like a zero-length buffer; pass a real one-byte buffer with a length of zero instead.
        let keyBytes: [UInt8] = key.isEmpty ? [0] : key
        let messageBytes: [UInt8] = message.isEmpty ? [0] : message
        let keyLength = Int32(clamping: key.count)
        let messageLength = message.count
        let ok = keyBytes.withUnsafeBytes { keyBuffer in
            messageBytes.withUnsafeBufferPointer { messageBuffer in
                output.withUnsafeMutableBufferPointer { outputBuffer in
                    COpenSSL.HMAC(
                        algorithm.evpMD, keyBuffer.baseAddress, keyLength,
                        messageBuffer.baseAddress, messageLength,
                        outputBuffer.baseAddress, &outputLength) != nil
                }
            }
        }
        // HMAC() fails only when OpenSSL cannot allocate or lacks the digest: an environment
        // fault, never caused by input. An empty result would be dangerous (it could equal an
        // empty received signature), so stop instead of returning something wrong.
        guard ok, Int(outputLength) == algorithm.digestLength else {
            preconditionFailure("OpenSSL HMAC(\(algorithm.rawValue)) failed")
        }
        return Array(output.prefix(Int(outputLength)))
    }
}
