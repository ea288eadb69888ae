import PayhookCrypto

/// Signs outbound callbacks in the Standard Webhooks format (standardwebhooks.com):
/// `webhook-signature: v1,<base64 HMAC-SHA256(key, "{webhook-id}.{webhook-timestamp}.{body}")>`,
/// where the key is the base64 part of a `whsec_…` secret.
///
/// The secret's bytes live only here; neither `description` nor reflection (`dump`) renders them.
package struct StandardWebhookSigner: Sendable, CustomStringConvertible, CustomReflectable {
    private let key: [UInt8]

    /// Why a secret was refused; never contains the secret.
    package struct InvalidSecret: Error, CustomStringConvertible {
        package let description: String
    }

    /// - Parameter secret: `whsec_` followed by the base64 of the key bytes.
    package init(secret: String) throws(InvalidSecret) {
        guard secret.hasPrefix("whsec_") else {
            throw InvalidSecret(description: "a Standard Webhooks secret starts with whsec_")
        }
        guard let key = try? Base64.decode(String(secret.dropFirst("whsec_".count))), !key.isEmpty else {
            throw InvalidSecret(description: "the part after whsec_ must be non-empty base64")
        }
        self.key = key
    }

    /// The `webhook-signature` header value for one attempt.
    func signature(webhookID: String, timestamp: Int64, body: [UInt8]) -> String {
        var message = Array("\(webhookID).\(timestamp).".utf8)
        message += body
        return "v1," + Base64.encode(HMAC.authenticationCode(.sha256, key: key, message: message))
    }

    /// The three headers of one delivery attempt.
    func headers(webhookID: String, timestamp: Int64, body: [UInt8]) -> [(String, String)] {
        [("webhook-id", webhookID), ("webhook-timestamp", String(timestamp)),
         ("webhook-signature", signature(webhookID: webhookID, timestamp: timestamp, body: body))]
    }

    package var description: String { "StandardWebhookSigner(<redacted>)" }
    package var customMirror: Mirror { Mirror(self, children: [:]) }
}
