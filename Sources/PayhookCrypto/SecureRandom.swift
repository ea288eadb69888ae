import COpenSSL

/// Cryptographically secure random bytes from OpenSSL's DRBG.
public enum SecureRandom {
    /// Returns `count` bytes from `RAND_bytes`.
    ///
    /// Traps if OpenSSL cannot seed its generator: handing out predictable bytes for keys or
    /// tokens would be worse than stopping. This is an environment fault, not an input error.
    public static func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0, "SecureRandom.bytes: negative count")
        guard count > 0 else { return [] }
        var output = [UInt8](repeating: 0, count: count)
        let status = output.withUnsafeMutableBufferPointer { buffer in
            RAND_bytes(buffer.baseAddress, Int32(clamping: buffer.count))
        }
        guard status == 1, count <= Int(Int32.max) else {
            preconditionFailure("OpenSSL RAND_bytes failed")
        }
        return output
    }
}
