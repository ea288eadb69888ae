import Foundation
import PayhookCore
import Testing

/// The provider corpus: every documented lifecycle in `Fixtures/providers/<provider>/*.json`
/// runs through signed ingress, processing against the emulator, fulfillment and callbacks on
/// PostgreSQL (format: `Fixtures/providers/FORMAT.md`). A new case file is a new test.
@Suite("Provider corpus", .timeLimit(.minutes(5)), .serialized)
struct ProviderCorpusTests {
    @Test("a documented provider lifecycle ends in the expected payments, orders and callbacks",
          arguments: ProviderCorpus.caseFiles())
    func corpusCase(_ file: String) async throws {
        let testCase = try ProviderCorpus.load(file)
        let mismatches = try await CorpusRunner(testCase: testCase).run()
        #expect(mismatches.isEmpty, "\(file) (\(testCase.name)):\n\(mismatches.joined(separator: "\n"))")
    }

    @Test("the corpus has cases for every provider folder it ships")
    func corpusIsFound() {
        let files = ProviderCorpus.caseFiles()
        #expect(files.contains { $0.hasPrefix("pxp/") }, "no PXP case found in the test bundle: \(files)")
    }
}

/// The runner itself: a wrong expectation must fail, and a malformed case must be refused, or
/// the corpus could pass while checking nothing.
@Suite("Provider corpus runner", .timeLimit(.minutes(5)), .serialized)
struct ProviderCorpusRunnerTests {
    /// A captured PXP transaction: the smallest case that exercises every table the runner reads.
    static func capturedCase(expect: String) -> String {
        """
        {"name": "self-test", "provider": "pxp", "sources": ["https://developer.pxp.io/apis/transaction"],
         "order": {"reference": "self-test-1", "amount_minor": 10010, "currency": "EUR"},
         "steps": [
          {"seed": {"collection": "transactions", "id": "tx-self-1", "body": {"systemTransactionId": "tx-self-1",
            "state": "Captured", "stateData": {"code": "CRD000", "message": "Approved"},
            "transactionMethod": {"intent": "Purchase", "entryType": "Ecom", "fundingType": "Card"},
            "merchant": "PAYHOOK-1", "site": "SITE-EU", "merchantTransactionId": "self-test-1",
            "merchantTransactionDate": "2025-05-20T08:51:02.826Z", "amounts": {"transactionValue": 100.10, "currencyCode": "EUR"}}}},
          {"deliver": {"body": {"eventCategory": "Transaction", "eventDate": "2025-05-20T08:51:04.8264455Z",
            "eventData": {"state": "Captured", "systemTransactionId": "tx-self-1", "merchantTransactionId": "self-test-1"},
            "eventOwner": {"merchantGroup": "PAYHOOK-GRP", "merchant": "PAYHOOK-1", "site": "SITE-EU"}}}}
         ],
         "expect": \(expect)}
        """
    }

    static func run(_ text: String) async throws -> [String] {
        try await CorpusRunner(testCase: try CorpusCase.parse(Array(text.utf8))).run()
    }

    @Test("the right expectation passes, so the failures below come from the expectations alone")
    func rightExpectationPasses() async throws {
        let mismatches = try await Self.run(Self.capturedCase(expect: """
            {"payments": [{"provider_payment_id": "tx-self-1", "status": "captured", "amount_minor": 10010, "currency": "EUR"}],
             "order": {"fulfillment_status": "fulfilled"}, "callbacks": ["order.paid"], "dead_letters": 0}
            """))
        #expect(mismatches.isEmpty, "\(mismatches)")
    }

    @Test("a wrong status, amount, callback list or dead-letter count each fail the case",
          arguments: [
            #"{"payments": [{"provider_payment_id": "tx-self-1", "status": "authorized"}]}"#,
            #"{"payments": [{"provider_payment_id": "tx-self-1", "amount_minor": 10000}]}"#,
            #"{"payments": [{"provider_payment_id": "tx-other"}]}"#,
            #"{"payments": []}"#,
            #"{"order": {"fulfillment_status": "none"}}"#,
            #"{"callbacks": []}"#,
            #"{"callbacks": ["order.paid", "order.paid"]}"#,
            #"{"dead_letters": 1}"#,
            #"{"payments": [{"provider_payment_id": "tx-self-1", "captured_amount": 10010}]}"#,
          ])
    func wrongExpectationFails(_ expect: String) async throws {
        let mismatches = try await Self.run(Self.capturedCase(expect: expect))
        #expect(!mismatches.isEmpty, "the runner passed a wrong expectation: \(expect)")
    }

    @Test("unknown keys, a missing source and an unknown step are refused before anything runs",
          arguments: [
            Self.capturedCase(expect: #"{"payment": [{"provider_payment_id": "tx-self-1"}]}"#),
            Self.capturedCase(expect: #"{"dead_letter": 0}"#),
            Self.capturedCase(expect: #"{}"#),
            Self.capturedCase(expect: #"{"dead_letters": 0}"#).replacingOccurrences(of: #""sources": ["https://developer.pxp.io/apis/transaction"]"#, with: #""sources": []"#),
            Self.capturedCase(expect: #"{"dead_letters": 0}"#).replacingOccurrences(of: #""order": {"#, with: #""ordre": {"#),
            Self.capturedCase(expect: #"{"dead_letters": 0}"#).replacingOccurrences(of: #"{"deliver": {"body""#, with: #"{"post": {"body""#),
            Self.capturedCase(expect: #"{"dead_letters": 0}"#).replacingOccurrences(of: #""amount_minor": 10010"#, with: #""amount": 10010"#),
          ])
    func malformedCaseIsRefused(_ text: String) throws {
        #expect(throws: CorpusCase.FormatError.self) { try CorpusCase.parse(Array(text.utf8)) }
    }

    /// Each provider's signing path of the runner, against payhook's own verifiers: a case for
    /// another provider must fail only on what it expects, never on a signature.
    @Test("the runner signs Adyen items, Adyen header-signed webhooks and Mercado Pago notifications as payhook verifies them",
          arguments: [
            // An Adyen standard notification, on an account route with its own key ring.
            #"""
            {"name": "self-test adyen", "provider": "adyen", "sources": ["https://docs.adyen.com/development-resources/webhooks/webhook-types"],
             "account": "acme-eu",
             "steps": [{"deliver": {"body": {"live": "false", "notificationItems": [{"NotificationRequestItem": {
               "additionalData": {"hmacSignature": "replaced-by-the-runner"}, "amount": {"currency": "EUR", "value": 1000},
               "eventCode": "AUTHORISATION", "eventDate": "2025-02-24T15:20:56+01:00", "merchantAccountCode": "AcmeShopEU",
               "merchantReference": "self-adyen-1", "paymentMethod": "visa", "pspReference": "QFQTPCQ8HXSKGK82",
               "reason": "", "success": "true"}}]}}}],
             "expect": {"payments": [{"provider_payment_id": "QFQTPCQ8HXSKGK82", "status": "authorized", "amount_minor": 1000,
                                      "account": "acme-eu"}], "dead_letters": 0}}
            """#,
            // An Adyen tokenization webhook: HMAC over the raw body in the HmacSignature header.
            #"""
            {"name": "self-test adyen token", "provider": "adyen", "sources": ["https://docs.adyen.com/api-explorer/Tokenization-webhooks/1/overview"],
             "steps": [{"deliver": {"body": {"createdAt": "2025-02-24T15:20:56+01:00", "environment": "test", "eventId": "QBQQ9DLNRHHKGK38",
               "type": "recurring.token.created", "data": {"merchantAccount": "AcmeShopEU", "storedPaymentMethodId": "M5N7TQ4TG5PFWR50",
               "shopperReference": "shopper-7781", "type": "visa", "operation": "created"}}}}],
             "expect": {"vault_tokens": [{"token": "M5N7TQ4TG5PFWR50", "status": "active", "shopper_reference": "shopper-7781"}],
                        "dead_letters": 0}}
            """#,
            // A Mercado Pago payment notification, completed from the emulator's payment.
            #"""
            {"name": "self-test mercadopago", "provider": "mercadopago", "sources": ["https://www.mercadopago.com.br/developers/en/reference/payments/_payments_id/get"],
             "steps": [
              {"seed": {"collection": "payments", "id": "1319778901", "body": {"id": 1319778901, "date_created": "2025-03-11T08:59:58.000-04:00",
                "date_approved": "2025-03-11T08:59:59.717-04:00", "date_last_updated": "2025-03-11T09:00:00.101-04:00",
                "collector_id": 1873904477, "operation_type": "regular_payment", "payment_method_id": "visa",
                "payment_type_id": "credit_card", "status": "approved", "status_detail": "accredited", "currency_id": "BRL",
                "transaction_amount": 150.25, "transaction_amount_refunded": 0, "captured": true, "external_reference": "self-mp-1"}}},
              {"deliver": {"body": {"id": 12345678901, "live_mode": false, "type": "payment", "date_created": "2025-03-11T09:00:01.000-04:00",
                "user_id": 1873904477, "api_version": "v1", "action": "payment.updated", "data": {"id": "1319778901"}}}}
             ],
             "expect": {"payments": [{"provider_payment_id": "1319778901", "status": "captured", "amount_minor": 15025, "currency": "BRL"}],
                        "dead_letters": 0}}
            """#,
          ])
    func signsEveryProvider(_ text: String) async throws {
        let mismatches = try await Self.run(text)
        #expect(mismatches.isEmpty, "\(mismatches)")
    }

    @Test("a delivery answered with another status than expect_status fails the case")
    func answerStatusIsChecked() async throws {
        let text = Self.capturedCase(expect: #"{"dead_letters": 0}"#)
            .replacingOccurrences(of: #"{"deliver": {"body""#, with: #"{"deliver": {"expect_status": 202, "body""#)
        let mismatches = try await Self.run(text)
        #expect(mismatches.contains { $0.contains("expected 202") }, "\(mismatches)")
    }

    @Test("case bodies reach ingress digit for digit: member order and number text as written")
    func rendersAndSignsExactly() throws {
        let body = try #require(JSONValue.parse(Array(#"{"a":100.10,"b":[1,"x"],"c":{"d":null}}"#.utf8)))
        #expect(renderJSON(body) == #"{"a":100.10,"b":[1,"x"],"c":{"d":null}}"#)
    }
}
