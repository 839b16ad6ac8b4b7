// See lk_malloc_map_blocks_from in include/lk_crypto.h. In this module because it is the package's C target that every
// product links; it has nothing to do with cryptography.
#include "lk_crypto.h"

#if defined(__GLIBC__)
#include <limits.h>
#include <malloc.h>
#endif

int lk_malloc_map_blocks_from(size_t threshold) {
#if defined(__GLIBC__)
    if (threshold > INT_MAX) return 0;
    return mallopt(M_MMAP_THRESHOLD, (int)threshold) == 1;
#else
    (void)threshold;
    return 0;
#endif
}
