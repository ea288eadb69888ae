import Testing
@testable import PayhookApp
@testable import PayhookCore
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions

@Suite("MetricsRegistry")
struct MetricsRegistryTests {
    @Test("counters, gauges and histograms render as Prometheus text with cumulative buckets")
    func rendersPrometheusText() {
        let registry = MetricsRegistry()
        registry.describe("jobs_total", type: "counter", help: "Jobs.")
        registry.describe("latency_seconds", type: "histogram", help: "Latency.", buckets: [0.1, 1])
        registry.increment("jobs_total", [("kind", "a\"b\\c")])
        registry.counter("jobs_total", [("kind", "a\"b\\c")]).increment(by: 2)
        registry.set("depth", to: 4)
        let histogram = registry.histogram("latency_seconds")
        histogram.observe(0.05)
        histogram.observe(0.5)
        histogram.observe(5)
        registry.addCollector { [("pool", [("state", "idle")], 2)] }

        let lines = registry.renderPrometheus().split(separator: "\n").map(String.init)
        #expect(lines.contains("# TYPE jobs_total counter"))
        #expect(lines.contains(#"jobs_total{kind="a\"b\\c"} 3"#))
        #expect(lines.contains("depth 4"))
        #expect(lines.contains(#"pool{state="idle"} 2"#))
        #expect(lines.contains(#"latency_seconds_bucket{le="0.1"} 1"#))
        #expect(lines.contains(#"latency_seconds_bucket{le="1"} 2"#))
        #expect(lines.contains(#"latency_seconds_bucket{le="+Inf"} 3"#))
        #expect(lines.contains("latency_seconds_count 3"))
        #expect(lines.contains("latency_seconds_sum 5.55"))
    }

    @Test("the same name and labels in any order share one series")
    func labelOrderDoesNotSplitSeries() {
        let registry = MetricsRegistry()
        registry.increment("x_total", [("a", "1"), ("b", "2")])
        registry.increment("x_total", [("b", "2"), ("a", "1")])
        #expect(registry.counterValue("x_total", [("a", "1"), ("b", "2")]) == 2)
    }
}
