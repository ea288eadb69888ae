import Foundation
import Testing
@testable import PayhookApp
@testable import PayhookConsole

/// The server-drawn SVG charts (`ConsoleChart`): pure rendering, no database.
extension ConsoleTests {
    @Test("chart labels, series names, unit and title are escaped in the SVG, the legend and the table")
    func chartEscaping() {
        let hostile = "<script>alert(1)</script>\"'&"
        let chart = ConsoleChart(title: "t \(hostile)", kind: .stackedBars, unit: "u \(hostile)", labels: ["l \(hostile)", "b"],
                                 series: [.init(name: "s \(hostile)", values: [2, 3])])
        let html = chart.render().rendered
        #expect(!html.contains("<script>"))
        #expect(!html.contains("\"'&<"))
        let escaped = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;"
        #expect(html.contains("<title>l \(escaped): s \(escaped) 2</title>"), "the hover title names interval, series and value")
        #expect(html.contains("<th scope=\"row\">l \(escaped)</th>"), "the table's row header")
        #expect(html.contains("<th scope=\"col\" class=\"num\">s \(escaped)</th>"), "the table's column header")
        #expect(html.contains("aria-label=\"t \(escaped), u \(escaped): s \(escaped) 5 in all\""))
    }

    @Test("an empty or all-zero chart says so instead of drawing, keeps its table, and never writes NaN")
    func chartEmpty() {
        for series in [[ConsoleChart.Series](), [.init(name: "a", values: [0, 0, nil])]] {
            let chart = ConsoleChart(title: "Lag", kind: .lines, unit: "seconds", labels: ["1", "2", "3"], series: series,
                                     format: .seconds, emptyText: "No delivery was processed in this window.")
            let html = chart.render().rendered
            #expect(html.contains("No delivery was processed in this window."))
            #expect(!html.contains("<svg class=\"chart-plot\""))
            #expect(html.contains("<th scope=\"row\">3</th>"))
            #expect(Self.coordinates(html).allSatisfy { $0.isFinite })
        }
        // No intervals at all: still no division by zero.
        let none = ConsoleChart(title: "x", kind: .stackedBars, unit: "n", labels: [], series: [.init(name: "a", values: [])])
        let coordinates = Self.coordinates(none.svg().rendered)
        #expect(!coordinates.isEmpty && coordinates.allSatisfy { $0.isFinite })
    }

    /// Every numeric attribute of the SVG (`x`, `y1`, `width`, …) as a number; NaN if one is not.
    static func coordinates(_ svg: String) -> [Double] {
        let names = ["x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "width", "height"]
        return svg.components(separatedBy: " ").compactMap { token -> Double? in
            let parts = token.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, names.contains(String(parts[0])), parts[1].hasPrefix("\"") else { return nil }
            return Double(parts[1].dropFirst().prefix { $0 != "\"" }) ?? .nan
        }
    }

    @Test("axis: the top is a round number at or above the peak; ticks are labelled; the unit labels the y axis; x labels are thinned, the table keeps all")
    func chartAxes() {
        #expect(ConsoleChart.axisMaximum(for: 0) == 1)
        #expect(ConsoleChart.axisMaximum(for: 7) == 10)
        #expect(ConsoleChart.axisMaximum(for: 12) == 20)
        #expect(ConsoleChart.axisMaximum(for: 250) == 250)
        #expect(ConsoleChart.axisMaximum(for: 251) == 500)
        #expect(ConsoleChart.axisMaximum(for: 0.3) == 0.5)
        #expect(ConsoleChart.tickIntervals(for: 20) == 4 && ConsoleChart.tickIntervals(for: 10) == 5)
        let labels = (0..<24).map { String(format: "%02d:00", $0) }
        let chart = ConsoleChart(title: "Deliveries", kind: .stackedBars, unit: "deliveries per hour", labels: labels,
                                 series: [.init(name: "accepted", values: labels.indices.map { Double($0) }),
                                          .init(name: "refused", values: labels.map { _ in 1 })])
        let svg = chart.svg().rendered
        #expect(svg.contains(">deliveries per hour</text>"))
        for tick in ["0", "5", "10", "15", "20", "25"] {   // peak 24 stacked: 23 + 1; axis 25
            #expect(svg.contains("dominant-baseline=\"middle\">\(tick)</text>"), "tick \(tick)")
        }
        let xLabels = labels.filter { svg.contains("text-anchor=\"middle\">\($0)</text>") }
        #expect(xLabels.count <= ConsoleChart.maxAxisLabels && xLabels.first == "00:00")
        let table = chart.table().rendered
        #expect(labels.allSatisfy { table.contains("<th scope=\"row\">\($0)</th>") })
    }

    @Test("scaling: a stacked bar reaches the sum of its series; lines break where a value is missing; seconds read as ms, s, min")
    func chartScaling() {
        let bars = ConsoleChart(title: "d", kind: .stackedBars, unit: "n", labels: ["a", "b"],
                                series: [.init(name: "accepted", values: [6, 10]), .init(name: "refused", values: [4, 0])])
        let svg = bars.svg().rendered
        // Axis top 10: the `b` bar (10) and the stacked `a` bar (6 + 4) both reach the plot's top.
        let top = String(format: "y=\"%.1f\" width=", ConsoleChart.plotTop)
        #expect(svg.components(separatedBy: top).count - 1 == 2)
        #expect(svg.contains(String(format: "y=\"%.1f\" width=", ConsoleChart.y(6, maximum: 10))), "the refused part sits on top of accepted")
        #expect(!svg.contains("<title>b: refused"), "a zero draws no bar")

        // Side by side: each series from the axis, not on top of the other.
        let grouped = ConsoleChart(title: "letters", kind: .groupedBars, unit: "n", labels: ["a"],
                                   series: [.init(name: "opened", values: [10]), .init(name: "resolved", values: [5])]).svg().rendered
        #expect(grouped.contains(top) && grouped.contains(String(format: "y=\"%.1f\" width=", ConsoleChart.y(5, maximum: 10))))
        #expect(grouped.contains(String(format: "height=\"%.1f\"><title>a: resolved 5</title>", ConsoleChart.plotBottom - ConsoleChart.y(5, maximum: 10))))

        let lines = ConsoleChart(title: "lag", kind: .lines, unit: "seconds", labels: ["a", "b", "c", "d"],
                                 series: [.init(name: "p99", values: [0.25, 2, nil, 90])], format: .seconds)
        let path = lines.svg().rendered
        #expect(path.components(separatedBy: " M").count - 1 == 1 && path.contains("d=\"M"), "two runs: a–b, then d alone")
        #expect(path.contains("<title>a: p99 250 ms</title>") && path.contains("<title>b: p99 2 s</title>")
                && path.contains("<title>d: p99 1.5 min</title>"))
        #expect(lines.table().rendered.contains("<td class=\"num\">—</td>"), "the gap is a dash in the table")
    }

    @Test("lag percentiles from the histogram: the step's geometric middle, nothing for an empty one")
    func lagPercentiles() throws {
        // 1,000 ms falls in step 39 (2^(39/4) = 861 ms .. 2^(40/4) = 1,024 ms); shown as 939 ms.
        let second = try #require(ConsoleReads.lagPercentile(0.5, of: [39: 10]))
        #expect(abs(second - 1) < 0.1)
        let mixed: [Int64: Int64] = [0: 98, 60: 2]
        #expect(try #require(ConsoleReads.lagPercentile(0.5, of: mixed)) < 0.002)
        #expect(abs(try #require(ConsoleReads.lagPercentile(0.99, of: mixed)) - 35.7) < 0.1, "rank 99 of 100 is in the slow step")
        #expect(ConsoleReads.lagPercentile(0.99, of: [:]) == nil)
    }
}
