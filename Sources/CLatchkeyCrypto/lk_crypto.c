// See include/lk_crypto.h. Algorithm objects are fetched once and cached: an implicit
// fetch on every call costs more than the operation itself for short inputs.
#include "lk_crypto.h"

// The keyed HMAC below uses the low-level SHA256_* functions (see there why).
#define OPENSSL_SUPPRESS_DEPRECATED

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

int lk_hmac(int digest, const uint8_t *key, size_t key_len, const uint8_t *data, size_t data_len,
            uint8_t *out, size_t *out_len) {
    const char *name;
    size_t size;
    switch (digest) {
    case 1: name = "SHA1"; size = 20; break;
    case 256: name = "SHA256"; size = 32; break;
    case 512: name = "SHA512"; size = 64; break;
    default: return 0;
    }
    pthread_once(&fetch_once, fetch_all);
    if (mac_hmac == NULL) return 0;
    static const uint8_t empty[1] = {0};
    int ok = 0;
    size_t n = 0;
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac_hmac);
    if (ctx == NULL) return 0;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)name, 0),
        OSSL_PARAM_construct_end(),
    };
    if (EVP_MAC_init(ctx, key_len ? key : empty, key_len, params) != 1) goto done;
    if (data_len > 0 && EVP_MAC_update(ctx, data, data_len) != 1) goto done;
    if (EVP_MAC_final(ctx, out, &n, size) != 1 || n != size) goto done;
    *out_len = n;
    ok = 1;
done:
    EVP_MAC_CTX_free(ctx);
    if (!ok) ERR_clear_error();
    return ok;
}

/// A pre-keyed HMAC-SHA256 (RFC 2104): the SHA-256 states after the inner (K ^ ipad) and
/// outer (K ^ opad) blocks. Each MAC copies the two states onto the stack, so a MAC allocates
/// nothing and one key serves any number of threads at once (it is only read).
///
/// This uses OpenSSL's low-level SHA256_* functions, deprecated in 3.0 but present in every
/// 3.x, and the same block functions EVP uses (SHA-NI included). Through EVP, each MAC
/// duplicated an EVP_MAC_CTX (505 ns for 60 bytes); copying EVP_MD_CTX states (192 ns) still
/// allocates and frees a provider context per copy in OpenSSL 3.0 (sha256_dupctx), two per MAC,
/// which was 5 % of a `latchkey verify` of 1M items (two million record tags and about four
/// attribute hashes per item), most of it on the scanning thread that bounds its time.
typedef struct {
    SHA256_CTX inner;
    SHA256_CTX outer;
} lk_hmac_key;

void *lk_hmac_sha256_key_new(const uint8_t *key, size_t key_len) {
    lk_hmac_key *h = OPENSSL_malloc(sizeof *h);
    if (h == NULL) return NULL;
    uint8_t block[SHA256_CBLOCK];
    memset(block, 0, sizeof block);
    int ok = 1;
    // Keys longer than the block are hashed first (RFC 2104 §2).
    if (key_len > SHA256_CBLOCK) ok = SHA256(key, key_len, block) != NULL;
    else if (key_len) memcpy(block, key, key_len);
    for (size_t i = 0; i < sizeof block; i++) block[i] ^= 0x36;
    ok = ok && SHA256_Init(&h->inner) == 1 && SHA256_Update(&h->inner, block, sizeof block) == 1;
    for (size_t i = 0; i < sizeof block; i++) block[i] ^= 0x36 ^ 0x5c;
    ok = ok && SHA256_Init(&h->outer) == 1 && SHA256_Update(&h->outer, block, sizeof block) == 1;
    OPENSSL_cleanse(block, sizeof block);
    if (!ok) {
        lk_hmac_sha256_key_free(h);
        return NULL;
    }
    return h;
}

int lk_hmac_sha256_keyed(void *handle, const uint8_t *const *parts, const size_t *part_lens,
                         size_t count, uint8_t *out) {
    const lk_hmac_key *h = handle;
    if (h == NULL) return 0;
    SHA256_CTX c = h->inner;
    uint8_t inner[SHA256_DIGEST_LENGTH];
    int ok = 1;
    for (size_t i = 0; ok && i < count; i++) {
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

int lk_hmac_sha256_keyed2(void *handle, const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len,
                          uint8_t *out) {
    const uint8_t *parts[2] = {a, b};
    const size_t lens[2] = {a_len, b_len};
    return lk_hmac_sha256_keyed(handle, parts, lens, 2, out);
}

void lk_hmac_sha256_key_free(void *handle) {
    if (handle == NULL) return;
    OPENSSL_cleanse(handle, sizeof(lk_hmac_key));
    OPENSSL_free(handle);
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
static int kw_crypt_ctx(EVP_CIPHER_CTX *ctx, int enc, const uint8_t *in, size_t in_len, uint8_t *out);

/// An AES-ECB context keyed with `kek` (16, 24 or 32 bytes) for `enc`, without padding: what the
/// RFC 3394 rounds run through. NULL when the key length is wrong or OpenSSL fails.
static EVP_CIPHER_CTX *kw_ecb_new(const uint8_t *kek, size_t kek_len, int enc) {
    pthread_once(&fetch_once, fetch_all);
    int idx = key_index(kek_len);
    if (idx < 0 || cipher_ecb[idx] == NULL) return NULL;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return NULL;
    if (EVP_CipherInit_ex2(ctx, cipher_ecb[idx], kek, NULL, enc, NULL) != 1 || EVP_CIPHER_CTX_set_padding(ctx, 0) != 1) {
        EVP_CIPHER_CTX_free(ctx);
        ERR_clear_error();
        return NULL;
    }
    return ctx;
}

static int kw_crypt(int enc, const uint8_t *kek, size_t kek_len,
                    const uint8_t *in, size_t in_len, uint8_t *out) {
    if (in_len % 8 != 0) return 0;
    EVP_CIPHER_CTX *ctx = kw_ecb_new(kek, kek_len, enc);
    if (ctx == NULL) return 0;
    int ok = kw_crypt_ctx(ctx, enc, in, in_len, out);
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

/// The rounds of kw_crypt through `ctx`, an AES-ECB context already keyed with the KEK for
/// `enc` (no padding); ECB keeps no state between whole blocks, so `ctx` can serve again.
static int kw_crypt_ctx(EVP_CIPHER_CTX *ctx, int enc, const uint8_t *in, size_t in_len, uint8_t *out) {
    if (in_len % 8 != 0) return 0;
    const size_t n = enc ? in_len / 8 : in_len / 8 - 1;   // 64-bit blocks of key data
    if (n < 2) return 0;
    uint8_t a[8], b[16];
    uint8_t *r;
    int ok = 0, len = 0;
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
    return ok;
}

void *lk_kw_unwrap_ctx_new(const uint8_t *kek, size_t kek_len) { return kw_ecb_new(kek, kek_len, 0); }

void lk_kw_unwrap_ctx_free(void *ctx) {
    EVP_CIPHER_CTX_free((EVP_CIPHER_CTX *)ctx);   // clears the key schedule (OPENSSL_clear_free)
}

int lk_aes_kw_unwrap_ctx(void *ctx, const uint8_t *in, size_t in_len, uint8_t *out) {
    if (ctx == NULL || in_len < 24) return 0;
    int ok = kw_crypt_ctx((EVP_CIPHER_CTX *)ctx, 0, in, in_len, out);
    if (!ok) {
        OPENSSL_cleanse(out, in_len - 8);
        ERR_clear_error();
    }
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

int lk_aes_kw_unwrap_many(const uint8_t *kek, size_t kek_len, const uint8_t *in, size_t in_len, size_t count,
                          uint8_t *out, uint8_t *ok_each) {
    pthread_once(&fetch_once, fetch_all);
    int idx = key_index(kek_len);
    if (idx < 0 || cipher_ecb[idx] == NULL || in_len < 24 || in_len % 8 != 0 || count > LK_KW_MANY_MAX) return 0;
    if (count == 0) return 1;
    const size_t n = in_len / 8 - 1, out_len = in_len - 8;
    uint8_t a[LK_KW_MANY_MAX][8], b[LK_KW_MANY_MAX * 16];
    int ok = 0, len = 0;
    EVP_CIPHER_CTX *ctx = kw_ecb_new(kek, kek_len, 0);
    if (ctx == NULL) return 0;
    for (size_t k = 0; k < count; k++) {
        memcpy(a[k], in + k * in_len, 8);
        memmove(out + k * out_len, in + k * in_len + 8, out_len);
    }
    for (uint64_t j = 6; j-- > 0;) {
        for (size_t i = n; i >= 1; i--) {
            const uint64_t t = n * j + i;
            for (size_t k = 0; k < count; k++) {
                uint8_t *bk = b + 16 * k;
                for (int q = 0; q < 8; q++) bk[7 - q] = a[k][7 - q] ^ (uint8_t)(t >> (8 * q));
                memcpy(bk + 8, out + k * out_len + 8 * (i - 1), 8);
            }
            if (EVP_CipherUpdate(ctx, b, &len, b, (int)(16 * count)) != 1 || len != (int)(16 * count)) goto done;
            for (size_t k = 0; k < count; k++) {
                memcpy(a[k], b + 16 * k, 8);
                memcpy(out + k * out_len + 8 * (i - 1), b + 16 * k + 8, 8);
            }
        }
    }
    for (size_t k = 0; k < count; k++) {
        ok_each[k] = CRYPTO_memcmp(a[k], kw_iv, 8) == 0;
        if (!ok_each[k]) OPENSSL_cleanse(out + k * out_len, out_len);
    }
    ok = 1;
done:
    if (!ok) OPENSSL_cleanse(out, count * out_len);
    OPENSSL_cleanse(a, sizeof a);
    OPENSSL_cleanse(b, sizeof b);
    EVP_CIPHER_CTX_free(ctx);
    ERR_clear_error();
    return ok;
}

int lk_aes_kw_wrap_many(const uint8_t *kek, size_t kek_len, const uint8_t *in, size_t in_len, size_t count,
                        uint8_t *out) {
    pthread_once(&fetch_once, fetch_all);
    int idx = key_index(kek_len);
    if (idx < 0 || cipher_ecb[idx] == NULL || in_len < 16 || in_len % 8 != 0 || count > LK_KW_MANY_MAX) return 0;
    if (count == 0) return 1;
    const size_t n = in_len / 8, out_len = in_len + 8;
    uint8_t a[LK_KW_MANY_MAX][8], b[LK_KW_MANY_MAX * 16];
    int ok = 0, len = 0;
    EVP_CIPHER_CTX *ctx = kw_ecb_new(kek, kek_len, 1);
    if (ctx == NULL) return 0;
    // Key k's R blocks are built in place at out + k * out_len + 8; its A block at the end.
    for (size_t k = 0; k < count; k++) {
        memcpy(a[k], kw_iv, 8);
        memmove(out + k * out_len + 8, in + k * in_len, in_len);
    }
    for (uint64_t j = 0; j <= 5; j++) {
        for (size_t i = 1; i <= n; i++) {
            const uint64_t t = n * j + i;
            for (size_t k = 0; k < count; k++) {
                uint8_t *bk = b + 16 * k;
                memcpy(bk, a[k], 8);
                memcpy(bk + 8, out + k * out_len + 8 * i, 8);
            }
            if (EVP_CipherUpdate(ctx, b, &len, b, (int)(16 * count)) != 1 || len != (int)(16 * count)) goto done;
            for (size_t k = 0; k < count; k++) {
                const uint8_t *bk = b + 16 * k;
                for (int q = 0; q < 8; q++) a[k][7 - q] = bk[7 - q] ^ (uint8_t)(t >> (8 * q));
                memcpy(out + k * out_len + 8 * i, bk + 8, 8);
            }
        }
    }
    for (size_t k = 0; k < count; k++) memcpy(out + k * out_len, a[k], 8);
    ok = 1;
done:
    if (!ok) OPENSSL_cleanse(out, count * out_len);
    OPENSSL_cleanse(a, sizeof a);
    OPENSSL_cleanse(b, sizeof b);
    EVP_CIPHER_CTX_free(ctx);
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

// The part of a GCM decryption after the key and IV are set: the AAD, the ciphertext, the
// tag, the final check. On failure `pt` is cleansed (it may hold unauthenticated plaintext)
// and the OpenSSL error queue cleared. The lengths were checked by the caller.
static int gcm_open_rest(EVP_CIPHER_CTX *ctx, const uint8_t *aad, size_t aad_len,
                         const uint8_t *ct, size_t ct_len,
                         const uint8_t *tag, size_t tag_len, uint8_t *pt) {
    int len = 0;
    uint8_t tagcopy[16];
    memcpy(tagcopy, tag, tag_len);
    if (aad_len && EVP_DecryptUpdate(ctx, NULL, &len, aad, (int)aad_len) != 1) goto fail;
    if (ct_len && EVP_DecryptUpdate(ctx, pt, &len, ct, (int)ct_len) != 1) goto fail;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tagcopy, tag_len),
        OSSL_PARAM_construct_end(),
    };
    if (EVP_CIPHER_CTX_set_params(ctx, params) != 1) goto fail;
    uint8_t sink[16];
    if (EVP_DecryptFinal_ex(ctx, ct_len ? pt + len : sink, &len) != 1) goto fail;
    return 1;
fail:
    if (ct_len) OPENSSL_cleanse(pt, ct_len);
    ERR_clear_error();
    return 0;
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
    int ok = gcm_init(ctx, 0, key, key_len, iv, iv_len)
        && gcm_open_rest(ctx, aad, aad_len, ct, ct_len, tag, tag_len, pt);
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

void *lk_gcm_ctx_new(void) {
    return EVP_CIPHER_CTX_new();
}

void lk_gcm_ctx_free(void *ctx) {
    EVP_CIPHER_CTX_free((EVP_CIPHER_CTX *)ctx);
}

int lk_aes_gcm_open_ctx(void *handle, const uint8_t *key, size_t key_len,
                        const uint8_t *iv, size_t iv_len,
                        const uint8_t *aad, size_t aad_len,
                        const uint8_t *ct, size_t ct_len,
                        const uint8_t *tag, size_t tag_len,
                        uint8_t *pt) {
    pthread_once(&fetch_once, fetch_all);
    EVP_CIPHER_CTX *ctx = handle;
    int idx = key_index(key_len);
    if (ctx == NULL || idx < 0 || cipher_gcm[idx] == NULL || iv_len != 12 || tag_len < 12 || tag_len > 16
        || ct_len > INT_MAX || aad_len > INT_MAX) return 0;
    // The cipher is set once per context; each message then sets only key and IV, which
    // resets the GCM state (no allocation, no parameter lookup by name).
    const EVP_CIPHER *cipher = EVP_CIPHER_CTX_get0_cipher(ctx) == cipher_gcm[idx] ? NULL : cipher_gcm[idx];
    if (EVP_CipherInit_ex2(ctx, cipher, key, iv, 0, NULL) != 1) {
        if (ct_len) OPENSSL_cleanse(pt, ct_len);
        ERR_clear_error();
        return 0;
    }
    return gcm_open_rest(ctx, aad, aad_len, ct, ct_len, tag, tag_len, pt);
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
