// libcrypto from OpenSSL 3 (Debian: libssl-dev). Only CLatchkeyCrypto includes this.
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/core_names.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/x509.h>
