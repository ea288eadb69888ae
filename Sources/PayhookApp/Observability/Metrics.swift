import Foundation
import Synchronization

/// Process-wide counters, gauges and histograms, rendered in the Prometheus text format.
///
/// One registry is created by the composition root and passed to every component that counts
/// something; tests create their own. All methods are thread-safe (one `Mutex`), cheap enough for
/// the ingress hot path: a dictionary update per call.
public final class MetricsRegistry: Sendable {
    /// Label names and values; kept sorted by name so equal label sets share one series.
    public typealias Labels = [(String, String)]

    struct SeriesKey: Hashable {
        let name: String
        let labels: [String]  // "name=value" pairs, sorted
    }

    struct Histogram {
        var bucketCounts: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0
    }

    struct State {
        var help: [String: (type: String, text: String)] = [:]
        var counters: [SeriesKey: Double] = [:]
        var gauges: [SeriesKey: Double] = [:]
        var histograms: [SeriesKey: Histogram] = [:]
        var histogramBounds: [String: [Double]] = [:]
    }

    private let state = Mutex(State())
    /// Gauges computed at scrape time (pool use, backlog), registered by their owners.
    private let collectors = Mutex<[@Sendable () -> [(name: String, labels: Labels, value: Double)]]>([])

    public init() {}

    /// Declares a metric's type and help text; rendering groups series under it.
    public func describe(_ name: String, type: String, help: String, buckets: [Double]? = nil) {
        state.withLock {
            $0.help[name] = (type, help)
            if let buckets { $0.histogramBounds[name] = buckets.sorted() }
        }
    }

    public func increment(_ name: String, _ labels: Labels = [], by amount: Double = 1) {
        let key = Self.key(name, labels)
        state.withLock { $0.counters[key, default: 0] += amount }
    }

    public func set(_ name: String, _ labels: Labels = [], to value: Double) {
        let key = Self.key(name, labels)
        state.withLock { $0.gauges[key] = value }
    }

    /// Records one observation; the histogram's buckets come from `describe(_:buckets:)`.
    public func observe(_ name: String, _ labels: Labels = [], _ value: Double) {
        let key = Self.key(name, labels)
        state.withLock { state in
            let bounds = state.histogramBounds[name] ?? Self.defaultBuckets
            var histogram = state.histograms[key] ?? Histogram(bucketCounts: Array(repeating: 0, count: bounds.count))
            if let index = bounds.firstIndex(where: { value <= $0 }) { histogram.bucketCounts[index] += 1 }
            histogram.sum += value
            histogram.count += 1
            state.histograms[key] = histogram
        }
    }

    /// Adds a function called at every scrape to report gauges that are cheaper to read than to track.
    public func addCollector(_ collector: @escaping @Sendable () -> [(name: String, labels: Labels, value: Double)]) {
        collectors.withLock { $0.append(collector) }
    }

    /// The current value of a counter (tests and the admin API read it).
    public func counterValue(_ name: String, _ labels: Labels = []) -> Double {
        let key = Self.key(name, labels)
        return state.withLock { $0.counters[key] ?? 0 }
    }

    /// The number of observations in a histogram series.
    public func histogramCount(_ name: String, _ labels: Labels = []) -> UInt64 {
        let key = Self.key(name, labels)
        return state.withLock { $0.histograms[key]?.count ?? 0 }
    }

    public static let defaultBuckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// Prometheus text exposition format 0.0.4.
    public func renderPrometheus() -> String {
        let collected = collectors.withLock { $0 }.flatMap { $0() }
        return state.withLock { state in
            for sample in collected { state.gauges[Self.key(sample.name, sample.labels)] = sample.value }
            var byName: [String: [String]] = [:]
            for (key, value) in state.counters { byName[key.name, default: []].append(Self.sample(key.name, key.labels, value)) }
            for (key, value) in state.gauges { byName[key.name, default: []].append(Self.sample(key.name, key.labels, value)) }
            for (key, histogram) in state.histograms {
                let bounds = state.histogramBounds[key.name] ?? Self.defaultBuckets
                var cumulative: UInt64 = 0
                var lines: [String] = []
                for (index, bound) in bounds.enumerated() {
                    cumulative += histogram.bucketCounts[index]
                    lines.append(Self.sample(key.name + "_bucket", key.labels + ["le=\"\(Self.format(bound))\""], Double(cumulative)))
                }
                lines.append(Self.sample(key.name + "_bucket", key.labels + ["le=\"+Inf\""], Double(histogram.count)))
                lines.append(Self.sample(key.name + "_sum", key.labels, histogram.sum))
                lines.append(Self.sample(key.name + "_count", key.labels, Double(histogram.count)))
                byName[key.name, default: []].append(lines.joined(separator: "\n"))
            }
            var out = ""
            for name in byName.keys.sorted() {
                if let help = state.help[name] {
                    out += "# HELP \(name) \(help.text)\n# TYPE \(name) \(help.type)\n"
                }
                for line in byName[name]!.sorted() { out += line + "\n" }
            }
            return out
        }
    }

    private static func key(_ name: String, _ labels: Labels) -> SeriesKey {
        SeriesKey(name: name, labels: labels.sorted { $0.0 < $1.0 }.map { "\($0.0)=\"\(escape($0.1))\"" })
    }

    private static func sample(_ name: String, _ labels: [String], _ value: Double) -> String {
        (labels.isEmpty ? name : "\(name){\(labels.joined(separator: ","))}") + " " + format(value)
    }

    private static func format(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }

    private static func escape(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\")
            .replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}
