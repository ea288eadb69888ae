import COpenSSL

/// Unkeyed message digests computed by OpenSSL.
public enum Digest {
    /// Hashes `data` with `algorithm` using OpenSSL's one-shot `EVP_Digest`.
    ///
    /// Used for dedup keys over raw bodies and for shortening long identifiers; do not use a
    /// plain digest where an authentication code is needed (see ``HMAC``).
    /// - Returns: `algorithm.digestLength` bytes.
    public static func hash(_ algorithm: HashAlgorithm, _ data: [UInt8]) -> [UInt8] {
        // Never hand C a null pointer for empty input (see HMAC).
        let dataBytes: [UInt8] = data.isEmpty ? [0] : data
        let dataLength = data.count
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Int(EVP_MAX_MD_SIZE)) { output in
            var outputLength: UInt32 = 0
            let status = dataBytes.withUnsafeBytes { dataBuffer in
                EVP_Digest(dataBuffer.baseAddress, dataLength, output.baseAddress, &outputLength, algorithm.evpMD, nil)
            }
            // As with HMAC: failure means OpenSSL itself is broken, never bad input.
            guard status == 1, Int(outputLength) == algorithm.digestLength else {
                preconditionFailure("OpenSSL EVP_Digest(\(algorithm.rawValue)) failed")
            }
            return Array(output[..<Int(outputLength)])
        }
    }
}
