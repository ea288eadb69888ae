import Testing
@testable import PayhookApp
@testable import PayhookCore
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions
@testable import PayhookCallbacks

/// Secrets reach logs and crash reports through reflection as easily as through
/// interpolation: `dump()` and `Mirror` list stored properties unless a type says otherwise.
@Suite("Secret redaction under reflection")
struct SecretRedactionTests {
    static let secret = "whsec_c2VjcmV0LWNhbGxiYWNrLWtleS0xMjM0NQ=="

    private func dumped(_ value: some Any) -> String {
        var text = ""
        dump(value, to: &text)
        return text
    }

    @Test("a Secret shows <redacted> when printed, reflected or dumped, alone or inside the configuration")
    func secretHidden() throws {
        let value = Secret("postgresql://payhook:hunter2@db/payhook")
        #expect("\(value)" == "<redacted>")
        #expect(!String(reflecting: value).contains("hunter2"))
        #expect(!dumped(value).contains("hunter2"))
        #expect(Mirror(reflecting: value).children.isEmpty)
        let configuration = try Configuration.parse(environment: [
            "DATABASE_URL": "postgresql://payhook:hunter2@db/payhook", "PAYHOOK_ADMIN_TOKEN": "adm1n-t0ken-v3ry-l0ng",
            "PAYHOOK_FULFILLMENT_SECRET": Self.secret, "PAYHOOK_MERCADOPAGO_SECRETS": "mp-s3cr3t-value",
        ]) { _ in "" }
        let all = dumped(configuration)
        for leaked in ["hunter2", "adm1n-t0ken", "c2VjcmV0", "mp-s3cr3t"] {
            #expect(!all.contains(leaked), "dump(configuration) shows \(leaked)")
        }
    }

    @Test("the Standard Webhooks signer never shows its key through dump or Mirror")
    func signerHidden() throws {
        let signer = try StandardWebhookSigner(secret: Self.secret)
        #expect(Mirror(reflecting: signer).children.isEmpty)
        let text = dumped(signer)
        #expect(!text.contains("115") && !text.contains("c2VjcmV0"), "\(text)")
    }
}
