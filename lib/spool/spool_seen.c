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
 *
 * On a file system of this host, the same facts let a worker hold the
 * root and the states it opened from one request to the next: while a
 * stat of the root's path finds it as seen, the root held is the one
 * there and so is each state in it.  That stat replaces the open, fstat
 * and close of the root, and the opens of states, that each request
 * made.  On a network file system (msgspool-spool(5), Several hosts, one
 * spool) the root is opened by its path for each request as before: the
 * open asks the server for its attributes, which a stat may take from
 * what this host cached.
 */
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/statfs.h>
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

/*
 * Whether the file system of fd is one of this host's own disks or its
 * memory: one no other host writes to.  Any other, or one not known,
 * is not.
 */
static int
local_fs(int fd)
{
	struct statfs	sf;

	if (fstatfs(fd, &sf) == -1)
		return 0;
	switch ((unsigned long)sf.f_type) {
	case EXT4_SUPER_MAGIC:	/* ext2, ext3 and ext4 alike */
	case XFS_SUPER_MAGIC:
	case BTRFS_SUPER_MAGIC:
	case TMPFS_MAGIC:
	case F2FS_SUPER_MAGIC:
		return 1;
	default:
		return 0;
	}
}

void
spool_seen_release(struct spool_seen *seen)
{
	int	d;

	if (!seen->held)
		return;
	for (d = 0; d < SPOOL__MAX; d++)
		if (seen->fds[d] != -1)
			close(seen->fds[d]);
	close(seen->rootfd);
	seen->held = 0;
}

/* s, whose root is the one seen saw, lends it to seen to hold. */
static void
hold(struct spool_seen *seen, struct spool *s)
{
	int	d;

	if (!seen->local)
		return;
	seen->rootfd = s->rootfd;
	seen->opened = s->opened;
	for (d = 0; d < SPOOL__MAX; d++)
		seen->fds[d] = s->fds[d];
	seen->held = 1;
	s->seen = seen;
}

/* A spool of what seen holds, borrowed. */
static struct spool *
borrow(const char *root, struct spool_seen *seen, char *err, size_t errlen)
{
	struct spool	*s;
	int		 d;

	if ((s = spool_alloc(root, err, errlen)) == NULL)
		return NULL;
	s->rootfd = seen->rootfd;
	/* When the root was opened by its path (spool_root_fresh). */
	s->opened = seen->opened;
	for (d = 0; d < SPOOL__MAX; d++)
		s->fds[d] = seen->fds[d];
	s->seen = seen;
	return s;
}

struct spool *
spool_open_seen(const char *root, struct spool_seen *seen, char *err,
    size_t errlen)
{
	struct spool	*s;
	struct stat	 st;
	int		 d, fd;

	if (seen->held) {
		if (seen->valid && stat(root, &st) == 0 && same(seen, &st))
			return borrow(root, seen, err, errlen);
		spool_seen_release(seen);
	}
	if (seen->valid &&
	    (fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1) {
		if (fstat(fd, &st) == 0 && same(seen, &st)) {
			if ((s = spool_alloc(root, err, errlen)) == NULL)
				close(fd);
			else {
				s->rootfd = fd;
				clock_gettime(CLOCK_MONOTONIC, &s->opened);
				hold(seen, s);
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
	seen->local = local_fs(s->rootfd);
	seen->valid = 1;
	hold(seen, s);
	return s;
}
