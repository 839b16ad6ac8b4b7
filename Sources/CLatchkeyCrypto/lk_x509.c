// See include/lk_x509.h. Certificates and keys are parsed with OpenSSL's DER decoders; every
// derived value is copied into malloc'ed buffers so that no OpenSSL object outlives a call.
#include "lk_x509.h"

#include <openssl/asn1.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/param_build.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t sha1_once = PTHREAD_ONCE_INIT;
static EVP_MD *md_sha1;

static void fetch_sha1(void) { md_sha1 = EVP_MD_fetch(NULL, "SHA1", NULL); }

int lk_sha1(const uint8_t *data, size_t len, uint8_t *out) {
    pthread_once(&sha1_once, fetch_sha1);
    if (md_sha1 == NULL) return 0;
    static const uint8_t empty[1] = {0};
    unsigned int out_len = 0;
    return EVP_Digest(len ? data : empty, len, out, &out_len, md_sha1, NULL) == 1 && out_len == 20;
}

static void set_err(char *err, size_t err_len, const char *fmt, ...) {
    if (err == NULL || err_len == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

static int buf_set(lk_buf *b, const uint8_t *bytes, size_t len) {
    b->bytes = NULL;
    b->len = 0;
    if (len == 0) return 1;
    b->bytes = malloc(len);
    if (b->bytes == NULL) return 0;
    memcpy(b->bytes, bytes, len);
    b->len = len;
    return 1;
}

static void buf_free(lk_buf *b) {
    if (b->bytes) {
        OPENSSL_cleanse(b->bytes, b->len);
        free(b->bytes);
    }
    b->bytes = NULL;
    b->len = 0;
}

// i2d into a malloc'ed buffer owned by `b`. The i2d functions are called twice: once for the
// length, once to write.
#define I2D_TO_BUF(b, fn, obj)                                         \
    ({                                                                 \
        int ok_ = 0;                                                   \
        int n_ = fn((obj), NULL);                                      \
        if (n_ > 0) {                                                  \
            (b)->bytes = malloc((size_t)n_);                           \
            if ((b)->bytes) {                                          \
                unsigned char *p_ = (b)->bytes;                        \
                if (fn((obj), &p_) == n_) { (b)->len = (size_t)n_; ok_ = 1; } \
                else { free((b)->bytes); (b)->bytes = NULL; }          \
            }                                                          \
        }                                                              \
        ok_;                                                           \
    })

static int key_algorithm(const EVP_PKEY *pkey) {
    if (pkey == NULL) return LK_KEYALG_UNKNOWN;
    switch (EVP_PKEY_get_base_id(pkey)) {
    case EVP_PKEY_RSA:
    case EVP_PKEY_RSA_PSS: return LK_KEYALG_RSA;
    case EVP_PKEY_EC: return LK_KEYALG_EC;
    case EVP_PKEY_ED25519: return LK_KEYALG_ED25519;
    case EVP_PKEY_X25519: return LK_KEYALG_X25519;
    case EVP_PKEY_ED448: return LK_KEYALG_ED448;
    case EVP_PKEY_X448: return LK_KEYALG_X448;
    case EVP_PKEY_DSA: return LK_KEYALG_DSA;
    default: return LK_KEYALG_UNKNOWN;
    }
}

// The subjectPublicKey bits and the SPKI DER of `xpk`, and the SHA-1 of the bits.
static int public_key_parts(X509_PUBKEY *xpk, lk_buf *bits, lk_buf *spki, uint8_t hash[20]) {
    const unsigned char *pk = NULL;
    int pk_len = 0;
    if (X509_PUBKEY_get0_param(NULL, &pk, &pk_len, NULL, xpk) != 1 || pk == NULL || pk_len <= 0) return 0;
    if (!buf_set(bits, pk, (size_t)pk_len)) return 0;
    if (!I2D_TO_BUF(spki, i2d_X509_PUBKEY, xpk)) return 0;
    return lk_sha1(pk, (size_t)pk_len, hash);
}

// UTF-8 of the last entry of `nid` in `name` (or the first when `first`), into `out`.
static int name_entry_utf8(const X509_NAME *name, int nid, int first, lk_buf *out) {
    int idx = -1, found = -1;
    while ((idx = X509_NAME_get_index_by_NID(name, nid, idx)) >= 0) {
        found = idx;
        if (first) break;
    }
    if (found < 0) return 0;
    const X509_NAME_ENTRY *entry = X509_NAME_get_entry(name, found);
    const ASN1_STRING *data = X509_NAME_ENTRY_get_data(entry);
    unsigned char *utf8 = NULL;
    int n = ASN1_STRING_to_UTF8(&utf8, data);
    if (n <= 0) {
        OPENSSL_free(utf8);
        ERR_clear_error();
        return 0;
    }
    int ok = buf_set(out, utf8, (size_t)n);
    OPENSSL_free(utf8);
    return ok;
}

void lk_x509_info_free(lk_x509_info *info) {
    if (info == NULL) return;
    buf_free(&info->subject);
    buf_free(&info->issuer);
    buf_free(&info->serial);
    buf_free(&info->skid);
    buf_free(&info->public_key);
    buf_free(&info->spki);
    buf_free(&info->summary);
    buf_free(&info->common_name);
}

// Whether `len` bytes of `what` data can be handed to OpenSSL's DER decoders (a long length);
// if not, says why in `err`.
static int check_input(const uint8_t *data, size_t len, const char *what, char *err, size_t err_len) {
    if (data == NULL || len == 0) {
        set_err(err, err_len, "the %s data is empty", what);
        return 0;
    }
    if (len > LONG_MAX) {
        set_err(err, err_len, "the %s data is too large", what);
        return 0;
    }
    return 1;
}

int lk_x509_parse(const uint8_t *der, size_t len, lk_x509_info *out, char *err, size_t err_len) {
    memset(out, 0, sizeof(*out));
    if (!check_input(der, len, "certificate", err, err_len)) return 0;
    ERR_clear_error();
    const unsigned char *p = der;
    X509 *x = d2i_X509(NULL, &p, (long)len);
    if (x == NULL) {
        unsigned long e = ERR_peek_last_error();
        char reason[160] = "unknown reason";
        if (e) ERR_error_string_n(e, reason, sizeof(reason));
        ERR_clear_error();
        set_err(err, err_len, "not a DER-encoded X.509 certificate (%s)", reason);
        return 0;
    }
    int ok = 0;
    if (p != der + len) {
        set_err(err, err_len, "%zu bytes follow the certificate's DER encoding", (size_t)(der + len - p));
        goto done;
    }
    long version = X509_get_version(x);
    if (version < 0 || version > 2) {
        set_err(err, err_len, "unsupported X.509 version field %ld", version);
        goto done;
    }
    out->version = (int)version + 1;

    if (!I2D_TO_BUF(&out->subject, i2d_X509_NAME, X509_get_subject_name(x))) {
        set_err(err, err_len, "cannot encode the subject name");
        goto done;
    }
    if (!I2D_TO_BUF(&out->issuer, i2d_X509_NAME, X509_get_issuer_name(x))) {
        set_err(err, err_len, "cannot encode the issuer name");
        goto done;
    }

    // Serial number: the content octets of the INTEGER's DER encoding.
    {
        lk_buf enc = {0};
        if (!I2D_TO_BUF(&enc, i2d_ASN1_INTEGER, X509_get0_serialNumber(x)) || enc.len < 2 || enc.bytes[0] != 0x02) {
            buf_free(&enc);
            set_err(err, err_len, "cannot encode the serial number");
            goto done;
        }
        size_t hdr = 2, clen = enc.bytes[1];
        if (clen & 0x80) {
            size_t n = clen & 0x7f;
            if (n == 0 || n > sizeof(size_t) || enc.len < 2 + n) {
                buf_free(&enc);
                set_err(err, err_len, "bad serial number encoding");
                goto done;
            }
            clen = 0;
            for (size_t i = 0; i < n; i++) clen = (clen << 8) | enc.bytes[2 + i];
            hdr = 2 + n;
        }
        if (hdr + clen != enc.len || !buf_set(&out->serial, enc.bytes + hdr, clen)) {
            buf_free(&enc);
            set_err(err, err_len, "bad serial number encoding");
            goto done;
        }
        buf_free(&enc);
    }

    {
        const ASN1_OCTET_STRING *skid = X509_get0_subject_key_id(x);
        if (skid != NULL) {
            out->has_skid = 1;
            if (!buf_set(&out->skid, ASN1_STRING_get0_data(skid), (size_t)ASN1_STRING_length(skid))) goto oom;
        }
        ERR_clear_error();
    }

    if (!public_key_parts(X509_get_X509_PUBKEY(x), &out->public_key, &out->spki, out->public_key_hash)) {
        set_err(err, err_len, "the certificate has no usable subjectPublicKeyInfo");
        goto done;
    }
    {
        EVP_PKEY *pkey = X509_get0_pubkey(x);   // NULL for algorithms OpenSSL does not know
        out->key_algorithm = key_algorithm(pkey);
        out->key_bits = pkey ? EVP_PKEY_get_bits(pkey) : 0;
        if (out->key_bits < 0) out->key_bits = 0;
        ERR_clear_error();
    }

    {
        const X509_NAME *subject = X509_get_subject_name(x);
        name_entry_utf8(subject, NID_commonName, 0, &out->common_name);
        if (!name_entry_utf8(subject, NID_commonName, 0, &out->summary) &&
            !name_entry_utf8(subject, NID_pkcs9_emailAddress, 1, &out->summary) &&
            !name_entry_utf8(subject, NID_organizationalUnitName, 0, &out->summary)) {
            name_entry_utf8(subject, NID_organizationName, 0, &out->summary);
        }
    }
    ok = 1;
    goto done;
oom:
    set_err(err, err_len, "out of memory");
done:
    X509_free(x);
    ERR_clear_error();
    if (!ok) lk_x509_info_free(out);
    return ok;
}

// MARK: keys

void lk_key_info_free(lk_key_info *info) {
    if (info == NULL) return;
    buf_free(&info->public_key);
    buf_free(&info->spki);
    buf_free(&info->external);
}

// An EC key from Apple's raw form on `group`: pub = 04||X||Y, priv = K (or NULL).
// The OSSL_PARAM array is built here, in C. The key is checked (point on the curve; K·G = point).
static EVP_PKEY *ec_from_raw(const char *group, const uint8_t *pub, size_t pub_len,
                             const uint8_t *priv, size_t priv_len) {
    EVP_PKEY *pkey = NULL;
    BIGNUM *k = NULL;
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = NULL, *check = NULL;
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    if (bld == NULL) goto done;
    if (!OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, group, 0)) goto done;
    if (!OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pub, pub_len)) goto done;
    if (priv != NULL) {
        k = BN_secure_new();
        if (k == NULL || BN_bin2bn(priv, (int)priv_len, k) == NULL) goto done;
        if (!OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, k)) goto done;
    }
    params = OSSL_PARAM_BLD_to_param(bld);
    if (params == NULL) goto done;
    ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1) goto done;
    if (EVP_PKEY_fromdata(ctx, &pkey, priv ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY, params) != 1) {
        pkey = NULL;
        goto done;
    }
    check = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
    if (check == NULL || (priv ? EVP_PKEY_pairwise_check(check) : EVP_PKEY_public_check(check)) != 1) {
        EVP_PKEY_free(pkey);
        pkey = NULL;
    }
done:
    EVP_PKEY_CTX_free(check);
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_clear_free(k);
    return pkey;
}

// Apple's raw EC forms: 04||X||Y (public) or 04||X||Y||K (private) on P-256, P-384 or P-521.
// A 97-byte input is either a P-256 private key or a P-384 public key: the one that is a
// valid key wins (the private form is tried first).
static EVP_PKEY *ec_raw_parse(const uint8_t *data, size_t len, int *is_private) {
    static const struct { const char *group; size_t field; } curves[] = {
        {"P-256", 32}, {"P-384", 48}, {"P-521", 66},
    };
    if (len < 1 || data[0] != 0x04) return NULL;
    for (int pass = 0; pass < 2; pass++) {
        int priv = pass == 0;
        for (size_t i = 0; i < sizeof(curves) / sizeof(curves[0]); i++) {
            size_t f = curves[i].field;
            size_t pub_len = 1 + 2 * f;
            if (len != pub_len + (priv ? f : 0)) continue;
            EVP_PKEY *pkey = ec_from_raw(curves[i].group, data, pub_len, priv ? data + pub_len : NULL, f);
            ERR_clear_error();
            if (pkey) {
                *is_private = priv;
                return pkey;
            }
        }
    }
    return NULL;
}

// Apple's external representation of a private key.
static int private_external(EVP_PKEY *pkey, int alg, int bits, const lk_buf *public_key, lk_buf *out) {
    switch (alg) {
    case LK_KEYALG_EC: {
        BIGNUM *k = NULL;
        if (EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_PRIV_KEY, &k) != 1 || k == NULL) return 0;
        size_t f = (size_t)(bits + 7) / 8;
        size_t n = public_key->len + f;
        out->bytes = malloc(n);
        if (out->bytes == NULL) { BN_clear_free(k); return 0; }
        memcpy(out->bytes, public_key->bytes, public_key->len);
        int ok = BN_bn2binpad(k, out->bytes + public_key->len, (int)f) == (int)f;
        BN_clear_free(k);
        if (!ok) { free(out->bytes); out->bytes = NULL; return 0; }
        out->len = n;
        return 1;
    }
    case LK_KEYALG_ED25519:
    case LK_KEYALG_X25519:
    case LK_KEYALG_ED448:
    case LK_KEYALG_X448: {
        size_t n = 0;
        if (EVP_PKEY_get_raw_private_key(pkey, NULL, &n) != 1 || n == 0) return 0;
        out->bytes = malloc(n);
        if (out->bytes == NULL) return 0;
        if (EVP_PKEY_get_raw_private_key(pkey, out->bytes, &n) != 1) { free(out->bytes); out->bytes = NULL; return 0; }
        out->len = n;
        return 1;
    }
    default:
        // RSA: PKCS#1 RSAPrivateKey (the type-specific encoding of i2d_PrivateKey).
        return I2D_TO_BUF(out, i2d_PrivateKey, pkey);
    }
}

int lk_key_parse(const uint8_t *data, size_t len, lk_key_info *out, char *err, size_t err_len) {
    memset(out, 0, sizeof(*out));
    if (!check_input(data, len, "key", err, err_len)) return 0;
    ERR_clear_error();
    const uint8_t *end = data + len;
    EVP_PKEY *pkey = NULL;
    const unsigned char *p;

    p = data;
    pkey = d2i_AutoPrivateKey(NULL, &p, (long)len);
    if (pkey && p == end) {
        out->form = LK_KEYFORM_PRIVATE_DER;
        out->is_private = 1;
    } else {
        EVP_PKEY_free(pkey);
        pkey = NULL;
        p = data;
        pkey = d2i_PUBKEY(NULL, &p, (long)len);
        if (pkey && p == end) {
            out->form = LK_KEYFORM_PUBLIC_SPKI;
        } else {
            EVP_PKEY_free(pkey);
            pkey = NULL;
            p = data;
            pkey = d2i_PublicKey(EVP_PKEY_RSA, NULL, &p, (long)len);
            if (pkey && p == end) {
                out->form = LK_KEYFORM_PUBLIC_PKCS1;
            } else {
                EVP_PKEY_free(pkey);
                pkey = NULL;
                int priv = 0;
                pkey = ec_raw_parse(data, len, &priv);
                if (pkey) {
                    out->form = priv ? LK_KEYFORM_EC_RAW_PRIVATE : LK_KEYFORM_EC_RAW_PUBLIC;
                    out->is_private = priv;
                }
            }
        }
    }
    ERR_clear_error();
    if (pkey == NULL) {
        set_err(err, err_len, "not a private key (PKCS#8, PKCS#1, SEC1), a public key (SubjectPublicKeyInfo, PKCS#1) "
                              "or a raw EC key (04||X||Y[||K] on P-256/P-384/P-521)");
        return 0;
    }

    int ok = 0;
    out->algorithm = key_algorithm(pkey);
    out->bits = EVP_PKEY_get_bits(pkey);
    if (out->bits < 0) out->bits = 0;
    {
        X509_PUBKEY *xpk = NULL;
        if (X509_PUBKEY_set(&xpk, pkey) != 1 || xpk == NULL) {
            set_err(err, err_len, "cannot encode the public key of this key");
            goto done;
        }
        int parts = public_key_parts(xpk, &out->public_key, &out->spki, out->public_key_hash);
        X509_PUBKEY_free(xpk);
        if (!parts) {
            set_err(err, err_len, "cannot encode the public key of this key");
            goto done;
        }
    }
    if (out->is_private) {
        if (!private_external(pkey, out->algorithm, out->bits, &out->public_key, &out->external)) {
            set_err(err, err_len, "cannot export this private key");
            goto done;
        }
    } else if (!buf_set(&out->external, out->public_key.bytes, out->public_key.len)) {
        set_err(err, err_len, "out of memory");
        goto done;
    }
    ok = 1;
done:
    EVP_PKEY_free(pkey);
    ERR_clear_error();
    if (!ok) lk_key_info_free(out);
    return ok;
}
