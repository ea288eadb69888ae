// payhook-verify-bench: CPU per delivery of each provider's signature verifier, beside the
// HMAC that verification cannot avoid, measured in the same run.
//
//   payhook-ingest-load --target 127.0.0.1:1 --write-requests FILE --count 30000
//   payhook-verify-bench FILE [rounds]
//
// Why: bench/ingest's figures swing with the shared machine's steal, so a change worth a few
// percent of a delivery cannot be seen there. This program runs one thread over the very
// requests bench/ingest sends, repeats each pass `rounds` times and keeps the fastest pass,
// which is the one the neighbours disturbed least. The floor is one prepared-key HMAC-SHA256
// over the same bytes as the provider signs (the body; for Mercado Pago its short manifest),
// so "verify / floor" shows how much of verification is bookkeeping around the MAC.
import Foundation
import PayhookCore
import PayhookCrypto
import PayhookProviders

let arguments = CommandLine.arguments
guard arguments.count >= 2, let file = FileManager.default.contents(atPath: arguments[1]) else {
    FileHandle.standardError.write(Data("usage: payhook-verify-bench REQUESTS-FILE [rounds]\n".utf8))
    exit(2)
}
let rounds = arguments.count >= 3 ? max(1, Int(arguments[2]) ?? 15) : 15

let environment = ProcessInfo.processInfo.environment
let mpSecret = Array((environment["BENCH_MP_SECRET"] ?? "bench-mercadopago-secret").utf8)
let adyenKey = try! Hex.decode(environment["BENCH_ADYEN_HEX_KEY"] ?? "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056")
let pxpKey = Array((environment["BENCH_PXP_KEY"] ?? "bench-pxp-key").utf8)

/// Splits the `--write-requests` file ("<length>\n<raw HTTP request>" repeated) into
/// WebhookRequests, the way ingress builds them (header names lowercased).
func readRequests(_ data: Data) -> [WebhookRequest] {
    let bytes = [UInt8](data)
    var requests: [WebhookRequest] = []
    var offset = 0
    let now = Date()
    while offset < bytes.count, let newline = bytes[offset...].firstIndex(of: UInt8(ascii: "\n")),
          let length = Int(String(decoding: bytes[offset..<newline], as: UTF8.self)) {
        let raw = bytes[(newline + 1)..<(newline + 1 + length)]
        offset = newline + 1 + length
        guard let headerEnd = raw.indices.first(where: { raw[$0...].starts(with: Array("\r\n\r\n".utf8)) }) else { continue }
        let lines = String(decoding: raw[raw.startIndex..<headerEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let target = lines[0].split(separator: " ")[1]
        let path = target.split(separator: "?", maxSplits: 1)
        let query = path.count > 1 ? String(path[1]) : ""
        guard let provider = ProviderID(rawValue: String(path[0].split(separator: "/").last ?? "")) else { continue }
        let headers = lines.dropFirst().compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (name: line[..<colon].lowercased(), value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        requests.append(WebhookRequest(
            provider: provider, account: nil, rawQuery: query, headers: headers,
            body: Array(raw[(headerEnd + 4)...]), remoteAddress: "127.0.0.1", receivedAt: now))
    }
    return requests
}

/// Fastest of `rounds` passes over `requests`, in nanoseconds per request.
func fastestPass(_ requests: [WebhookRequest], _ work: (WebhookRequest) -> Int) -> Double {
    var best = Double.infinity
    var sink = 0
    for _ in 0..<rounds {
        let start = ContinuousClock.now
        for request in requests { sink &+= work(request) }
        let elapsed = ContinuousClock.now - start
        let (seconds, attoseconds) = elapsed.components
        best = min(best, (Double(seconds) * 1e9 + Double(attoseconds) / 1e9) / Double(requests.count))
    }
    if sink == 42 { print("") }  // keeps the work observable to the optimizer
    return best
}

let all = readRequests(file)
let now = Date()
let verifiers: [(ProviderID, any WebhookVerifier, HMACKey)] = [
    (.mercadopago, MercadoPagoSignatureVerifier(secrets: KeyRing(keys: [mpSecret])), HMACKey(.sha256, key: mpSecret)),
    (.adyen, AdyenSignatureVerifier(hmacKeys: KeyRing(keys: [adyenKey])), HMACKey(.sha256, key: adyenKey)),
    (.pxp, PXPSignatureVerifier(keys: KeyRing(keys: [pxpKey])), HMACKey(.sha256, key: pxpKey)),
]
print("payhook-verify-bench: \(all.count) requests, fastest of \(rounds) passes, one thread")
var totalVerify = 0.0
var totalFloor = 0.0
for (provider, verifier, key) in verifiers {
    let requests = all.filter { $0.provider == provider }
    guard !requests.isEmpty else { continue }
    for request in requests {
        guard case .verified = verifier.verify(request, now: now) else {
            print("\(provider.rawValue): a request did not verify; were the requests written more than 300 s ago?")
            exit(1)
        }
    }
    // The floor: what the provider's signature covers, MACed once with a prepared key. For
    // Mercado Pago that is the manifest (about 80 bytes), rebuilt here from the same headers.
    let signed: [[UInt8]] = requests.map { request in
        guard provider == .mercadopago else { return request.body }
        let ts = request.header("x-signature")?.split(separator: ",").first?.dropFirst(3) ?? ""
        let id = request.queryParameter("data.id") ?? ""
        return Array("id:\(id);request-id:\(request.header("x-request-id") ?? "");ts:\(ts);".utf8)
    }
    var index = 0
    let floor = fastestPass(requests) { _ in
        defer { index = (index + 1) % signed.count }
        return Int(key.authenticationCode(signed[index])[0])
    }
    let verify = fastestPass(requests) { request in
        if case .verified(let delivery) = verifier.verify(request, now: now) { return delivery.dedupKey.utf8.count }
        return 0
    }
    totalVerify += verify / 3
    totalFloor += floor / 3
    let label = provider.rawValue.padding(toLength: 12, withPad: " ", startingAt: 0)
    print(label + String(format: "verify %6.0f ns   HMAC floor %6.0f ns   verify/floor %.2f   (%d requests)",
                         verify, floor, verify / floor, requests.count))
}
print(String(format: "mean of the three: verify %.0f ns, HMAC floor %.0f ns, verify/floor %.2f", totalVerify, totalFloor, totalVerify / totalFloor))
