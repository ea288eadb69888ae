import Foundation
import PayhookFeatureTestSupport
import PayhookTestSupport
import PayhookCore
import PayhookProviders
import Testing
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions

/// A strict reader of the Prometheus text exposition format (0.0.4), written from the format's
/// description rather than from our renderer, so the two can disagree.
struct PrometheusText {
    struct Sample: Equatable {
        let name: String
        let labels: [String: String]
        let value: Double
    }

    struct FormatError: Error, CustomStringConvertible {
        let line: Int
        let reason: String
        var description: String { "line \(line): \(reason)" }
    }

    var types: [String: String] = [:]
    var samples: [Sample] = []

    static func parse(_ text: String) throws -> PrometheusText {
        var result = PrometheusText()
        var seenSampleFamilies = Set<String>()
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                let parts = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: true).map(String.init)
                guard parts.count >= 3, parts[0] == "#" else { continue }  // a plain comment
                if parts[1] == "TYPE" {
                    guard parts.count == 4, isMetricName(parts[2]),
                          ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[3])
                    else { throw FormatError(line: number, reason: "bad TYPE line") }
                    guard result.types[parts[2]] == nil else { throw FormatError(line: number, reason: "second TYPE for \(parts[2])") }
                    guard !seenSampleFamilies.contains(parts[2]) else { throw FormatError(line: number, reason: "TYPE after samples") }
                    result.types[parts[2]] = parts[3]
                } else if parts[1] == "HELP" {
                    guard isMetricName(parts[2]) else { throw FormatError(line: number, reason: "bad HELP name") }
                }
                continue
            }
            let sample = try parseSample(Substring(line), line: number)
            seenSampleFamilies.insert(family(of: sample.name, types: result.types))
            result.samples.append(sample)
        }
        try result.checkHistograms()
        return result
    }

    /// `[a-zA-Z_:][a-zA-Z0-9_:]*`
    static func isMetricName(_ name: String) -> Bool {
        func isLetter(_ byte: UInt8) -> Bool { (65...90).contains(byte) || (97...122).contains(byte) || byte == 95 || byte == 58 }
        guard let first = name.utf8.first, isLetter(first) else { return false }
        return name.utf8.allSatisfy { isLetter($0) || (48...57).contains($0) }
    }

    static func family(of name: String, types: [String: String]) -> String {
        for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
            let base = String(name.dropLast(suffix.count))
            if types[base] == "histogram" { return base }
        }
        return name
    }

    static func parseSample(_ line: Substring, line number: Int) throws -> Sample {
        var rest = line
        let nameEnd = rest.firstIndex { $0 == "{" || $0 == " " } ?? rest.endIndex
        let name = String(rest[..<nameEnd])
        guard isMetricName(name) else { throw FormatError(line: number, reason: "bad metric name \(name)") }
        rest = rest[nameEnd...]
        var labels: [String: String] = [:]
        if rest.first == "{" {
            rest = rest.dropFirst()
            while rest.first != "}" {
                guard let equals = rest.firstIndex(of: "=") else { throw FormatError(line: number, reason: "label without =") }
                let labelName = String(rest[..<equals])
                guard isMetricName(labelName), !labelName.contains(":") else { throw FormatError(line: number, reason: "bad label name") }
                rest = rest[rest.index(after: equals)...]
                guard rest.first == "\"" else { throw FormatError(line: number, reason: "label value not quoted") }
                rest = rest.dropFirst()
                var value = ""
                while true {
                    guard let character = rest.first else { throw FormatError(line: number, reason: "unterminated label value") }
                    rest = rest.dropFirst()
                    if character == "\"" { break }
                    if character == "\\" {
                        guard let escaped = rest.first else { throw FormatError(line: number, reason: "dangling escape") }
                        rest = rest.dropFirst()
                        switch escaped {
                        case "\\": value.append("\\")
                        case "\"": value.append("\"")
                        case "n": value.append("\n")
                        default: throw FormatError(line: number, reason: "bad escape \\\(escaped)")
                        }
                    } else {
                        value.append(character)
                    }
                }
                guard labels[labelName] == nil else { throw FormatError(line: number, reason: "duplicate label \(labelName)") }
                labels[labelName] = value
                if rest.first == "," { rest = rest.dropFirst() } else if rest.first != "}" {
                    throw FormatError(line: number, reason: "expected , or }")
                }
            }
            rest = rest.dropFirst()
        }
        guard rest.first == " " else { throw FormatError(line: number, reason: "no space before value") }
        let fields = rest.dropFirst().split(separator: " ")
        guard fields.count == 1 || fields.count == 2 else { throw FormatError(line: number, reason: "bad value/timestamp") }
        let valueText = String(fields[0])
        let value: Double
        switch valueText {
        case "+Inf": value = .infinity
        case "-Inf": value = -.infinity
        case "NaN": value = .nan
        default:
            guard let parsed = Double(valueText) else { throw FormatError(line: number, reason: "bad value \(valueText)") }
            value = parsed
        }
        return Sample(name: name, labels: labels, value: value)
    }

    /// Buckets are cumulative, end with `le="+Inf"`, and that bucket equals `_count`.
    func checkHistograms() throws {
        for (name, type) in types where type == "histogram" {
            let buckets = samples.filter { $0.name == name + "_bucket" }
            let series = Dictionary(grouping: buckets) { sample in
                sample.labels.filter { $0.key != "le" }.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
            }
            for (key, members) in series {
                let ordered = members.sorted { (Double($0.labels["le"] ?? "") ?? .infinity) < (Double($1.labels["le"] ?? "") ?? .infinity) }
                guard ordered.last?.labels["le"] == "+Inf" else { throw FormatError(line: 0, reason: "\(name){\(key)} has no +Inf bucket") }
                for (lower, upper) in zip(ordered, ordered.dropFirst()) where lower.value > upper.value {
                    throw FormatError(line: 0, reason: "\(name){\(key)} buckets are not cumulative")
                }
                let count = samples.first { sample in
                    sample.name == name + "_count"
                        && sample.labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",") == key
                }
                guard count?.value == ordered.last?.value else { throw FormatError(line: 0, reason: "\(name){\(key)} _count differs from +Inf") }
            }
        }
    }

    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { $0.name == name && $0.labels == labels }?.value
    }
}

@Suite("Prometheus exposition")
struct PrometheusFormatTests {
    @Test("the strict reader refuses malformed exposition text", arguments: [
        "metric{a=\"1\" 1", "9metric 1", "metric{a=unquoted} 1", "metric{a=\"x\\q\"} 1", "metric one",
        "# TYPE m counter\n# TYPE m counter", "m 1\n# TYPE m counter",
    ])
    func refusesMalformed(text: String) {
        #expect(throws: (any Error).self) { try PrometheusText.parse(text) }
    }

    @Test("/metrics parses as Prometheus text, and ingest and processing counters move with the work done")
    func countersMove() async throws {
        let registry = MetricsRegistry()
        let ingress = IngressMetrics(registry: registry)
        ingress.of(.adyen).accepted.increment()
        ingress.of(.adyen).latency.observe(.milliseconds(3))
        ingress.rejected(.pxp, reason: "signature_mismatch")

        let harness = try await ProcessingHarness.make("metrics")
        var settings = ProcessorSettings()
        settings.maxAttempts = 1  // the unparseable body dies on its first attempt
        let clock = harness.clock
        let processor = InboundEventProcessor(
            pool: harness.pool, conninfo: harness.database.url, clients: PaymentProviderClients([]),
            hooks: .fulfillment(FulfillmentSettings(), pool: harness.pool).then(.subscriptions), settings: settings,
            logger: .silent, metrics: registry, now: { clock.now }, jitter: { 0.5 })
        try await harness.insert(.adyen, Bodies.adyen(Bodies.adyenItem(psp: "PSP-M1", code: "AUTHORISATION", value: 1000)))
        try await harness.insert(.adyen, "not json")
        try await harness.drain(processor)

        let text = try PrometheusText.parse(registry.renderPrometheus())
        #expect(text.types["payhook_processing_events_total"] == "counter")
        #expect(text.types["payhook_ingest_duration_seconds"] == "histogram")
        #expect(text.value("payhook_processing_events_total", ["outcome": "processed"]) == 1)
        #expect(text.value("payhook_processing_events_total", ["outcome": "dead"]) == 1)
        #expect(text.value("payhook_deliveries_accepted_total", ["provider": "adyen"]) == 1)
        #expect(text.value("payhook_deliveries_rejected_total", ["provider": "pxp", "reason": "signature_mismatch"]) == 1)
        #expect(text.value("payhook_ingest_duration_seconds_count", ["provider": "adyen"]) == 1)
    }
}

/// ops/alerts/payhook-rules.yml against a server running every role: an alert on a metric
/// payhook does not export would never fire.
@Suite("Alert rules name exported metrics")
struct AlertRulesTests {
    @Test("every payhook_* metric in the alert rules is described by a server running every role")
    func alertMetricsExist() async throws {
        let rulesURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../ops/alerts/payhook-rules.yml").standardized
        let rules = try String(contentsOf: rulesURL, encoding: .utf8)
        var named = Set<String>()
        for match in rules.matches(of: /payhook_[a-z_]+/) {
            var name = String(match.output)
            for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) { name = String(name.dropLast(suffix.count)) }
            named.insert(name)
        }
        #expect(named.count >= 10)
        let database = try await TestDatabase.migrated("alert_rules")
        let configuration = try Configuration.parse(environment: TestSecrets.environment) { _ in throw CocoaError(.fileNoSuchFile) }
        let server = try PayhookServer(configuration: configuration, databaseURL: database.url, logger: .silent)
        let described = server.metrics.describedNames
        #expect(named.subtracting(described).isEmpty, "alert rules name metrics payhook does not describe: \(named.subtracting(described).sorted())")
    }
}
