// CLatchkeyCrypto: X.509 certificates and asymmetric keys (OpenSSL 3 libcrypto).
// Parsing only: no signature or chain verification happens here.
// Results are returned in plain C structs that own malloc'ed buffers; the caller copies what it
// needs and frees the struct with the matching *_free function. No OpenSSL type appears here.
#ifndef LK_X509_H
#define LK_X509_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// SHA-1 of `data`; `out` holds 20 bytes. Returns 1 on success.
int lk_sha1(const uint8_t *data, size_t len, uint8_t *out);

/// Key algorithms, independent of OpenSSL's NIDs.
enum {
    LK_KEYALG_UNKNOWN = 0,
    LK_KEYALG_RSA = 1,
    LK_KEYALG_EC = 2,
    LK_KEYALG_ED25519 = 3,
    LK_KEYALG_X25519 = 4,
    LK_KEYALG_ED448 = 5,
    LK_KEYALG_X448 = 6,
    LK_KEYALG_DSA = 7,
};

/// A byte buffer owned by the struct that holds it (NULL with len 0 when absent).
typedef struct {
    uint8_t *bytes;
    size_t len;
} lk_buf;

/// What Latchkey needs from a certificate (the keychain attributes of class cert).
typedef struct {
    /// X.509 version as Apple counts it for kSecAttrCertificateType: 1, 2 or 3.
    int version;
    /// DER of the subject Name and of the issuer Name, as OpenSSL encodes them (i2d_X509_NAME:
    /// the encoding read from the certificate, kept by OpenSSL on decode).
    lk_buf subject;
    lk_buf issuer;
    /// Content octets of the serialNumber INTEGER (big-endian two's complement, minimal DER:
    /// a positive serial whose top bit is set keeps its leading 0x00), as Apple's
    /// SecCertificateCopySerialNumberData returns it.
    lk_buf serial;
    /// keyIdentifier of the subjectKeyIdentifier extension; has_skid = 0 when absent.
    int has_skid;
    lk_buf skid;
    /// Contents of the subjectPublicKey BIT STRING (RSA: RSAPublicKey DER; EC: the point).
    lk_buf public_key;
    /// The whole SubjectPublicKeyInfo DER.
    lk_buf spki;
    /// SHA-1 of public_key (Apple's kSecAttrPublicKeyHash).
    uint8_t public_key_hash[20];
    /// A summary of the subject for display and labels (UTF-8, no NUL): the last commonName,
    /// else the first emailAddress, else the last organizationalUnitName, else the last
    /// organizationName. len 0 when the subject has none of these.
    lk_buf summary;
    /// The last commonName of the subject (UTF-8); len 0 when there is none.
    lk_buf common_name;
    /// LK_KEYALG_* of the subject public key, and its size in bits (0 when unknown).
    int key_algorithm;
    int key_bits;
} lk_x509_info;

/// Parses a DER certificate. The whole input must be one certificate (trailing bytes are an
/// error). Returns 1 on success; 0 on failure with a reason in `err` (NUL-terminated).
int lk_x509_parse(const uint8_t *der, size_t len, lk_x509_info *out, char *err, size_t err_len);
void lk_x509_info_free(lk_x509_info *info);

/// The form an asymmetric key was given in.
enum {
    LK_KEYFORM_PRIVATE_DER = 1,   // PKCS#8, PKCS#1 RSAPrivateKey, SEC1 ECPrivateKey (d2i_AutoPrivateKey)
    LK_KEYFORM_PUBLIC_SPKI = 2,   // SubjectPublicKeyInfo
    LK_KEYFORM_PUBLIC_PKCS1 = 3,  // PKCS#1 RSAPublicKey
    LK_KEYFORM_EC_RAW_PUBLIC = 4, // Apple's external representation: 04 || X || Y
    LK_KEYFORM_EC_RAW_PRIVATE = 5,// Apple's external representation: 04 || X || Y || K
};

/// What Latchkey needs from an asymmetric key (the keychain attributes of class keys).
typedef struct {
    int form;             // LK_KEYFORM_*
    int is_private;       // 1 private, 0 public
    int algorithm;        // LK_KEYALG_*
    int bits;             // EVP_PKEY_get_bits
    /// Contents of the subjectPublicKey BIT STRING of the key's SubjectPublicKeyInfo: the same
    /// bytes a certificate for this key carries, so public_key_hash equals its pkhh.
    lk_buf public_key;
    lk_buf spki;
    uint8_t public_key_hash[20];
    /// Apple's SecKeyCopyExternalRepresentation: RSA private → PKCS#1 RSAPrivateKey DER;
    /// EC private → 04 || X || Y || K; public keys → public_key; Ed25519/X25519 private → raw.
    lk_buf external;
} lk_key_info;

/// Parses a key: private DER (PKCS#8 / PKCS#1 / SEC1), then SubjectPublicKeyInfo, then PKCS#1
/// RSAPublicKey, then Apple's raw EC forms (P-256, P-384, P-521). Trailing bytes are an error.
/// Returns 1 on success; 0 when the input is none of these (reason in `err`).
int lk_key_parse(const uint8_t *data, size_t len, lk_key_info *out, char *err, size_t err_len);
void lk_key_info_free(lk_key_info *info);

#ifdef __cplusplus
}
#endif
#endif
