/*
 * util.c: reasons into buffers, whole writes and reads, safe opens,
 * an operator's file replaced whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

void
util_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list	ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int
util_write_all(int fd, const void *buf, size_t len)
{
	const char	*p = buf;
	ssize_t		 n;

	while (len > 0) {
		n = write(fd, p, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
util_open_regular(int dirfd, const char *name, int nofollow)
{
	struct stat	st;

	return util_open_regular_st(dirfd, name, nofollow, &st);
}

int
util_open_regular_st(int dirfd, const char *name, int nofollow,
    struct stat *st)
{
	int	fd, flags;

	flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
	if (nofollow)
		flags |= O_NOFOLLOW;
	if ((fd = openat(dirfd, name, flags)) == -1)
		return -1;
	if (fstat(fd, st) == -1 || !S_ISREG(st->st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	/*
	 * O_NONBLOCK stays: it changes nothing on a regular file (reads
	 * and writes never block, locks are asked for apart), and clearing
	 * it cost two system calls on every look-up.
	 */
	return fd;
}

int
util_read_all(int fd, size_t max, char **out, size_t *outlen)
{
	struct stat	st;

	return util_read_sized(fd, fstat(fd, &st) == 0 &&
	    S_ISREG(st.st_mode) ? st.st_size : -1, max, out, outlen);
}

int
util_read_sized(int fd, off_t size, size_t max, char **out, size_t *outlen)
{
	char		*buf, *nb;
	size_t		 cap = 4096, len = 0;
	size_t		 ncap;
	ssize_t		 n;
	int		 reg = size >= 0;

	/*
	 * One read of the size fstat gives: a regular file's read that
	 * returns less than was asked for is at its end; others (a pipe)
	 * are read until a read returns 0.
	 */
	if (reg && size > 0 && (size_t)size < max)
		cap = (size_t)size + 1;
	if (cap > max + 1)
		cap = max + 1;
	if ((buf = malloc(cap)) == NULL)
		return -1;
	for (;;) {
		if (len == cap) {
			if (cap > max) {
				free(buf);
				errno = EFBIG;
				return -1;
			}
			ncap = cap > max / 2 ? max + 1 : cap * 2;
			if ((nb = realloc(buf, ncap)) == NULL)
				goto fail;
			buf = nb;
			cap = ncap;
		}
		if ((n = read(fd, buf + len, cap - len)) == -1) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (reg && len < cap)
			break;
	}
	buf[len] = '\0';	/* the loop ends with len < cap */
	*out = buf;
	*outlen = len;
	return 0;
fail:
	n = errno;
	free(buf);
	errno = (int)n;
	return -1;
}

/*
 * Open a new temporary file beside path (path.tmp.PID.RANDOM, O_EXCL,
 * mode newmode less the umask), its name into *tmp (the caller's to
 * free).  The fd, or -1 with errno set.
 */
static int
replace_open(const char *path, mode_t newmode, char **tmp)
{
	unsigned int	r;
	int		fd = -1, tries, e;

	*tmp = NULL;
	for (tries = 0; fd == -1 && tries < 8; tries++) {
		free(*tmp);
		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r) ||
		    asprintf(tmp, "%s.tmp.%ld.%08x", path, (long)getpid(),
		    r) == -1) {
			e = errno;
			*tmp = NULL;
			errno = e;
			return -1;
		}
		fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, newmode);
		if (fd == -1 && errno != EEXIST)
			break;
	}
	return fd;
}

int
util_replace_file(const char *path, const void *data, size_t len,
    mode_t newmode, char *err, size_t errlen)
{
	struct stat	 old, st;
	char		*tmp = NULL, *dir;
	int		 fd, dfd, had, e;

	if (!(had = stat(path, &old) == 0) && errno != ENOENT) {
		util_seterr(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (had && !S_ISREG(old.st_mode)) {
		util_seterr(err, errlen, "%s: not a regular file", path);
		errno = EINVAL;
		return -1;
	}
	if ((fd = replace_open(path, newmode, &tmp)) == -1) {
		e = errno;
		util_seterr(err, errlen, "%s: %s", tmp ? tmp : path,
		    strerror(e));
		free(tmp);
		errno = e;
		return -1;
	}
	/*
	 * The old file's owner first, then its mode (a chown may clear the
	 * set-id bits).  Whoever reads it (the CGI programs as the web
	 * server's user, msgspoold as its own) reads the new one too.
	 */
	if (had && fstat(fd, &st) == 0 && (st.st_uid != old.st_uid ||
	    st.st_gid != old.st_gid) &&
	    fchown(fd, old.st_uid, old.st_gid) == -1) {
		e = errno;
		util_seterr(err, errlen, "%s: cannot give the new file the "
		    "owner and group of the old (uid %ld, gid %ld): %s; the "
		    "file is left as it was", path, (long)old.st_uid,
		    (long)old.st_gid, strerror(e));
		goto fail;
	}
	if (had && fchmod(fd, old.st_mode & 07777) == -1) {
		e = errno;
		util_seterr(err, errlen, "%s: cannot give the new file the "
		    "mode of the old (%04o): %s; the file is left as it was",
		    path, (unsigned)(old.st_mode & 07777), strerror(e));
		goto fail;
	}
	if (util_write_all(fd, data, len) == -1 || fsync(fd) == -1) {
		e = errno;
		util_seterr(err, errlen, "%s: %s", tmp, strerror(e));
		goto fail;
	}
	if (close(fd) == -1) {
		e = errno;
		fd = -1;
		util_seterr(err, errlen, "%s: %s", tmp, strerror(e));
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) == -1) {
		e = errno;
		util_seterr(err, errlen, "%s: %s", path, strerror(e));
		goto fail;
	}
	free(tmp);
	/* The rename is durable once the directory is. */
	if ((dir = strdup(path)) != NULL) {
		if ((dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY |
		    O_CLOEXEC)) != -1) {
			fsync(dfd);
			close(dfd);
		}
		free(dir);
	}
	return 0;
fail:
	if (fd != -1)
		close(fd);
	unlink(tmp);
	free(tmp);
	errno = e;
	return -1;
}

#ifdef MSGSPOOL_FAULTS
void
util_fault(const char *where)
{
	static long	 passed;	/* a test build's globals */
	static int	 stopped;
	const char	*n = getenv("MSGSPOOL_FAULT");
	const char	*stop = getenv("MSGSPOOL_STOP");

	if (stop != NULL && !stopped && strcmp(stop, where) == 0) {
		stopped = 1;
		fprintf(stderr, "stop %ld: %s\n", (long)getpid(), where);
		raise(SIGSTOP);
	}
	if (n == NULL || ++passed != atol(n))
		return;
	fprintf(stderr, "fault %ld: %s\n", passed, where);
	raise(SIGKILL);
}
#endif

int
util_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
util_escape_at(const char *p)
{
	int	hi, lo;

	if (p[0] != '%' || (hi = util_hexval((unsigned char)p[1])) == -1 ||
	    (lo = util_hexval((unsigned char)p[2])) == -1)
		return -1;
	return hi * 16 + lo;
}

int
util_same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	    a->st_size == b->st_size &&
	    a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	    a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	    a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	    a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

int
util_lock_range(int fd, short type, off_t start, off_t len)
{
	struct flock	fl;
	int		cmd = F_OFD_SETLKW;

	for (;;) {
		/* l_pid 0, as open file description locks want it. */
		memset(&fl, 0, sizeof(fl));
		fl.l_type = type;
		fl.l_whence = SEEK_SET;
		fl.l_start = start;
		fl.l_len = len;
		if (fcntl(fd, cmd, &fl) == 0)
			return 0;
		if (errno == EINVAL && cmd == F_OFD_SETLKW)
			cmd = F_SETLKW;
		else if (errno != EINTR)
			return -1;
	}
}
