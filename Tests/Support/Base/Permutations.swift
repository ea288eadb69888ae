/// Every ordering of `items` (n! of them; keep n ≤ 6): the order-independence suites deliver
/// the same events in each one.
public func permutations<T>(_ items: [T]) -> [[T]] {
    guard items.count > 1 else { return [items] }
    var result: [[T]] = []
    for index in items.indices {
        var rest = items
        let head = rest.remove(at: index)
        for tail in permutations(rest) { result.append([head] + tail) }
    }
    return result
}
