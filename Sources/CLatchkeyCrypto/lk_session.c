// The Secret Service's encrypted session: see include/lk_session.h.
#include "lk_session.h"
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/crypto.h>

int lk_dh1024_keypair(uint8_t private_key[128], uint8_t public_key[128]) {
    int ok = 0;
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *p = BN_get_rfc2409_prime_1024(NULL), *g = BN_new(), *x = BN_secure_new(), *y = BN_new();
    if (!ctx || !p || !g || !x || !y) goto done;
    if (!BN_set_word(g, 2)) goto done;
    // 1023 random bits with the top bit set: x in [2^1022, 2^1023), below p.
    if (!BN_priv_rand(x, 1023, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ANY)) goto done;
    BN_set_flags(x, BN_FLG_CONSTTIME);
    if (!BN_mod_exp(y, g, x, p, ctx)) goto done;
    if (BN_bn2binpad(x, private_key, 128) != 128 || BN_bn2binpad(y, public_key, 128) != 128) goto done;
    ok = 1;
done:
    BN_free(p); BN_free(g); BN_clear_free(x); BN_free(y); BN_CTX_free(ctx);
    return ok;
}

int lk_dh1024_shared(const uint8_t private_key[128], const uint8_t *peer, size_t peer_len, uint8_t shared[128]) {
    int ok = 0;
    if (peer_len == 0 || peer_len > 128) return 0;
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *p = BN_get_rfc2409_prime_1024(NULL), *x = BN_secure_new(), *y = BN_new(), *z = BN_secure_new(),
           *pm1 = BN_new();
    if (!ctx || !p || !x || !y || !z || !pm1) goto done;
    if (!BN_bin2bn(private_key, 128, x) || !BN_bin2bn(peer, (int)peer_len, y)) goto done;
    BN_set_flags(x, BN_FLG_CONSTTIME);
    if (!BN_copy(pm1, p) || !BN_sub_word(pm1, 1)) goto done;
    // 0, 1 and p-1 (and anything not below p) would make the shared value guessable.
    if (BN_cmp(y, BN_value_one()) <= 0 || BN_cmp(y, pm1) >= 0) goto done;
    if (!BN_mod_exp(z, y, x, p, ctx)) goto done;
    if (BN_bn2binpad(z, shared, 128) != 128) goto done;
    ok = 1;
done:
    BN_free(p); BN_clear_free(x); BN_free(y); BN_clear_free(z); BN_free(pm1); BN_CTX_free(ctx);
    return ok;
}

int lk_aes128_cbc(int encrypt, const uint8_t key[16], const uint8_t iv[16], const uint8_t *in, size_t in_len,
                  uint8_t *out, size_t *out_len) {
    int ok = 0, n = 0, f = 0;
    if (in_len > (size_t)0x7fffffef) return 0;
    if (!encrypt && (in_len == 0 || in_len % 16 != 0)) return 0;
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    if (!c) return 0;
    if (EVP_CipherInit_ex(c, EVP_aes_128_cbc(), NULL, key, iv, encrypt ? 1 : 0) != 1) goto done;
    if (EVP_CipherUpdate(c, out, &n, in, (int)in_len) != 1) goto done;
    if (EVP_CipherFinal_ex(c, out + n, &f) != 1) goto done;
    *out_len = (size_t)n + (size_t)f;
    ok = 1;
done:
    EVP_CIPHER_CTX_free(c);
    return ok;
}
