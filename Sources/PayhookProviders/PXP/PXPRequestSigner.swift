import PayhookCrypto

/// Signs PXP Unity API requests: the HMAC inside `Authorization: PXP-UST1 {tokenId}:{timestamp}:{hmac}`.
///
/// UNCONFIRMED: PXP's public material names the header layout and HMAC-SHA256 with the token
/// value, but not exactly what is signed. Until PXP confirms it, this assumes:
/// - message: `timestamp + requestId + method + path + body`, concatenated with no separator,
///   where `timestamp` is the header's timestamp text (Unix seconds), `requestId` is the
///   `X-Request-Id` value, `method` is upper case, `path` is the request path as sent on the
///   wire (percent-encoded, with the base URL's path, without a query) and `body` is the raw
///   body bytes (empty for a GET);
/// - key: the token value's UTF-8 bytes;
/// - output: standard base64 with padding.
///
/// This one function is the whole assumption: when PXP confirms the scheme, change its body
/// (and the test vector beside it) and nothing else.
public enum PXPRequestSigner {
    /// The base64 HMAC-SHA256 of the request under the token value.
    public static func signature(
        tokenValue: String, timestamp: String, requestID: String, method: String, path: String, body: [UInt8]
    ) -> String {
        var message: [UInt8] = []
        message.reserveCapacity(timestamp.utf8.count + requestID.utf8.count + method.utf8.count + path.utf8.count + body.count)
        message += timestamp.utf8
        message += requestID.utf8
        message += method.utf8
        message += path.utf8
        message += body
        return Base64.encode(HMAC.authenticationCode(.sha256, key: Array(tokenValue.utf8), message: message))
    }

    /// The `Authorization` header value: `PXP-UST1 {tokenId}:{timestamp}:{signature}`.
    public static func authorization(tokenID: String, timestamp: String, signature: String) -> String {
        "PXP-UST1 \(tokenID):\(timestamp):\(signature)"
    }
}
