import Foundation
import PayhookCore
package import PayhookPostgres
import PayhookProviders
import PayhookQueue
package import PayhookAdmin
import PayhookLedger

/// The merchant's expected order, as `POST /v1/orders` accepts it.
package struct OrderRegistration: Sendable, Equatable {
    var provider: ProviderID
    var account: String = ""
    var merchantReference: String?
    var providerOrderID: String?
    var amount: Money
    var callbackURL: String?

    static let fields = ["provider", "account", "merchant_reference", "provider_order_id", "amount", "callback_url"]

    /// Parses and validates a request body; every error names its field.
    static func parse(_ body: [UInt8]) throws(OperationsError) -> OrderRegistration {
        guard let object = AdminBody.object(body) else {
            throw .invalid("body", "the body must be a JSON object")
        }
        for member in object.members where !fields.contains(member.key) {
            throw .invalid(member.key, "unknown field \(member.key); known: \(fields.joined(separator: ", "))")
        }
        guard case .string(let providerText)? = object["provider"] else {
            throw .invalid("provider", "provider is required: mercadopago, adyen or pxp")
        }
        guard let provider = ProviderID(rawValue: providerText) else {
            throw .invalid("provider", "provider must be one of mercadopago, adyen, pxp")
        }
        func optionalText(_ key: String, maxLength: Int = 256) throws(OperationsError) -> String? {
            switch object[key] {
            case nil, .null?: return nil
            case .string(let text)?:
                guard !text.isEmpty, text.utf8.count <= maxLength else {
                    throw .invalid(key, "\(key) must be a non-empty string of at most \(maxLength) bytes")
                }
                return text
            default: throw .invalid(key, "\(key) must be a string or null")
            }
        }
        let merchantReference = try optionalText("merchant_reference")
        let providerOrderID = try optionalText("provider_order_id")
        guard merchantReference != nil || providerOrderID != nil else {
            throw .invalid("merchant_reference", "at least one of merchant_reference and provider_order_id is required")
        }
        let account = try optionalText("account", maxLength: 64) ?? ""
        let callbackURL = try optionalText("callback_url", maxLength: 2048)
        if let callbackURL {
            guard let url = URL(string: callbackURL), url.scheme == "https" || url.scheme == "http", url.host != nil else {
                throw .invalid("callback_url", "callback_url must be an absolute http or https URL")
            }
        }
        return OrderRegistration(provider: provider, account: account, merchantReference: merchantReference,
                                 providerOrderID: providerOrderID, amount: try AdminBody.money(object["amount"]),
                                 callbackURL: callbackURL)
    }
}

/// Registers expected orders (the admin API's `POST /v1/orders`) and reads them back.
package struct OrderService: Sendable {
    package init(pool: PostgresPool, trigger: FulfillmentTrigger) {
        self.pool = pool
        self.trigger = trigger
    }

    let pool: PostgresPool
    let trigger: FulfillmentTrigger

    /// Registers `registration`, or adopts the provider order a webhook created first when the
    /// registration names its provider order id. Provider orders that carry the reference
    /// (other checkout attempts) are linked to it, never adopted by reference alone: one
    /// reference may have any number of them. Repeating an identical registration returns the
    /// order unchanged (`created == false`).
    /// A `callback_url` must resolve only to addresses `CallbackDestinationPolicy` admits.
    /// A registration that changes the order is audited (`order.register`, by `action`'s actor)
    /// in the same transaction.
    /// - Throws: `.invalidArgument` (field `callback_url`) for a refused callback URL;
    ///   `.conflict` when the order is registered with other values or a reference belongs to
    ///   another order; `.databaseUnavailable`.
    func register(_ registration: OrderRegistration,
                  by action: OperatorAction = OperatorAction(actor: "admin-api")) async throws(OperationsError) -> (order: OrderRecord, created: Bool) {
        if let text = registration.callbackURL, let url = URL(string: text) {
            // Checked again, resolved afresh, before every delivery (MerchantCallbackDelivery).
            do {
                _ = try await trigger.settings.callbackDestinations.destination(of: url)
            } catch {
                throw OperationsError.invalid("callback_url", error.description)
            }
        }
        do {
            return try await pool.transaction { connection in
                try await register(registration, by: action, on: connection)
            }
        } catch {
            throw OperationsError.wrapping(error)
        }
    }

    private func register(_ registration: OrderRegistration, by action: OperatorAction,
                          on connection: PostgresConnection) async throws -> (order: OrderRecord, created: Bool) {
        let provider = registration.provider.rawValue
        var keys: [AdvisoryLockKey] = []
        if let id = registration.providerOrderID { keys.append(.order(provider: provider, id: id)) }
        if let reference = registration.merchantReference {
            keys.append(.reference(provider: provider, merchantReference: reference))
        }
        try await AdvisoryLockKey.lock(keys, on: connection)

        let byOrderID = try await existingID(OrderSQL.shared.selectByProviderOrderID, [.text(provider)], registration.providerOrderID, connection)
        let byReference = try await existingID(OrderSQL.shared.selectByReference, [.text(provider), .text(registration.account)],
                                               registration.merchantReference, connection)
        if let byOrderID, let byReference, byOrderID != byReference {
            throw OperationsError(.conflict, "provider_order_id and merchant_reference belong to two different orders (\(byOrderID), \(byReference))")
        }
        let amount = registration.amount
        let orderID: Int64
        var created = false
        if let existing = byOrderID ?? byReference {
            guard let order = try await OrderRecord.load(id: existing, forUpdate: true, on: connection) else {
                throw OperationsError(.notFound, "order \(existing) disappeared")
            }
            guard order.account == registration.account else {
                throw OperationsError(.conflict, "provider_order_id belongs to an order of another account (order \(order.id))", field: "account")
            }
            if order.registeredAt != nil {
                let same = order.expectedAmountMinor == amount.minorUnits && order.expectedCurrency == amount.currency
                    && (registration.merchantReference == nil || order.merchantReference == registration.merchantReference)
                    && (registration.providerOrderID == nil || order.providerOrderID == registration.providerOrderID)
                    && order.callbackURL == registration.callbackURL
                guard same else {
                    throw OperationsError(.conflict, "order \(order.id) is already registered with different values")
                }
                return (try await reload(order.id, connection), false)
            }
            let updated = try await connection.query(LedgerSQL.shared.adoptOrder, [
                .int(existing), registration.merchantReference.map(PostgresValue.text) ?? .null,
                registration.providerOrderID.map(PostgresValue.text) ?? .null, .int(amount.minorUnits),
                .text(amount.currency), registration.callbackURL.map(PostgresValue.text) ?? .null,
            ])
            guard updated.rows.first != nil else {
                throw OperationsError(.conflict, "merchant_reference is already used by another \(provider) order")
            }
            orderID = existing
        } else {
            let inserted = try await connection.query(LedgerSQL.shared.insertRegisteredOrder, [
                .text(provider), .text(registration.account), registration.providerOrderID.map(PostgresValue.text) ?? .null,
                registration.merchantReference.map(PostgresValue.text) ?? .null, .int(amount.minorUnits),
                .text(amount.currency), registration.callbackURL.map(PostgresValue.text) ?? .null,
            ])
            guard let id = try inserted.rows.first?.decode("id", as: Int64.self) else {
                throw OperationsError(.conflict, "an order with this reference appeared concurrently; retry")
            }
            orderID = id
            created = true
        }
        if let reference = registration.merchantReference {
            try await connection.query(LedgerSQL.shared.linkPaymentsToOrder, [
                .int(orderID), .text(provider), .text(reference), .text(registration.account),
            ])
            try await connection.query(LedgerSQL.shared.linkProviderOrdersToOrder, [
                .int(orderID), .text(provider), .text(registration.account), .text(reference),
            ])
        }
        // A repeated identical registration returned above: this one changed the order.
        try await AuditTrail.record(
            on: connection, by: action, action: "order.register", target: "order:\(orderID)",
            details: [
                .init("provider", .string(provider)), .init("account", .string(registration.account)),
                .init("merchant_reference", .optional(registration.merchantReference)),
                .init("provider_order_id", .optional(registration.providerOrderID)),
                .init("amount", .object([.init("value", .int(amount.minorUnits)), .init("currency", .string(amount.currency))])),
                .init("callback_url", .optional(registration.callbackURL)), .init("adopted", .bool(!created)),
            ] + action.context)
        try await trigger.afterRegistration(orderID: orderID, on: connection)
        return (try await reload(orderID, connection), created)
    }

    private func existingID(_ sql: String, _ scope: [PostgresValue], _ key: String?, _ connection: PostgresConnection) async throws -> Int64? {
        guard let key else { return nil }
        return try await connection.query(sql, scope + [.text(key)]).rows.first?.decode("id", as: Int64.self)
    }

    private func reload(_ id: Int64, _ connection: PostgresConnection) async throws -> OrderRecord {
        guard let order = try await OrderRecord.load(id: id, withCallbacks: true, on: connection) else {
            throw OperationsError(.notFound, "no order \(id)")
        }
        return order
    }

    /// One order with payments and fulfillment.
    package func order(id: Int64) async throws(OperationsError) -> OrderRecord {
        let found: OrderRecord?
        do {
            found = try await pool.withConnection { connection in
                try await OrderRecord.load(id: id, withCallbacks: true, on: connection)
            }
        } catch {
            throw OperationsError.wrapping(error)
        }
        guard let found else { throw OperationsError(.notFound, "no order \(id)") }
        return found
    }
}

package struct OrderSQL: SQLStatementSet {
    /// The instance callers read statements from; `SQLStatementSet` lists its properties.
    package static let shared = OrderSQL()

    let selectByProviderOrderID = "SELECT id FROM orders WHERE provider = $1 AND provider_order_id = $2"
    /// $1 provider, $2 account, $3 merchant reference: the registered order of the reference
    /// (unique per account). Provider orders sharing it are linked, not adopted.
    let selectByReference = """
        SELECT id FROM orders WHERE provider = $1 AND account = $2 AND merchant_reference = $3 AND registered_at IS NOT NULL
        """
}
