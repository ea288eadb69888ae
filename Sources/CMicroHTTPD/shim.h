#ifndef PAYHOOK_CMICROHTTPD_SHIM_H
#define PAYHOOK_CMICROHTTPD_SHIM_H
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <limits.h>
#include <microhttpd.h>

/*
 * Swift imports libmicrohttpd's closed enums as Swift enums, so flags cannot be
 * OR-ed there, and MHD_start_daemon / MHD_get_*_info are variadic. These helpers
 * keep both problems on the C side of the bridge.
 *
 * An incremental `swift build` does not notice a change to this header alone (a daemon
 * flag changed here kept its old value until HTTPServer.swift was recompiled); touch a
 * Swift file of PayhookHTTP, or build from clean, after editing it.
 */

/* Collects MHD's error messages while the daemon starts, so a bind or TLS failure
   can be reported with MHD's own reason. Owned by the caller; it must outlive the
   daemon because MHD keeps the logger pointer. */
struct payhook_mhd_log {
    int capturing;  /* accessed with __atomic builtins only */
    int busy;       /* spin flag: MHD may log from its worker threads */
    char message[512];
};

static inline void payhook_mhd_logger(void *cls, const char *fmt, va_list ap) {
    struct payhook_mhd_log *log = (struct payhook_mhd_log *)cls;
    if (!__atomic_load_n(&log->capturing, __ATOMIC_ACQUIRE)) return;
    while (__atomic_exchange_n(&log->busy, 1, __ATOMIC_ACQUIRE)) { }
    size_t used = strlen(log->message);
    if (used + 2 < sizeof log->message) {
        if (used > 0) { log->message[used++] = ' '; log->message[used] = 0; }
        vsnprintf(log->message + used, sizeof log->message - used, fmt, ap);
        /* MHD messages end with a newline; keep the report on one line. */
        for (char *c = log->message; *c; c++) if (*c == '\n' || *c == '\r') *c = ' ';
    }
    __atomic_store_n(&log->busy, 0, __ATOMIC_RELEASE);
}

typedef void *(*payhook_mhd_uri_log_callback)(void *cls, const char *uri, struct MHD_Connection *connection);

struct payhook_mhd_start_options {
    const char *host;                       /* numeric address or name; resolved once */
    uint16_t port;                          /* 0 = ephemeral */
    unsigned int thread_count;              /* >1 enables MHD's thread pool */
    unsigned int connection_limit;
    unsigned int per_ip_connection_limit;   /* 0 = unlimited */
    unsigned int connection_timeout_seconds;
    size_t connection_memory_limit;
    const char *tls_key_pem;                /* both NULL, or both set */
    const char *tls_cert_pem;
    MHD_AccessHandlerCallback access_handler;
    MHD_RequestCompletedCallback request_completed;
    payhook_mhd_uri_log_callback uri_log;
    MHD_NotifyConnectionCallback notify_connection;  /* NULL: none */
    unsigned int listen_backlog;            /* 0 = libmicrohttpd's default (SOMAXCONN) */
    int external_epoll;                     /* 1: no threads of MHD's own; the caller waits on the
                                               epoll descriptor and calls MHD_run (thread_count 1) */
    void *callback_context;                 /* cls for all four callbacks */
    struct payhook_mhd_log *log;
};

/* Returns NULL on failure; the reason is in options->log->message. */
static inline struct MHD_Daemon *payhook_mhd_start(const struct payhook_mhd_start_options *o) {
    struct addrinfo hints;
    struct addrinfo *resolved = NULL;
    struct sockaddr_storage address;
    char port_text[8];
    memset(&hints, 0, sizeof hints);
    memset(&address, 0, sizeof address);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(port_text, sizeof port_text, "%u", (unsigned)o->port);
    int gai = getaddrinfo(o->host, port_text, &hints, &resolved);
    if (gai != 0 || resolved == NULL || resolved->ai_addrlen > sizeof address) {
        snprintf(o->log->message, sizeof o->log->message, "cannot resolve listen address: %s",
                 gai != 0 ? gai_strerror(gai) : "no address");
        if (resolved) freeaddrinfo(resolved);
        return NULL;
    }
    memcpy(&address, resolved->ai_addr, resolved->ai_addrlen);
    int family = resolved->ai_family;
    freeaddrinfo(resolved);

    /* poll(), not epoll. libmicrohttpd 0.9.75's epoll loop takes at most 128 events per
       epoll_wait and, when one call returns exactly 128, calls again with the same timeout (the
       oldest connection's idle deadline): with nothing else pending, the polling thread sleeps
       through the 128 requests it was just told about, then times their connections out.
       poll() sees every descriptor in one call, and being level-triggered it also spares the
       read that epoll's edge triggering needs to reach EAGAIN, and the epoll_ctl pair of every
       suspend and resume. docs/decisions/0003-ingress-poll-not-epoll.md has the measurements. */
    unsigned int flags = MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_INTERNAL_POLLING_THREAD
                         | MHD_USE_POLL;
    /* epoll driven from outside (payhook_mhd_wait, then MHD_run) does not have that flaw:
       MHD_run drains the epoll queue with a zero timeout, so a second epoll_wait returns at once.
       A wake-up then costs what is ready, not one poll of every connection. */
    if (o->external_epoll) flags = MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_EPOLL;
    if (family == AF_INET6) flags |= MHD_USE_IPv6;
    if (o->tls_key_pem != NULL && o->tls_cert_pem != NULL) flags |= MHD_USE_TLS;

    struct MHD_OptionItem items[20];
    unsigned int n = 0;
    /* The logger goes first so that start-up messages reach it. */
    items[n++] = (struct MHD_OptionItem){ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)payhook_mhd_logger, o->log };
    items[n++] = (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, &address };
    items[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_LIMIT, (intptr_t)o->connection_limit, NULL };
    if (o->per_ip_connection_limit > 0)
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)o->per_ip_connection_limit, NULL };
    items[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)o->connection_timeout_seconds, NULL };
    items[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)o->connection_memory_limit, NULL };
    if (o->thread_count > 1 && !o->external_epoll)
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)o->thread_count, NULL };
    items[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)o->request_completed, o->callback_context };
    items[n++] = (struct MHD_OptionItem){ MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)o->uri_log, o->callback_context };
    if (o->notify_connection != NULL)
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)o->notify_connection, o->callback_context };
    if (o->listen_backlog > 0)
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_LISTEN_BACKLOG_SIZE, (intptr_t)o->listen_backlog, NULL };
    if (flags & MHD_USE_TLS) {
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)o->tls_key_pem };
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)o->tls_cert_pem };
    }
    items[n++] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };

    __atomic_store_n(&o->log->capturing, 1, __ATOMIC_RELEASE);
    struct MHD_Daemon *daemon = MHD_start_daemon(flags, o->port, NULL, NULL,
                                                 o->access_handler, o->callback_context,
                                                 MHD_OPTION_ARRAY, items, MHD_OPTION_END);
    __atomic_store_n(&o->log->capturing, 0, __ATOMIC_RELEASE);
    /* Wait out a message being written right now, so the caller may read it. */
    while (__atomic_exchange_n(&o->log->busy, 1, __ATOMIC_ACQUIRE)) { }
    __atomic_store_n(&o->log->busy, 0, __ATOMIC_RELEASE);
    return daemon;
}

/* The epoll descriptor of a daemon started with external_epoll, or -1. */
static inline int payhook_mhd_epoll_fd(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_EPOLL_FD);
    return info ? info->epoll_fd : -1;
}

/* For a daemon started with external_epoll: sleeps until its epoll descriptor has events, or
   wake_fd (an eventfd) is written, or the daemon's next deadline; then empties wake_fd. The
   caller runs MHD_run next. MHD_get_timeout answers 0 while connections it has been told
   about are still unprocessed, so nothing waits here that MHD_run could do now. */
static inline void payhook_mhd_wait(struct MHD_Daemon *daemon, int epoll_fd, int wake_fd) {
    MHD_UNSIGNED_LONG_LONG milliseconds = 0;
    int timeout = -1;
    if (MHD_get_timeout(daemon, &milliseconds) == MHD_YES)
        timeout = milliseconds > (MHD_UNSIGNED_LONG_LONG)INT_MAX ? INT_MAX : (int)milliseconds;
    struct pollfd fds[2] = { { epoll_fd, POLLIN, 0 }, { wake_fd, POLLIN, 0 } };
    if (poll(fds, 2, timeout) > 0 && (fds[1].revents & POLLIN)) {
        uint64_t count;
        ssize_t ignored = read(wake_fd, &count, sizeof count);
        (void)ignored;
    }
}

/* A non-blocking, close-on-exec eventfd for waking payhook_mhd_wait, or -1. */
static inline int payhook_wake_fd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

/* Names the calling thread (at most 15 bytes are kept), for ps, top and debuggers. */
static inline void payhook_name_this_thread(const char *name) { prctl(PR_SET_NAME, name, 0, 0, 0); }

/* Processes whatever is ready without blocking; false if MHD reports a serious error. */
static inline int payhook_mhd_run(struct MHD_Daemon *daemon) {
    return MHD_run(daemon) == MHD_YES;
}

static inline int payhook_mhd_supports_tls(void) {
    return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES;
}

static inline uint16_t payhook_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

/* Writes the peer address as text ("127.0.0.1", "::1") into buffer; "" if unknown. */
static inline void payhook_mhd_client_address(struct MHD_Connection *connection, char *buffer, size_t size) {
    buffer[0] = 0;
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) return;
    const struct sockaddr *sa = info->client_addr;
    if (sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buffer, (socklen_t)size);
    } else if (sa->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buffer, (socklen_t)size);
    }
}

/* Whether a connection notification is the one for a new connection (not its close). */
static inline int payhook_mhd_notify_is_start(enum MHD_ConnectionNotificationCode code) {
    return code == MHD_CONNECTION_NOTIFY_STARTED;
}

/* The connection's socket, or -1 if libmicrohttpd does not say. */
static inline int payhook_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? (int)info->connect_fd : -1;
}

/* Builds a copied-buffer response; add headers, then queue with payhook_mhd_queue_and_release. */
static inline struct MHD_Response *payhook_mhd_response_copying(const void *body, size_t length) {
    return MHD_create_response_from_buffer(length, (void *)body, MHD_RESPMEM_MUST_COPY);
}

static inline int payhook_mhd_add_header(struct MHD_Response *response, const char *name, const char *value) {
    return MHD_add_response_header(response, name, value) == MHD_YES;
}

/* Queues a response the caller keeps (a shared, prepared one); MHD takes its own reference. */
static inline int payhook_mhd_queue(struct MHD_Connection *connection, unsigned int status,
                                    struct MHD_Response *response) {
    return MHD_queue_response(connection, status, response) == MHD_YES;
}

static inline int payhook_mhd_queue_and_release(struct MHD_Connection *connection, unsigned int status,
                                                struct MHD_Response *response) {
    enum MHD_Result queued = MHD_queue_response(connection, status, response);
    MHD_destroy_response(response);
    return queued == MHD_YES;
}

typedef void (*payhook_mhd_header_visitor)(void *context, const char *name, size_t name_length,
                                           const char *value, size_t value_length);

struct payhook_mhd_header_visit {
    payhook_mhd_header_visitor visitor;
    void *context;
};

static inline enum MHD_Result payhook_mhd_header_trampoline(void *cls, enum MHD_ValueKind kind,
                                                            const char *key, size_t key_size,
                                                            const char *value, size_t value_size) {
    (void)kind;
    struct payhook_mhd_header_visit *visit = (struct payhook_mhd_header_visit *)cls;
    visit->visitor(visit->context, key, key_size, value ? value : "", value ? value_size : 0);
    return MHD_YES;
}

/* Calls visitor for each request header, in arrival order. */
static inline void payhook_mhd_visit_headers(struct MHD_Connection *connection,
                                             payhook_mhd_header_visitor visitor, void *context) {
    struct payhook_mhd_header_visit visit = { visitor, context };
    MHD_get_connection_values_n(connection, MHD_HEADER_KIND, payhook_mhd_header_trampoline, &visit);
}

/* MHD_Result as a plain int, so Swift callbacks need not name the imported enum's cases. */
static inline enum MHD_Result payhook_mhd_result(int ok) { return ok ? MHD_YES : MHD_NO; }

#endif
