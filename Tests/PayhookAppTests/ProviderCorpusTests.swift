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
@Suite("Provider corpus runner", .timeLimit(.minutes(3)), .serialized)
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

    @Test("case bodies reach ingress digit for digit: member order and number text as written")
    func rendersAndSignsExactly() throws {
        let body = try #require(JSONValue.parse(Array(#"{"a":100.10,"b":[1,"x"],"c":{"d":null}}"#.utf8)))
        #expect(renderJSON(body) == #"{"a":100.10,"b":[1,"x"],"c":{"d":null}}"#)
    }
}
