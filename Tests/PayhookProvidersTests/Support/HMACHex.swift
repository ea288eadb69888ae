import PayhookCrypto

/// Test-side signing shortcuts.
enum HMACHex {
    static func sign(_ key: [UInt8], _ message: String) -> String {
        Hex.encode(HMAC.authenticationCode(key: key, message: Array(message.utf8)))
    }
}
