public import PayhookCrypto

/// Signs webhook deliveries the way each provider does, for `payhook send-test` and the tests
/// that play a provider.
///
/// The counterpart of the verifiers: what is signed is defined once (the Mercado Pago manifest
/// is the verifier's own ``MercadoPagoSignatureVerifier/manifestBytes(dataID:requestID:ts:)``),
/// and the published vectors (`Tests/PayhookProvidersTests/Fixtures`) pin both sides, so a
/// signer that drifted from the providers fails there rather than agreeing with a wrong verifier.
///
/// Keys are raw bytes, as a ``KeyRing`` holds them after decoding (Adyen's hex already
/// decoded). Nothing here logs or keeps a key.
public enum WebhookSigner {
    /// Mercado Pago's `x-signature` value: `ts=<ts>,v1=<lowercase hex HMAC-SHA256>` over
    /// `id:<data.id>;request-id:<x-request-id>;ts:<ts>;` (a missing value drops its pair).
    ///
    /// - Parameters:
    ///   - secret: the webhook secret's bytes (its UTF-8 text).
    ///   - dataID: the query's `data.id` as it will be signed; Mercado Pago's current
    ///     documentation signs it lowercased.
    ///   - requestID: the `x-request-id` header.
    ///   - ts: the timestamp, signed exactly as written into the header.
    public static func mercadoPagoSignature(secret: [UInt8], dataID: String?, requestID: String?, ts: String) -> String {
        let manifest = MercadoPagoSignatureVerifier.manifestBytes(dataID: dataID, requestID: requestID, ts: ts)
        return "ts=\(ts),v1=\(Hex.encode(HMAC.authenticationCode(.sha256, key: secret, message: manifest)))"
    }

    /// The eight fields of an Adyen standard notification item joined by `:`, each missing one
    /// an empty string that keeps its separator; no escaping.
    public static func adyenSigningString(
        pspReference: String, originalReference: String?, merchantAccountCode: String, merchantReference: String,
        value: String, currency: String, eventCode: String, success: String
    ) -> String {
        [pspReference, originalReference ?? "", merchantAccountCode, merchantReference, value, currency, eventCode, success]
            .joined(separator: ":")
    }

    /// An item's `additionalData.hmacSignature`: base64 HMAC-SHA256 of its signing string.
    /// - Parameter key: the hex key from Adyen's Customer Area, decoded.
    public static func adyenItemSignature(key: [UInt8], signingString: String) -> String {
        Base64.encode(HMAC.authenticationCode(.sha256, key: key, message: Array(signingString.utf8)))
    }

    /// The `HmacSignature` header of Adyen's other webhooks (tokenization, management): base64
    /// HMAC-SHA256 over the raw body bytes.
    public static func adyenHeaderSignature(key: [UInt8], body: [UInt8]) -> String {
        Base64.encode(HMAC.authenticationCode(.sha256, key: key, message: body))
    }

    /// PXP's `X-Signature`: base64 HMAC over request id + timestamp + raw body, no separator.
    /// The hash and the key's encoding are UNCONFIRMED by PXP (see ``PXPSignatureVerifier``);
    /// pass what payhook is configured with.
    public static func pxpSignature(
        key: [UInt8], algorithm: HashAlgorithm = .sha256, requestID: String, timestamp: String, body: [UInt8]
    ) -> String {
        var message: [UInt8] = []
        message.reserveCapacity(requestID.utf8.count + timestamp.utf8.count + body.count)
        message.append(contentsOf: requestID.utf8)
        message.append(contentsOf: timestamp.utf8)
        message.append(contentsOf: body)
        return Base64.encode(HMAC.authenticationCode(algorithm, key: key, message: message))
    }
}
