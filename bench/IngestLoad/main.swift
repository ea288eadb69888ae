// Load generator for bench/ingest: drives correctly signed deliveries of all three providers at a
// running payhook over keep-alive HTTP/1.1 connections, one thread per connection.
//
//   payhook-ingest-load --target 127.0.0.1:8080 --connections 64 --seconds 10 [--rate 5000] [--source 127.0.0.2]
//   payhook-ingest-load --target 127.0.0.1:8080 --write-requests FILE --count N
//   payhook-ingest-load ... --rate 5000 --emulator 127.0.0.1:8099   (bench/end-to-end)
//
// The second form only writes N signed requests ("<length>\n<raw HTTP request>" each) for
// bench/ingest.lua, so that wrk (C, far cheaper per request than this program) can drive the
// closed-loop throughput phase without signing anything itself.
//
// Without --rate it runs closed-loop (as fast as answers come). With --rate it paces requests
// on a fixed schedule and measures latency from the scheduled send time, so a stalled server
// cannot hide its queueing delay (no coordinated omission). BENCH_TIMELINE=1 adds a line with
// each second's p99 and max.
// With --emulator, the Mercado Pago payment and the PXP transaction each thin delivery points
// at are first seeded into payhook-emulator (`PUT /_emulator/seed/…`, as `payhook send-test
// --emulator` does), before the clock starts, so processors can complete them from it.
// Secrets: BENCH_MP_SECRET, BENCH_ADYEN_HEX_KEY, BENCH_PXP_KEY (must match the server's).
import Foundation
import PayhookCrypto
import Synchronization

struct Options {
    var host = "127.0.0.1"
    var port: UInt16 = 8080
    var connections = 64
    var seconds = 10.0
    var rate = 0.0
    /// Closed-loop runs pre-sign this many requests per second of run time (more are signed on
    /// the fly if needed), so the generator spends its CPU on sending, not on HMACs.
    var presignRate = 40_000.0
    var writeRequestsPath: String?
    var count = 0
    var runID = String(UInt64(Date().timeIntervalSince1970 * 1000), radix: 36)
    /// Local address to connect from (bench/hostile: the providers on another loopback address).
    var source: String?
    /// payhook-emulator's address: seed the resources thin deliveries point at before sending.
    var emulatorHost: String?
    var emulatorPort: UInt16 = 0
}

func parseOptions() -> Options {
    var options = Options()
    var arguments = CommandLine.arguments.dropFirst()
    while let flag = arguments.popFirst() {
        guard let value = arguments.popFirst() else { fatalError("missing value for \(flag)") }
        switch flag {
        case "--target":
            let parts = value.split(separator: ":")
            options.host = String(parts[0])
            options.port = UInt16(parts[1])!
        case "--connections": options.connections = Int(value)!
        case "--seconds": options.seconds = Double(value)!
        case "--rate": options.rate = Double(value)!
        case "--run-id": options.runID = value
        case "--presign-rate": options.presignRate = Double(value)!
        case "--write-requests": options.writeRequestsPath = value
        case "--count": options.count = Int(value)!
        case "--source": options.source = value
        case "--emulator":
            let parts = value.split(separator: ":")
            options.emulatorHost = String(parts[0])
            options.emulatorPort = UInt16(parts[1])!
        default: fatalError("unknown flag \(flag)")
        }
    }
    return options
}

let environment = ProcessInfo.processInfo.environment
let mpSecret = Array((environment["BENCH_MP_SECRET"] ?? "bench-mercadopago-secret").utf8)
let adyenKey = try! Hex.decode(environment["BENCH_ADYEN_HEX_KEY"] ?? "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056")
let pxpKey = Array((environment["BENCH_PXP_KEY"] ?? "bench-pxp-key").utf8)

/// One signed request, fully serialized, for delivery number `n` of connection `c`.
func signedRequest(provider: Int, id: String, host: String) -> [UInt8] {
    let now = Date()
    var path: String
    var headers: [(String, String)] = [("Content-Type", "application/json")]
    var body: String
    switch provider {
    case 0:
        let requestID = UUID().uuidString.lowercased()
        let ts = String(Int64(now.timeIntervalSince1970 * 1000))
        let manifest = "id:\(id);request-id:\(requestID);ts:\(ts);"
        let v1 = Hex.encode(HMAC.authenticationCode(.sha256, key: mpSecret, message: Array(manifest.utf8)))
        path = "/webhooks/mercadopago?data.id=\(id)&type=payment"
        headers += [("x-request-id", requestID), ("x-signature", "ts=\(ts),v1=\(v1)")]
        body = #"{"id":12345,"type":"payment","action":"payment.updated","data":{"id":"\#(id)"},"live_mode":false,"user_id":44444,"api_version":"v1","date_created":"2026-11-29T12:00:00Z"}"#
    case 1:
        let signing = "\(id)::BenchMerchant:order-\(id):1999:EUR:AUTHORISATION:true"
        let signature = Base64.encode(HMAC.authenticationCode(.sha256, key: adyenKey, message: Array(signing.utf8)))
        path = "/webhooks/adyen"
        body = #"{"live":"false","notificationItems":[{"NotificationRequestItem":{"additionalData":{"hmacSignature":"\#(signature)"},"amount":{"currency":"EUR","value":1999},"eventCode":"AUTHORISATION","eventDate":"2026-11-29T12:00:00+01:00","merchantAccountCode":"BenchMerchant","merchantReference":"order-\#(id)","paymentMethod":"visa","pspReference":"\#(id)","reason":"","success":"true"}}]}"#
    default:
        let requestID = UUID().uuidString.lowercased()
        let ts = String(Int64(now.timeIntervalSince1970))
        path = "/webhooks/pxp"
        body = #"{"eventCategory":"Transaction","eventDate":"2026-11-29T12:00:00Z","eventData":{"state":"Authorised","systemTransactionId":"\#(id)","merchantTransactionId":"order-\#(id)","amounts":{"transaction":19.99,"currencyCode":"EUR"}},"eventOwner":{"merchantGroup":"bench","merchant":"bench","site":"bench"}}"#
        let signature = Base64.encode(HMAC.authenticationCode(.sha256, key: pxpKey, message: Array((requestID + ts + body).utf8)))
        headers += [("X-Request-Id", requestID), ("X-Signature-Timestamp", ts), ("X-Signature", signature)]
    }
    var text = "POST \(path) HTTP/1.1\r\nHost: \(host)\r\nContent-Length: \(body.utf8.count)\r\n"
    for (name, value) in headers { text += "\(name): \(value)\r\n" }
    text += "\r\n" + body
    return Array(text.utf8)
}

/// The emulator resource a thin delivery of `provider` with `id` is completed from: its seed path
/// and JSON, in the shapes `payhook send-test` seeds (an approved Mercado Pago payment, an
/// authorised PXP transaction of the emulator's merchant and site); nil for Adyen, whose
/// deliveries are self-contained.
func seedResource(provider: Int, id: String) -> (path: String, body: [UInt8])? {
    let now = "2026-11-29T12:00:00.000Z"
    switch provider {
    case 0:
        return ("/_emulator/seed/mercadopago/payments/\(id)", Array(#"{"id":"\#(id)","date_created":"\#(now)","date_approved":"\#(now)","date_last_updated":"\#(now)","collector_id":1873904477,"operation_type":"regular_payment","payment_method_id":"visa","payment_type_id":"credit_card","status":"approved","status_detail":"accredited","currency_id":"BRL","transaction_amount":19.99,"transaction_amount_refunded":0,"captured":true,"external_reference":"order-\#(id)","payer":{"id":"bench-payer"}}"#.utf8))
    case 1:
        return nil
    default:
        return ("/_emulator/seed/pxp/transactions/\(id)", Array(#"{"systemTransactionId":"\#(id)","state":"Authorised","stateMessage":"Transaction Authorised","approvalCode":"083415","transactionMethod":{"intent":"Authorisation","fundingType":"Card","entryType":"Ecom"},"merchant":"PAYHOOK-1","site":"SITE-EU","merchantTransactionId":"order-\#(id)","merchantTransactionDate":"\#(now)","amounts":{"transactionValue":19.99,"currencyCode":"EUR"},"shopper":{"id":"bench-shopper"}}"#.utf8))
    }
}

/// A `PUT` of one seed, serialized.
func seedRequest(_ seed: (path: String, body: [UInt8]), host: String) -> [UInt8] {
    Array("PUT \(seed.path) HTTP/1.1\r\nHost: \(host)\r\nContent-Type: application/json\r\nContent-Length: \(seed.body.count)\r\n\r\n".utf8) + seed.body
}

final class Connection {
    let fd: Int32
    var buffer: [UInt8] = []

    init?(host: String, port: UInt16, source: String? = nil) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if bound != 0 { return nil }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        // deinit closes fd even when this failable init fails; closing here too would be a double close.
        if result != 0 { return nil }
    }

    deinit { close(fd) }

    /// Sends one request and reads one response; returns the status, or nil if the connection broke.
    func exchange(_ request: [UInt8]) -> Int? {
        var sent = 0
        while sent < request.count {
            let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return nil }
            sent += n
        }
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let end = headerEnd() {
                let head = String(decoding: buffer[..<end], as: UTF8.self)
                let status = Int(head.split(separator: " ", maxSplits: 2).dropFirst().first ?? "") ?? 0
                var length = 0
                for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
                    length = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
                }
                while buffer.count < end + 4 + length {
                    let n = recv(fd, &chunk, chunk.count, 0)
                    if n <= 0 { return nil }
                    buffer += chunk[..<n]
                }
                buffer.removeFirst(end + 4 + length)
                return status
            }
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { return nil }
            buffer += chunk[..<n]
        }
    }

    private func headerEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            return i
        }
        return nil
    }
}

struct ThreadResult: Sendable {
    var latencies: [Double] = []
    /// Seconds from the start at which each request was due (sent, in closed loop), in the
    /// order of `latencies`: the timeline groups latencies by the second they were due in.
    var dueAt: [Double] = []
    var statuses: [Int: Int] = [:]
    var broken = 0
}

let options = parseOptions()
if let path = options.writeRequestsPath {
    FileManager.default.createFile(atPath: path, contents: nil)
    guard let file = FileHandle(forWritingAtPath: path) else { fatalError("cannot write \(path)") }
    var chunk: [UInt8] = []
    for n in 0..<options.count {
        let request = signedRequest(provider: n % 3, id: "w\(options.runID)n\(n)", host: options.host)
        chunk += Array("\(request.count)\n".utf8) + request
        if chunk.count > 1 << 20 { file.write(Data(chunk)); chunk.removeAll(keepingCapacity: true) }
    }
    file.write(Data(chunk))
    try? file.close()
    exit(0)
}
let results = Mutex<[ThreadResult]>([])
/// The resources thin deliveries point at, seeded before the clock starts (--emulator).
let pendingSeeds = Mutex<[(path: String, body: [UInt8])]>([])
/// Set once every connection has signed its requests; all threads start together.
let startBox = Mutex<Date?>(nil)
let ready = DispatchGroup()
let go = DispatchSemaphore(value: 0)
let group = DispatchGroup()
for connectionIndex in 0..<options.connections {
    group.enter()
    ready.enter()
    let thread = Thread {
        defer { group.leave() }
        var result = ThreadResult()
        var connection = Connection(host: options.host, port: options.port, source: options.source)
        let interval = options.rate > 0 ? Double(options.connections) / options.rate : 0
        let expected = Int((options.rate > 0 ? options.rate : options.presignRate) * options.seconds) / options.connections + 1
        let presigned = (0..<expected).map { n in
            signedRequest(provider: (connectionIndex + n) % 3, id: "b\(options.runID)c\(connectionIndex)n\(n)", host: options.host)
        }
        if options.emulatorHost != nil {
            let seeds = (0..<expected).compactMap { n in
                seedResource(provider: (connectionIndex + n) % 3, id: "b\(options.runID)c\(connectionIndex)n\(n)")
            }
            pendingSeeds.withLock { $0 += seeds }
        }
        ready.leave()
        go.wait()
        let start = startBox.withLock { $0! }
        let deadline = start.addingTimeInterval(options.seconds)
        // Spread the paced connections' first sends over one interval.
        var scheduled = start.addingTimeInterval(interval * Double(connectionIndex) / Double(options.connections))
        var n = 0
        while true {
            if interval > 0 {
                let wait = scheduled.timeIntervalSinceNow
                if wait > 0 { Thread.sleep(forTimeInterval: wait) }
            }
            if Date() >= deadline { break }
            let request = n < presigned.count ? presigned[n]
                : signedRequest(provider: (connectionIndex + n) % 3, id: "b\(options.runID)c\(connectionIndex)n\(n)", host: options.host)
            let sentAt = interval > 0 ? scheduled : Date()
            if connection == nil { connection = Connection(host: options.host, port: options.port, source: options.source) }
            if let status = connection?.exchange(request) {
                result.latencies.append(Date().timeIntervalSince(sentAt))
                result.dueAt.append(sentAt.timeIntervalSince(start))
                result.statuses[status, default: 0] += 1
            } else {
                result.broken += 1
                connection = nil
            }
            n += 1
            scheduled = scheduled.addingTimeInterval(interval)
        }
        results.withLock { $0.append(result) }
    }
    thread.stackSize = 256 << 10
    thread.start()
}
ready.wait()
if let emulatorHost = options.emulatorHost {
    // A few keep-alive connections: the emulator serves on one thread, so more would only queue.
    let seeds = pendingSeeds.withLock { $0 }
    let seedConnections = 4
    let failures = Mutex(0)
    let started = Date()
    DispatchQueue.concurrentPerform(iterations: seedConnections) { part in
        var connection = Connection(host: emulatorHost, port: options.emulatorPort)
        for index in stride(from: part, to: seeds.count, by: seedConnections) {
            if connection == nil { connection = Connection(host: emulatorHost, port: options.emulatorPort) }
            let status = connection?.exchange(seedRequest(seeds[index], host: emulatorHost))
            if status != 201 { failures.withLock { $0 += 1 }; if status == nil { connection = nil } }
        }
    }
    let failed = failures.withLock { $0 }
    FileHandle.standardError.write(Data(String(format: "seeded %d emulator resources in %.1f s\n", seeds.count, Date().timeIntervalSince(started)).utf8))
    if failed > 0 { fatalError("\(failed) of \(seeds.count) emulator seeds failed") }
}
/// CPU seconds this process has used (user and system), so that a bench can say what the load
/// itself cost the machine it shares with the server.
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}
let cpuAtStart = cpuSeconds()
startBox.withLock { $0 = Date() }
for _ in 0..<options.connections { go.signal() }
group.wait()
let elapsed = Date().timeIntervalSince(startBox.withLock { $0! })
let sendingCPU = cpuSeconds() - cpuAtStart
let all = results.withLock { $0 }
let latencies = all.flatMap(\.latencies).sorted()
var statuses: [Int: Int] = [:]
for result in all { statuses.merge(result.statuses, uniquingKeysWith: +) }
let broken = all.reduce(0) { $0 + $1.broken }
func percentile(_ p: Double, of sorted: [Double] = latencies) -> Double {
    sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] * 1000
}
let ok = statuses[200] ?? 0
let statusText = statuses.keys.sorted().map { "\($0):\(statuses[$0]!)" }.joined(separator: " ")
print(String(format: "requests=%d ok=%d rate=%.0f/s p50=%.2fms p99=%.2fms p999=%.2fms max=%.2fms",
             latencies.count, ok, Double(ok) / elapsed, percentile(0.5), percentile(0.99), percentile(0.999),
             percentile(1.0)) + " statuses=[\(statusText)] broken=\(broken)" + String(format: " cpu=%.2fs", sendingCPU))
// With BENCH_TIMELINE=1, each second's p99 and max (by when requests were due): a tail that
// comes from a few stalls shows as a few bad seconds, one that comes from general slowness
// does not.
if environment["BENCH_TIMELINE"] == "1" {
    var bySecond: [Int: [Double]] = [:]
    for result in all {
        for (latency, due) in zip(result.latencies, result.dueAt) { bySecond[Int(due), default: []].append(latency) }
    }
    let seconds = bySecond.keys.sorted().map { second -> String in
        let sorted = bySecond[second]!.sorted()
        return String(format: "%d:%.0f/%.0f", second, percentile(0.99, of: sorted), percentile(1.0, of: sorted))
    }
    print("timeline (second:p99/max ms): " + seconds.joined(separator: " "))
}
