// See include/lk_crypto.h. Algorithm objects are fetched once and cached: an implicit
// fetch on every call costs more than the operation itself for short inputs.
#include "lk_crypto.h"

// SHA256_Init/Update/Final (the keyed HMAC below) are deprecated in OpenSSL 3, not removed.
#define OPENSSL_SUPPRESS_DEPRECATED 1

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>

static pthread_once_t fetch_once = PTHREAD_ONCE_INIT;
static EVP_MAC *mac_hmac;
static EVP_KDF *kdf_hkdf;
static EVP_KDF *kdf_scrypt;
static EVP_MD *md_sha256;
static EVP_CIPHER *cipher_gcm[3];   // 128, 192, 256
static EVP_CIPHER *cipher_wrap[3];
static EVP_CIPHER *cipher_ecb[3];

static void fetch_all(void) {
    mac_hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    kdf_hkdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
    kdf_scrypt = EVP_KDF_fetch(NULL, "SCRYPT", NULL);
    md_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    cipher_gcm[0] = EVP_CIPHER_fetch(NULL, "AES-128-GCM", NULL);
    cipher_gcm[1] = EVP_CIPHER_fetch(NULL, "AES-192-GCM", NULL);
    cipher_gcm[2] = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
    cipher_wrap[0] = EVP_CIPHER_fetch(NULL, "AES-128-WRAP", NULL);
    cipher_wrap[1] = EVP_CIPHER_fetch(NULL, "AES-192-WRAP", NULL);
    cipher_wrap[2] = EVP_CIPHER_fetch(NULL, "AES-256-WRAP", NULL);
    cipher_ecb[0] = EVP_CIPHER_fetch(NULL, "AES-128-ECB", NULL);
    cipher_ecb[1] = EVP_CIPHER_fetch(NULL, "AES-192-ECB", NULL);
    cipher_ecb[2] = EVP_CIPHER_fetch(NULL, "AES-256-ECB", NULL);
}

static int key_index(size_t key_len) {
    switch (key_len) {
    case 16: return 0;
    case 24: return 1;
    case 32: return 2;
    default: return -1;
    }
}

int lk_random(uint8_t *out, size_t len) {
    if (len == 0) return 1;
    if (len > INT_MAX) return 0;
    return RAND_bytes(out, (int)len) == 1;
}

int lk_sha256(const uint8_t *data, size_t len, uint8_t *out) {
    pthread_once(&fetch_once, fetch_all);
    if (md_sha256 == NULL) return 0;
    unsigned int out_len = 0;
    static const uint8_t empty[1] = {0};
    return EVP_Digest(len ? data : empty, len, out, &out_len, md_sha256, NULL) == 1 && out_len == 32;
}

int lk_hmac_sha256(const uint8_t *key, size_t key_len,
                   const uint8_t *const *parts, const size_t *part_lens, size_t count,
                   uint8_t *out) {
    pthread_once(&fetch_once, fetch_all);
    if (mac_hmac == NULL) return 0;
    static const uint8_t empty_key[1] = {0};
    int ok = 0;
    size_t out_len = 0;
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac_hmac);
    if (ctx == NULL) return 0;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
        OSSL_PARAM_construct_end(),
    };
    if (EVP_MAC_init(ctx, key_len ? key : empty_key, key_len, params) != 1) goto done;
    for (size_t i = 0; i < count; i++) {
        if (part_lens[i] == 0) continue;
        if (EVP_MAC_update(ctx, parts[i], part_lens[i]) != 1) goto done;
    }
    if (EVP_MAC_final(ctx, out, &out_len, 32) != 1 || out_len != 32) goto done;
    ok = 1;
done:
    EVP_MAC_CTX_free(ctx);
    return ok;
}

// A keyed HMAC-SHA256 context is the SHA-256 state after the inner and after the outer padded
// key block (RFC 2104 §4, "precomputed keys"): a MAC copies the two plain structs and hashes
// only the message and one outer block, with no allocation and no provider dispatch. EVP_MAC
// with EVP_MAC_CTX_dup costs several allocations and parameter lookups per MAC, which for the
// short inputs of the format (record frames, unique-key and attribute hashes) was most of the
// cost. The low-level SHA-256 functions are deprecated in OpenSSL 3 but kept, and run the same
// assembly as EVP's SHA-256.
typedef struct {
    SHA256_CTX inner;
    SHA256_CTX outer;
} lk_hmac_key;

void *lk_hmac_sha256_key_new(const uint8_t *key, size_t key_len) {
    lk_hmac_key *h = OPENSSL_malloc(sizeof *h);
    if (h == NULL) return NULL;
    uint8_t block[SHA256_CBLOCK];
    uint8_t pad[SHA256_CBLOCK];
    memset(block, 0, sizeof block);
    int ok = 1;
    if (key_len > SHA256_CBLOCK) {
        SHA256_CTX c;
        ok = SHA256_Init(&c) == 1 && SHA256_Update(&c, key, key_len) == 1 && SHA256_Final(block, &c) == 1;
        OPENSSL_cleanse(&c, sizeof c);
    } else if (key_len > 0) {
        memcpy(block, key, key_len);
    }
    for (size_t i = 0; i < SHA256_CBLOCK; i++) pad[i] = block[i] ^ 0x36;
    ok = ok && SHA256_Init(&h->inner) == 1 && SHA256_Update(&h->inner, pad, SHA256_CBLOCK) == 1;
    for (size_t i = 0; i < SHA256_CBLOCK; i++) pad[i] = block[i] ^ 0x5c;
    ok = ok && SHA256_Init(&h->outer) == 1 && SHA256_Update(&h->outer, pad, SHA256_CBLOCK) == 1;
    OPENSSL_cleanse(block, sizeof block);
    OPENSSL_cleanse(pad, sizeof pad);
    if (!ok) {
        OPENSSL_clear_free(h, sizeof *h);
        return NULL;
    }
    return h;
}

int lk_hmac_sha256_keyed(void *handle, const uint8_t *const *parts, const size_t *part_lens,
                         size_t count, uint8_t *out) {
    if (handle == NULL) return 0;
    const lk_hmac_key *h = handle;
    SHA256_CTX c = h->inner;
    uint8_t inner[SHA256_DIGEST_LENGTH];
    int ok = 1;
    for (size_t i = 0; i < count && ok; i++) {
        if (part_lens[i] == 0) continue;
        ok = SHA256_Update(&c, parts[i], part_lens[i]) == 1;
    }
    ok = ok && SHA256_Final(inner, &c) == 1;
    c = h->outer;
    ok = ok && SHA256_Update(&c, inner, sizeof inner) == 1 && SHA256_Final(out, &c) == 1;
    OPENSSL_cleanse(&c, sizeof c);
    OPENSSL_cleanse(inner, sizeof inner);
    return ok;
}

void lk_hmac_sha256_key_free(void *handle) {
    if (handle != NULL) OPENSSL_clear_free(handle, sizeof(lk_hmac_key));
}

int lk_hkdf_sha256(const uint8_t *ikm, size_t ikm_len,
                   const uint8_t *salt, size_t salt_len,
                   const uint8_t *info, size_t info_len,
                   uint8_t *out, size_t out_len) {
    pthread_once(&fetch_once, fetch_all);
    if (kdf_hkdf == NULL || out_len == 0) return 0;
    EVP_KDF_CTX *ctx = EVP_KDF_CTX_new(kdf_hkdf);
    if (ctx == NULL) return 0;
    OSSL_PARAM params[6];
    size_t n = 0;
    static uint8_t empty[1] = {0};
    params[n++] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0);
    params[n++] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
                                                    ikm_len ? (void *)ikm : empty, ikm_len);
    if (salt_len)
        params[n++] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, salt_len);
    if (info_len)
        params[n++] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, info_len);
    params[n] = OSSL_PARAM_construct_end();
    int ok = EVP_KDF_derive(ctx, out, out_len, params) == 1;
    EVP_KDF_CTX_free(ctx);
    return ok;
}

int lk_scrypt(const uint8_t *pass, size_t pass_len,
              const uint8_t *salt, size_t salt_len,
              uint64_t n, uint32_t r, uint32_t p, uint64_t maxmem,
              uint8_t *out, size_t out_len) {
    pthread_once(&fetch_once, fetch_all);
    if (kdf_scrypt == NULL || out_len == 0) return 0;
    EVP_KDF_CTX *ctx = EVP_KDF_CTX_new(kdf_scrypt);
    if (ctx == NULL) return 0;
    static uint8_t empty[1] = {0};
    uint64_t nn = n, mm = maxmem;
    uint32_t rr = r, pp = p;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_PASSWORD, pass_len ? (void *)pass : empty, pass_len),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, salt_len ? (void *)salt : empty, salt_len),
        OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_N, &nn),
        OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_SCRYPT_R, &rr),
        OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_SCRYPT_P, &pp),
        OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_MAXMEM, &mm),
        OSSL_PARAM_construct_end(),
    };
    int ok = EVP_KDF_derive(ctx, out, out_len, params) == 1;
    EVP_KDF_CTX_free(ctx);
    return ok;
}

/// OpenSSL's own key wrap (the AES-*-WRAP ciphers): kept as the reference that KeyWrapTests
/// compare the implementation below with.
static int kw_crypt_openssl(int enc, const uint8_t *kek, size_t kek_len,
                            const uint8_t *in, size_t in_len, uint8_t *out, size_t expect) {
    pthread_once(&fetch_once, fetch_all);
    int idx = key_index(kek_len);
    if (idx < 0 || cipher_wrap[idx] == NULL || in_len % 8 != 0 || in_len > INT_MAX) return 0;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return 0;
    int ok = 0, len1 = 0, len2 = 0;
    if (EVP_CipherInit_ex2(ctx, cipher_wrap[idx], kek, NULL, enc, NULL) != 1) goto done;
    if (EVP_CipherUpdate(ctx, out, &len1, in, (int)in_len) != 1) goto done;
    if (EVP_CipherFinal_ex(ctx, out + len1, &len2) != 1) goto done;
    ok = ((size_t)(len1 + len2) == expect);
done:
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

static const uint8_t kw_iv[8] = {0xA6, 0xA6, 0xA6, 0xA6, 0xA6, 0xA6, 0xA6, 0xA6};

/// RFC 3394 §2.2.1 and §2.2.2 (the indexing form) over AES-ECB, one block at a time.
///
/// OpenSSL 3's AES-*-WRAP ciphers call its table-based AES_encrypt/AES_decrypt on x86-64, not
/// AES-NI: unwrapping one item key took 5–6 µs and was 22 % of a 10,000-item `latchkey dump`
/// (perf), and table lookups indexed by key-dependent bytes are the classic cache-timing
/// concern. AES-ECB through EVP takes AES-NI where the CPU has it: about 1 µs. The output is
/// the same bytes (KeyWrapTests compare it with kw_crypt_openssl and the RFC's vectors).
static int kw_crypt(int enc, const uint8_t *kek, size_t kek_len,
                    const uint8_t *in, size_t in_len, uint8_t *out) {
    pthread_once(&fetch_once, fetch_all);
    int idx = key_index(kek_len);
    if (idx < 0 || cipher_ecb[idx] == NULL || in_len % 8 != 0) return 0;
    const size_t n = enc ? in_len / 8 : in_len / 8 - 1;   // 64-bit blocks of key data
    if (n < 2) return 0;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return 0;
    uint8_t a[8], b[16];
    uint8_t *r;
    int ok = 0, len = 0;
    if (EVP_CipherInit_ex2(ctx, cipher_ecb[idx], kek, NULL, enc, NULL) != 1) goto done;
    if (EVP_CIPHER_CTX_set_padding(ctx, 0) != 1) goto done;
    if (enc) {
        memcpy(a, kw_iv, 8);
        r = out + 8;
        memmove(r, in, in_len);
        for (uint64_t j = 0; j <= 5; j++) {
            for (size_t i = 1; i <= n; i++) {
                memcpy(b, a, 8);
                memcpy(b + 8, r + 8 * (i - 1), 8);
                if (EVP_CipherUpdate(ctx, b, &len, b, 16) != 1 || len != 16) goto done;
                const uint64_t t = n * j + i;
                for (int k = 0; k < 8; k++) a[7 - k] = b[7 - k] ^ (uint8_t)(t >> (8 * k));
                memcpy(r + 8 * (i - 1), b + 8, 8);
            }
        }
        memcpy(out, a, 8);
        ok = 1;
    } else {
        memcpy(a, in, 8);
        r = out;
        memmove(r, in + 8, in_len - 8);
        for (uint64_t j = 6; j-- > 0;) {
            for (size_t i = n; i >= 1; i--) {
                const uint64_t t = n * j + i;
                for (int k = 0; k < 8; k++) b[7 - k] = a[7 - k] ^ (uint8_t)(t >> (8 * k));
                memcpy(b + 8, r + 8 * (i - 1), 8);
                if (EVP_CipherUpdate(ctx, b, &len, b, 16) != 1 || len != 16) goto done;
                memcpy(a, b, 8);
                memcpy(r + 8 * (i - 1), b + 8, 8);
            }
        }
        ok = CRYPTO_memcmp(a, kw_iv, 8) == 0;
    }
done:
    OPENSSL_cleanse(a, sizeof a);
    OPENSSL_cleanse(b, sizeof b);
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

int lk_aes_kw_wrap(const uint8_t *kek, size_t kek_len,
                   const uint8_t *in, size_t in_len, uint8_t *out) {
    if (in_len < 16) return 0;
    int ok = kw_crypt(1, kek, kek_len, in, in_len, out);
    if (!ok) OPENSSL_cleanse(out, in_len + 8);
    return ok;
}

int lk_aes_kw_unwrap(const uint8_t *kek, size_t kek_len,
                     const uint8_t *in, size_t in_len, uint8_t *out) {
    if (in_len < 24) return 0;
    int ok = kw_crypt(0, kek, kek_len, in, in_len, out);
    if (!ok) {
        OPENSSL_cleanse(out, in_len - 8);
        ERR_clear_error();  // a failed integrity check is an answer, not an error to report
    }
    return ok;
}

int lk_aes_kw_wrap_openssl(const uint8_t *kek, size_t kek_len,
                           const uint8_t *in, size_t in_len, uint8_t *out) {
    if (in_len < 16) return 0;
    return kw_crypt_openssl(1, kek, kek_len, in, in_len, out, in_len + 8);
}

int lk_aes_kw_unwrap_openssl(const uint8_t *kek, size_t kek_len,
                             const uint8_t *in, size_t in_len, uint8_t *out) {
    if (in_len < 24) return 0;
    int ok = kw_crypt_openssl(0, kek, kek_len, in, in_len, out, in_len - 8);
    if (!ok) {
        OPENSSL_cleanse(out, in_len - 8);
        ERR_clear_error();
    }
    return ok;
}

static int gcm_init(EVP_CIPHER_CTX *ctx, int enc, const uint8_t *key, size_t key_len,
                    const uint8_t *iv, size_t iv_len) {
    pthread_once(&fetch_once, fetch_all);
    int idx = key_index(key_len);
    if (idx < 0 || cipher_gcm[idx] == NULL || iv_len == 0) return 0;
    // GCM's default IV length is 12 bytes: then one call sets cipher, key and IV (the two
    // calls below were a fifth of an item's decryption).
    if (iv_len == 12) return EVP_CipherInit_ex2(ctx, cipher_gcm[idx], key, iv, enc, NULL) == 1;
    size_t ivl = iv_len;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_AEAD_IVLEN, &ivl),
        OSSL_PARAM_construct_end(),
    };
    if (EVP_CipherInit_ex2(ctx, cipher_gcm[idx], NULL, NULL, enc, params) != 1) return 0;
    return EVP_CipherInit_ex2(ctx, NULL, key, iv, enc, NULL) == 1;
}

int lk_aes_gcm_seal(const uint8_t *key, size_t key_len,
                    const uint8_t *iv, size_t iv_len,
                    const uint8_t *aad, size_t aad_len,
                    const uint8_t *pt, size_t pt_len,
                    uint8_t *ct, uint8_t *tag, size_t tag_len) {
    if (tag_len < 12 || tag_len > 16 || pt_len > INT_MAX || aad_len > INT_MAX) return 0;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return 0;
    int ok = 0, len = 0;
    if (!gcm_init(ctx, 1, key, key_len, iv, iv_len)) goto done;
    if (aad_len && EVP_EncryptUpdate(ctx, NULL, &len, aad, (int)aad_len) != 1) goto done;
    if (pt_len && EVP_EncryptUpdate(ctx, ct, &len, pt, (int)pt_len) != 1) goto done;
    uint8_t sink[16];
    if (EVP_EncryptFinal_ex(ctx, pt_len ? ct + len : sink, &len) != 1) goto done;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag, tag_len),
        OSSL_PARAM_construct_end(),
    };
    if (EVP_CIPHER_CTX_get_params(ctx, params) != 1) goto done;
    ok = 1;
done:
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

int lk_aes_gcm_open(const uint8_t *key, size_t key_len,
                    const uint8_t *iv, size_t iv_len,
                    const uint8_t *aad, size_t aad_len,
                    const uint8_t *ct, size_t ct_len,
                    const uint8_t *tag, size_t tag_len,
                    uint8_t *pt) {
    if (tag_len < 12 || tag_len > 16 || ct_len > INT_MAX || aad_len > INT_MAX) return 0;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return 0;
    int ok = 0, len = 0;
    uint8_t tagcopy[16];
    memcpy(tagcopy, tag, tag_len);
    if (!gcm_init(ctx, 0, key, key_len, iv, iv_len)) goto done;
    if (aad_len && EVP_DecryptUpdate(ctx, NULL, &len, aad, (int)aad_len) != 1) goto done;
    if (ct_len && EVP_DecryptUpdate(ctx, pt, &len, ct, (int)ct_len) != 1) goto done;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tagcopy, tag_len),
        OSSL_PARAM_construct_end(),
    };
    if (EVP_CIPHER_CTX_set_params(ctx, params) != 1) goto done;
    uint8_t sink[16];
    if (EVP_DecryptFinal_ex(ctx, ct_len ? pt + len : sink, &len) != 1) {
        if (ct_len) OPENSSL_cleanse(pt, ct_len);
        ERR_clear_error();
        goto done;
    }
    ok = 1;
done:
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

int lk_memcmp_ct(const void *a, const void *b, size_t len) {
    return CRYPTO_memcmp(a, b, len);
}

void lk_thread_stop(void) {
    OPENSSL_thread_stop();
}

void lk_cleanse(void *p, size_t len) {
    if (p != NULL && len) OPENSSL_cleanse(p, len);
}

size_t lk_last_error(char *buf, size_t buf_len) {
    unsigned long e = ERR_get_error();
    if (buf_len == 0) return 0;
    buf[0] = 0;
    if (e == 0) return 0;
    ERR_error_string_n(e, buf, buf_len);
    ERR_clear_error();
    return strlen(buf);
}
