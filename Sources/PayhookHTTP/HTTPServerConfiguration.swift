/// Limits and addresses for `HTTPServer`, fixed when the server is created.
public struct HTTPServerConfiguration: Sendable {
    /// Listen address: numeric IPv4/IPv6, or a name resolved once at start.
    /// How logs name this listener (its `Service` name in `payhook serve`).
    public var name: String = "HTTP listener"
    public var host: String = "0.0.0.0"
    /// Listen port; 0 picks an ephemeral port, readable from `HTTPServer.boundPort`.
    public var port: Int = 8080
    /// Largest accepted body. A larger `Content-Length` is answered 413 before the body is read;
    /// a chunked body that grows past it is discarded and answered 413 when it ends (or the
    /// connection is closed once it exceeds twice the limit).
    public var maxBodyBytes: Int = 1 << 20
    /// Bound on the body bytes of all requests being received or handled at once, counted as
    /// they arrive. A request whose announced `Content-Length` does not fit in what is left is
    /// answered 503 with `Retry-After` before its body is read; one whose bytes overrun it
    /// (chunked, or others filled it meanwhile) is closed. 0: no bound other than
    /// `connectionLimit × maxBodyBytes`.
    public var maxBufferedBodyBytes: Int = 0
    /// Approximate bound on the request line plus headers, enforced through libmicrohttpd's
    /// per-connection memory pool (which also holds the read buffer); an oversize header block
    /// gets libmicrohttpd's own 4xx error and never reaches the handler.
    public var maxHeaderBytes: Int = 16 << 10
    /// Simultaneous connections, suspended ones included; beyond it new connections are refused.
    public var connectionLimit: Int = 1024
    /// Simultaneous connections per client IP; 0 means unlimited.
    public var perIPConnectionLimit: Int = 0
    /// Idle time after which a connection is closed, so slow clients cannot pin resources.
    /// Does not apply while a request waits for its handler (see `handlerTimeoutSeconds`).
    public var connectionTimeoutSeconds: Int = 10
    /// Time for a request's headers and body to arrive, counted from the connection's accept
    /// (first request) or the request line (later ones); a slower request's connection is
    /// closed. Unlike `connectionTimeoutSeconds`, trickling bytes does not extend it. 0: none.
    public var requestTimeoutSeconds: Int = 30
    /// Length of the kernel's queue of connections not yet accepted; 0 keeps libmicrohttpd's
    /// default (SOMAXCONN). Beyond it the kernel drops new SYNs, the cheapest way to shed excess.
    public var listenBacklog: Int = 0
    /// Polling threads. 1: one thread of the server's own waits on libmicrohttpd's epoll
    /// descriptor, so a wake-up costs what is ready, however many connections are open
    /// (docs/decisions/0009). Above 1: libmicrohttpd's thread pool, each thread polling all of
    /// its connections with poll(2) on every wake-up (docs/decisions/0003).
    public var threadCount: Int = 1
    /// PEM certificate file; with `tlsKeyPath`, the server speaks HTTPS only.
    public var tlsCertificatePath: String? = nil
    /// PEM private key file; with `tlsCertificatePath`, the server speaks HTTPS only.
    public var tlsKeyPath: String? = nil
    /// If the handler has not called `respond` this long after the request, the client gets
    /// 503 and the late response is dropped.
    public var handlerTimeoutSeconds: Int = 30

    public init() {}
}
