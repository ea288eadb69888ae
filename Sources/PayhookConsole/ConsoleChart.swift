import Foundation

/// A chart drawn by the server as inline SVG, with the same figures as a table under it.
///
/// Why SVG from the server: the console's Content-Security-Policy forbids inline script and
/// style, so a charting script is out; SVG elements with presentation attributes and classes
/// styled by `/console/console.css` need neither. Every label goes through `HTML`, so a provider
/// account or a dead-letter reason cannot break out of the markup. The chart never relies on
/// colour alone: each point's `<title>` names its series and value (the browser shows it on
/// hover), lines differ by dash pattern, and the table under the chart carries every figure
/// for screen readers and for reading without colour.
/// ```swift
/// let chart = ConsoleChart(title: "Deliveries", kind: .stackedBars, unit: "deliveries",
///                          labels: ["12:00", "13:00"], series: [.init(name: "accepted", values: [3, 5])])
/// let fragment: HTML = chart.render()
/// ```
struct ConsoleChart: Sendable {
    enum Kind: Sendable {
        /// One bar per interval, series stacked: counts that add up (accepted + refused).
        case stackedBars
        /// One bar per series side by side in each interval: counts that do not add up
        /// (dead letters opened and resolved).
        case groupedBars
        /// One line per series, broken where a value is missing: levels (lag percentiles).
        case lines
    }

    /// How values read on the axis, in `<title>`s and in the table.
    enum ValueFormat: Sendable {
        case count
        /// Seconds, shown as `850 ms`, `4.2 s`, `35 s`, `1.5 min`, `2.0 h`.
        case seconds
    }

    struct Series: Sendable {
        let name: String
        /// One value per label; `nil` where the interval has nothing to measure (no delivery
        /// was processed, so there is no lag), drawn as a gap rather than as a zero.
        let values: [Double?]
    }

    let title: String
    let kind: Kind
    /// What the y axis counts or measures, e.g. `deliveries per hour`.
    let unit: String
    /// One label per interval, oldest first (the x axis).
    let labels: [String]
    let series: [Series]
    var format: ValueFormat = .count
    /// Shown instead of an empty plot when no series has a value.
    var emptyText: String = "Nothing in this window."

    static let width = 640.0
    static let height = 200.0
    static let plotLeft = 56.0
    static let plotRight = 632.0
    static let plotTop = 10.0
    static let plotBottom = 168.0
    /// At most this many x-axis labels are written, so they never overlap; the table has all.
    static let maxAxisLabels = 8

    /// The largest stacked or single value the y axis must reach.
    var peak: Double {
        switch kind {
        case .stackedBars:
            return labels.indices.map { index in series.reduce(0) { $0 + max(0, value($1, index) ?? 0) } }.max() ?? 0
        case .groupedBars, .lines:
            return series.flatMap { $0.values.compactMap { $0 } }.max() ?? 0
        }
    }

    var isEmpty: Bool { !series.contains { $0.values.contains { ($0 ?? 0) != 0 } } }

    private func value(_ series: Series, _ index: Int) -> Double? {
        index < series.values.count ? series.values[index] : nil
    }

    /// The axis top: the smallest 1, 2, 2.5 or 5 times a power of ten at or above `peak`, so the
    /// ticks read as round numbers; 1 for an all-zero chart.
    static func axisMaximum(for peak: Double) -> Double {
        guard peak > 0, peak.isFinite else { return 1 }
        let magnitude = pow(10, floor(log10(peak)))
        for step in [1.0, 2.0, 2.5, 5.0, 10.0] where step * magnitude >= peak {
            return step * magnitude
        }
        return 10 * magnitude
    }

    /// Grid intervals on an axis topped at `maximum`: four for a 2 (ticks at 0.5, 1, 1.5), five
    /// otherwise (for 10: 2, 4, 6, 8; for 25: 5, 10, 15, 20), so every tick is a round number.
    static func tickIntervals(for maximum: Double) -> Int {
        let leading = maximum / pow(10, floor(log10(maximum)))
        return abs(leading - 2) < 1e-9 ? 4 : 5
    }

    /// The axis top for this chart: counts get at least 5, so small counts tick in whole units.
    var axisMaximum: Double {
        Self.axisMaximum(for: format == .count ? max(peak, 5) : peak)
    }

    /// The y coordinate of `value` on an axis topped at `maximum`.
    static func y(_ value: Double, maximum: Double) -> Double {
        plotBottom - (plotBottom - plotTop) * min(max(value, 0), maximum) / maximum
    }

    func formatted(_ value: Double) -> String {
        switch format {
        case .count:
            return value == value.rounded() ? String(Int64(value)) : String(format: "%.1f", value)
        case .seconds:
            if value == 0 { return "0" }
            if value < 1 { return "\(Int((value * 1000).rounded())) ms" }
            if value < 10 { return String(format: "%.1f", value).replacingOccurrences(of: ".0", with: "") + " s" }
            if value < 60 { return "\(Int(value.rounded())) s" }
            if value < 3600 { return String(format: "%.1f min", value / 60) }
            return String(format: "%.1f h", value / 3600)
        }
    }

    /// The figure: title, legend, SVG and the table of the same figures.
    func render() -> HTML {
        let legend = HTML.join(series.enumerated().map { index, item -> HTML in
            "<span class=\"key\"><svg class=\"swatch\" width=\"22\" height=\"10\" aria-hidden=\"true\">\(swatch(index))</svg>\(item.name)</span>"
        }, separator: " ")
        let plot: HTML = isEmpty ? "<p class=\"muted chart-empty\">\(emptyText)</p>" : svg()
        return """
            <figure class="chart"><figcaption><strong>\(title)</strong> <span class="muted">(\(unit))</span>
            <span class="legend">\(legend)</span></figcaption>\(plot)
            <details class="chart-table"><summary>\(title) as a table</summary>\(table())</details></figure>
            """
    }

    private func swatch(_ index: Int) -> HTML {
        switch kind {
        case .stackedBars, .groupedBars: return "<rect class=\"bar s\(index)\" x=\"0\" y=\"0\" width=\"22\" height=\"10\"></rect>"
        case .lines: return "<line class=\"line s\(index)\" x1=\"0\" y1=\"5\" x2=\"22\" y2=\"5\"\(Self.dash(index))></line>"
        }
    }

    /// Dash patterns tell lines apart without colour.
    private static func dash(_ index: Int) -> HTML {
        ["", " stroke-dasharray=\"6 3\"", " stroke-dasharray=\"2 3\"", " stroke-dasharray=\"10 3 2 3\""][index % 4]
    }

    private static func number(_ value: Double) -> String {
        String(format: "%.1f", value)
    }

    func svg() -> HTML {
        let maximum = axisMaximum
        let count = max(labels.count, 1)
        let slot = (Self.plotRight - Self.plotLeft) / Double(count)
        var parts: [HTML] = []
        // Grid lines and y-axis ticks, from 0 to the top.
        let intervals = Self.tickIntervals(for: maximum)
        for step in 0...intervals {
            let tick = maximum * Double(step) / Double(intervals)
            let y = Self.number(Self.y(tick, maximum: maximum))
            parts.append("<line class=\"grid\" x1=\"\(Self.number(Self.plotLeft))\" y1=\"\(y)\" x2=\"\(Self.number(Self.plotRight))\" y2=\"\(y)\"></line>")
            parts.append("<text class=\"tick\" x=\"\(Self.number(Self.plotLeft - 6))\" y=\"\(y)\" text-anchor=\"end\" dominant-baseline=\"middle\">\(formatted(tick))</text>")
        }
        // X-axis labels: every n-th interval, centred under its slot.
        let every = max(1, Int((Double(labels.count) / Double(Self.maxAxisLabels)).rounded(.up)))
        for (index, label) in labels.enumerated() where index % every == 0 {
            let x = Self.number(Self.plotLeft + slot * (Double(index) + 0.5))
            parts.append("<text class=\"tick\" x=\"\(x)\" y=\"\(Self.number(Self.plotBottom + 16))\" text-anchor=\"middle\">\(label)</text>")
        }
        parts.append("<text class=\"axis-label\" x=\"12\" y=\"\(Self.number((Self.plotTop + Self.plotBottom) / 2))\" text-anchor=\"middle\" transform=\"rotate(-90 12 \(Self.number((Self.plotTop + Self.plotBottom) / 2)))\">\(unit)</text>")
        parts.append("<line class=\"axis\" x1=\"\(Self.number(Self.plotLeft))\" y1=\"\(Self.number(Self.plotBottom))\" x2=\"\(Self.number(Self.plotRight))\" y2=\"\(Self.number(Self.plotBottom))\"></line>")
        switch kind {
        case .stackedBars: parts += bars(maximum: maximum, slot: slot)
        case .groupedBars: parts += groupedBars(maximum: maximum, slot: slot)
        case .lines: parts += lines(maximum: maximum, slot: slot)
        }
        return """
            <svg class="chart-plot" viewBox="0 0 \(Int(Self.width)) \(Int(Self.height))" role="img" aria-label="\(title), \(unit): \(summary)" preserveAspectRatio="xMidYMid meet">\(parts)</svg>
            """
    }

    /// One sentence for the SVG's accessible name: each series' total or peak.
    var summary: String {
        series.map { item in
            let values = item.values.compactMap { $0 }
            switch kind {
            case .stackedBars, .groupedBars: return "\(item.name) \(formatted(values.reduce(0, +))) in all"
            case .lines: return "\(item.name) peak \(values.max().map(formatted) ?? "none")"
            }
        }.joined(separator: "; ")
    }

    private func bars(maximum: Double, slot: Double) -> [HTML] {
        var parts: [HTML] = []
        let width = max(1, slot * 0.72)
        for (index, label) in labels.enumerated() {
            var base = 0.0
            let x = Self.plotLeft + slot * Double(index) + (slot - width) / 2
            for (seriesIndex, item) in series.enumerated() {
                guard let amount = value(item, index), amount > 0 else { continue }
                let top = Self.y(base + amount, maximum: maximum)
                let bottom = Self.y(base, maximum: maximum)
                base += amount
                parts.append("""
                    <rect class="bar s\(seriesIndex)" x="\(Self.number(x))" y="\(Self.number(top))" width="\(Self.number(width))" height="\(Self.number(max(bottom - top, 0.5)))"><title>\(label): \(item.name) \(formatted(amount))</title></rect>
                    """)
            }
        }
        return parts
    }

    private func groupedBars(maximum: Double, slot: Double) -> [HTML] {
        var parts: [HTML] = []
        let width = max(1, slot * 0.8 / Double(max(series.count, 1)))
        for (index, label) in labels.enumerated() {
            let left = Self.plotLeft + slot * Double(index) + slot * 0.1
            for (seriesIndex, item) in series.enumerated() {
                guard let amount = value(item, index), amount > 0 else { continue }
                let top = Self.y(amount, maximum: maximum)
                parts.append("""
                    <rect class="bar s\(seriesIndex)" x="\(Self.number(left + width * Double(seriesIndex)))" y="\(Self.number(top))" width="\(Self.number(width))" height="\(Self.number(max(Self.plotBottom - top, 0.5)))"><title>\(label): \(item.name) \(formatted(amount))</title></rect>
                    """)
            }
        }
        return parts
    }

    private func lines(maximum: Double, slot: Double) -> [HTML] {
        var parts: [HTML] = []
        for (seriesIndex, item) in series.enumerated() {
            var path = ""
            var penDown = false
            var points: [HTML] = []
            for (index, label) in labels.enumerated() {
                guard let amount = value(item, index) else { penDown = false; continue }
                let x = Self.number(Self.plotLeft + slot * (Double(index) + 0.5))
                let y = Self.number(Self.y(amount, maximum: maximum))
                path += (penDown ? " L" : " M") + "\(x) \(y)"
                penDown = true
                points.append("<circle class=\"point s\(seriesIndex)\" cx=\"\(x)\" cy=\"\(y)\" r=\"3\"><title>\(label): \(item.name) \(formatted(amount))</title></circle>")
            }
            if !path.isEmpty {
                parts.append("<path class=\"line s\(seriesIndex)\" d=\"\(String(path.dropFirst()))\"\(Self.dash(seriesIndex))></path>")
            }
            parts += points
        }
        return parts
    }

    /// Every interval with every series' value; a dash where there is none.
    func table() -> HTML {
        let head: HTML = "<tr><th scope=\"col\">interval</th>\(series.map { "<th scope=\"col\" class=\"num\">\($0.name)</th>" as HTML })</tr>"
        let rows = labels.enumerated().map { index, label -> HTML in
            let cells = series.map { item -> HTML in
                "<td class=\"num\">\(value(item, index).map(formatted) ?? "—")</td>"
            }
            return "<tr><th scope=\"row\">\(label)</th>\(cells)</tr>"
        }
        return "<table><thead>\(head)</thead><tbody>\(rows)</tbody></table>"
    }
}
