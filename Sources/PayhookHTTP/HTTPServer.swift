import CMicroHTTPD
import Dispatch
import Foundation
import PayhookCore
import Synchronization

/// The ingress and admin HTTP/1.1 server, built on libmicrohttpd.
///
/// libmicrohttpd parses requests and enforces limits and timeouts on the polling thread(s); the
/// handler runs on those threads. With one thread (`threadCount` 1) it is the server's own,
/// waiting on libmicrohttpd's epoll descriptor (`EpollDaemonLoop`); with more, libmicrohttpd's
/// thread pool, each thread polling its connections with poll(2). Responses are asynchronous:
/// after the handler returns, the connection is suspended until `respond` is called (from any
/// thread), so a handler can wait for a database commit without holding a thread. Respond
/// synchronously inside the handler and no suspension happens at all.
///
/// ```swift
/// let server = try HTTPServer(configuration: config) { request, respond in
///     commitQueue.enqueue(request) { outcome in respond(.text(202, "accepted\n")) }  // right
///     // not: respond(try await commit(request)) inside a blocking wait: it stalls every connection
/// }
/// try server.start()
/// ```
///
/// Shutdown is two steps: `stopAccepting()` closes intake, the caller drains its own work,
/// then `stop()` ends every connection. All methods are thread-safe, but `stop()` must not be
/// called from inside the handler (it joins the polling threads).
public final class HTTPServer: Sendable {
    private struct RunningDaemon {
        let daemon: OpaquePointer
        let port: Int
        let log: UnsafeMutablePointer<payhook_mhd_log>
        /// PEM text stays allocated while the daemon lives; libmicrohttpd keeps the pointers.
        let tlsKey: UnsafeMutablePointer<CChar>?
        let tlsCertificate: UnsafeMutablePointer<CChar>?
        /// The daemon's callbacks hold the context unretained; this reference keeps it alive.
        let retainedContext: Unmanaged<DaemonContext>
        let timeoutSweep: any DispatchSourceTimer
        /// The thread driving the daemon when it has none of its own (`threadCount` 1).
        let loop: EpollDaemonLoop?
        var quiescedListenSocket: Int32?
    }

    private enum Lifecycle {
        case idle
        case running(RunningDaemon)
        case stopped
    }

    let configuration: HTTPServerConfiguration
    private let context: DaemonContext
    private let tlsPEM: (key: String, certificate: String)?
    private let lifecycle = Mutex(Lifecycle.idle)
    /// Fired by `stop()`; what `run()` (the `Service` face) waits for.
    let stopped = StopSignal()

    /// Validates the configuration and reads TLS files; does not bind (see `start()`).
    /// - Throws: `HTTPServerError` with code `.invalidConfiguration` listing every bad value,
    ///   or `.tlsConfiguration` if a certificate or key cannot be read.
    public init(configuration: HTTPServerConfiguration, handler: @escaping HTTPHandler) throws(HTTPServerError) {
        let problems = Self.problems(in: configuration)
        guard problems.isEmpty else {
            throw HTTPServerError(.invalidConfiguration, problems.joined(separator: "; "))
        }
        self.configuration = configuration
        self.tlsPEM = try Self.loadTLS(configuration)
        self.context = DaemonContext(
            handler: handler, maxBodyBytes: configuration.maxBodyBytes,
            handlerTimeout: .seconds(configuration.handlerTimeoutSeconds),
            requestTimeout: configuration.requestTimeoutSeconds > 0 ? .seconds(configuration.requestTimeoutSeconds) : nil,
            maxBufferedBodyBytes: configuration.maxBufferedBodyBytes,
            loopWake: configuration.threadCount == 1 ? EventLoopWake() : nil)
    }

    deinit {
        stop()
    }

    /// Binds and starts the polling threads.
    /// - Throws: `.startFailed` naming `host:port` and libmicrohttpd's reason (e.g. address in
    ///   use), `.tlsConfiguration` if GnuTLS rejects the key or certificate, or `.invalidState`
    ///   if already started or stopped.
    public func start() throws(HTTPServerError) {
        try lifecycle.withLock { (state: inout Lifecycle) throws(HTTPServerError) in
            guard case .idle = state else {
                throw HTTPServerError(.invalidState, "start() called on a server that is running or stopped")
            }
            state = .running(try launch())
        }
    }

    /// The port actually bound (useful with port 0); 0 when not running.
    public var boundPort: Int {
        lifecycle.withLock { state in
            if case .running(let running) = state { return running.port }
            return 0
        }
    }

    /// Graceful shutdown, step 1: stop accepting connections (`MHD_quiesce_daemon`).
    /// Open connections, including suspended ones, keep being served. Idempotent.
    public func stopAccepting() {
        lifecycle.withLock { state in
            guard case .running(var running) = state, running.quiescedListenSocket == nil else { return }
            let socket = running.loop?.quiesce() ?? MHD_quiesce_daemon(running.daemon)
            // MHD hands the listen socket back; it is closed after MHD_stop_daemon, as MHD requires.
            running.quiescedListenSocket = socket
            state = .running(running)
        }
    }

    /// Stops the daemon and closes every connection. Requests still waiting for their handler
    /// are resumed first (libmicrohttpd must not be stopped with suspended connections); their
    /// later `respond` calls are dropped. Idempotent; blocks until the polling threads exit.
    public func stop() {
        let running: RunningDaemon? = lifecycle.withLock { state in
            defer { state = .stopped }
            if case .running(let running) = state { return running }
            return nil
        }
        defer { stopped.fire() }
        guard let running else { return }
        running.timeoutSweep.cancel()
        context.shutDown()
        running.loop?.stop()
        MHD_stop_daemon(running.daemon)
        if let socket = running.quiescedListenSocket, socket >= 0 {
            close(socket)
        }
        running.log.deinitialize(count: 1)
        running.log.deallocate()
        free(running.tlsKey)
        free(running.tlsCertificate)
        running.retainedContext.release()
    }

    /// Test hook: requests currently waiting for their handler's response.
    var parkedRequestCount: Int { context.parkedCount }

    /// Body bytes reserved by requests being received or handled (`maxBufferedBodyBytes`).
    public var bufferedBodyBytes: Int { context.bufferedBodyBytes.load(ordering: .relaxed) }

    /// Requests refused because their bodies would have passed `maxBufferedBodyBytes`.
    public var requestsOverBodyBudget: Int { context.overBodyBudget.load(ordering: .relaxed) }

    /// Requests cut off at the request deadline since start (`requestTimeoutSeconds`).
    public var requestsCutOff: Int { context.deadlines?.cutOff.load(ordering: .relaxed) ?? 0 }

    /// Test hook: requests libmicrohttpd has started and not yet reported complete.
    var requestsInProgress: Int { context.requestsInProgress.load(ordering: .relaxed) }

    private func launch() throws(HTTPServerError) -> RunningDaemon {
        let log = UnsafeMutablePointer<payhook_mhd_log>.allocate(capacity: 1)
        log.initialize(to: payhook_mhd_log())
        let tlsKey = tlsPEM.map { strdup($0.key) } ?? nil
        let tlsCertificate = tlsPEM.map { strdup($0.certificate) } ?? nil
        let retainedContext = Unmanaged.passRetained(context)

        var options = payhook_mhd_start_options()
        options.port = UInt16(configuration.port)
        options.thread_count = UInt32(configuration.threadCount)
        options.connection_limit = UInt32(configuration.connectionLimit)
        options.per_ip_connection_limit = UInt32(configuration.perIPConnectionLimit)
        options.connection_timeout_seconds = UInt32(configuration.connectionTimeoutSeconds)
        // The pool holds the request line and headers plus read/write buffers; the slack keeps
        // room for the response header block once the request headers are parsed. Each header
        // line also costs libmicrohttpd about 64 bytes of pool, so a block of many lines near
        // the limit needs most of this slack: with 2 KiB, 34 lines totalling 8,000 bytes got
        // the connection dropped after the handler ran (HTTPServerTests covers it). The pool
        // is zeroed before every request, which a smaller slack would make cheaper.
        options.connection_memory_limit = configuration.maxHeaderBytes + 8192
        options.tls_key_pem = UnsafePointer(tlsKey)
        options.tls_cert_pem = UnsafePointer(tlsCertificate)
        options.access_handler = accessHandler
        options.request_completed = requestCompleted
        options.uri_log = requestStarted
        options.notify_connection = context.deadlines == nil ? nil : connectionNotified
        options.listen_backlog = UInt32(configuration.listenBacklog)
        options.external_epoll = configuration.threadCount == 1 ? 1 : 0
        options.callback_context = retainedContext.toOpaque()
        options.log = log

        let daemon = configuration.host.withCString { host in
            options.host = host
            return payhook_mhd_start(&options)
        }
        guard let daemon else {
            let reason = withUnsafeBytes(of: &log.pointee.message) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            log.deinitialize(count: 1)
            log.deallocate()
            free(tlsKey)
            free(tlsCertificate)
            retainedContext.release()
            // A rejected key or certificate only shows at start; report it as the TLS problem it is.
            let tlsRejected = tlsPEM != nil && reason.contains("TLS")
            throw HTTPServerError(
                tlsRejected ? .tlsConfiguration : .startFailed,
                "cannot start HTTP server on \(configuration.host):\(configuration.port): "
                    + (reason.isEmpty ? "libmicrohttpd gave no reason" : reason))
        }

        var loop: EpollDaemonLoop?
        if configuration.threadCount == 1 {
            loop = context.loopWake.flatMap { EpollDaemonLoop(daemon: daemon, wake: $0, name: "http-\(configuration.port)") }
            guard loop != nil else {
                MHD_stop_daemon(daemon)
                log.deinitialize(count: 1)
                log.deallocate()
                free(tlsKey)
                free(tlsCertificate)
                retainedContext.release()
                throw HTTPServerError(
                    .startFailed,
                    "cannot start HTTP server on \(configuration.host):\(configuration.port): no epoll descriptor or eventfd for its event loop")
            }
        }

        let sweep = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "payhook.http.handler-timeouts"))
        // A quarter of the timeouts (at most 1 s) bounds how late a 503 or a cut-off can be.
        var interval = min(1.0, Double(configuration.handlerTimeoutSeconds) / 4)
        if configuration.requestTimeoutSeconds > 0 {
            interval = min(interval, Double(configuration.requestTimeoutSeconds) / 4)
        }
        sweep.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(50))
        sweep.setEventHandler { [context] in
            let now = ContinuousClock.now
            context.expireOverdue(now: now)
            context.deadlines?.cutOverdue(now: now)
        }
        sweep.resume()

        return RunningDaemon(
            daemon: daemon, port: Int(payhook_mhd_bound_port(daemon)), log: log,
            tlsKey: tlsKey, tlsCertificate: tlsCertificate, retainedContext: retainedContext,
            timeoutSweep: sweep, loop: loop, quiescedListenSocket: nil)
    }

    private static func problems(in c: HTTPServerConfiguration) -> [String] {
        var problems: [String] = []
        func require(_ ok: Bool, _ message: @autoclosure () -> String) {
            if !ok { problems.append(message()) }
        }
        require(!c.host.isEmpty, "host must not be empty")
        require((0...65535).contains(c.port), "port \(c.port) is outside 0...65535")
        require((0...(1 << 40)).contains(c.maxBodyBytes), "maxBodyBytes \(c.maxBodyBytes) is outside 0...2^40")
        require((1024...(1 << 24)).contains(c.maxHeaderBytes), "maxHeaderBytes \(c.maxHeaderBytes) is outside 1024...2^24")
        require((1...1_000_000).contains(c.connectionLimit), "connectionLimit \(c.connectionLimit) is outside 1...1000000")
        require((0...1_000_000).contains(c.perIPConnectionLimit), "perIPConnectionLimit \(c.perIPConnectionLimit) is outside 0...1000000")
        require((0...86_400).contains(c.requestTimeoutSeconds), "requestTimeoutSeconds \(c.requestTimeoutSeconds) is outside 0...86400")
        require((0...(1 << 40)).contains(c.maxBufferedBodyBytes), "maxBufferedBodyBytes \(c.maxBufferedBodyBytes) is outside 0...2^40")
        require((0...65_535).contains(c.listenBacklog), "listenBacklog \(c.listenBacklog) is outside 0...65535")
        require((1...86_400).contains(c.connectionTimeoutSeconds), "connectionTimeoutSeconds \(c.connectionTimeoutSeconds) is outside 1...86400")
        require((1...64).contains(c.threadCount), "threadCount \(c.threadCount) is outside 1...64")
        require((1...86_400).contains(c.handlerTimeoutSeconds), "handlerTimeoutSeconds \(c.handlerTimeoutSeconds) is outside 1...86400")
        require((c.tlsCertificatePath == nil) == (c.tlsKeyPath == nil),
                "tlsCertificatePath and tlsKeyPath must be set together")
        return problems
    }

    private static func loadTLS(_ c: HTTPServerConfiguration) throws(HTTPServerError) -> (key: String, certificate: String)? {
        guard let certificatePath = c.tlsCertificatePath, let keyPath = c.tlsKeyPath else { return nil }
        guard payhook_mhd_supports_tls() != 0 else {
            throw HTTPServerError(.tlsConfiguration, "libmicrohttpd was built without TLS support")
        }
        func read(_ path: String, _ what: String) throws(HTTPServerError) -> String {
            guard let data = FileManager.default.contents(atPath: path), !data.isEmpty,
                  let text = String(data: data, encoding: .utf8) else {
                throw HTTPServerError(.tlsConfiguration, "cannot read TLS \(what) at \(path)")
            }
            return text
        }
        return (key: try read(keyPath, "key"), certificate: try read(certificatePath, "certificate"))
    }
}

// libmicrohttpd callbacks. They run on polling threads, so they are plain nonisolated
// functions; `cls` is the server's DaemonContext, `con_cls` the request's HTTPExchange.

/// URI-log callback: the first callback of every request; creates its exchange.
private func requestStarted(
    _ cls: UnsafeMutableRawPointer?, _ uri: UnsafePointer<CChar>?, _ connection: OpaquePointer?
) -> UnsafeMutableRawPointer? {
    guard let cls else { return nil }
    let context = Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue()
    var rawQuery = ""
    if let uri {
        let bytes = UnsafeRawBufferPointer(start: uri, count: strlen(uri))
        if let mark = bytes.firstIndex(of: UInt8(ascii: "?")) {
            rawQuery = String(decoding: bytes[(mark + 1)...], as: UTF8.self)
        }
    }
    // A stack buffer: an IPv4 address then fits a String stored inline, with no allocation.
    let remoteAddress = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer -> String in
        guard let connection, let base = buffer.baseAddress else { return "" }
        payhook_mhd_client_address(connection, base, buffer.count)
        return String(cString: base)
    }
    if let connection { context.deadlines?.requestStarted(connection) }
    let exchange = HTTPExchange(context: context, rawQuery: rawQuery, remoteAddress: remoteAddress)
    context.requestsInProgress.add(1, ordering: .relaxed)
    return Unmanaged.passRetained(exchange).toOpaque()
}

private func accessHandler(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
    _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
    _ uploadDataSize: UnsafeMutablePointer<Int>?, _ conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    guard let connection, let uploadDataSize, let exchangePointer = conCls?.pointee else {
        return payhook_mhd_result(0)
    }
    let exchange = Unmanaged<HTTPExchange>.fromOpaque(exchangePointer).takeUnretainedValue()
    let keepOpen = exchange.advance(
        connection: connection, url: url, method: method,
        uploadData: uploadData, uploadDataSize: uploadDataSize)
    return payhook_mhd_result(keepOpen ? 1 : 0)
}

/// Request-completed callback: balances the retain taken in `requestStarted`.
private func requestCompleted(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ toe: MHD_RequestTerminationCode
) {
    guard let conCls, let exchangePointer = conCls.pointee else { return }
    conCls.pointee = nil
    let exchange = Unmanaged<HTTPExchange>.fromOpaque(exchangePointer).takeRetainedValue()
    exchange.finish()
    exchange.context.requestsInProgress.subtract(1, ordering: .relaxed)
}

/// Connection-notification callback (only installed with a request deadline): tracks each
/// connection's socket from accept to close for `ConnectionDeadlines`.
private func connectionNotified(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ code: MHD_ConnectionNotificationCode
) {
    guard let cls, let connection else { return }
    let context = Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue()
    guard let deadlines = context.deadlines else { return }
    if payhook_mhd_notify_is_start(code) != 0 {
        deadlines.connectionStarted(connection, fd: payhook_mhd_connection_fd(connection))
    } else {
        deadlines.connectionClosed(connection)
    }
}
