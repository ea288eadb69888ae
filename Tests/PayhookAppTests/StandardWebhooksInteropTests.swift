import Foundation
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions
@testable import PayhookCallbacks

/// Our callbacks checked by someone else's code: the reference `standardwebhooks` package from
/// PyPI (installed by ops/test into a virtualenv named by `PAYHOOK_PYTHON_VERIFIER`).
@Suite("Standard Webhooks interoperability", .timeLimit(.minutes(5)))
struct StandardWebhooksInteropTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Scripts/verify_standard_webhook.py").path

    /// Runs the Python verifier; returns its exit status and output. Waiting for it blocks, so
    /// that happens on a thread of its own: the cooperative pool has two threads here, and a test
    /// holding one of them stalls the tests running beside it in the parallel suite.
    static func verify(secret: String, id: String, timestamp: String, signature: String, body: [UInt8]) async throws -> (Int32, String) {
        try await HTTPTestClient.offPool {
            Result { try runVerifier(secret: secret, id: id, timestamp: timestamp, signature: signature, body: body) }
        }.get()
    }

    private static func runVerifier(secret: String, id: String, timestamp: String, signature: String, body: [UInt8]) throws -> (Int32, String) {
        let python = ProcessInfo.processInfo.environment["PAYHOOK_PYTHON_VERIFIER"] ?? "/usr/bin/python3"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script, secret, id, timestamp, signature]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        input.fileHandleForWriting.write(Data(body))
        try input.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    @Test("every order.paid attempt the merchant receives verifies with the PyPI standardwebhooks library; a tampered body does not")
    func callbacksVerify() async throws {
        let harness = try await FulfillmentHarness.make("standard_webhooks_interop")
        defer { harness.endpoint.stop() }
        harness.endpoint.answer([503])
        let order = try await harness.register(FulfillmentHarness.registration("order-sw"))
        try await harness.deliver(FulfillmentHarness.adyenPaid(psp: "PSPSW", reference: "order-sw", value: 1999),
                                  processor: harness.processor())
        #expect(try await harness.runWorker(until: order.id, reaches: "fulfilled"))
        let received = harness.endpoint.received
        #expect(received.count == 2)
        for request in received {
            let id = try #require(request.header("webhook-id"))
            let timestamp = try #require(request.header("webhook-timestamp"))
            let signature = try #require(request.header("webhook-signature"))
            #expect(signature.hasPrefix("v1,"))
            let (status, output) = try await Self.verify(secret: FulfillmentHarness.secret, id: id, timestamp: timestamp,
                                                         signature: signature, body: request.body)
            #expect(status == 0, "\(output)")
            #expect(output.contains("verified order.paid"))
            var tampered = request.body
            tampered[tampered.count - 2] ^= 0x01
            let (rejected, _) = try await Self.verify(secret: FulfillmentHarness.secret, id: id, timestamp: timestamp,
                                                      signature: signature, body: tampered)
            #expect(rejected == 1)
        }
    }
}
