import PayhookAdmin
import PayhookIngress
import PayhookHTTP

extension EnvironmentReader {
    /// `PAYHOOK_ADMIN_CREDENTIALS_FILE` and the trusted-proxy identity settings, into `configuration`.
    /// A bad credentials file stops `serve` at start (every bad line named); on SIGHUP the
    /// running process keeps its old credentials instead (`AdminCredentialStore`).
    mutating func adminCredentials(into configuration: inout Configuration) {
        if let path = string("PAYHOOK_ADMIN_CREDENTIALS_FILE") {
            configuration.adminCredentialsFile = path
            switch AdminCredentialStore.read(path: path, readFile: readFile) {
            case .success(let credentials):
                configuration.adminFileCredentials = credentials
                if case .failure(let taken) = AdminCredentials.combining(environment: configuration.adminTokenCredential, file: credentials) {
                    problem("PAYHOOK_ADMIN_CREDENTIALS_FILE", taken.description)
                }
            case .failure(let failure):
                problem("PAYHOOK_ADMIN_CREDENTIALS_FILE", failure.description)
            }
        }
        let header = string("PAYHOOK_ADMIN_IDENTITY_HEADER")
        let proxies = string("PAYHOOK_ADMIN_TRUSTED_PROXIES")
        switch (header, proxies) {
        case (nil, nil):
            break
        case (.some, nil), (nil, .some):
            problem("PAYHOOK_ADMIN_IDENTITY_HEADER", "set together with PAYHOOK_ADMIN_TRUSTED_PROXIES, or neither")
        case (let header?, let proxies?):
            guard header.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
                problem("PAYHOOK_ADMIN_IDENTITY_HEADER", "must be a header name such as X-Forwarded-User")
                break
            }
            switch AddressAllowList.parse(proxies) {
            case .success(let list):
                configuration.adminIdentityHeader = header.lowercased()
                configuration.adminTrustedProxies = list
            case .failure(let failure):
                problem("PAYHOOK_ADMIN_TRUSTED_PROXIES", failure.message)
            }
        }
    }
}
