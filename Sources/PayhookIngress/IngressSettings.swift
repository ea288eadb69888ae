public import PayhookCore
public import PayhookHTTP

/// What the ingress listener allows one client and all of them together, and how many refused
/// deliveries it writes down (docs/decisions/0004-ingress-limits.md explains the defaults).
public struct IngressSettings: Sendable, Equatable {
    /// Simultaneous connections in all (`PAYHOOK_MAX_CONNECTIONS`); beyond it libmicrohttpd
    /// closes new connections as soon as it accepts them.
    public var maxConnections = 1024
    /// Simultaneous connections per client address (`PAYHOOK_MAX_CONNECTIONS_PER_IP`; 0 means
    /// unlimited, for a listener that only a reverse proxy reaches).
    public var maxConnectionsPerIP = 64
    /// From a connection's accept (or a later request's first line) until its headers and body
    /// are complete (`PAYHOOK_REQUEST_TIMEOUT_SECONDS`); a slower request is cut off.
    public var requestTimeoutSeconds = 10
    /// Keep-alive idle time between requests (`PAYHOOK_IDLE_TIMEOUT_SECONDS`).
    public var idleTimeoutSeconds = 10
    /// Request bodies held in memory at once, all connections together
    /// (`PAYHOOK_MAX_BODY_MEMORY_BYTES`; 0: only `maxConnections × PAYHOOK_MAX_BODY_BYTES`).
    public var maxBodyMemoryBytes = 256 << 20
    /// How many refused deliveries reach `rejected_deliveries`.
    public var rejectedRecording = RejectedRecordingSettings()
    /// Client addresses each provider's routes accept (`PAYHOOK_<PROVIDER>_ALLOWED_CIDRS`); a
    /// provider without an entry accepts any address.
    public var allowedAddresses: [ProviderID: AddressAllowList] = [:]

    public init() {}
}

/// The token buckets that decide which refused deliveries are written to `rejected_deliveries`.
///
/// Each (provider, client address) has a bucket of `perSourceBurst` rows refilled at
/// `perSourcePerMinute`; all sources together share `totalPerSecond`. A source's first refused
/// delivery is always written (it is what an investigation starts from); after that a row needs
/// a token from both buckets. Every refusal is still counted in metrics.
public struct RejectedRecordingSettings: Sendable, Equatable {
    /// `PAYHOOK_REJECTED_RECORD_BURST`: rows a new source may fill at once.
    public var perSourceBurst = 10
    /// `PAYHOOK_REJECTED_RECORD_PER_MINUTE`: rows a source earns back each minute.
    public var perSourcePerMinute = 6
    /// `PAYHOOK_REJECTED_RECORD_MAX_PER_SECOND`: rows per second across every source.
    public var totalPerSecond = 5
    /// Sources remembered at once; beyond it the idlest are forgotten (and are new again).
    public var trackedSources = 10_000

    public init() {}
}
