/*
 * tmpfile.c: the spool's unnamed files (msgspool-spool(5), Queueing):
 * whether they can be made in tmp/ (O_TMPFILE) and linked into place,
 * and their link, by the file's descriptor where the kernel allows it
 * (linkat AT_EMPTY_PATH: Linux 6.10 for a file one opened, or
 * CAP_DAC_READ_SEARCH), else by its name under /proc/self/fd, a walk
 * through /proc that was a fifth of the cost of each link.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "spool/spool.h"
#include "spool/spool_impl.h"

/* Note whether a link by descriptor works, for this spool and its keep. */
static void
flink_is(struct spool *s, int v)
{
	s->flink = v;
	if (s->keep != NULL)
		s->keep->flink = v;
}

int
spool_unnamed_ok(struct spool *s)
{
	if (s->unnamed == 0 && s->flink == 0 && s->keep != NULL)
		s->flink = s->keep->flink;
	/* Linked by descriptor: no /proc needed. */
	if (s->unnamed == 0)
		s->unnamed = s->flink == 1 ||
		    access("/proc/self/fd", X_OK) == 0 ? 1 : -1;
	return s->unnamed == 1;
}

int
spool_link_unnamed(struct spool *s, int fd, int dfd, const char *name)
{
	char	proc[64];

	if (s->flink >= 0) {
		if (linkat(fd, "", dfd, name, AT_EMPTY_PATH) == 0) {
			if (s->flink == 0)
				flink_is(s, 1);
			return 0;
		}
		/* Not allowed here (ENOENT) or not known: by /proc. */
		if (errno == EEXIST || (errno != ENOENT && errno != EPERM &&
		    errno != EINVAL))
			return -1;
		flink_is(s, -1);
		/* A kept "yes" that no longer holds: /proc looked for again. */
		if (access("/proc/self/fd", X_OK) == -1)
			return -1;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, proc, dfd, name, AT_SYMLINK_FOLLOW);
}
