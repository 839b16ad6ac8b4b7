// See lk_rename_noreplace in include/lk_files.h.
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE   // syscall(2)
#endif
#include "lk_files.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)   // linux/fs.h
#endif

int lk_rename_noreplace(const char *from, const char *to) {
#if defined(__linux__) && defined(SYS_renameat2)
    // Not retried on EINTR: a rename that took effect before the interruption would then
    // fail with EEXIST against its own result.
    return syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0 ? 0 : errno;
#else
    (void)from;
    (void)to;
    return ENOSYS;
#endif
}
