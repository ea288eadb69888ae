extension ProviderEmulator {
    /// Ids of the resources ``seedDemoResources()`` creates.
    public enum Demo {
        public static let mercadoPagoOrderID = "ORD01JQ4S4KY8HWQ6NA5PXB65B3D3"
        public static let mercadoPagoPaymentID = "104729384756"
        public static let pxpTransactionID = "1ed768bb-e88a-4636-91ae-67927ccbb02b"
    }

    /// Seeds one processed Mercado Pago order, one approved classic payment and one captured
    /// PXP transaction, in the shapes the real APIs return, for `payhook-emulator` and smoke
    /// tests. No real card data: the card fields are synthetic.
    public func seedDemoResources() {
        mercadoPago.putOrder(id: Demo.mercadoPagoOrderID, json: """
            {"id":"\(Demo.mercadoPagoOrderID)","type":"online","processing_mode":"automatic",\
            "external_reference":"sub-42-cycle-7","total_amount":"100.10","total_paid_amount":"100.10",\
            "country_code":"BRA","user_id":"1873904477","status":"processed",\
            "status_detail":"accredited","capture_mode":"automatic","created_date":"2025-03-10T14:05:09.120Z",\
            "last_updated_date":"2025-03-10T14:05:11.482Z","payer":{"customer_id":"1284659970-cUsTmRk2"},\
            "transactions":{"payments":[{"id":"PAY01JQ4S4KY8HWQ6NA5PXB65B3D4","amount":"100.10",\
            "paid_amount":"100.10","status":"processed","status_detail":"accredited",\
            "payment_method":{"id":"master","type":"credit_card","card_id":"9120384756","installments":1}}]}}
            """)
        mercadoPago.putPayment(id: Demo.mercadoPagoPaymentID, json: """
            {"id":\(Demo.mercadoPagoPaymentID),"date_created":"2025-03-11T08:59:58.000-04:00",\
            "date_approved":"2025-03-11T08:59:59.717-04:00","date_last_updated":"2025-03-11T09:00:00.101-04:00",\
            "collector_id":1873904477,"operation_type":"regular_payment","payment_method_id":"visa",\
            "payment_type_id":"debit_card","status":"approved","status_detail":"accredited","currency_id":"ARS",\
            "transaction_amount":4000.5,"transaction_amount_refunded":0,"captured":true,\
            "external_reference":"order-5521","order":{"id":"29384756102","type":"mercadopago"},\
            "payer":{"id":"1284659970-cUsTmRk2"},"card":{"id":"9120384756","last_four_digits":"0007",\
            "expiration_month":11,"expiration_year":2030}}
            """)
        pxp.putTransaction(id: Demo.pxpTransactionID, json: """
            {"systemTransactionId":"\(Demo.pxpTransactionID)","state":"Captured","stateMessage":"Transaction Captured",\
            "transactionMethod":{"intent":"Authorisation","fundingType":"Card","entryType":"Ecom"},\
            "merchant":"\(pxp.merchant)","site":"\(pxp.site)","merchantTransactionId":"sub-77-cycle-3",\
            "merchantTransactionDate":"2025-05-20T08:51:02.826Z","amounts":{"transactionValue":100.10,"currencyCode":"EUR"},\
            "shopper":{"id":"Shopper_01"}}
            """)
    }
}
