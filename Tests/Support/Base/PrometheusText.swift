/// A metric sample's value from Prometheus text, `nil` when absent.
package func metricValue(_ text: String, _ name: String, _ labels: String) -> Double? {
    let prefix = labels.isEmpty ? name + " " : "\(name){\(labels)} "
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else { return nil }
    return Double(line.dropFirst(prefix.count))
}
