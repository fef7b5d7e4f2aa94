/*
 * counts.c: the CGI programs' counters in the spool (counts.h).
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "spool/counts.h"
#include "spool/metrics.h"

/* "CHANNEL COUNT\n": the name padded to 8, the count to 20 digits. */
#define NAME_W	8
#define COUNT_W	20
#define LINE_W	(NAME_W + 1 + COUNT_W + 1)
#define FILE_W	(LINE_W * CHANNEL__MAX)

/* The counts of text (len bytes) into v; lines that do not parse: 0. */
static void
parse(const char *text, size_t len, unsigned long long v[CHANNEL__MAX])
{
	const char	*p, *end = text + len, *nl;
	char		 name[NAME_W + 1], *ep;
	unsigned long long n;
	size_t		 k;
	int		 c;

	memset(v, 0, CHANNEL__MAX * sizeof(*v));
	for (p = text; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			break;
		for (k = 0; k < NAME_W && p + k < nl && p[k] != ' '; k++)
			name[k] = p[k];
		name[k] = '\0';
		while (p + k < nl && p[k] == ' ')
			k++;
		if ((c = channel_parse(name)) == -1 || p + k >= nl ||
		    p[k] < '0' || p[k] > '9')
			continue;
		errno = 0;
		n = strtoull(p + k, &ep, 10);
		if (errno == 0 && ep == nl)
			v[c] = n;
	}
}

/* counter name, open and locked (LOCK_EX or LOCK_SH); -1 with errno. */
static int
open_locked(struct spool *s, const char *name, int op)
{
	int	afd, fd, e;

	if (strchr(name, '/') != NULL || name[0] == '.') {
		errno = EINVAL;
		return -1;
	}
	if ((afd = spool_area(s, METRICS_AREA, op == LOCK_EX)) == -1)
		return -1;
	fd = openat(afd, name, op == LOCK_EX ? O_RDWR | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC : O_RDONLY | O_NOFOLLOW | O_CLOEXEC, SPOOL_FILE_MODE);
	e = errno;
	close(afd);
	if (fd == -1) {
		errno = e;
		return -1;
	}
	if (flock(fd, op) == -1) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Read all of fd (at most FILE_W bytes) into v. */
static int
read_counts(int fd, unsigned long long v[CHANNEL__MAX])
{
	char	text[FILE_W + 1];
	ssize_t	n;

	if ((n = pread(fd, text, FILE_W, 0)) == -1)
		return -1;
	parse(text, (size_t)n, v);
	return 0;
}

int
counts_add(struct spool *s, const char *name, enum channel ch)
{
	unsigned long long	 v[CHANNEL__MAX];
	char			 text[FILE_W + 1];
	struct stat		 st;
	int			 fd, c, e;
	size_t			 len = 0;

	if ((int)ch < 0 || ch >= CHANNEL__MAX) {
		errno = EINVAL;
		return -1;
	}
	if ((fd = open_locked(s, name, LOCK_EX)) == -1)
		return -1;
	if (read_counts(fd, v) == -1)
		goto fail;
	v[ch]++;
	for (c = 0; c < CHANNEL__MAX; c++)
		len += (size_t)snprintf(text + len, sizeof(text) - len,
		    "%-*s %0*llu\n", NAME_W,
		    channel_info((enum channel)c)->name, COUNT_W, v[c]);
	/* The same size each time: written over in place, whole. */
	if (len != FILE_W) {
		errno = EOVERFLOW;
		goto fail;
	}
	if (pwrite(fd, text, len, 0) != (ssize_t)len ||
	    (fstat(fd, &st) == 0 && st.st_size != (off_t)len &&
	    ftruncate(fd, (off_t)len) == -1) || fsync(fd) == -1)
		goto fail;
	return close(fd);
fail:
	e = errno;
	close(fd);
	errno = e;
	return -1;
}

int
counts_read(struct spool *s, const char *name,
    unsigned long long v[CHANNEL__MAX])
{
	int	fd, rc, e;

	memset(v, 0, CHANNEL__MAX * sizeof(*v));
	if ((fd = open_locked(s, name, LOCK_SH)) == -1)
		return errno == ENOENT ? 0 : -1;
	rc = read_counts(fd, v);
	e = errno;
	close(fd);
	errno = e;
	return rc;
}
