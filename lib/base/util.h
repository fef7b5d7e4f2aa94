/*
 * util.h: the few helpers every module needs.
 */
#ifndef UTIL_H
#define UTIL_H

#include <sys/stat.h>

#include <stddef.h>

/*
 * Format a one-line reason into a caller's buffer; nothing when err is
 * NULL or errlen is 0.
 */
void	util_seterr(char *err, size_t errlen, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

/*
 * Write all len bytes to fd, retrying short writes and EINTR.  0, or -1
 * with errno set (EIO when the descriptor took nothing).
 */
int	util_write_all(int fd, const void *buf, size_t len);

/*
 * Open dirfd/name (dirfd may be AT_FDCWD) for reading without ever
 * blocking: a FIFO or device never stalls the caller, and anything but
 * a regular file is refused (errno EINVAL, or ELOOP for a symbolic link
 * when nofollow is set).  Returns the fd, blocking again, or -1 with
 * errno set.
 */
int	util_open_regular(int dirfd, const char *name, int nofollow);

/* util_open_regular, with what its fstat found in *st. */
int	util_open_regular_st(int dirfd, const char *name, int nofollow,
	    struct stat *st);

/*
 * Read fd to its end (whatever its size said: a file may grow while it
 * is read) into a new NUL-terminated buffer of at most max bytes, the
 * caller's to free.  0 with *out and *len set, or -1 with errno set
 * (EFBIG past max) and nothing to free.
 */
int	util_read_all(int fd, size_t max, char **out, size_t *len);

/*
 * util_read_all of a regular file whose size the caller's fstat gave
 * (size), or of anything (size -1): no fstat of its own.
 */
int	util_read_sized(int fd, off_t size, size_t max, char **out,
	    size_t *len);

/*
 * Replace the operator's file at path with len bytes of data (the keys
 * file, a webhook secret: msgspool(8), Files rewritten): written to a
 * temporary file beside it, given the old file's owner, group and mode,
 * synced, renamed over it, and its directory synced.  Without an old
 * file the new one has mode newmode less the umask and the caller's
 * owner.  0, or -1 with a one-line reason in err (the old file as it
 * was, no temporary file left): one that cannot be given the old
 * file's owner (EPERM: the caller is not root) is refused.
 */
int	util_replace_file(const char *path, const void *data, size_t len,
	    mode_t newmode, char *err, size_t errlen);

/* The value of a hex digit (either case), or -1. */
int	util_hexval(int c);

/* The byte of a percent-escape at p ("%41"), or -1 when it is none. */
int	util_escape_at(const char *p);

/*
 * Whether two stats are of the same file unchanged: device, inode,
 * size, and modification and change times to the nanosecond.  The
 * caches of a persistent process read a file again when not.
 */
int	util_same_file(const struct stat *, const struct stat *);

/*
 * Take (F_WRLCK, waiting) or give back (F_UNLCK) the byte-range lock of
 * len bytes from start of fd (0: to the end): 0, or -1 with errno.  An
 * open file description's lock (F_OFD_SETLKW), so that the threads of
 * one process exclude each other too and a close of another descriptor
 * of the file keeps it; a process lock where the kernel has none.
 */
int	util_lock_range(int fd, short type, off_t start, off_t len);

/*
 * Fault points, in a test build only (-DMSGSPOOL_FAULTS; make check
 * builds one): the process kills itself (SIGKILL) at the Nth point it
 * passes, N from the environment's MSGSPOOL_FAULT, after naming the
 * point on stderr.  It stops itself (SIGSTOP) at the first point it
 * passes that the environment's MSGSPOOL_STOP names, after naming it
 * too, so that a test can run another process into that moment and
 * then continue it (SIGCONT).  Elsewhere FAULT is nothing.
 */
#ifdef MSGSPOOL_FAULTS
void	util_fault(const char *where);
#define FAULT(where)	util_fault(where)
#else
#define FAULT(where)	((void)0)
#endif

#endif
