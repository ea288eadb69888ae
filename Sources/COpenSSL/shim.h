#ifndef PAYHOOK_COPENSSL_SHIM_H
#define PAYHOOK_COPENSSL_SHIM_H
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/err.h>
#include <openssl/core_names.h>
#include <openssl/params.h>

/* A keyed HMAC context (EVP_MAC) for `digest` ("SHA256", ...); NULL on failure. The caller
   owns it and frees it with EVP_MAC_CTX_free. `key` must not be NULL (pass a real buffer
   with key_length 0 for an empty key): a NULL key means "keep the previous one". */
static inline EVP_MAC_CTX *payhook_hmac_context_new(const char *digest, const unsigned char *key,
                                                   size_t key_length) {
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    if (mac == NULL) return NULL;
    EVP_MAC_CTX *context = EVP_MAC_CTX_new(mac);
    EVP_MAC_free(mac); /* the context holds its own reference */
    if (context == NULL) return NULL;
    OSSL_PARAM params[2] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)digest, 0),
        OSSL_PARAM_construct_end(),
    };
    if (EVP_MAC_init(context, key, key_length, params) != 1) {
        EVP_MAC_CTX_free(context);
        return NULL;
    }
    return context;
}

/* The HMAC of message under the context's key: EVP_MAC_init with a NULL key restarts from
   the stored key (no key schedule, no fetch). Returns 1 on success. */
static inline int payhook_hmac_context_compute(EVP_MAC_CTX *context, const unsigned char *message,
                                               size_t message_length, unsigned char *out,
                                               size_t out_size, size_t *out_length) {
    if (EVP_MAC_init(context, NULL, 0, NULL) != 1) return 0;
    if (EVP_MAC_update(context, message, message_length) != 1) return 0;
    return EVP_MAC_final(context, out, out_length, out_size) == 1;
}
#endif
