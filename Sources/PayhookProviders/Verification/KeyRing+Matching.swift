import PayhookCrypto

extension KeyRing {
    /// The index of the first key whose HMAC of `message` equals `signature`, or `nil`.
    ///
    /// Every comparison is constant-time. The loop stops at the first match, which reveals
    /// only which key matched (the same fact ``VerifiedDelivery/keyIndex`` reports), never
    /// how much of a signature was right.
    func indexOfKey(signing message: [UInt8], as signature: [UInt8], algorithm: HashAlgorithm = .sha256) -> Int? {
        // An empty signature would only "match" an empty MAC; never let it reach a comparison.
        guard !signature.isEmpty else { return nil }
        for (index, key) in (hmacKeys[algorithm] ?? []).enumerated() {
            let expected = key.authenticationCode(message)
            if ConstantTime.equals(expected, signature) { return index }
        }
        return nil
    }
}
