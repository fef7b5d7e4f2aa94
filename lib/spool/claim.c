/*
 * claim.c: claims on the spool's messages (msgspool-spool(5), Claims and
 * recovery; Several hosts, one spool): a file taken into cur/ under an
 * flock, its owner named in claims/ (claim_owner.c), renewed; a retry by
 * hand, which moves its message the same way; an erasure, which removes
 * it under the same lock (msgspool erase); and the recovery of a
 * claim that outlived its daemon, back to new/ or deferred/.  The
 * states and their files are spool.c's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/netfs.h"
#include "base/util.h"
#include "spool/spool.h"
#include "spool/spool_impl.h"

/*
 * spool_doc_open for a claim: for writing when it may be, since an flock on
 * NFS is a lock on the server that needs a file open for writing, and
 * the heartbeat (spool_claim_renew) writes it.  Read-only where the
 * file is another user's: a local lock needs no more.
 */
static int
claim_open(struct spool *s, enum spool_dir d, const char *name, char *err,
    size_t errlen)
{
	struct stat	st;
	int		fd;

	if (strchr(name, '/') == NULL && name[0] != '.' &&
	    (fd = openat(spool_statefd(s, d), name, O_RDWR | O_NOFOLLOW |
	    O_NONBLOCK | O_NOCTTY | O_CLOEXEC)) != -1) {
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
			fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
			return fd;
		}
		close(fd);
	} else if (errno == ENOENT && strchr(name, '/') == NULL &&
	    name[0] != '.') {
		/* Gone: no second look (a lookup on NFS is a round trip). */
		util_seterr(err, errlen, "%s/%s/%s: %s", s->root,
		    spool_dirname(d), name, strerror(ENOENT));
		errno = ENOENT;
		return -1;
	}
	return spool_doc_open(s, d, name, err, errlen);
}

int
spool_claim_renew(int fd)
{
	char	c;

	/* The same byte back where it was: the document is unchanged. */
	if (pread(fd, &c, 1, 0) != 1)
		return -1;
	if (pwrite(fd, &c, 1, 0) != 1)
		return -1;
	return fsync(fd);
}

/*
 * Whether cur/name is still the file open on fd: a take may have renamed
 * another over it between our open and our lock.  Once we hold the
 * lock of what the name holds, no take renames over it (lock_cur).
 */
static int
still_in(struct spool *s, enum spool_dir d, const char *name, int fd)
{
	struct stat	a, b;

	return fstat(fd, &a) == 0 && fstatat(spool_statefd(s, d), name,
	    &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_ino == b.st_ino &&
	    a.st_dev == b.st_dev;
}

static int
still_named(struct spool *s, const char *name, int fd)
{
	return still_in(s, SPOOL_CUR, name, fd);
}

/*
 * Lock what cur/name holds before a take renames over it (msgspool-spool(5),
 * Claims and recovery): a daemon recording an outcome writes the new
 * file (deferred/, sent/, failed/) before it removes cur/name, under
 * its claim's lock, so a file renamed over a locked cur/name would be
 * the one removed.  0 with *fd the locked file (-1 when there is none),
 * to be closed once the rename is done; -1 with errno EBUSY while a
 * claim holds it, or when it is no file to lock.
 */
static int
lock_cur(struct spool *s, const char *name, int *fd)
{
	if ((*fd = claim_open(s, SPOOL_CUR, name, NULL, 0)) == -1) {
		if (errno == ENOENT)
			return 0;
	} else if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
		return 0;	/* a dead claim's: the rename replaces it */
	if (*fd != -1)
		close(*fd);
	*fd = -1;
	errno = EBUSY;
	return -1;
}

int
spool_take(struct spool *s, enum spool_dir from, const char *name,
    json_t **doc, char *err, size_t errlen)
{
	int	fd, curfd, dup_fd, e;

	*doc = NULL;
	if ((fd = claim_open(s, from, name, err, errlen)) == -1) {
		if ((e = errno) == EINVAL)
			spool_set_aside(s, from, name, err);
		errno = e;
		return -1;
	}
	/* The lock marks a live claim; it is never taken from a living one. */
	if (flock(fd, LOCK_EX | LOCK_NB) == -1 ||
	    lock_cur(s, name, &curfd) == -1) {
		close(fd);
		errno = EBUSY;
		return -1;
	}
	if (renameat(spool_statefd(s, from), name, spool_statefd(s, SPOOL_CUR), name) ==
	    -1) {
		e = errno;
		if (curfd != -1)
			close(curfd);
		close(fd);
		errno = e;
		return -1;
	}
	if (curfd != -1)
		close(curfd);
	FAULT("take: renamed into cur/");
	/*
	 * The name may have been given to another file between our open and
	 * our rename (sent, deferred, due again): then we moved a file we do
	 * not hold.  Put it back and leave it to the next scan.
	 */
	if (!still_named(s, name, fd)) {
		renameat(spool_statefd(s, SPOOL_CUR), name, spool_statefd(s, from), name);
		close(fd);
		errno = EAGAIN;
		return -1;
	}
	spool_owner_put(s, name);
	if ((dup_fd = dup(fd)) == -1) {
		util_seterr(err, errlen, "%s: %s", name, strerror(errno));
		return fd;
	}
	/* The read starts where the file does: the lock fd was not read. */
	*doc = spool_doc_read(s, dup_fd, SPOOL_CUR, name, err, errlen);
	return fd;
}

int
spool_claim(struct spool *s, const char *name, json_t **doc, char *err,
    size_t errlen)
{
	return spool_take(s, SPOOL_NEW, name, doc, err, errlen);
}

int
spool_retry(struct spool *s, enum spool_dir from, const char *name,
    int flags, time_t now, char *err, size_t errlen)
{
	json_t	*doc;
	int	 fd, curfd, rfd, e;

	if (from != SPOOL_DEFERRED && from != SPOOL_FAILED) {
		util_seterr(err, errlen, "%s: in %s/, not retried", name,
		    spool_dirname(from));
		errno = EINVAL;
		return -1;
	}
	/* Not a spool file (a link, a FIFO): left there, never moved. */
	if ((fd = claim_open(s, from, name, err, errlen)) == -1)
		return -1;
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		close(fd);
		errno = EBUSY;
		return -1;
	}
	/*
	 * Read under its lock before it moves: a file that is no spool
	 * document, or a canceled one that is to stay, is left where it is.
	 */
	if ((rfd = dup(fd)) == -1) {
		e = errno;
		close(fd);
		util_seterr(err, errlen, "%s: %s", name, strerror(e));
		errno = e;
		return -1;
	}
	if ((doc = spool_doc_read(s, rfd, from, name, err, errlen)) == NULL) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	if ((flags & SPOOL_RETRY_NOT_CANCELED) && strcmp(msgdoc_status(doc,
	    spool_dirname(from)), "canceled") == 0) {
		json_decref(doc);
		close(fd);
		return 1;
	}
	/* Taken as a claim is (spool_take): never over a held cur/name. */
	if (lock_cur(s, name, &curfd) == -1) {
		json_decref(doc);
		close(fd);
		errno = EBUSY;
		return -1;
	}
	if (renameat(spool_statefd(s, from), name, spool_statefd(s, SPOOL_CUR),
	    name) == -1) {
		e = errno;
		if (curfd != -1)
			close(curfd);
		json_decref(doc);
		close(fd);
		errno = e;	/* ENOENT: it moved */
		return -1;
	}
	if (curfd != -1)
		close(curfd);
	FAULT("take: renamed into cur/");
	if (!still_named(s, name, fd)) {
		renameat(spool_statefd(s, SPOOL_CUR), name, spool_statefd(s, from),
		    name);
		json_decref(doc);
		close(fd);
		errno = EAGAIN;
		return -1;
	}
	spool_owner_put(s, name);
	/*
	 * Due now, with a whole max-age again; recorded as a daemon records
	 * an outcome: new/name written, then cur/name removed, the lock
	 * held throughout, so a take of new/name meanwhile (a cancel, a
	 * claim) finds cur/name held and leaves it.
	 */
	msgdoc_retry(doc, now);
	if (spool_store(s, SPOOL_NEW, name, doc, SPOOL_CUR) != MSG_OK) {
		e = errno;
		/* Back where it was: the retry did not happen. */
		renameat(spool_statefd(s, SPOOL_CUR), name, spool_statefd(s, from),
		    name);
		spool_release(s, name, fd);
		json_decref(doc);
		util_seterr(err, errlen, "%s: %s", name, strerror(e));
		errno = e;
		return -1;
	}
	spool_release(s, name, fd);
	json_decref(doc);
	return 0;
}

int
spool_erase(struct spool *s, enum spool_dir d, const char *name)
{
	json_t	*doc;
	int	 fd, afd, e;

	if (d == SPOOL_NEW || d == SPOOL_DEFERRED) {
		/* Taken as a cancel takes it: no claim can follow. */
		if ((fd = spool_take(s, d, name, &doc, NULL, 0)) == -1)
			return -1;
		json_decref(doc);
		d = SPOOL_CUR;
	} else if (d == SPOOL_CUR || d == SPOOL_SENT || d == SPOOL_FAILED) {
		if ((fd = claim_open(s, d, name, NULL, 0)) == -1)
			return -1;
		/* Held: a live claim, a retry, a cancel recording itself. */
		if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
			close(fd);
			errno = EBUSY;
			return -1;
		}
		if (!still_in(s, d, name, fd)) {
			close(fd);
			errno = EAGAIN;
			return -1;
		}
	} else {
		errno = EINVAL;
		return -1;
	}
	FAULT("erase: locked");
	if (unlinkat(spool_statefd(s, d), name, 0) == -1) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	/* Whoever owned the claim, it is over: we hold its lock. */
	if ((afd = spool_area(s, SPOOL_CLAIMS_AREA, 0)) != -1) {
		unlinkat(afd, name, 0);
		close(afd);
	}
	close(fd);
	return 0;
}

/*
 * Whether name has an outcome: in sent/, failed/ or deferred/, or in
 * new/ (a retry by hand, or an outcome in deferred/ due since).
 */
static int
recorded(struct spool *s, const char *name)
{
	static const enum spool_dir outcomes[] = { SPOOL_SENT, SPOOL_FAILED,
	    SPOOL_DEFERRED, SPOOL_NEW };
	struct stat	st;
	size_t		i;

	for (i = 0; i < sizeof(outcomes) / sizeof(outcomes[0]); i++)
		if (fstatat(spool_statefd(s, outcomes[i]), name, &st,
		    AT_SYMLINK_NOFOLLOW) == 0)
			return 1;
	return 0;
}

/*
 * Where a dead claim goes back to: new/, or deferred/ when the document
 * is not due yet (its mtime set to when it is: a stat tells the
 * daemon).  The document is read through fd, which is not moved.
 */
static enum spool_dir
recover_to(int fd, time_t *due)
{
	struct timespec	 t[2];
	json_t		*doc;
	int		 rfd;

	*due = 0;
	if ((rfd = dup(fd)) == -1)
		return SPOOL_NEW;
	lseek(rfd, 0, SEEK_SET);
	doc = msgdoc_loadfd(rfd, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
	close(rfd);
	if (doc == NULL)
		return SPOOL_NEW;
	*due = msgdoc_due(doc);
	json_decref(doc);
	if (*due <= time(NULL))
		return SPOOL_NEW;
	t[0].tv_sec = t[1].tv_sec = *due;
	t[0].tv_nsec = t[1].tv_nsec = 0;
	return futimens(fd, t) == 0 ? SPOOL_DEFERRED : SPOOL_NEW;
}

size_t
spool_recover(struct spool *s)
{
	DIR		*dir;
	struct dirent	*de;
	enum spool_dir	 to;
	char		 why[512], host[NETFS_HOST_MAX + 1];
	char		 mine[NETFS_HOST_MAX + 1];
	time_t		 due;
	size_t		 n = 0;
	long		 pid;
	int		 fd;

	netfs_hostname(mine, sizeof(mine));
	if ((dir = spool_open_state(s, SPOOL_CUR)) == NULL)
		return 0;
	while ((de = readdir(dir)) != NULL) {
		if (!ulid_prefix(de->d_name))
			continue;
		if ((fd = claim_open(s, SPOOL_CUR, de->d_name, why,
		    sizeof(why))) == -1) {
			if (errno == EINVAL)
				spool_set_aside(s, SPOOL_CUR, de->d_name, why);
			continue;
		}
		/*
		 * No lock held: its daemon is gone (on NFS, or its host's
		 * lease ended).  Clocks play no part.
		 */
		if (flock(fd, LOCK_EX | LOCK_NB) == -1 ||
		    !still_named(s, de->d_name, fd)) {
			close(fd);
			continue;
		}
		if (spool_claim_owner(s, de->d_name, host, sizeof(host),
		    &pid) == -1)
			pid = 0;
		/* Its outcome was recorded, only the unlink was lost. */
		if (recorded(s, de->d_name))
			unlinkat(spool_statefd(s, SPOOL_CUR), de->d_name, 0);
		else if ((to = recover_to(fd, &due)) == SPOOL_DEFERRED &&
		    renameat(spool_statefd(s, SPOOL_CUR), de->d_name,
		    spool_statefd(s, SPOOL_DEFERRED), de->d_name) == 0)
			/* Taken from deferred/ (a cancel that died): its
			 * time has not come. */
			log_warn("recovered %s into deferred/: due %lld",
			    de->d_name, (long long)due);
		else if (to == SPOOL_NEW && renameat(spool_statefd(s, SPOOL_CUR),
		    de->d_name, spool_statefd(s, SPOOL_NEW), de->d_name) == 0) {
			log_warn("recovered %s: its claim outlived its daemon "
			    "(%s[%ld]%s)", de->d_name, pid ? host : "?", pid,
			    pid && strcmp(host, mine) == 0 ? ", this host" :
			    "");
			n++;
		}
		close(fd);
	}
	closedir(dir);
	spool_owners_prune(s);
	if (n > 0)
		fsync(spool_statefd(s, SPOOL_NEW));
	return n;
}
