import Foundation
import Synchronization

/// Process-wide counters, gauges and histograms, rendered in the Prometheus text format.
///
/// One registry is created by the composition root and passed to every component that counts
/// something; tests create their own. Hot paths ask once for a `Counter` or `Histogram` handle
/// and keep it: updating a handle is an atomic add or one short lock, with no label hashing.
/// `increment(_:_:)` and `observe(_:_:_:)` look the handle up each time, for cold paths.
public final class MetricsRegistry: Sendable {
    /// Label names and values.
    public typealias Labels = [(String, String)]

    /// A monotonically increasing count.
    public final class Counter: Sendable {
        private let count = Atomic<UInt64>(0)
        public func increment(by amount: UInt64 = 1) { count.wrappingAdd(amount, ordering: .relaxed) }
        public var value: UInt64 { count.load(ordering: .relaxed) }
    }

    /// A distribution of observations in fixed buckets.
    public final class Histogram: Sendable {
        struct State {
            var bucketCounts: [UInt64]
            var sum: Double = 0
            var count: UInt64 = 0
        }

        let bounds: [Double]
        let state: Mutex<State>

        init(bounds: [Double]) {
            self.bounds = bounds
            self.state = Mutex(State(bucketCounts: Array(repeating: 0, count: bounds.count)))
        }

        public func observe(_ value: Double) {
            let index = bounds.firstIndex { value <= $0 }
            state.withLock { state in
                if let index { state.bucketCounts[index] += 1 }
                state.sum += value
                state.count += 1
            }
        }

        public func observe(_ duration: Duration) {
            let (seconds, attoseconds) = duration.components
            observe(Double(seconds) + Double(attoseconds) / 1e18)
        }

        public var count: UInt64 { state.withLock { $0.count } }
    }

    package struct SeriesKey: Hashable {
        let name: String
        let labels: [String]  // `name="value"` pairs, sorted by label name
    }

    package struct Registered {
        var help: [String: (type: String, text: String)] = [:]
        var buckets: [String: [Double]] = [:]
        var counters: [SeriesKey: Counter] = [:]
        var histograms: [SeriesKey: Histogram] = [:]
        var gauges: [SeriesKey: Double] = [:]
    }

    private let registered = Mutex(Registered())
    /// Gauges computed at scrape time (pool use, backlog), registered by their owners.
    private let collectors = Mutex<[@Sendable () -> [(name: String, labels: Labels, value: Double)]]>([])

    public static let defaultBuckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    public init() {}

    /// Declares a metric's type and help text; rendering groups series under it.
    public func describe(_ name: String, type: String, help: String, buckets: [Double]? = nil) {
        registered.withLock {
            $0.help[name] = (type, help)
            if let buckets { $0.buckets[name] = buckets.sorted() }
        }
    }

    /// The counter for this name and label set, created on first use.
    public func counter(_ name: String, _ labels: Labels = []) -> Counter {
        let key = Self.key(name, labels)
        return registered.withLock { state in
            if let existing = state.counters[key] { return existing }
            let counter = Counter()
            state.counters[key] = counter
            return counter
        }
    }

    /// The histogram for this name and label set, created on first use with the buckets given
    /// to `describe` (or the defaults).
    public func histogram(_ name: String, _ labels: Labels = []) -> Histogram {
        let key = Self.key(name, labels)
        return registered.withLock { state in
            if let existing = state.histograms[key] { return existing }
            let histogram = Histogram(bounds: state.buckets[name] ?? Self.defaultBuckets)
            state.histograms[key] = histogram
            return histogram
        }
    }

    public func increment(_ name: String, _ labels: Labels = [], by amount: UInt64 = 1) {
        counter(name, labels).increment(by: amount)
    }

    public func observe(_ name: String, _ labels: Labels = [], _ value: Double) {
        histogram(name, labels).observe(value)
    }

    public func set(_ name: String, _ labels: Labels = [], to value: Double) {
        let key = Self.key(name, labels)
        registered.withLock { $0.gauges[key] = value }
    }

    /// Adds a function called at every scrape to report gauges that are cheaper to read than to track.
    public func addCollector(_ collector: @escaping @Sendable () -> [(name: String, labels: Labels, value: Double)]) {
        collectors.withLock { $0.append(collector) }
    }

    /// The current value of a counter (tests and the admin API read it).
    public func counterValue(_ name: String, _ labels: Labels = []) -> UInt64 {
        let key = Self.key(name, labels)
        return registered.withLock { $0.counters[key]?.value ?? 0 }
    }

    /// Every metric name given a HELP text with `describe`, whether or not it has samples yet.
    public var describedNames: Set<String> { Set(registered.withLock { $0.help.keys }) }

    /// Prometheus text exposition format 0.0.4.
    public func renderPrometheus() -> String {
        let collected = collectors.withLock { $0 }.flatMap { $0() }
        let snapshot = registered.withLock { state in
            for sample in collected { state.gauges[Self.key(sample.name, sample.labels)] = sample.value }
            return state
        }
        var byName: [String: [String]] = [:]
        for (key, counter) in snapshot.counters {
            byName[key.name, default: []].append(Self.sample(key.name, key.labels, Double(counter.value)))
        }
        for (key, value) in snapshot.gauges {
            byName[key.name, default: []].append(Self.sample(key.name, key.labels, value))
        }
        for (key, histogram) in snapshot.histograms {
            let state = histogram.state.withLock { $0 }
            var cumulative: UInt64 = 0
            var lines: [String] = []
            for (index, bound) in histogram.bounds.enumerated() {
                cumulative += state.bucketCounts[index]
                lines.append(Self.sample(key.name + "_bucket", key.labels + ["le=\"\(Self.format(bound))\""], Double(cumulative)))
            }
            lines.append(Self.sample(key.name + "_bucket", key.labels + ["le=\"+Inf\""], Double(state.count)))
            lines.append(Self.sample(key.name + "_sum", key.labels, state.sum))
            lines.append(Self.sample(key.name + "_count", key.labels, Double(state.count)))
            byName[key.name, default: []].append(lines.joined(separator: "\n"))
        }
        var out = ""
        for name in byName.keys.sorted() {
            if let help = snapshot.help[name] {
                out += "# HELP \(name) \(help.text)\n# TYPE \(name) \(help.type)\n"
            }
            for line in byName[name]!.sorted() { out += line + "\n" }
        }
        return out
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
        guard value.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") || $0 == 10 }) else { return value }
        return value.replacingOccurrences(of: "\\", with: "\\\\")
            .replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}
