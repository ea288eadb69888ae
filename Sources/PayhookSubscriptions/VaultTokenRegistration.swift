import Foundation
package import PayhookCore
package import PayhookPostgres
package import PayhookProviders
package import PayhookAdmin

/// A validated `POST /v1/vault-tokens` body (the CLI's `vault-tokens register` builds the same):
/// a token a merchant saved with the provider outside any payment, so no webhook announces it.
///
/// ```json
/// {"provider": "mercadopago", "customer_id": "1284659970-cUsTmRk2",
///  "token": "7036b192b541454fa9b9990660dfa1b5", "token_kind": "payment_profile",
///  "shopper_reference": "shopper-7781", "account": "", "actor": "alice"}
/// ```
/// Only ids are taken, never card data: a value that looks like a card number is refused.
package struct VaultTokenRegistration: Sendable, Equatable {
    package var provider: ProviderID
    /// The provider account the token belongs to; "" when not given (as `vault_tokens.account`).
    package var account: String
    package var customerID: String?
    package var token: String
    package var kind: VaultTokenKind?
    package var shopperReference: String?
    package var actor: String?

    static let knownFields = ["provider", "account", "customer_id", "token", "token_kind", "shopper_reference", "actor"]

    package static func parse(_ body: [UInt8]) throws(OperationsError) -> VaultTokenRegistration {
        guard let object = AdminBody.object(body) else {
            throw .invalid("body", "the body must be a JSON object with provider, customer_id, token and token_kind")
        }
        return try parse(object)
    }

    /// Validates a body; every error names the field at fault.
    package static func parse(_ object: JSONObject) throws(OperationsError) -> VaultTokenRegistration {
        for key in object.keys.sorted() where !knownFields.contains(key) {
            throw .invalid(key, "unknown field \(key); known: \(knownFields.joined(separator: ", "))")
        }
        guard case .string(let providerText)? = object["provider"], let provider = ProviderID(rawValue: providerText) else {
            throw .invalid("provider", "provider must be one of \(ProviderID.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard let token = try text(object, "token", maxLength: 500) else {
            throw .invalid("token", "token is required: the provider's id of the saved card or payment profile")
        }
        var kind: VaultTokenKind?
        switch object["token_kind"] {
        case nil, .null?: break
        case .string(let text)? where VaultTokenKind(rawValue: text) != nil: kind = VaultTokenKind(rawValue: text)
        default:
            throw .invalid("token_kind", "token_kind must be one of \(VaultTokenKind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let customerID = try text(object, "customer_id", maxLength: 200)
        if provider == .mercadopago {
            guard kind != nil else {
                throw .invalid("token_kind", "token_kind is required for mercadopago: card_id (a customer's saved card) "
                    + "or payment_profile (what merchant-initiated charges take)")
            }
            guard customerID != nil else {
                throw .invalid("customer_id", "customer_id is required for mercadopago: cards and payment profiles are read per customer")
            }
        } else if kind != nil {
            throw .invalid("token_kind", "token_kind applies to mercadopago only; \(provider.rawValue) has one kind of token")
        }
        let shopperReference = try text(object, "shopper_reference", maxLength: 200)
        if provider == .adyen, shopperReference == nil {
            throw .invalid("shopper_reference", "shopper_reference is required for adyen: Adyen lists a shopper's tokens by it, "
                + "and charges name it")
        }
        let actor = try text(object, "actor", maxLength: 200)
        return VaultTokenRegistration(
            provider: provider, account: try text(object, "account", maxLength: 200) ?? "", customerID: customerID,
            token: token, kind: kind, shopperReference: shopperReference, actor: actor)
    }

    /// An optional printable string field; a value that looks like a card number is refused, so
    /// a number pasted into the wrong field is never stored.
    private static func text(_ object: JSONObject, _ key: String, maxLength: Int) throws(OperationsError) -> String? {
        switch object[key] {
        case nil, .null?: return nil
        case .string(let text)? where !text.trimmingCharacters(in: .whitespaces).isEmpty && text.count <= maxLength
            && !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }):
            guard !CardDataFilter.containsCardNumber(text) else {
                throw .invalid(key, "\(key) looks like a card number; payhook stores provider ids only, never card data")
            }
            return text
        default:
            throw .invalid(key, "\(key) must be a non-empty string of at most \(maxLength) printable characters")
        }
    }
}

/// One row of `vault_tokens`, as registration answers it.
package struct StoredVaultToken: Sendable, Equatable {
    package let id: Int64
    package let provider: String
    package let account: String
    package let token: String
    package let kind: String?
    package let customerID: String?
    package let shopperReference: String?
    package let brand: String?
    package let last4: String?
    package let expiry: String?
    package let status: String
    package let paymentProfileID: String?

    init(row: PostgresRow) throws {
        id = try row.decode("id")
        provider = try row.decode("provider")
        account = try row.decode("account")
        token = try row.decode("token")
        kind = try row.decode("token_kind")
        customerID = try row.decode("customer_id")
        shopperReference = try row.decode("shopper_reference")
        brand = try row.decode("brand")
        last4 = try row.decode("last4")
        expiry = try row.decode("expiry")
        status = try row.decode("status")
        paymentProfileID = try row.decode("payment_profile_id")
    }

    package var json: JSONOutput {
        .object([
            .init("id", .int(id)), .init("provider", .string(provider)), .init("account", .string(account)),
            .init("token", .string(token)), .init("token_kind", .optional(kind)), .init("customer_id", .optional(customerID)),
            .init("shopper_reference", .optional(shopperReference)), .init("brand", .optional(brand)),
            .init("last4", .optional(last4)), .init("expiry", .optional(expiry)), .init("status", .string(status)),
            .init("payment_profile_id", .optional(paymentProfileID)),
        ])
    }
}

/// Registers vault tokens merchants saved with a provider: the one implementation behind
/// `payhook vault-tokens register` and `POST /v1/vault-tokens`.
///
/// The provider confirms the token before anything is stored; what it says about the card
/// (brand, last four digits, expiry) is stored, nothing the operator typed about it. Registering
/// the same token again with the same values answers the stored one and writes nothing;
/// different values for a stored token are a conflict. A stored value left empty (a token
/// learned from a webhook without a shopper reference) is filled in, audited.
package struct VaultTokenRegistrar: Sendable {
    let pool: PostgresPool
    let clients: PaymentProviderClients

    package init(pool: PostgresPool, clients: PaymentProviderClients) {
        self.pool = pool
        self.clients = clients
    }

    /// What a registration did.
    package struct Outcome: Sendable {
        package let token: StoredVaultToken
        /// False when the token was already stored with these values (nothing written).
        package let created: Bool
        package let changed: Bool

        package var json: JSONOutput {
            .object([.init("vault_token", token.json), .init("created", .bool(created)), .init("changed", .bool(changed))])
        }
    }

    /// Confirms `registration` with its provider, then stores it in one transaction with its
    /// `audit_log` row.
    /// - Throws: `.unprocessable` (field `token`) when the provider does not know the token, or
    ///   knows it but it cannot be charged; `.unprocessable` (field `provider`) for a provider
    ///   payhook cannot confirm tokens with (PXP) or whose API client is not configured; `.conflict` when the token is stored with other
    ///   values; `.providerUnavailable` when the provider could not answer; `.databaseUnavailable`.
    package func register(_ asked: VaultTokenRegistration, by action: OperatorAction) async throws(OperationsError) -> Outcome {
        let confirmed = try await confirm(asked)
        // The account the provider named (Adyen's merchant account) when the operator named none.
        var registration = asked
        if registration.account.isEmpty { registration.account = confirmed.account ?? "" }
        do {
            return try await pool.transaction { connection in
                let shopper = registration.shopperReference
                let inserted = try await connection.query(VaultTokenSQL.shared.insertRegistered, [
                    .text(confirmed.provider.rawValue), .text(registration.account), .text(confirmed.token),
                    shopper.map(PostgresValue.text) ?? .null, confirmed.customerID.map(PostgresValue.text) ?? .null,
                    confirmed.brand.map(PostgresValue.text) ?? .null, confirmed.last4.map(PostgresValue.text) ?? .null,
                    confirmed.expiry.map(PostgresValue.text) ?? .null, confirmed.kind.map { .text($0.rawValue) } ?? .null,
                ]).rows.first
                if let inserted {
                    let token = try StoredVaultToken(row: inserted)
                    try await audit(token, verb: "register", action: action, on: connection)
                    return Outcome(token: token, created: true, changed: true)
                }
                guard let row = try await connection.query(VaultTokenSQL.shared.lockByProviderToken, [
                    .text(confirmed.provider.rawValue), .text(confirmed.token),
                ]).rows.first else {
                    throw OperationsError(.databaseUnavailable, "vault token \(confirmed.token) vanished while being registered")
                }
                let stored = try StoredVaultToken(row: row)
                let differing = Self.conflicts(stored, registration, confirmed)
                guard differing.isEmpty else {
                    throw OperationsError(.conflict, "vault token \(stored.id) is already stored with another "
                        + differing.joined(separator: ", ") + "; nothing changed", field: differing[0])
                }
                let fillsGaps = (stored.account.isEmpty && !registration.account.isEmpty)
                    || (stored.shopperReference == nil && shopper != nil) || (stored.customerID == nil && confirmed.customerID != nil)
                    || (stored.kind == nil && confirmed.kind != nil)
                guard fillsGaps else { return Outcome(token: stored, created: false, changed: false) }
                guard let updatedRow = try await connection.query(VaultTokenSQL.shared.fillGaps, [
                    .int(stored.id), .text(registration.account), shopper.map(PostgresValue.text) ?? .null,
                    confirmed.customerID.map(PostgresValue.text) ?? .null, confirmed.kind.map { .text($0.rawValue) } ?? .null,
                ]).rows.first else {
                    throw OperationsError(.databaseUnavailable, "vault token \(stored.id) vanished while locked")
                }
                let updated = try StoredVaultToken(row: updatedRow)
                try await audit(updated, verb: "register", action: action, on: connection)
                return Outcome(token: updated, created: false, changed: true)
            }
        } catch {
            throw OperationsError.wrapping(error)
        }
    }

    /// The fields (named as in the request) where the stored token says something else.
    static func conflicts(_ stored: StoredVaultToken, _ registration: VaultTokenRegistration, _ confirmed: VaultTokenSnapshot) -> [String] {
        var fields: [String] = []
        if !stored.account.isEmpty, !registration.account.isEmpty, stored.account != registration.account { fields.append("account") }
        if let kind = stored.kind, let asked = confirmed.kind, kind != asked.rawValue { fields.append("token_kind") }
        if let customer = stored.customerID, let asked = confirmed.customerID, customer != asked { fields.append("customer_id") }
        if let shopper = stored.shopperReference, let asked = registration.shopperReference, shopper != asked {
            fields.append("shopper_reference")
        }
        return fields
    }

    private func audit(_ token: StoredVaultToken, verb: String, action: OperatorAction, on connection: PostgresConnection) async throws {
        try await AuditTrail.record(
            on: connection, by: action, action: "vault_token.\(verb)", target: "vault_token:\(token.id)",
            details: [.init("vault_token", token.json), .init("note", .optional(action.note))] + action.context)
    }

    /// The token as the provider describes it, or the reason it cannot be registered.
    func confirm(_ registration: VaultTokenRegistration) async throws(OperationsError) -> VaultTokenSnapshot {
        switch registration.provider {
        case .pxp:
            // PXP documents no lookup of a stored card; its tokens arrive through signed webhooks.
            throw OperationsError(.unprocessable, "a pxp vault token cannot be confirmed for this provider: PXP documents no "
                + "lookup of stored cards, so payhook stores PXP tokens only from its signed webhooks", field: "provider")
        case .adyen:
            guard let client = clients.client(for: .adyen) as? AdyenAPIClient else {
                throw OperationsError(.unprocessable, "no Adyen API client is configured (PAYHOOK_ADYEN_API_KEY, "
                    + "PAYHOOK_ADYEN_MERCHANT_ACCOUNT), so the token cannot be confirmed; nothing stored", field: "provider")
            }
            let shopper = registration.shopperReference ?? ""
            let methods: [AdyenStoredPaymentMethod]
            do {
                methods = try await client.storedPaymentMethods(shopperReference: shopper)
            } catch {
                throw error.kind == .notFound
                    ? OperationsError(.unprocessable, "Adyen stores no tokens for shopper \(shopper); nothing stored", field: "token")
                    : OperationsError(.providerUnavailable, "could not confirm the token with Adyen (\(error)); nothing stored, try again")
            }
            guard let method = methods.first(where: { $0.token.token == registration.token }) else {
                throw OperationsError(.unprocessable, "Adyen does not know token \(registration.token) for shopper \(shopper) "
                    + "(GET /storedPaymentMethods lists \(methods.count) other(s)); nothing stored", field: "token")
            }
            guard method.supportsSubscriptions else {
                throw OperationsError(.unprocessable, "Adyen stores token \(registration.token) for "
                    + (method.recurringProcessingModels ?? []).joined(separator: ", ")
                    + " only; payhook charges it as a Subscription, which Adyen would refuse; nothing stored", field: "token")
            }
            return method.token
        case .mercadopago:
            guard let client = clients.client(for: .mercadopago) as? MercadoPagoAPIClient else {
                throw OperationsError(.unprocessable, "no Mercado Pago API client is configured "
                    + "(PAYHOOK_MERCADOPAGO_ACCESS_TOKEN), so the token cannot be confirmed; nothing stored", field: "provider")
            }
            let customer = registration.customerID ?? ""
            let what = registration.kind == .paymentProfile ? "payment profile" : "card"
            do {
                switch registration.kind {
                case .paymentProfile?:
                    let profile = try await client.fetchPaymentProfile(customerID: customer, profileID: registration.token)
                    guard profile.token.token == registration.token else {
                        throw OperationsError(.unprocessable, "Mercado Pago answered for another payment profile; nothing stored", field: "token")
                    }
                    guard profile.isChargeable else {
                        throw OperationsError(.unprocessable, "Mercado Pago reports payment profile \(registration.token) as "
                            + "\(profile.status); only a READY profile can be charged. Register it once its test payment "
                            + "made it READY; nothing stored", field: "token")
                    }
                    return profile.token
                case .cardID?, nil:
                    let card = try await client.fetchCustomerCard(customerID: customer, cardID: registration.token)
                    guard card.token == registration.token, card.customerID == nil || card.customerID == customer else {
                        throw OperationsError(.unprocessable, "Mercado Pago answered for another card or customer; nothing stored", field: "token")
                    }
                    return VaultTokenSnapshot(
                        provider: .mercadopago, token: card.token, customerID: customer, brand: card.brand, last4: card.last4,
                        expiry: card.expiry, status: .active, kind: .cardID)
                }
            } catch let error as ProviderAPIError {
                switch error.kind {
                case .notFound:
                    throw OperationsError(.unprocessable, "Mercado Pago does not know \(what) \(registration.token) for customer "
                        + "\(customer); nothing stored", field: "token")
                case .invalidResponse where registration.kind == .paymentProfile:
                    // A documented 400 (customer_id_mismatch) lands here: the profile is not this customer's.
                    throw OperationsError(.unprocessable, "Mercado Pago refused to show payment profile \(registration.token) "
                        + "for customer \(customer) (\(error)); nothing stored", field: "token")
                default:
                    throw OperationsError(.providerUnavailable, "could not confirm the \(what) with Mercado Pago (\(error)); "
                        + "nothing stored, try again")
                }
            } catch let error as OperationsError {
                throw error
            } catch {
                throw OperationsError(.providerUnavailable, "could not confirm the \(what) with Mercado Pago; nothing stored")
            }
        }
    }
}

/// The statements of token registration.
package struct VaultTokenSQL: SQLStatementSet {
    package static let shared = VaultTokenSQL()

    static let columns = """
        id, provider, account, token, token_kind, customer_id, shopper_reference, brand, last4, expiry, status, payment_profile_id
        """

    /// $1 provider, $2 account, $3 token, $4 shopper reference, $5 customer, $6 brand, $7 last4,
    /// $8 expiry, $9 token kind. No row when the token is already stored.
    let insertRegistered = """
        INSERT INTO vault_tokens (provider, account, token, shopper_reference, customer_id, brand, last4, expiry, token_kind)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
        ON CONFLICT (provider, token) DO NOTHING
        RETURNING \(columns)
        """

    let lockByProviderToken = "SELECT \(columns) FROM vault_tokens WHERE provider = $1 AND token = $2 FOR UPDATE"

    /// $1 id, $2 account, $3 shopper reference, $4 customer, $5 token kind: each fills only an
    /// empty stored value.
    let fillGaps = """
        UPDATE vault_tokens
        SET account = CASE WHEN account = '' THEN $2 ELSE account END,
            shopper_reference = COALESCE(shopper_reference, $3), customer_id = COALESCE(customer_id, $4),
            token_kind = COALESCE(token_kind, $5), updated_at = now()
        WHERE id = $1
        RETURNING \(columns)
        """
}
