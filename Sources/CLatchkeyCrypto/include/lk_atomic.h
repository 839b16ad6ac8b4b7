// Lock-free loads and stores of an int32_t (C11 atomics through the GCC/Clang builtins), for
// memory shared between threads and a signal handler: a lock is not async-signal-safe, and a
// plain variable written by one thread while a handler reads it is a data race.
#ifndef LK_ATOMIC_H
#define LK_ATOMIC_H

#include <stdint.h>

static inline int32_t lk_atomic_load_i32(const int32_t *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
static inline void lk_atomic_store_i32(int32_t *p, int32_t v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }

#endif
