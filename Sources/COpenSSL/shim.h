#ifndef PAYHOOK_COPENSSL_SHIM_H
#define PAYHOOK_COPENSSL_SHIM_H
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/err.h>
#endif
