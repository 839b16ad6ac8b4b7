// Ed25519 signatures and X25519 key agreement (sync identities, spec/SYNC.md §3), through
// OpenSSL's EVP_PKEY with raw 32-byte keys. Private keys are given and returned as their
// 32-byte seeds; the EVP_PKEY objects holding them are freed (and cleansed by OpenSSL) before
// each function returns.
#include "lk_crypto.h"

#include <openssl/evp.h>
#include <string.h>

static int raw_public(EVP_PKEY *key, uint8_t out[32]) {
    size_t len = 32;
    return EVP_PKEY_get_raw_public_key(key, out, &len) == 1 && len == 32;
}

int lk_ed25519_public(const uint8_t seed[32], uint8_t public_key[32]) {
    EVP_PKEY *key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
    if (!key) return 0;
    int ok = raw_public(key, public_key);
    EVP_PKEY_free(key);
    return ok;
}

int lk_ed25519_sign(const uint8_t seed[32], const uint8_t *msg, size_t msg_len, uint8_t signature[64]) {
    EVP_PKEY *key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
    if (!key) return 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    size_t len = 64;
    int ok = ctx && EVP_DigestSignInit(ctx, NULL, NULL, NULL, key) == 1
        && EVP_DigestSign(ctx, signature, &len, msg, msg_len) == 1 && len == 64;
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(key);
    return ok;
}

int lk_ed25519_verify(const uint8_t public_key[32], const uint8_t *msg, size_t msg_len, const uint8_t signature[64]) {
    EVP_PKEY *key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, public_key, 32);
    if (!key) return 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, key) == 1
        && EVP_DigestVerify(ctx, signature, 64, msg, msg_len) == 1;
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(key);
    return ok;
}

int lk_x25519_public(const uint8_t private_key[32], uint8_t public_key[32]) {
    EVP_PKEY *key = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, private_key, 32);
    if (!key) return 0;
    int ok = raw_public(key, public_key);
    EVP_PKEY_free(key);
    return ok;
}

int lk_x25519(const uint8_t private_key[32], const uint8_t peer_public[32], uint8_t shared[32]) {
    EVP_PKEY *key = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, private_key, 32);
    EVP_PKEY *peer = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, NULL, peer_public, 32);
    EVP_PKEY_CTX *ctx = key ? EVP_PKEY_CTX_new(key, NULL) : NULL;
    size_t len = 32;
    int ok = key && peer && ctx && EVP_PKEY_derive_init(ctx) == 1 && EVP_PKEY_derive_set_peer(ctx, peer) == 1
        && EVP_PKEY_derive(ctx, shared, &len) == 1 && len == 32;
    // An all-zero result means a low-order peer key (RFC 7748 §6.1): refused.
    if (ok) {
        uint8_t any = 0;
        for (int i = 0; i < 32; i++) any |= shared[i];
        ok = any != 0;
    }
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(peer);
    EVP_PKEY_free(key);
    return ok;
}
