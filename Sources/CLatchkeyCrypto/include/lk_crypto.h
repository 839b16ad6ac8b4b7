// CLatchkeyCrypto: the only C code that calls OpenSSL (libcrypto 3).
// Every OSSL_PARAM array is built here, in C, where the parameter names and
// values outlive the call (Swift string pointers passed to C are temporary).
// All functions return 1 on success and 0 on failure unless stated otherwise.
#ifndef LK_CRYPTO_H
#define LK_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

// Certificates and asymmetric keys. Included here so that module caches built before that
// header existed are invalidated (the module map is an umbrella directory).
#include "lk_x509.h"
// System calls Swift cannot make (not cryptography; lk_files.c).
#include "lk_files.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Ed25519 (RFC 8032) with raw keys: the public key of a 32-byte private seed; a 64-byte
/// signature of `msg`; and its check (1 valid, 0 not).
int lk_ed25519_public(const uint8_t seed[32], uint8_t public_key[32]);
int lk_ed25519_sign(const uint8_t seed[32], const uint8_t *msg, size_t msg_len, uint8_t signature[64]);
int lk_ed25519_verify(const uint8_t public_key[32], const uint8_t *msg, size_t msg_len, const uint8_t signature[64]);

/// X25519 (RFC 7748): the public key of a 32-byte private key; the shared secret with a peer's
/// public key (0 when the result is all zero: a low-order peer key).
int lk_x25519_public(const uint8_t private_key[32], uint8_t public_key[32]);
int lk_x25519(const uint8_t private_key[32], const uint8_t peer_public[32], uint8_t shared[32]);

/// Fills `out` with `len` bytes from OpenSSL's CSPRNG (RAND_bytes, seeded by the OS).
int lk_random(uint8_t *out, size_t len);

/// SHA-256 of `data`; `out` holds 32 bytes.
int lk_sha256(const uint8_t *data, size_t len, uint8_t *out);

/// HMAC-SHA256 over the concatenation of `count` parts; `out` holds 32 bytes.
int lk_hmac_sha256(const uint8_t *key, size_t key_len,
                   const uint8_t *const *parts, const size_t *part_lens, size_t count,
                   uint8_t *out);

/// HMAC over one message with the digest `digest` names: 1 SHA-1 (20 bytes of output),
/// 256 SHA-256 (32), 512 SHA-512 (64); `out` holds at least that many bytes, and `out_len`
/// gets the count. For one-time codes (RFC 4226, RFC 6238), whose keys choose their digest.
int lk_hmac(int digest, const uint8_t *key, size_t key_len, const uint8_t *data, size_t data_len,
            uint8_t *out, size_t *out_len);

/// A keyed HMAC-SHA256 context for repeated MACs under one key: the padded key blocks are
/// hashed once; each MAC copies the two SHA-256 states onto the stack and allocates nothing.
/// Read-only after creation, so threads may share it. NULL on failure.
void *lk_hmac_sha256_key_new(const uint8_t *key, size_t key_len);
/// HMAC-SHA256 of the concatenation of `count` parts under a key from lk_hmac_sha256_key_new.
int lk_hmac_sha256_keyed(void *handle, const uint8_t *const *parts, const size_t *part_lens,
                         size_t count, uint8_t *out);
/// The same over two parts, `a` then `b` (either length may be 0).
int lk_hmac_sha256_keyed2(void *handle, const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len,
                          uint8_t *out);
/// Frees (and cleanses) a context from lk_hmac_sha256_key_new.
void lk_hmac_sha256_key_free(void *handle);

/// HKDF-SHA256 (RFC 5869), extract-and-expand.
int lk_hkdf_sha256(const uint8_t *ikm, size_t ikm_len,
                   const uint8_t *salt, size_t salt_len,
                   const uint8_t *info, size_t info_len,
                   uint8_t *out, size_t out_len);

/// scrypt (RFC 7914) with an explicit memory ceiling `maxmem` in bytes.
int lk_scrypt(const uint8_t *pass, size_t pass_len,
              const uint8_t *salt, size_t salt_len,
              uint64_t n, uint32_t r, uint32_t p, uint64_t maxmem,
              uint8_t *out, size_t out_len);

/// AES key wrap (RFC 3394, default IV A6A6A6A6A6A6A6A6).
/// `kek_len` is 16, 24 or 32; `in_len` a multiple of 8, at least 16; `out` holds in_len + 8.
int lk_aes_kw_wrap(const uint8_t *kek, size_t kek_len,
                   const uint8_t *in, size_t in_len, uint8_t *out);

/// AES key unwrap (RFC 3394). Returns 0 when the integrity check fails.
/// `in_len` a multiple of 8, at least 24; `out` holds in_len - 8.
int lk_aes_kw_unwrap(const uint8_t *kek, size_t kek_len,
                     const uint8_t *in, size_t in_len, uint8_t *out);

/// An AES-ECB decryption context keyed with `kek` (16, 24 or 32 bytes) for
/// lk_aes_kw_unwrap_ctx: the key schedule is made once, not once per unwrapped key. Not for
/// concurrent use. NULL on failure. lk_kw_unwrap_ctx_free clears and frees it.
void *lk_kw_unwrap_ctx_new(const uint8_t *kek, size_t kek_len);
void lk_kw_unwrap_ctx_free(void *ctx);
/// lk_aes_kw_unwrap through a context from lk_kw_unwrap_ctx_new: the same bytes and the same
/// answer (0 when the integrity check fails, and `out` zeroed).
int lk_aes_kw_unwrap_ctx(void *ctx, const uint8_t *in, size_t in_len, uint8_t *out);

/// The most keys lk_aes_kw_unwrap_many takes at once.
#define LK_KW_MANY_MAX 32
/// AES key unwrap (RFC 3394) of `count` (at most LK_KW_MANY_MAX) keys wrapped under one KEK:
/// `in` holds them one after another (`in_len` bytes each), `out` receives them (in_len - 8
/// each), `ok_each[k]` is 1 when key k passed its integrity check (else its bytes are zeroed).
/// Each of the 6n steps runs AES over one block of every key at once, which AES-NI pipelines:
/// one key alone waits for each block before the next. Returns 0 on an OpenSSL failure or a
/// bad length (and zeroes `out`).
int lk_aes_kw_unwrap_many(const uint8_t *kek, size_t kek_len, const uint8_t *in, size_t in_len, size_t count,
                          uint8_t *out, uint8_t *ok_each);

/// AES key wrap (RFC 3394) of `count` (at most LK_KW_MANY_MAX) keys under one KEK: `in` holds
/// them one after another (`in_len` bytes each, a multiple of 8, at least 16), `out` receives
/// the wrapped keys (in_len + 8 each). Each of the 6n steps runs AES over one block of every key
/// at once, as lk_aes_kw_unwrap_many does. Returns 0 on an OpenSSL failure or a bad length (and
/// zeroes `out`).
int lk_aes_kw_wrap_many(const uint8_t *kek, size_t kek_len, const uint8_t *in, size_t in_len, size_t count,
                        uint8_t *out);

/// The same two through OpenSSL's AES-*-WRAP ciphers (portable AES, no AES-NI): the reference
/// that tests compare lk_aes_kw_wrap and lk_aes_kw_unwrap with. Not for other use.
int lk_aes_kw_wrap_openssl(const uint8_t *kek, size_t kek_len,
                           const uint8_t *in, size_t in_len, uint8_t *out);
int lk_aes_kw_unwrap_openssl(const uint8_t *kek, size_t kek_len,
                             const uint8_t *in, size_t in_len, uint8_t *out);

/// AES-GCM encryption with a 16-byte tag. `key_len` 16, 24 or 32. `iv_len` >= 1.
int lk_aes_gcm_seal(const uint8_t *key, size_t key_len,
                    const uint8_t *iv, size_t iv_len,
                    const uint8_t *aad, size_t aad_len,
                    const uint8_t *pt, size_t pt_len,
                    uint8_t *ct, uint8_t *tag, size_t tag_len);

/// A cipher context for lk_aes_gcm_open_ctx, reused message after message by one thread. NULL on failure.
void *lk_gcm_ctx_new(void);
void lk_gcm_ctx_free(void *ctx);
/// lk_aes_gcm_open through a context from lk_gcm_ctx_new (12-byte IVs only), which allocates
/// nothing per message. Returns 0 when the tag does not verify (`pt` is then zeroed).
int lk_aes_gcm_open_ctx(void *ctx, const uint8_t *key, size_t key_len,
                        const uint8_t *iv, size_t iv_len,
                        const uint8_t *aad, size_t aad_len,
                        const uint8_t *ct, size_t ct_len,
                        const uint8_t *tag, size_t tag_len,
                        uint8_t *pt);

/// AES-GCM decryption; returns 0 when the tag does not verify (and `pt` must be discarded).
int lk_aes_gcm_open(const uint8_t *key, size_t key_len,
                    const uint8_t *iv, size_t iv_len,
                    const uint8_t *aad, size_t aad_len,
                    const uint8_t *ct, size_t ct_len,
                    const uint8_t *tag, size_t tag_len,
                    uint8_t *pt);

/// Constant-time comparison (CRYPTO_memcmp): 0 when equal.
int lk_memcmp_ct(const void *a, const void *b, size_t len);

/// Overwrites `len` bytes at `p` with zeros in a way the compiler cannot elide.
void lk_cleanse(void *p, size_t len);
/* Frees OpenSSL's state for the calling thread (OPENSSL_thread_stop): call last in a thread that
   used libcrypto and ends before the process does. */
void lk_thread_stop(void);

/// Copies the oldest queued OpenSSL error as text into `buf` (NUL-terminated) and clears the
/// queue. Returns the length written (0 when the queue was empty).
size_t lk_last_error(char *buf, size_t buf_len);

/// Not cryptography (this is the package's one C target every product links): makes the C
/// library's malloc serve every block of `threshold` bytes or more with a mapping of its own,
/// unmapped when freed (glibc: M_MMAP_THRESHOLD, which also stops the threshold from rising
/// with each large block freed). Returns 1 when set, 0 where not supported (lk_memory.c).
int lk_malloc_map_blocks_from(size_t threshold);

#ifdef __cplusplus
}
#endif
#endif
