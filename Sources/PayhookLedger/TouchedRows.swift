/// What a processed batch touched, handed to ``ProcessingHooks/afterBatch``: the orders it
/// wrote, and the payments that name a merchant reference but no order yet (they may belong to
/// an order the merchant registered by reference).
package struct TouchedRows: Sendable {
    package var orderIDs: Set<Int64> = []
    package var unlinkedPaymentIDs: [Int64] = []

    package init() {}

    package mutating func merge(_ other: TouchedRows) {
        orderIDs.formUnion(other.orderIDs)
        unlinkedPaymentIDs += other.unlinkedPaymentIDs
    }
}
