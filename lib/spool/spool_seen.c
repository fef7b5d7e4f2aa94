/*
 * spool_seen.c: a spool opened request after request by one process
 * (msgspool-fcgi's workers), its states not looked at again while its
 * root is unchanged (spool_open_seen, spool.h).
 *
 * Whether every state is there is a fact of the root's entries, and any
 * change of an entry (a state made, removed, renamed, replaced) sets the
 * root's modification time to the time of the change.  So while an
 * fstat of the root finds the same directory with the same times as one
 * did when every state was seen there, each still is.  A time that was
 * less than SEEN_SETTLED seconds old then is not trusted: a change in
 * the same tick of the file system's clock could have left it as it
 * was.  A state that is a symbolic link is not trusted either: its
 * target can go with the root unchanged.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "spool/spool.h"
#include "spool/spool_impl.h"

#define SEEN_SETTLED	2

static int
same(const struct spool_seen *seen, const struct stat *st)
{
	return seen->valid && seen->dev == st->st_dev &&
	    seen->ino == st->st_ino &&
	    seen->mtim.tv_sec == st->st_mtim.tv_sec &&
	    seen->mtim.tv_nsec == st->st_mtim.tv_nsec &&
	    seen->ctim.tv_sec == st->st_ctim.tv_sec &&
	    seen->ctim.tv_nsec == st->st_ctim.tv_nsec;
}

struct spool *
spool_open_seen(const char *root, struct spool_seen *seen, char *err,
    size_t errlen)
{
	struct spool	*s;
	struct stat	 st;
	int		 d, fd;

	if (seen->valid &&
	    (fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1) {
		if (fstat(fd, &st) == 0 && same(seen, &st)) {
			if ((s = spool_alloc(root, err, errlen)) == NULL)
				close(fd);
			else {
				s->rootfd = fd;
				clock_gettime(CLOCK_MONOTONIC, &s->opened);
			}
			return s;
		}
		close(fd);
	}
	seen->valid = 0;
	/* Every state looked at, as each request would. */
	if ((s = spool_open(root, 0, err, errlen)) == NULL)
		return NULL;
	for (d = 0; d < SPOOL__MAX; d++)
		if (fstatat(s->rootfd, spool_dirnames[d], &st,
		    AT_SYMLINK_NOFOLLOW) == -1 || !S_ISDIR(st.st_mode))
			return s;
	/*
	 * The times after the looks: a change since is less than a second
	 * old, so not trusted; no later one leaves them as they are.
	 */
	if (fstat(s->rootfd, &st) == -1 ||
	    time(NULL) - st.st_mtim.tv_sec < SEEN_SETTLED)
		return s;
	seen->dev = st.st_dev;
	seen->ino = st.st_ino;
	seen->mtim = st.st_mtim;
	seen->ctim = st.st_ctim;
	seen->valid = 1;
	return s;
}
