// Not cryptography (this is the package's one C target every product links): system calls that
// Swift cannot reach. Glibc's syscall(2) is variadic, so Swift cannot call it; the statically
// linked release cannot find renameat2 through dlsym either (lk_files.c).
#ifndef LK_FILES_H
#define LK_FILES_H

#ifdef __cplusplus
extern "C" {
#endif

/// Renames `from` to `to` only when nothing is at `to`: renameat2(AT_FDCWD, from, AT_FDCWD, to,
/// RENAME_NOREPLACE) through syscall(2), so that it works whether or not the C library declares
/// or exports renameat2. Returns 0, or the errno of the failure (EEXIST when `to` exists;
/// EINVAL or ENOSYS when the file system or kernel cannot refuse a replacing rename, ENOSYS
/// also off Linux).
int lk_rename_noreplace(const char *from, const char *to);

#ifdef __cplusplus
}
#endif
#endif
