// swift-tools-version:6.0
import PackageDescription

/// One settings array for every Swift target, so the language mode and warnings stay uniform.
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    // Imports are internal unless marked: no C module leaks through a Swift module's interface.
    .enableUpcomingFeature("InternalImportsByDefault"),
    // Release builds inline across modules: the ingress hot path spans PayhookIngress,
    // PayhookProviders and PayhookCore since the module split, and without this each delivery
    // cost measurably more payhook CPU (bench/README.md, "Module split", has the figures).
    .unsafeFlags(["-cross-module-optimization"], .when(configuration: .release)),
]

let package = Package(
    name: "payhook",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "payhook", targets: ["payhook"]),
    ],
    targets: [
        // C libraries from Debian, bridged by a module map and a small shim header each.
        .systemLibrary(name: "CLibPQ", path: "Sources/CLibPQ", pkgConfig: "libpq",
                       providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", path: "Sources/CMicroHTTPD", pkgConfig: "libmicrohttpd",
                       providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"])]),

        // Domain values, observability and shared concurrency pieces; no database, network or file
        // access (its one I/O is the logger writing to standard output).
        .target(name: "PayhookCore", swiftSettings: swiftSettings),
        // Infrastructure: each imports exactly one C library (HTTP two: server and client).
        // Postgres uses Core only for `Service`: the pool is a part of `serve`'s ordered shutdown.
        .target(name: "PayhookPostgres", dependencies: ["CLibPQ", "PayhookCrypto", "PayhookCore"], swiftSettings: swiftSettings),
        .target(name: "PayhookCrypto", dependencies: ["COpenSSL"], swiftSettings: swiftSettings),
        .target(name: "PayhookHTTP", dependencies: ["CMicroHTTPD", "CCurl", "PayhookCore"], swiftSettings: swiftSettings),
        // Provider knowledge: signatures, payloads, mappings.
        // Its API clients speak through Core's `HTTPClient` protocol; libcurl's client is injected.
        .target(name: "PayhookProviders", dependencies: ["PayhookCore", "PayhookCrypto"],
                swiftSettings: swiftSettings),
        // Stand-in for the providers' HTTP APIs (fetch and charge), for tests and local runs.
        .target(name: "PayhookEmulator", dependencies: ["PayhookCore", "PayhookCrypto", "PayhookHTTP"],
                swiftSettings: swiftSettings),
        .executableTarget(name: "payhook-emulator", dependencies: ["PayhookEmulator"], swiftSettings: swiftSettings),
        // Job queue: store, claim loop, retry policy, rescuer.
        .target(name: "PayhookQueue", dependencies: ["PayhookCore", "PayhookPostgres"], swiftSettings: swiftSettings),
        // Money plumbing below the features: the advisory lock keys, the payment and vault-token
        // merge rules, every statement that writes `payments` and `orders` for processing and
        // charge settlement alike, and the processing hooks through which fulfillment and
        // subscriptions react to a processed batch without depending on processing.
        .target(name: "PayhookLedger", dependencies: ["PayhookCore", "PayhookPostgres"], swiftSettings: swiftSettings),
        // The application's features, dependencies pointing one way (each line may use those above it).
        // Admin mechanics: the router, request and body helpers, authorization, errors, audit.
        .target(name: "PayhookAdmin", dependencies: ["PayhookCore", "PayhookPostgres", "PayhookHTTP", "PayhookCrypto"],
                swiftSettings: swiftSettings),
        // On-call operations: dead letters, replay, inbound reprocessing, retention, gauges.
        .target(name: "PayhookOperations",
                dependencies: ["PayhookCore", "PayhookPostgres", "PayhookHTTP", "PayhookAdmin", "PayhookQueue"],
                swiftSettings: swiftSettings),
        // Webhook ingress: verification, limits, group commit into inbound_events.
        .target(name: "PayhookIngress",
                dependencies: ["PayhookCore", "PayhookPostgres", "PayhookHTTP", "PayhookProviders"],
                swiftSettings: swiftSettings),
        // Merchant callbacks: the outbox, delivery, Standard Webhooks signing and the destination
        // policy.
        .target(name: "PayhookCallbacks",
                dependencies: ["PayhookCore", "PayhookPostgres", "PayhookCrypto", "PayhookHTTP", "PayhookQueue",
                               "PayhookLedger"],
                swiftSettings: swiftSettings),
        // Processing, orders and fulfillment.
        .target(name: "PayhookProcessing",
                dependencies: ["PayhookCore", "PayhookPostgres", "PayhookHTTP", "PayhookProviders",
                               "PayhookQueue", "PayhookLedger", "PayhookAdmin", "PayhookOperations",
                               "PayhookCallbacks"],
                swiftSettings: swiftSettings),
        // Subscriptions, the scheduler and recurring charges; they react to processing through the
        // ledger's `ProcessingHooks`, so they do not depend on PayhookProcessing.
        .target(name: "PayhookSubscriptions",
                dependencies: ["PayhookCore", "PayhookPostgres", "PayhookHTTP", "PayhookProviders", "PayhookQueue",
                               "PayhookLedger", "PayhookAdmin", "PayhookOperations", "PayhookCallbacks"],
                swiftSettings: swiftSettings),
        // The on-call console: server-rendered pages over the features' own operations and reads.
        .target(name: "PayhookConsole",
                dependencies: ["PayhookCore", "PayhookPostgres", "PayhookCrypto", "PayhookHTTP", "PayhookProviders", "PayhookQueue",
                               "PayhookAdmin", "PayhookOperations", "PayhookProcessing", "PayhookSubscriptions"],
                swiftSettings: swiftSettings),
        // Composition root: configuration, `serve` with its roles, the CLI.
        .target(name: "PayhookApp",
                dependencies: ["PayhookCore", "PayhookPostgres", "PayhookCrypto", "PayhookHTTP", "PayhookProviders", "PayhookQueue",
                               "PayhookLedger", "PayhookAdmin", "PayhookOperations", "PayhookIngress", "PayhookCallbacks",
                               "PayhookProcessing", "PayhookSubscriptions", "PayhookConsole"],
                swiftSettings: swiftSettings,
                plugins: ["EmbedMigrationsPlugin"]),
        .executableTarget(name: "EmbedMigrations", path: "Sources/EmbedMigrations"),
        .plugin(name: "EmbedMigrationsPlugin", capability: .buildTool(), dependencies: ["EmbedMigrations"]),
        .executableTarget(name: "payhook", dependencies: ["PayhookApp"], swiftSettings: swiftSettings),

        // Benchmarks: programs that print figures, never timed tests.
        .executableTarget(name: "payhook-ingest-load", dependencies: ["PayhookCrypto"], path: "bench/IngestLoad",
                          swiftSettings: swiftSettings),
        .executableTarget(name: "payhook-verify-bench", dependencies: ["PayhookCore", "PayhookCrypto", "PayhookProviders"],
                          path: "bench/VerifyBench", swiftSettings: swiftSettings),
        .executableTarget(name: "payhook-queue-bench", dependencies: ["PayhookCore", "PayhookPostgres", "PayhookQueue"],
                          path: "bench/QueueBench", swiftSettings: swiftSettings),

        // Shared by every test target that needs it, in two layers so that the lower test targets
        // build without the features. The base: the one migrated schema fixture (it embeds the
        // migrations itself), dedicated clusters and PgBouncer for restart tests, the one raw HTTP
        // client, the one `eventually`, child processes, seeded randomness.
        .target(name: "PayhookTestSupport", dependencies: ["PayhookCore", "PayhookPostgres"],
                path: "Tests/Support/Base", swiftSettings: swiftSettings, plugins: ["EmbedMigrationsPlugin"]),
        // Over it, for the feature and app test targets: the processing, fulfillment and
        // subscription harnesses (they wire processing with the subscription hooks as serve
        // does), dead-letter and inbound-row fixtures, the quiet-queue wait.
        .target(name: "PayhookFeatureTestSupport",
                dependencies: ["PayhookTestSupport", "PayhookCore", "PayhookPostgres", "PayhookCrypto", "PayhookHTTP",
                               "PayhookProviders", "PayhookEmulator", "PayhookQueue", "PayhookAdmin",
                               "PayhookOperations", "PayhookIngress", "PayhookCallbacks", "PayhookProcessing",
                               "PayhookSubscriptions"],
                path: "Tests/Support/Features", swiftSettings: swiftSettings),
        .testTarget(name: "PayhookCoreTests", dependencies: ["PayhookCore", "PayhookTestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "PayhookCryptoTests", dependencies: ["PayhookCrypto"],
                    resources: [.copy("Fixtures")], swiftSettings: swiftSettings),
        .testTarget(name: "PayhookPostgresTests", dependencies: ["PayhookPostgres", "PayhookTestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "PayhookHTTPTests", dependencies: ["PayhookHTTP", "PayhookCore", "PayhookTestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "PayhookProvidersTests", dependencies: ["PayhookProviders", "PayhookTestSupport"],
                    resources: [.copy("Fixtures")], swiftSettings: swiftSettings),
        .testTarget(name: "PayhookEmulatorTests",
                    dependencies: ["PayhookEmulator", "PayhookProviders", "PayhookHTTP", "PayhookCore"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "PayhookQueueTests", dependencies: ["PayhookQueue", "PayhookCore", "PayhookPostgres", "PayhookTestSupport"],
                    swiftSettings: swiftSettings),
        // Feature test targets: each tests its module through the module's own API, depending on
        // that module, the modules below it (and the provider emulator as a stand-in),
        // PayhookTestSupport, and PayhookFeatureTestSupport where a test needs the harnesses.
        .testTarget(name: "PayhookIngressTests",
                    dependencies: ["PayhookIngress", "PayhookCore", "PayhookPostgres", "PayhookProviders",
                                   "PayhookTestSupport"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "PayhookOperationsTests",
                    dependencies: ["PayhookOperations", "PayhookPostgres", "PayhookQueue", "PayhookTestSupport"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "PayhookProcessingTests",
                    dependencies: ["PayhookProcessing", "PayhookCore", "PayhookPostgres", "PayhookHTTP",
                                   "PayhookProviders", "PayhookQueue", "PayhookLedger", "PayhookAdmin", "PayhookIngress",
                                   "PayhookOperations", "PayhookEmulator", "PayhookTestSupport", "PayhookFeatureTestSupport"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "PayhookSubscriptionsTests",
                    dependencies: ["PayhookSubscriptions", "PayhookCore", "PayhookPostgres", "PayhookProviders",
                                   "PayhookQueue", "PayhookAdmin", "PayhookProcessing", "PayhookOperations",
                                   "PayhookCallbacks", "PayhookEmulator", "PayhookTestSupport", "PayhookFeatureTestSupport"],
                    swiftSettings: swiftSettings),
        // The composition root: configuration, serve, the console, the CLI, the multi-process and
        // crash suites, the provider corpus and the money simulation.
        .testTarget(name: "PayhookAppTests",
                    dependencies: ["PayhookApp", "PayhookTestSupport", "PayhookFeatureTestSupport", "PayhookCore", "PayhookCrypto", "PayhookPostgres",
                                   "PayhookEmulator", "PayhookHTTP", "PayhookProviders", "PayhookQueue",
                                   "PayhookAdmin", "PayhookOperations", "PayhookIngress", "PayhookCallbacks",
                                   "PayhookProcessing", "PayhookSubscriptions", "PayhookConsole"],
                    exclude: ["Scripts"], resources: [.copy("Fixtures")], swiftSettings: swiftSettings),
    ]
)
