/*
 * spool.c: the spool's states (msgspool-spool(5)): opening it, listing,
 * finding, loading, moving, promoting and pruning message files.  The
 * durable writes are commit.c's, the areas beside the states (blobs/,
 * receipts/, index/, uploads/) area.c's, claims and their recovery
 * claim.c's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/netfs.h"
#include "base/util.h"
#include "base/valid.h"
#include "spool/dsync.h"
#include "spool/spool.h"
#include "spool/spool_impl.h"

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
	if (s->fds[d] == -1) {
		s->fds[d] = openat(s->rootfd, spool_dirnames[d],
		    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		/* Held for the next request, with the root it is in. */
		if (s->seen != NULL)
			s->seen->fds[d] = s->fds[d];
	}
	return s->fds[d];
}

int
spool_root_fresh(const struct spool *s)
{
	struct timespec	now;

	if (s->rootfd == -1 || clock_gettime(CLOCK_MONOTONIC, &now) == -1)
		return 0;
	return (now.tv_sec - s->opened.tv_sec) * 1000000000L +
	    (now.tv_nsec - s->opened.tv_nsec) < 1000000000L;
}

struct spool *
spool_alloc(const char *root, char *err, size_t errlen)
{
	struct spool	*s;
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
	return s;
}

struct spool *
spool_open(const char *root, int create, char *err, size_t errlen)
{
	struct spool	*s;
	struct stat	 st;
	int		 i;

	if ((s = spool_alloc(root, err, errlen)) == NULL)
		return NULL;
	if (create && mkdir(root, 0700) == -1 && errno != EEXIST) {
		util_seterr(err, errlen, "%s: %s", root, strerror(errno));
		goto fail;
	}
	if ((s->rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) ==
	    -1) {
		util_seterr(err, errlen, "%s: %s", root, strerror(errno));
		goto fail;
	}
	clock_gettime(CLOCK_MONOTONIC, &s->opened);
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
	/* Borrowed from what a worker holds: left open for its next. */
	for (i = 0; i < SPOOL__MAX && s->seen == NULL; i++)
		if (s->fds[i] != -1)
			close(s->fds[i]);
	if (s->rootfd != -1 && s->seen == NULL)
		close(s->rootfd);
	if (s->scan != NULL)
		closedir(s->scan);
	spool_dsync_free(s->dsync);
	list_cache_free(s->lcache);
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
json_t *
spool_doc_parse(struct spool *s, const char *text, size_t len,
    enum spool_dir d, const char *name, char *err, size_t errlen)
{
	json_error_t	 je;
	json_t		*doc;
	char		 where[4096];

	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
	    &je);
	if (doc == NULL)
		util_seterr(err, errlen, "%s/%s/%s: line %d: %s", s->root,
		    spool_dirnames[d], name, je.line, je.text);
	/* where is for the reason only: made when there is one. */
	else if (msgdoc_check(doc, NULL, name, NULL, 0) == -1) {
		snprintf(where, sizeof(where), "%s/%s", s->root,
		    spool_dirnames[d]);
		msgdoc_check(doc, where, name, err, errlen);
		json_decref(doc);
		doc = NULL;
	}
	if (doc == NULL)
		errno = EINVAL;
	return doc;
}

/* Read the file open on fd (closed here), size bytes or -1: unknown. */
static int
doc_text(struct spool *s, int fd, off_t size, enum spool_dir d,
    const char *name, char **text, size_t *len, char *err, size_t errlen)
{
	int	e;

	if (util_read_sized(fd, size, MSGDOC_READ_MAX, text, len) == -1) {
		e = errno;
		close(fd);
		util_seterr(err, errlen, "%s/%s/%s: cannot be read: %s",
		    s->root, spool_dirnames[d], name, strerror(e));
		errno = e;
		return -1;
	}
	close(fd);
	return 0;
}

json_t *
spool_doc_read(struct spool *s, int fd, enum spool_dir d, const char *name,
    char *err, size_t errlen)
{
	struct stat	 st;
	json_t		*doc;
	char		*text;
	size_t		 len;

	if (doc_text(s, fd, fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ?
	    st.st_size : -1, d, name, &text, &len, err, errlen) == -1) {
		errno = EINVAL;
		return NULL;
	}
	doc = spool_doc_parse(s, text, len, d, name, err, errlen);
	free(text);
	return doc;
}

/*
 * Open dir/name, a spool file: never through a symbolic link, never
 * blocking on a FIFO or device, only a regular file (errno EINVAL or
 * ELOOP otherwise, the reason in err).
 */
/*
 * Where no request opened the state's directory yet, a look-up goes by
 * its path under the root: the directory is not opened, and closed, for
 * one name (GET /messages/{id} looks in up to five).  STATE/NAME in buf;
 * -1 when it does not fit.
 */
static int
state_path(enum spool_dir d, const char *name, char *buf, size_t len)
{
	return (size_t)snprintf(buf, len, "%s/%s", spool_dirnames[d], name) <
	    len ? 0 : -1;
}

static int
state_open(struct spool *s, enum spool_dir d, const char *name,
    struct stat *st)
{
	char	path[32 + SPOOL_NAME_MAX];

	if (s->fds[d] != -1 || state_path(d, name, path, sizeof(path)) == -1)
		return util_open_regular_st(spool_statefd(s, d), name, 1, st);
	return util_open_regular_st(s->rootfd, path, 1, st);
}

int
spool_doc_open(struct spool *s, enum spool_dir d, const char *name, char *err,
    size_t errlen)
{
	struct stat	st;
	int		fd, e;

	if (strchr(name, '/') != NULL || name[0] == '.') {
		util_seterr(err, errlen, "%s: bad name", name);
		errno = EINVAL;
		return -1;
	}
	if ((fd = state_open(s, d, name, &st)) == -1) {
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

	if ((fd = spool_doc_open(s, d, name, err, errlen)) == -1)
		return NULL;
	return spool_doc_read(s, fd, d, name, err, errlen);
}

/*
 * Move dir/name, which is not a spool file (a link, a FIFO, a
 * directory), aside into failed/ without reading it; when failed/ has
 * that name already, it is left where it is.
 */
void
spool_set_aside(struct spool *s, enum spool_dir d, const char *name,
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
DIR *
spool_open_state(struct spool *s, int d)
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
spool_dir_names(DIR *dir, int (*want)(const char *, void *), void *arg,
    char ***names)
{
	struct dirent	*de;
	char		**v = NULL, **nv;
	size_t		 n = 0, cap = 0;

	*names = NULL;
	while ((de = readdir(dir)) != NULL) {
		if (!want(de->d_name, arg))
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
	if (n > 1)
		qsort(v, n, sizeof(*v), spool_namecmp);
	*names = v;
	return (ssize_t)n;
nomem:
	closedir(dir);
	spool_names_free(v, n);
	errno = ENOMEM;
	return -1;
}

int
spool_want_id(const char *name, void *arg)
{
	(void)arg;
	return ulid_prefix(name) && strlen(name) < SPOOL_NAME_MAX;
}

ssize_t
spool_list(struct spool *s, enum spool_dir d, char ***names)
{
	DIR	*dir;

	*names = NULL;
	if ((dir = spool_open_state(s, d)) == NULL)
		return -1;
	return spool_dir_names(dir, spool_want_id, NULL, names);
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
	char		path[32 + SPOOL_NAME_MAX];
	int		d, rc, first;

	if (!ulid_valid(id))
		return -1;
	/*
	 * Most messages are in sent/: looked for there first.  Not found,
	 * the states in the order a message goes through them, so that one
	 * moving on meanwhile is seen in its next.
	 */
	for (d = SPOOL_SENT, first = 1; d < SPOOL__MAX;
	    d = first ? SPOOL_NEW : d + 1, first = 0) {
		snprintf(name, SPOOL_NAME_MAX, "%s.json", id);
		if (s->fds[d] == -1 && state_path(d, name, path,
		    sizeof(path)) == 0)
			rc = fstatat(s->rootfd, path, &st, AT_SYMLINK_NOFOLLOW);
		else
			rc = fstatat(spool_statefd(s, d), name, &st,
			    AT_SYMLINK_NOFOLLOW);
		if (rc == 0 && S_ISREG(st.st_mode)) {
			*dir = (enum spool_dir)d;
			return 0;
		}
	}
	return -1;
}

int
spool_find_open(struct spool *s, const char *id, enum spool_dir *dir,
    char *name, struct stat *st, char *err, size_t errlen)
{
	int	d, fd, first;

	util_seterr(err, errlen, "%s: no such message", id);
	if (!ulid_valid(id)) {
		errno = ENOENT;
		return -1;
	}
	snprintf(name, SPOOL_NAME_MAX, "%s.json", id);
	/* spool_find's order, and what it passes over: anything but a file. */
	for (d = SPOOL_SENT, first = 1; d < SPOOL__MAX;
	    d = first ? SPOOL_NEW : d + 1, first = 0) {
		if ((fd = state_open(s, (enum spool_dir)d, name, st)) != -1) {
			*dir = (enum spool_dir)d;
			return fd;
		}
		if (errno != ENOENT && errno != ELOOP && errno != EINVAL &&
		    errno != ENOTDIR) {
			util_seterr(err, errlen, "%s/%s/%s: %s", s->root,
			    spool_dirnames[d], name, strerror(errno));
			return -1;
		}
	}
	errno = ENOENT;
	return -1;
}

int
spool_find_read(struct spool *s, const char *id, enum spool_dir *dir,
    char *name, char **text, size_t *len, char *err, size_t errlen)
{
	struct stat	st;
	int		fd;

	if ((fd = spool_find_open(s, id, dir, name, &st, err, errlen)) == -1)
		return -1;
	return doc_text(s, fd, st.st_size, *dir, name, text, len, err, errlen);
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
	if ((dir = spool_open_state(s, SPOOL_DEFERRED)) == NULL)
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
			spool_set_aside(s, SPOOL_DEFERRED, de->d_name, why);
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

	if ((dir = spool_open_state(s, d)) == NULL)
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
	if ((dir = spool_open_state(s, SPOOL_TMP)) == NULL)
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

	if ((dir = spool_open_state(s, d)) == NULL)
		return -1;
	while (rc == 0 && (de = readdir(dir)) != NULL)
		if (ulid_prefix(de->d_name) &&
		    strlen(de->d_name) < SPOOL_NAME_MAX)
			rc = fn(arg, de->d_name);
	closedir(dir);
	return rc;
}

int
spool_scan_on(struct spool *s, enum spool_dir d,
    int (*fn)(void *, const char *), void *arg)
{
	struct dirent	*de;
	int		 fd, rc = 0, wrapped = 0;

	if (s->scan != NULL && s->scan_dir != (int)d) {
		closedir(s->scan);
		s->scan = NULL;
	}
	/* Its own open file: a dup would share its offset with others. */
	if (s->scan == NULL) {
		if (spool_statefd(s, d) == -1 || (fd = openat(spool_statefd(s,
		    d), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
			return -1;
		if ((s->scan = fdopendir(fd)) == NULL) {
			close(fd);
			return -1;
		}
		s->scan_dir = (int)d;
		wrapped = 1;
	}
	while (rc == 0) {
		if ((de = readdir(s->scan)) == NULL) {
			/* From the top once: what came in behind us. */
			if (wrapped)
				break;
			rewinddir(s->scan);
			wrapped = 1;
			continue;
		}
		if (ulid_prefix(de->d_name) &&
		    strlen(de->d_name) < SPOOL_NAME_MAX)
			rc = fn(arg, de->d_name);
	}
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
