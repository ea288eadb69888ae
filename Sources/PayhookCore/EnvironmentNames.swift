/// How configuration names variables, shared by the parser and the parts that name a variable
/// in an error or log line.
public enum EnvironmentNames {
    /// How an account name appears inside a variable name: `acme-eu` -> `ACME_EU`.
    public static func accountKey(_ account: String) -> String {
        String(account.uppercased().map { $0.isASCII && ($0.isLetter || $0.isNumber) ? $0 : "_" })
    }

    /// The suffix of the variable whose value is a provider's comma-separated webhook key ring.
    public static func keyRingSuffix(_ provider: ProviderID) -> String {
        switch provider {
        case .mercadopago: "SECRETS"
        case .adyen: "HMAC_KEYS"
        case .pxp: "WEBHOOK_KEYS"
        }
    }
}
