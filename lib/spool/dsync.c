/*
 * dsync.c: group commit of the spool's directory syncs (dsync.h,
 * msgspool-spool(5), "Group commit").
 *
 * The record, SPOOL/sync/HOST, is this host's alone (its processes
 * share memory through it; hosts that share a spool over NFS do not),
 * in the host's byte order: a magic number, then for each state's
 * directory three counters: renames done, renames synced, and the syncs
 * that made them so (what group commit saves shows as renames/syncs).  Its lock
 * is byte d of the file, for the directory of state d.  Slot DSYNC_FS is
 * the file system's (syncfs, msgspool.conf(5) sync = filesystem): it
 * counts writes and renames alike.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/netfs.h"
#include "base/util.h"
#include "spool/dsync.h"
#include "spool/spool.h"
#include "spool/spool_impl.h"

#define DSYNC_AREA	"sync"
#define DSYNC_MAGIC	0x6d7364736e633032ULL	/* "msdsnc02" */
#define DSYNC_SLOTS	16			/* > SPOOL__MAX */
#define DSYNC_FS	(DSYNC_SLOTS - 1)	/* the file system's */

struct dsync_rec {
	uint64_t	magic;
	uint64_t	renamed[DSYNC_SLOTS];	/* renames counted */
	uint64_t	synced[DSYNC_SLOTS];	/* of them, durable */
	uint64_t	syncs[DSYNC_SLOTS];	/* syncs done: what it saves */
};

struct dsync {
	int			 fd;
	struct dsync_rec	*rec;
	dev_t			 dev;		/* the record's file */
	ino_t			 ino;
	int			 refs;		/* spools and a keep */
};

/* "sync/HOST": the record's path under the spool's root. */
static void
dsync_path(char *path, size_t len, char *host, size_t hostlen)
{
	snprintf(path, len, DSYNC_AREA "/%s", netfs_hostname(host, hostlen));
}

/* The host's record, mapped; NULL when it cannot be had. */
static struct dsync *
dsync_open(struct spool *s)
{
	struct dsync	*ds;
	struct stat	 st;
	uint64_t	 zero = 0;
	char		 host[NETFS_HOST_MAX + 1];
	char		 path[sizeof(DSYNC_AREA) + NETFS_HOST_MAX + 1];
	void		*p;
	int		 afd, fd;

	/* sync/HOST, the area made on first use. */
	dsync_path(path, sizeof(path), host, sizeof(host));
	if ((fd = openat(s->rootfd, path, O_RDWR | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, 0660)) == -1 && errno == ENOENT &&
	    (afd = spool_area(s, DSYNC_AREA, 1)) != -1) {
		fd = openat(afd, host, O_RDWR | O_CREAT | O_NOFOLLOW |
		    O_CLOEXEC, 0660);
		close(afd);
	}
	if (fd == -1)
		return NULL;
	/*
	 * Made by another process: it grows to its size only once.  The
	 * web server's programs and msgspoold share it, as new/.
	 */
	if (fstat(fd, &st) == -1) {
		close(fd);
		return NULL;
	}
	if ((st.st_mode & 0777) != 0660 && st.st_uid == geteuid())
		fchmod(fd, 0660);
	if (!S_ISREG(st.st_mode) ||
	    (st.st_size != 0 && st.st_size != (off_t)sizeof(struct dsync_rec)) ||
	    (st.st_size == 0 && ftruncate(fd, sizeof(struct dsync_rec)) == -1) ||
	    (p = mmap(NULL, sizeof(struct dsync_rec), PROT_READ | PROT_WRITE,
	    MAP_SHARED, fd, 0)) == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	if ((ds = malloc(sizeof(*ds))) == NULL) {
		munmap(p, sizeof(struct dsync_rec));
		close(fd);
		return NULL;
	}
	ds->fd = fd;
	ds->rec = p;
	ds->dev = st.st_dev;
	ds->ino = st.st_ino;
	ds->refs = 1;
	/* A new record is zeros: the first to see it marks it ours. */
	__atomic_compare_exchange_n(&ds->rec->magic, &zero, DSYNC_MAGIC, 0,
	    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&ds->rec->magic, __ATOMIC_SEQ_CST) !=
	    DSYNC_MAGIC) {
		spool_dsync_free(ds);
		return NULL;
	}
	return ds;
}

/*
 * The record for s: the one its keep holds while the root's sync/HOST
 * is that file still (one stat), else opened, and kept.
 */
static struct dsync *
dsync_get(struct spool *s)
{
	struct spool_keep	*k = s->keep;
	struct dsync		*ds;
	struct stat		 st;
	char			 host[NETFS_HOST_MAX + 1];
	char			 path[sizeof(DSYNC_AREA) + NETFS_HOST_MAX + 1];

	if (k == NULL)
		return dsync_open(s);
	dsync_path(path, sizeof(path), host, sizeof(host));
	if (k->dsync != NULL && fstatat(s->rootfd, path, &st,
	    AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    st.st_dev == k->dsync->dev && st.st_ino == k->dsync->ino) {
		k->dsync->refs++;
		return k->dsync;
	}
	/* Another file, or none: the one there now, kept instead. */
	spool_dsync_free(k->dsync);
	k->dsync = NULL;
	if ((ds = dsync_open(s)) != NULL) {
		ds->refs++;
		k->dsync = ds;
	}
	return ds;
}

void
spool_lend(struct spool *s, struct spool_keep *keep)
{
	s->keep = keep;
}

void
spool_keep_free(struct spool_keep *k)
{
	if (k == NULL)
		return;
	spool_dsync_free(k->dsync);
	k->dsync = NULL;
	/* Learnt again: what failed once (a directory gone) may not now. */
	k->flink = 0;
}

void
spool_dsync_free(struct dsync *ds)
{
	if (ds == NULL || --ds->refs > 0)
		return;
	munmap(ds->rec, sizeof(struct dsync_rec));
	close(ds->fd);
	free(ds);
}

/* Take (F_WRLCK) or give back (F_UNLCK) the lock of slot d. */
static int
dsync_lock(const struct dsync *ds, int d, short type)
{
	return util_lock_range(ds->fd, type, d, 1);
}

/*
 * Group commit on slot i of the record, op(fd) the sync: every event
 * counted in the slot before this call is durable once it returns 0.
 */
static int
group_sync(struct spool *s, int i, int fd, int (*op)(int))
{
	struct dsync	*ds;
	uint64_t	 ticket, target, seen;
	int		 rc, e;

	if (s->dsync == NULL && !s->dsync_tried) {
		s->dsync_tried = 1;
		s->dsync = dsync_get(s);
	}
	if ((ds = s->dsync) == NULL)
		return op(fd);
	/* The rename (or write) is done: it counts from here. */
	ticket = __atomic_add_fetch(&ds->rec->renamed[i], 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&ds->rec->synced[i], __ATOMIC_SEQ_CST) >= ticket)
		return 0;
	FAULT("dsync: counted, waiting for the writer");
	if (dsync_lock(ds, i, F_WRLCK) == -1)
		return op(fd);
	/* The writer before us may have synced ours while we waited. */
	if (__atomic_load_n(&ds->rec->synced[i], __ATOMIC_SEQ_CST) >= ticket) {
		dsync_lock(ds, i, F_UNLCK);
		return 0;
	}
	/* Every event counted by now is done before the sync begins. */
	target = __atomic_load_n(&ds->rec->renamed[i], __ATOMIC_SEQ_CST);
	FAULT("dsync: the writer, before its sync");
	rc = op(fd);
	e = errno;
	if (rc == 0) {
		FAULT("dsync: the writer, synced, not yet recorded");
		__atomic_add_fetch(&ds->rec->syncs[i], 1, __ATOMIC_SEQ_CST);
		seen = __atomic_load_n(&ds->rec->synced[i], __ATOMIC_SEQ_CST);
		while (seen < target && !__atomic_compare_exchange_n(
		    &ds->rec->synced[i], &seen, target, 0, __ATOMIC_SEQ_CST,
		    __ATOMIC_SEQ_CST))
			continue;
	}
	dsync_lock(ds, i, F_UNLCK);
	errno = e;
	return rc;
}

int
spool_syncdir(struct spool *s, int d)
{
	int	fd;

	if ((fd = spool_statefd(s, d)) == -1)
		return -1;
	if (d < 0 || d >= DSYNC_FS)
		return fsync(fd);
	return group_sync(s, d, fd, fsync);
}

int
spool_syncfs(struct spool *s)
{
	return group_sync(s, DSYNC_FS, s->rootfd, syncfs);
}

void
spool_sync_set(struct spool *s, enum spool_sync how)
{
	s->sync = how;
}

int
spool_sync_parse(const char *v, enum spool_sync *how)
{
	if (v == NULL || strcmp(v, "file") == 0)
		*how = SPOOL_SYNC_FILE;
	else if (strcmp(v, "filesystem") == 0)
		*how = SPOOL_SYNC_FS;
	else
		return -1;
	return 0;
}
