/*
 * spool.c: the spool's states (msgspool-spool(5)): opening it, listing,
 * finding, loading, moving, claiming, recovering, promoting and pruning
 * message files.  The durable writes are commit.c's, the areas beside
 * the states (blobs/, receipts/, index/, uploads/) area.c's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "keys.h"
#include "log.h"
#include "netfs.h"
#include "valid.h"
#include "spool.h"
#include "spool_impl.h"
#include "util.h"

const char *const spool_dirnames[SPOOL__MAX] = {
	"tmp", "new", "deferred", "cur", "sent", "failed"
};

const char *
spool_dirname(enum spool_dir d)
{
	return d < SPOOL__MAX ? spool_dirnames[d] : "?";
}

int
spool_dir_parse(const char *name)
{
	int	i;

	for (i = 0; i < SPOOL__MAX; i++)
		if (strcmp(name, spool_dirnames[i]) == 0)
			return i;
	return -1;
}

int
spool_statefd(struct spool *s, int d)
{
	if (s->fds[d] == -1)
		s->fds[d] = openat(s->rootfd, spool_dirnames[d],
		    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return s->fds[d];
}

struct spool *
spool_open(const char *root, int create, char *err, size_t errlen)
{
	struct spool	*s;
	struct stat	 st;
	int		 i;

	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    (s->root = strdup(root)) == NULL) {
		free(s);
		util_seterr(err, errlen, "out of memory");
		return NULL;
	}
	s->rootfd = -1;
	for (i = 0; i < SPOOL__MAX; i++)
		s->fds[i] = -1;
	if (create && mkdir(root, 0700) == -1 && errno != EEXIST) {
		util_seterr(err, errlen, "%s: %s", root, strerror(errno));
		goto fail;
	}
	if ((s->rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) ==
	    -1) {
		util_seterr(err, errlen, "%s: %s", root, strerror(errno));
		goto fail;
	}
	/* Every state must be there, even those this process won't use. */
	for (i = 0; i < SPOOL__MAX; i++) {
		if (create && mkdirat(s->rootfd, spool_dirnames[i], 0700) == -1 &&
		    errno != EEXIST) {
			util_seterr(err, errlen, "%s/%s: %s", root, spool_dirnames[i],
			    strerror(errno));
			goto fail;
		}
		if (fstatat(s->rootfd, spool_dirnames[i], &st, 0) == -1 ||
		    !S_ISDIR(st.st_mode)) {
			util_seterr(err, errlen, "%s/%s: %s", root, spool_dirnames[i],
			    errno ? strerror(errno) : "not a directory");
			goto fail;
		}
	}
	return s;
fail:
	spool_free(s);
	return NULL;
}

void
spool_free(struct spool *s)
{
	int	i;

	if (s == NULL)
		return;
	for (i = 0; i < SPOOL__MAX; i++)
		if (s->fds[i] != -1)
			close(s->fds[i]);
	if (s->rootfd != -1)
		close(s->rootfd);
	free(s->root);
	free(s);
}

const char *
spool_root(const struct spool *s)
{
	return s->root;
}

int
spool_path(const struct spool *s, enum spool_dir d, const char *name,
    char *buf, size_t len)
{
	int	n;

	n = snprintf(buf, len, "%s/%s/%s", s->root, spool_dirname(d), name);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int
spool_move(struct spool *s, enum spool_dir from, enum spool_dir to,
    const char *name)
{
	if (strchr(name, '/') != NULL || name[0] == '.') {
		errno = EINVAL;
		return -1;
	}
	if (renameat(spool_statefd(s, from), name, spool_statefd(s, to), name) == -1)
		return -1;
	fsync(spool_statefd(s, to));
	return 0;
}

int
spool_remove(struct spool *s, enum spool_dir d, const char *name)
{
	if (strchr(name, '/') != NULL || name[0] == '.') {
		errno = EINVAL;
		return -1;
	}
	return unlinkat(spool_statefd(s, d), name, 0);
}

/*
 * Parse the document open on fd (closed here) that is dir/name.  A new
 * reference, or NULL with the reason in err and errno EINVAL.
 */
static json_t *
doc_read(struct spool *s, int fd, enum spool_dir d, const char *name,
    char *err, size_t errlen)
{
	json_error_t	 je;
	json_t		*doc;
	char		 where[4096];

	doc = msgdoc_loadfd(fd, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	close(fd);
	snprintf(where, sizeof(where), "%s/%s", s->root, spool_dirnames[d]);
	if (doc == NULL)
		util_seterr(err, errlen, "%s/%s: line %d: %s", where, name,
		    je.line, je.text);
	else if (msgdoc_check(doc, where, name, err, errlen) == -1) {
		json_decref(doc);
		doc = NULL;
	}
	if (doc == NULL)
		errno = EINVAL;
	return doc;
}

/*
 * Open dir/name, a spool file: never through a symbolic link, never
 * blocking on a FIFO or device, only a regular file (errno EINVAL or
 * ELOOP otherwise, the reason in err).
 */
static int
doc_open(struct spool *s, enum spool_dir d, const char *name, char *err,
    size_t errlen)
{
	int	fd, e;

	if (strchr(name, '/') != NULL || name[0] == '.') {
		util_seterr(err, errlen, "%s: bad name", name);
		errno = EINVAL;
		return -1;
	}
	if ((fd = util_open_regular(spool_statefd(s, d), name, 1)) == -1) {
		e = errno;
		util_seterr(err, errlen, "%s/%s/%s: %s", s->root, spool_dirnames[d],
		    name, e == ELOOP ? "a symbolic link, not followed" :
		    e == EINVAL ? "not a regular file" : strerror(e));
		errno = e == ELOOP ? EINVAL : e;
	}
	return fd;
}

json_t *
spool_load(struct spool *s, enum spool_dir d, const char *name, char *err,
    size_t errlen)
{
	int	fd;

	if ((fd = doc_open(s, d, name, err, errlen)) == -1)
		return NULL;
	return doc_read(s, fd, d, name, err, errlen);
}

/*
 * Move dir/name, which is not a spool file (a link, a FIFO, a
 * directory), aside into failed/ without reading it; when failed/ has
 * that name already, it is left where it is.
 */
static void
set_aside(struct spool *s, enum spool_dir d, const char *name,
    const char *why)
{
	if (d != SPOOL_FAILED && renameat(spool_statefd(s, d), name,
	    spool_statefd(s, SPOOL_FAILED), name) == 0)
		log_err("%s; moved to failed/", why);
	else
		log_err("%s; skipped", why);
}

/*
 * A stream over a state's directory, from its start; NULL with errno
 * set.  Close with closedir (our fd stays open).
 */
static DIR *
open_state(struct spool *s, int d)
{
	DIR	*dir;
	int	 fd, e;

	if (spool_statefd(s, d) == -1 || (fd = dup(spool_statefd(s, d))) == -1)
		return NULL;
	if ((dir = fdopendir(fd)) == NULL) {
		e = errno;
		close(fd);
		errno = e;
		return NULL;
	}
	rewinddir(dir);
	return dir;
}

int
spool_namecmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

ssize_t
spool_list(struct spool *s, enum spool_dir d, char ***names)
{
	DIR		*dir;
	struct dirent	*de;
	char		**v = NULL, **nv;
	size_t		 n = 0, cap = 0;

	*names = NULL;
	if ((dir = open_state(s, d)) == NULL)
		return -1;
	while ((de = readdir(dir)) != NULL) {
		if (!ulid_prefix(de->d_name) ||
		    strlen(de->d_name) >= SPOOL_NAME_MAX)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			if ((nv = reallocarray(v, cap, sizeof(*v))) == NULL)
				goto nomem;
			v = nv;
		}
		if ((v[n] = strdup(de->d_name)) == NULL)
			goto nomem;
		n++;
	}
	closedir(dir);
	if (n > 0)
		qsort(v, n, sizeof(*v), spool_namecmp);
	*names = v;
	return (ssize_t)n;
nomem:
	closedir(dir);
	spool_names_free(v, n);
	errno = ENOMEM;
	return -1;
}

void
spool_names_free(char **names, size_t n)
{
	size_t	i;

	if (names == NULL)
		return;
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int
spool_find(struct spool *s, const char *id, enum spool_dir *dir, char *name)
{
	struct stat	st;
	int		d;

	if (!ulid_valid(id))
		return -1;
	for (d = SPOOL_NEW; d < SPOOL__MAX; d++) {
		snprintf(name, SPOOL_NAME_MAX, "%s.json", id);
		if (fstatat(spool_statefd(s, d), name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode)) {
			*dir = (enum spool_dir)d;
			return 0;
		}
	}
	return -1;
}

/*
 * doc_open for a claim: for writing when it may be, since an flock on
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
	}
	return doc_open(s, d, name, err, errlen);
}

#define CLAIMS_AREA	"claims"

/*
 * Name the owner of a claim (host, pid, since) in claims/NAME: so a
 * restarted daemon knows its own, and an operator whose they are.  Not
 * synced: it informs, the lock decides.
 */
static void
owner_put(struct spool *s, const char *name)
{
	char	host[NETFS_HOST_MAX + 1], text[128];
	int	afd, fd, n;

	if ((afd = spool_area(s, CLAIMS_AREA, 1)) == -1)
		return;
	n = snprintf(text, sizeof(text), "{\"host\": \"%s\", \"pid\": %ld, "
	    "\"since\": %lld}\n", netfs_hostname(host, sizeof(host)),
	    (long)getpid(), (long long)time(NULL));
	if ((fd = openat(afd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, SPOOL_FILE_MODE)) != -1) {
		if (util_write_all(fd, text, (size_t)n) == -1)
			log_warn("spool: claims/%s: %s", name, strerror(errno));
		close(fd);
	}
	close(afd);
}

int
spool_claim_owner(struct spool *s, const char *name, char *host,
    size_t hostlen, long *pid)
{
	json_t	*o;
	int	 afd, fd;

	*pid = 0;
	util_seterr(host, hostlen, "?");
	if (strchr(name, '/') != NULL || name[0] == '.' ||
	    (afd = spool_area(s, CLAIMS_AREA, 0)) == -1)
		return -1;
	fd = util_open_regular(afd, name, 1);
	close(afd);
	if (fd == -1)
		return -1;
	o = msgdoc_loadfd(fd, 0, NULL);
	close(fd);
	if (!json_is_string(json_object_get(o, "host")) ||
	    !json_is_integer(json_object_get(o, "pid"))) {
		json_decref(o);
		return -1;
	}
	util_seterr(host, hostlen, "%s", json_string_value(json_object_get(o,
	    "host")));
	*pid = (long)json_integer_value(json_object_get(o, "pid"));
	json_decref(o);
	return 0;
}

void
spool_release(struct spool *s, const char *name, int fd)
{
	char	host[NETFS_HOST_MAX + 1], mine[NETFS_HOST_MAX + 1];
	long	pid;
	int	afd;

	/* Only our own record: another may hold it since. */
	if (spool_claim_owner(s, name, host, sizeof(host), &pid) == 0 &&
	    pid == (long)getpid() && strcmp(host, netfs_hostname(mine,
	    sizeof(mine))) == 0 && (afd = spool_area(s, CLAIMS_AREA, 0)) !=
	    -1) {
		unlinkat(afd, name, 0);
		close(afd);
	}
	if (fd != -1)
		close(fd);
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

/* Drop owner records of claims gone from cur/ for a minute. */
static void
owners_prune(struct spool *s)
{
	DIR		*dir;
	struct dirent	*de;
	struct stat	 st;
	time_t		 old = time(NULL) - 60;
	int		 afd, fd;

	if ((afd = spool_area(s, CLAIMS_AREA, 0)) == -1)
		return;
	if ((fd = dup(afd)) == -1 || (dir = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		close(afd);
		return;
	}
	while ((de = readdir(dir)) != NULL)
		if (ulid_prefix(de->d_name) && fstatat(afd, de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == 0 && st.st_mtime < old &&
		    fstatat(spool_statefd(s, SPOOL_CUR), de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == -1 && errno == ENOENT)
			unlinkat(afd, de->d_name, 0);
	closedir(dir);
	close(afd);
}

int
spool_take(struct spool *s, enum spool_dir from, const char *name,
    json_t **doc, char *err, size_t errlen)
{
	struct stat	 a, b;
	int		 fd, dup_fd, e;

	*doc = NULL;
	if ((fd = claim_open(s, from, name, err, errlen)) == -1) {
		if ((e = errno) == EINVAL)
			set_aside(s, from, name, err);
		errno = e;
		return -1;
	}
	/* The lock marks a live claim; it is never taken from a living one. */
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		close(fd);
		errno = EBUSY;
		return -1;
	}
	if (renameat(spool_statefd(s, from), name, spool_statefd(s, SPOOL_CUR), name) ==
	    -1) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	/*
	 * The name may have been given to another file between our open and
	 * our rename (sent, deferred, due again): then we moved a file we do
	 * not hold.  Put it back and leave it to the next scan.
	 */
	if (fstat(fd, &a) == -1 || fstatat(spool_statefd(s, SPOOL_CUR), name, &b,
	    AT_SYMLINK_NOFOLLOW) == -1 || a.st_ino != b.st_ino ||
	    a.st_dev != b.st_dev) {
		renameat(spool_statefd(s, SPOOL_CUR), name, spool_statefd(s, from), name);
		close(fd);
		errno = EAGAIN;
		return -1;
	}
	owner_put(s, name);
	if ((dup_fd = dup(fd)) == -1) {
		util_seterr(err, errlen, "%s: %s", name, strerror(errno));
		return fd;
	}
	/* The read starts where the file does: the lock fd was not read. */
	*doc = doc_read(s, dup_fd, SPOOL_CUR, name, err, errlen);
	return fd;
}

int
spool_claim(struct spool *s, const char *name, json_t **doc, char *err,
    size_t errlen)
{
	return spool_take(s, SPOOL_NEW, name, doc, err, errlen);
}

/* Whether name has an outcome: in sent/, failed/ or deferred/. */
static int
recorded(struct spool *s, const char *name)
{
	static const enum spool_dir outcomes[] = { SPOOL_SENT, SPOOL_FAILED,
	    SPOOL_DEFERRED };
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
	if ((dir = open_state(s, SPOOL_CUR)) == NULL)
		return 0;
	while ((de = readdir(dir)) != NULL) {
		if (!ulid_prefix(de->d_name))
			continue;
		if ((fd = claim_open(s, SPOOL_CUR, de->d_name, why,
		    sizeof(why))) == -1) {
			if (errno == EINVAL)
				set_aside(s, SPOOL_CUR, de->d_name, why);
			continue;
		}
		/*
		 * No lock held: its daemon is gone (on NFS, or its host's
		 * lease ended).  Clocks play no part.
		 */
		if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
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
	owners_prune(s);
	if (n > 0)
		fsync(spool_statefd(s, SPOOL_NEW));
	return n;
}

size_t
spool_promote(struct spool *s, time_t now, time_t *next)
{
	DIR		*dir;
	struct dirent	*de;
	struct stat	 st;
	char		 why[4200];
	size_t		 n = 0;

	*next = 0;
	if ((dir = open_state(s, SPOOL_DEFERRED)) == NULL)
		return 0;
	/* Streamed: memory stays flat however many files wait. */
	while ((de = readdir(dir)) != NULL) {
		if (!ulid_prefix(de->d_name) ||
		    fstatat(spool_statefd(s, SPOOL_DEFERRED), de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		if (!S_ISREG(st.st_mode)) {
			snprintf(why, sizeof(why), "%s/deferred/%s: not a "
			    "regular file", s->root, de->d_name);
			set_aside(s, SPOOL_DEFERRED, de->d_name, why);
		} else if (st.st_mtime <= now) {
			if (renameat(spool_statefd(s, SPOOL_DEFERRED), de->d_name,
			    spool_statefd(s, SPOOL_NEW), de->d_name) == 0)
				n++;
		} else if (*next == 0 || st.st_mtime < *next)
			*next = st.st_mtime;
	}
	closedir(dir);
	if (n > 0)
		fsync(spool_statefd(s, SPOOL_NEW));
	return n;
}

size_t
spool_prune(struct spool *s, enum spool_dir d, time_t before)
{
	DIR		*dir;
	struct dirent	*de;
	struct stat	 st;
	size_t		 n = 0;

	if ((dir = open_state(s, d)) == NULL)
		return 0;
	while ((de = readdir(dir)) != NULL) {
		/* ., .. and NFS's .nfsXXXX (a file deleted while open). */
		if (de->d_name[0] == '.')
			continue;
		if (fstatat(spool_statefd(s, d), de->d_name, &st, AT_SYMLINK_NOFOLLOW)
		    == -1 || !S_ISREG(st.st_mode) || st.st_mtime >= before)
			continue;
		if (unlinkat(spool_statefd(s, d), de->d_name, 0) == 0)
			n++;
	}
	closedir(dir);
	return n;
}

size_t
spool_tmp_sweep(struct spool *s)
{
	DIR		*dir;
	struct dirent	*de;
	char		 host[NETFS_HOST_MAX + 1], *end;
	const char	*p, *dot;
	size_t		 n = 0, hl;
	long		 pid;

	netfs_hostname(host, sizeof(host));
	hl = strlen(host);
	if ((dir = open_state(s, SPOOL_TMP)) == NULL)
		return 0;
	while ((de = readdir(dir)) != NULL) {
		/* NAME.HOST.PID: this host's, its writer gone. */
		if (de->d_name[0] == '.' ||
		    (dot = strrchr(de->d_name, '.')) == NULL ||
		    dot - de->d_name < (ptrdiff_t)hl + 1)
			continue;
		p = dot - hl;
		if (p[-1] != '.' || strncmp(p, host, hl) != 0)
			continue;
		errno = 0;
		pid = strtol(dot + 1, &end, 10);
		if (errno != 0 || *end != '\0' || pid <= 1 ||
		    pid == (long)getpid() || kill((pid_t)pid, 0) == 0 ||
		    errno != ESRCH)
			continue;
		if (unlinkat(spool_statefd(s, SPOOL_TMP), de->d_name, 0) == 0)
			n++;
	}
	closedir(dir);
	return n;
}

int
spool_scan(struct spool *s, enum spool_dir d,
    int (*fn)(void *, const char *), void *arg)
{
	DIR		*dir;
	struct dirent	*de;
	int		 rc = 0;

	if ((dir = open_state(s, d)) == NULL)
		return -1;
	while (rc == 0 && (de = readdir(dir)) != NULL)
		if (ulid_prefix(de->d_name) &&
		    strlen(de->d_name) < SPOOL_NAME_MAX)
			rc = fn(arg, de->d_name);
	closedir(dir);
	return rc;
}

int
spool_writable(struct spool *s, char *err, size_t errlen)
{
	int	d;

	for (d = 0; d < SPOOL__MAX; d++)
		if (spool_statefd(s, d) == -1 || faccessat(spool_statefd(s, d), ".", W_OK,
		    AT_EACCESS) == -1) {
			util_seterr(err, errlen, "%s/%s: %s", s->root,
			    spool_dirnames[d], strerror(errno));
			return -1;
		}
	return 0;
}

int
spool_dirfd(struct spool *s, enum spool_dir d)
{
	return spool_statefd(s, d);
}

