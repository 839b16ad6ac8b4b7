#ifndef LK_SESSION_H
#define LK_SESSION_H
// The Secret Service's encrypted session (dh-ietf1024-sha256-aes128-cbc-pkcs7): Diffie-Hellman
// in the 1024-bit MODP group of RFC 2409 (generator 2) and AES-128-CBC with PKCS#7 padding,
// all through OpenSSL. Returns 1 on success, 0 on failure.
#include <stddef.h>
#include <stdint.h>

// A new private exponent and its public value 2^x mod p, both 128 bytes big-endian.
int lk_dh1024_keypair(uint8_t private_key[128], uint8_t public_key[128]);
// peer^x mod p as 128 bytes big-endian; 0 when the peer's value is not in 2..p-2.
int lk_dh1024_shared(const uint8_t private_key[128], const uint8_t *peer, size_t peer_len, uint8_t shared[128]);
// AES-128-CBC with PKCS#7 padding. out must hold in_len + 16 bytes; *out_len is set.
// Decryption fails (0) on a bad padding or a length that is not a multiple of 16.
int lk_aes128_cbc(int encrypt, const uint8_t key[16], const uint8_t iv[16], const uint8_t *in, size_t in_len,
                  uint8_t *out, size_t *out_len);
#endif
