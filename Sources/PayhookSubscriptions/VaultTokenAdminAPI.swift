import PayhookHTTP
package import PayhookAdmin
package import PayhookPostgres
package import PayhookProviders
import PayhookCore

/// The admin listener's `/v1/vault-tokens` route: registers a token a merchant saved with the
/// provider (`VaultTokenRegistrar`, the code `payhook vault-tokens register` runs).
/// Authorization happens before this is called (`AdminAuthorization`).
///
/// | route                  | does                                                               |
/// |------------------------|--------------------------------------------------------------------|
/// | `POST /v1/vault-tokens` | confirm with the provider, then store: 201 when stored, 200 when it already was |
///
/// Errors are `{"code", "message", "field"}` like the other routes: 400 a malformed body, 409 a
/// token stored with other values, 422 a token the provider does not know or that cannot be
/// charged, or a provider payhook cannot confirm tokens with (PXP), 502 the provider did not answer.
package struct VaultTokenAdminAPI: AdminRoutes {
    let registrar: VaultTokenRegistrar

    package init(pool: PostgresPool, clients: PaymentProviderClients) {
        registrar = VaultTokenRegistrar(pool: pool, clients: clients)
    }

    package let prefix = "/v1/vault-tokens"
    package var endpoints: [AdminEndpoint] {
        let registrar = registrar
        return [
            AdminEndpoint("POST", "/v1/vault-tokens", .operator) { request, _, caller in
                let registration = try VaultTokenRegistration.parse(request.body)
                let action = caller.action(request, actorNote: registration.actor)
                let outcome = try await registrar.register(registration, by: action)
                return .admin(outcome.created ? 201 : 200, outcome.json)
            },
        ]
    }
}
