#ifndef PAYHOOK_CCURL_SHIM_H
#define PAYHOOK_CCURL_SHIM_H
#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>

/*
 * curl_easy_setopt, curl_multi_setopt and curl_easy_getinfo are variadic, which Swift
 * cannot call, and CURLMsg is a tagged union. These helpers keep both on the C side:
 * Swift fills one plain struct per request and reads results through typed getters.
 */

/* Header and body sink: curl's write-callback signature. Returns `size * count` to go on. */
typedef size_t (*payhook_curl_sink)(char *data, size_t size, size_t count, void *context);

struct payhook_curl_request {
    const char *url;               /* copied by curl */
    const char *method;            /* "GET", "POST", ...; copied by curl */
    const char *body;              /* copied by curl (CURLOPT_COPYPOSTFIELDS) */
    size_t body_length;
    int sends_body;                /* POST/PUT/PATCH or a non-empty body: send Content-Length */
    struct curl_slist *headers;    /* NOT copied: must outlive the transfer */
    long timeout_ms;               /* whole transfer, connect included; at least 1 */
    payhook_curl_sink on_header;   /* one complete header line per call, status lines included */
    payhook_curl_sink on_body;
    void *context;                 /* passed to both sinks */
    struct curl_slist *resolve;    /* "host:port:address" pins, or NULL; NOT copied */
};

/* Resets a (possibly reused) easy handle and configures it for one request.
   Returns CURLE_OK or the first option curl refused. */
static inline CURLcode payhook_curl_prepare(CURL *easy, const struct payhook_curl_request *r) {
    CURLcode code;
    curl_easy_reset(easy);
#define PAYHOOK_CURL_SET(option, value) \
    if ((code = curl_easy_setopt(easy, option, value)) != CURLE_OK) return code
    PAYHOOK_CURL_SET(CURLOPT_URL, r->url);
    PAYHOOK_CURL_SET(CURLOPT_PROTOCOLS_STR, "http,https");
    /* Many threads, no alarm(): signals would hit whichever thread the kernel picks. */
    PAYHOOK_CURL_SET(CURLOPT_NOSIGNAL, 1L);
    /* Payment APIs do not redirect; a 3xx is returned to the caller as an answer. */
    PAYHOOK_CURL_SET(CURLOPT_FOLLOWLOCATION, 0L);
    PAYHOOK_CURL_SET(CURLOPT_TIMEOUT_MS, r->timeout_ms);
    PAYHOOK_CURL_SET(CURLOPT_HTTPHEADER, r->headers);
    PAYHOOK_CURL_SET(CURLOPT_HEADERFUNCTION, r->on_header);
    PAYHOOK_CURL_SET(CURLOPT_HEADERDATA, r->context);
    PAYHOOK_CURL_SET(CURLOPT_WRITEFUNCTION, r->on_body);
    PAYHOOK_CURL_SET(CURLOPT_WRITEDATA, r->context);
    if (r->resolve) PAYHOOK_CURL_SET(CURLOPT_RESOLVE, r->resolve);
    if (r->sends_body) {
        /* The size goes first: COPYPOSTFIELDS copies that many bytes. */
        PAYHOOK_CURL_SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_length);
        PAYHOOK_CURL_SET(CURLOPT_COPYPOSTFIELDS, r->body_length > 0 ? r->body : "");
        if (strcmp(r->method, "POST") != 0) PAYHOOK_CURL_SET(CURLOPT_CUSTOMREQUEST, r->method);
    } else if (strcmp(r->method, "HEAD") == 0) {
        PAYHOOK_CURL_SET(CURLOPT_NOBODY, 1L);
    } else if (strcmp(r->method, "GET") != 0) {
        PAYHOOK_CURL_SET(CURLOPT_CUSTOMREQUEST, r->method);
    }
#undef PAYHOOK_CURL_SET
    return CURLE_OK;
}

/* Idle connections the multi handle keeps open for reuse. */
static inline CURLMcode payhook_curl_multi_set_max_connects(CURLM *multi, long connections) {
    return curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, connections);
}

/* The next finished transfer (its result in *result), or NULL when none is left. */
static inline CURL *payhook_curl_next_done(CURLM *multi, CURLcode *result) {
    int left = 0;
    CURLMsg *message;
    while ((message = curl_multi_info_read(multi, &left)) != NULL) {
        if (message->msg == CURLMSG_DONE) {
            *result = message->data.result;
            return message->easy_handle;
        }
    }
    return NULL;
}

/* The last response's status code; 0 if none arrived. */
static inline long payhook_curl_response_code(CURL *easy) {
    long code = 0;
    if (curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK) return 0;
    return code;
}

/* New connections the transfer had to open (0 when it reused one). */
static inline long payhook_curl_new_connections(CURL *easy) {
    long count = 0;
    if (curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &count) != CURLE_OK) return 0;
    return count;
}

/* errno of the last failed connect, e.g. ECONNREFUSED or ETIMEDOUT; 0 if none. */
static inline long payhook_curl_os_errno(CURL *easy) {
    long value = 0;
    if (curl_easy_getinfo(easy, CURLINFO_OS_ERRNO, &value) != CURLE_OK) return 0;
    return value;
}

/* Blocks SIGPIPE on the calling thread, so a write to a socket the peer closed (OpenSSL's
   included) fails with EPIPE instead of killing the process. The signal is synchronous, so
   it goes to the writing thread: blocking it there is enough, and the process-wide
   disposition stays untouched. */
static inline void payhook_curl_block_sigpipe(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
}

#endif
