import COpenSSL

/// Comparisons whose running time does not depend on where the inputs differ.
public enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes, compared with OpenSSL's `CRYPTO_memcmp`.
    ///
    /// Inputs of different lengths are unequal at once: lengths of signatures are public, so
    /// only the contents need protecting. Two empty inputs are equal; callers verifying a
    /// signature must reject an empty received value before comparing.
    public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { aBuffer in
            b.withUnsafeBytes { bBuffer in
                CRYPTO_memcmp(aBuffer.baseAddress, bBuffer.baseAddress, aBuffer.count) == 0
            }
        }
    }
}
