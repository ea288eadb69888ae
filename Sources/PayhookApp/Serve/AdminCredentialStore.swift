import Foundation
import PayhookAdmin
import PayhookCore
import Synchronization

/// The admin credentials a running `serve` accepts, replaced whole when the credentials file is
/// read again (SIGHUP, `systemctl reload`).
///
/// A request reads the set once, at its start, so a reload never changes the answer of a request
/// already under way, and nothing is restarted: rotating a credential drops no request. A file
/// that does not parse on reload leaves the old set in place, logged and counted, because
/// refusing every client over a typo would be worse than keeping the credentials of a minute ago.
final class AdminCredentialStore: Sendable {
    /// `PAYHOOK_ADMIN_TOKEN` as an operator credential named `PAYHOOK_ADMIN_ACTOR`; never reloaded.
    let environmentCredential: AdminCredential?
    let path: String?
    private let readFile: @Sendable (String) throws -> String
    private let current: Mutex<AdminCredentials>
    /// Whether the last reload was refused: the file on disk is not what is in force.
    private let lastReloadFailed = Atomic<Bool>(false)
    private let logger: Logger
    private let metrics: MetricsRegistry

    init(configuration: Configuration, logger: Logger, metrics: MetricsRegistry,
         readFile: @escaping @Sendable (String) throws -> String = { try String(contentsOfFile: $0, encoding: .utf8) }) {
        environmentCredential = configuration.adminTokenCredential
        path = configuration.adminCredentialsFile
        self.readFile = readFile
        self.logger = logger
        self.metrics = metrics
        // The configuration refused a name clash at start (`adminCredentials(into:)`), so this combines.
        current = Mutex((try? AdminCredentials.combining(environment: environmentCredential, file: configuration.adminFileCredentials).get())
            ?? AdminCredentials(environmentCredential.map { [$0] } ?? []))
        metrics.describe("payhook_admin_credentials", type: "gauge", help: "Admin credentials accepted now, by scope.")
        metrics.describe("payhook_admin_credentials_reloads_total", type: "counter",
                         help: "Re-reads of PAYHOOK_ADMIN_CREDENTIALS_FILE (SIGHUP) by outcome; on failure the old credentials stay.")
        metrics.describe("payhook_admin_credentials_stale", type: "gauge",
                         help: "1 while the last re-read of PAYHOOK_ADMIN_CREDENTIALS_FILE failed and older credentials stay in force.")
        metrics.addCollector { [weak self] in
            let credentials = self?.credentials ?? .none
            return AdminScope.allCases.map { scope in
                ("payhook_admin_credentials", [("scope", scope.rawValue)], Double(credentials.count(of: scope)))
            } + [("payhook_admin_credentials_stale", [], self?.lastReloadFailed.load(ordering: .relaxed) == true ? 1 : 0)]
        }
    }

    /// The credentials accepted now.
    var credentials: AdminCredentials { current.withLock { $0 } }

    /// Why a credentials file could not be used; names the file and its bad lines, never a hash.
    struct ReadFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// The credentials in the file at `path`.
    static func read(path: String, readFile: (String) throws -> String) -> Result<[AdminCredential], ReadFailure> {
        let text: String
        do {
            text = try readFile(path)
        } catch {
            return .failure(ReadFailure(description: "cannot read \(path)"))
        }
        switch AdminCredentials.parseFile(text) {
        case .success(let credentials): return .success(credentials)
        case .failure(let failure):
            return .failure(ReadFailure(description: "\(path): " + failure.problems.map(\.description).joined(separator: "; ")))
        }
    }

    /// Reads the credentials file again and, when it parses, accepts exactly its credentials
    /// (and `PAYHOOK_ADMIN_TOKEN`'s) from the next request on. Returns whether it did.
    @discardableResult
    func reload() -> Bool {
        guard let path else {
            logger.info("SIGHUP: no PAYHOOK_ADMIN_CREDENTIALS_FILE to re-read; the admin credentials are unchanged")
            return false
        }
        switch Self.read(path: path, readFile: readFile) {
        case .success(let fromFile):
            let credentials: AdminCredentials
            switch AdminCredentials.combining(environment: environmentCredential, file: fromFile) {
            case .success(let combined): credentials = combined
            case .failure(let taken): return refuse(taken.description)
            }
            current.withLock { $0 = credentials }
            lastReloadFailed.store(false, ordering: .relaxed)
            metrics.increment("payhook_admin_credentials_reloads_total", [("outcome", "reloaded")])
            var byScope: [String: LogValue] = [:]
            for scope in AdminScope.allCases {
                byScope[scope.rawValue] = .int(Int64(credentials.count(of: scope)))
            }
            logger.info("admin credentials reloaded", byScope.merging(["file": .string(path)]) { $1 })
            return true
        case .failure(let failure):
            return refuse(failure.description)
        }
    }

    private func refuse(_ reason: String) -> Bool {
        metrics.increment("payhook_admin_credentials_reloads_total", [("outcome", "failed")])
        lastReloadFailed.store(true, ordering: .relaxed)
        logger.error("admin credentials NOT reloaded; the previous credentials stay in force until the file is fixed and SIGHUP is sent again",
                     ["problem": .string(reason)])
        return false
    }
}
