/*
 * spool.c: the spool directory.  Every path of the spool is built here.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "keys.h"
#include "log.h"
#include "valid.h"
#include "spool.h"
#include "util.h"

struct spool {
	char	*root;
	int	 rootfd;
	int	 fds[SPOOL__MAX];	/* opened on first use: see dfd() */
};

static const char *const dirnames[SPOOL__MAX] = {
	"tmp", "new", "deferred", "cur", "sent", "failed"
};

const char *
spool_dirname(enum spool_dir d)
{
	return d < SPOOL__MAX ? dirnames[d] : "?";
}

int
spool_dir_parse(const char *name)
{
	int	i;

	for (i = 0; i < SPOOL__MAX; i++)
		if (strcmp(name, dirnames[i]) == 0)
			return i;
	return -1;
}

/*
 * The fd of a state's directory, opened on first use: a CGI program
 * touches two or three of them, and each open is a cost per request.
 */
static int
dfd(struct spool *s, int d)
{
	if (s->fds[d] == -1)
		s->fds[d] = openat(s->rootfd, dirnames[d],
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
		if (create && mkdirat(s->rootfd, dirnames[i], 0700) == -1 &&
		    errno != EEXIST) {
			util_seterr(err, errlen, "%s/%s: %s", root, dirnames[i],
			    strerror(errno));
			goto fail;
		}
		if (fstatat(s->rootfd, dirnames[i], &st, 0) == -1 ||
		    !S_ISDIR(st.st_mode)) {
			util_seterr(err, errlen, "%s/%s: %s", root, dirnames[i],
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

static enum msg_status
errno_status(int e)
{
	switch (e) {
	case ENOSPC:
	case EDQUOT:
	case EROFS:
	case EIO:
	case EAGAIN:
	case EINTR:
	case EMFILE:
	case ENFILE:
	case ENOMEM:
		return MSG_TEMPFAIL;
	default:
		return MSG_PERMFAIL;
	}
}

#define COMMIT_CHUNK	64	/* files open at once while syncing */

/* A file being written: its temporary name and descriptor. */
struct pending {
	char	tmp[SPOOL_NAME_MAX + 48];
	char	name[SPOOL_NAME_MAX];
	int	fd;
	int	dirfd;
	time_t	mtime;
};

/*
 * Write doc into tmp/ under a unique name, without syncing.  MSG_OK with
 * p filled (fd open), else the status with nothing left behind.
 */
static enum msg_status
write_tmp(struct spool *s, const json_t *doc, struct pending *p)
{
	struct timespec	 times[2];
	char		 id[SPOOL_ID_LEN + 1], *text;
	int		 e;

	p->fd = -1;
	if (ulid_new(id) == -1)
		return MSG_TEMPFAIL;
	/* Unique even when a file is rewritten in place. */
	snprintf(p->tmp, sizeof(p->tmp), "%s.%s.%ld", p->name, id,
	    (long)getpid());
	if ((text = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS)) == NULL)
		return MSG_TEMPFAIL;
	p->fd = openat(dfd(s, SPOOL_TMP), p->tmp,
	    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, SPOOL_FILE_MODE);
	if (p->fd == -1) {
		e = errno;
		free(text);
		log_err("spool: %s/tmp/%s: %s", s->root, p->tmp, strerror(e));
		return errno_status(e);
	}
	/* A deferred file's mtime is when it is due: a stat tells, no parse. */
	times[0].tv_sec = times[1].tv_sec = p->mtime;
	times[0].tv_nsec = times[1].tv_nsec = 0;
	if (util_write_all(p->fd, text, strlen(text)) == -1 ||
	    util_write_all(p->fd, "\n", 1) == -1 ||
	    (p->mtime > 0 && futimens(p->fd, times) == -1)) {
		e = errno;
		free(text);
		close(p->fd);
		p->fd = -1;
		unlinkat(dfd(s, SPOOL_TMP), p->tmp, 0);
		log_err("spool: %s/tmp/%s: %s", s->root, p->tmp, strerror(e));
		return errno_status(e);
	}
	free(text);
	return MSG_OK;
}

/* Sync, close and rename one written file; on failure remove it. */
static enum msg_status
finish_tmp(struct spool *s, struct pending *p)
{
	int	e;

	if (fsync(p->fd) == -1) {
		e = errno;
		close(p->fd);
		goto fail;
	}
	if (close(p->fd) == -1) {
		e = errno;
		goto fail;
	}
	if (renameat(dfd(s, SPOOL_TMP), p->tmp, p->dirfd, p->name) == -1) {
		e = errno;
		goto fail;
	}
	return MSG_OK;
fail:
	unlinkat(dfd(s, SPOOL_TMP), p->tmp, 0);
	log_err("spool: %s/tmp/%s: %s", s->root, p->tmp, strerror(e));
	return errno_status(e);
}

/*
 * Write docs durably: the engine of spool_commit and of the uploads.
 * dirfds[i] is where item i goes; names[i] its name.  Directories are
 * synced once each, after every rename; an item whose directory cannot
 * be synced is removed again and fails.
 */
static void
commit_files(struct spool *s, const json_t **docs, int *dirfds,
    const char **names, time_t *mtimes, enum msg_status *st, size_t n)
{
	struct pending	 p[COMMIT_CHUNK];
	size_t		 i, j, k, chunk;
	int		 synced[8], nsynced = 0, d, e;

	for (i = 0; i < n; i += chunk) {
		chunk = n - i < COMMIT_CHUNK ? n - i : COMMIT_CHUNK;
		/* Write them all, then sync: the first sync commits the
		 * journal for the others too. */
		for (j = 0; j < chunk; j++) {
			snprintf(p[j].name, sizeof(p[j].name), "%s",
			    names[i + j]);
			p[j].dirfd = dirfds[i + j];
			p[j].mtime = mtimes[i + j];
			st[i + j] = p[j].dirfd == -1 ? MSG_TEMPFAIL :
			    write_tmp(s, docs[i + j], &p[j]);
		}
		for (j = 0; j < chunk; j++)
			if (st[i + j] == MSG_OK)
				st[i + j] = finish_tmp(s, &p[j]);
	}
	/* The renames are durable once their directories are. */
	for (i = 0; i < n; i++) {
		if (st[i] != MSG_OK)
			continue;
		for (k = 0; k < (size_t)nsynced; k++)
			if (synced[k] == dirfds[i])
				break;
		if (k < (size_t)nsynced)
			continue;
		d = dirfds[i];
		if (fsync(d) == -1) {
			e = errno;
			log_err("spool: fsync of the directory of %s: %s",
			    names[i], strerror(e));
			for (j = i; j < n; j++)
				if (dirfds[j] == d && st[j] == MSG_OK) {
					unlinkat(d, names[j], 0);
					st[j] = errno_status(e);
				}
			continue;
		}
		if (nsynced < (int)(sizeof(synced) / sizeof(synced[0])))
			synced[nsynced++] = d;
	}
}

size_t
spool_commit(struct spool *s, struct spool_item *items, size_t n)
{
	const json_t	**docs;
	const char	**names;
	char		(*idnames)[SPOOL_NAME_MAX];
	enum msg_status	 *st;
	time_t		 *mtimes;
	int		 *dirfds;
	const char	 *id;
	size_t		  i, ok = 0;

	docs = calloc(n ? n : 1, sizeof(*docs));
	names = calloc(n ? n : 1, sizeof(*names));
	idnames = calloc(n ? n : 1, sizeof(*idnames));
	st = calloc(n ? n : 1, sizeof(*st));
	mtimes = calloc(n ? n : 1, sizeof(*mtimes));
	dirfds = calloc(n ? n : 1, sizeof(*dirfds));
	if (docs == NULL || names == NULL || idnames == NULL || st == NULL ||
	    mtimes == NULL || dirfds == NULL) {
		for (i = 0; i < n; i++)
			items[i].status = MSG_TEMPFAIL;
		goto out;
	}
	for (i = 0; i < n; i++) {
		docs[i] = items[i].doc;
		if (items[i].name != NULL)
			names[i] = items[i].name;
		else {
			id = json_string_value(json_object_get(items[i].doc,
			    "id"));
			snprintf(idnames[i], sizeof(idnames[i]), "%s.json",
			    id ? id : "");
			names[i] = idnames[i];
		}
		if (strchr(names[i], '/') != NULL || names[i][0] == '.' ||
		    !ulid_prefix(names[i]) || items[i].dir >= SPOOL__MAX) {
			dirfds[i] = -1;
			continue;
		}
		dirfds[i] = dfd(s, items[i].dir);
		mtimes[i] = items[i].dir == SPOOL_DEFERRED ?
		    msgdoc_due(items[i].doc) : 0;
	}
	commit_files(s, docs, dirfds, names, mtimes, st, n);
	for (i = 0; i < n; i++) {
		items[i].status = dirfds[i] == -1 ? MSG_PERMFAIL : st[i];
		if (items[i].status != MSG_OK)
			continue;
		ok++;
		if (items[i].from != SPOOL__MAX && items[i].from != items[i].dir)
			unlinkat(dfd(s, items[i].from), names[i], 0);
	}
out:
	free(docs);
	free(names);
	free(idnames);
	free(st);
	free(mtimes);
	free(dirfds);
	return ok;
}

enum msg_status
spool_enqueue(struct spool *s, const json_t *doc, enum spool_dir dest)
{
	struct spool_item	it = { doc, dest, NULL, SPOOL__MAX, MSG_OK };
	const char		*id;

	id = json_string_value(json_object_get(doc, "id"));
	if (id == NULL || !ulid_valid(id) ||
	    (dest != SPOOL_NEW && dest != SPOOL_DEFERRED))
		return MSG_PERMFAIL;
	spool_commit(s, &it, 1);
	return it.status;
}

enum msg_status
spool_store(struct spool *s, enum spool_dir dir, const char *name,
    const json_t *doc, enum spool_dir from)
{
	struct spool_item	it = { doc, dir, name, from, MSG_OK };

	spool_commit(s, &it, 1);
	return it.status;
}

int
spool_move(struct spool *s, enum spool_dir from, enum spool_dir to,
    const char *name)
{
	if (strchr(name, '/') != NULL || name[0] == '.') {
		errno = EINVAL;
		return -1;
	}
	if (renameat(dfd(s, from), name, dfd(s, to), name) == -1)
		return -1;
	fsync(dfd(s, to));
	return 0;
}

int
spool_remove(struct spool *s, enum spool_dir d, const char *name)
{
	if (strchr(name, '/') != NULL || name[0] == '.') {
		errno = EINVAL;
		return -1;
	}
	return unlinkat(dfd(s, d), name, 0);
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

	doc = json_loadfd(fd, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	close(fd);
	snprintf(where, sizeof(where), "%s/%s", s->root, dirnames[d]);
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
	if ((fd = util_open_regular(dfd(s, d), name, 1)) == -1) {
		e = errno;
		util_seterr(err, errlen, "%s/%s/%s: %s", s->root, dirnames[d],
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
	if (d != SPOOL_FAILED && renameat(dfd(s, d), name,
	    dfd(s, SPOOL_FAILED), name) == 0)
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

	if (dfd(s, d) == -1 || (fd = dup(dfd(s, d))) == -1)
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

static int
namecmp(const void *a, const void *b)
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
		qsort(v, n, sizeof(*v), namecmp);
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
		if (fstatat(dfd(s, d), name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode)) {
			*dir = (enum spool_dir)d;
			return 0;
		}
	}
	return -1;
}

/* The directory fd of a client's uploads, made when create is set. */
static int
upload_dir(struct spool *s, const char *client, int create)
{
	char		path[16 + CLIENT_ID_MAX];
	struct stat	st, up;
	int		rootfd, fd;

	if (!keys_client_valid(client))
		return -1;
	if ((rootfd = dup(s->rootfd)) == -1)
		return -1;
	snprintf(path, sizeof(path), "uploads/%s", client);
	if (create) {
		if (mkdirat(rootfd, "uploads", 0700) == -1 && errno != EEXIST)
			goto fail;
		if (mkdirat(rootfd, path, 0700) == -1 && errno != EEXIST)
			goto fail;
	}
	fd = openat(rootfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/*
	 * Like uploads/ itself (install makes it 2770): the daemon, in the
	 * web server's group, removes expired uploads.  Whatever the umask.
	 */
	if (create && fd != -1 && fstat(fd, &st) == 0 &&
	    (st.st_mode & 07777) == 0700) {
		if (fstatat(rootfd, "uploads", &up, 0) == 0 &&
		    (up.st_mode & 02070) == 02070)
			fchmod(fd, 02770);
	}
	close(rootfd);
	return fd;
fail:
	close(rootfd);
	return -1;
}

enum msg_status
spool_upload_store(struct spool *s, const char *client, const json_t *doc)
{
	const char	*id;
	char		 name[SPOOL_NAME_MAX];
	int		 fd;
	enum msg_status	 rc;

	id = json_string_value(json_object_get(doc, "attachmentId"));
	if (id == NULL || !ulid_valid(id))
		return MSG_PERMFAIL;
	if ((fd = upload_dir(s, client, 1)) == -1)
		return errno_status(errno);
	snprintf(name, sizeof(name), "%s.json", id);
	/* Written through tmp/ like every message, then renamed across. */
	{
		const char	*names[1] = { name };
		time_t		 mt[1] = { 0 };

		commit_files(s, &doc, &fd, names, mt, &rc, 1);
	}
	close(fd);
	return rc;
}

json_t *
spool_upload_load(struct spool *s, const char *client, const char *id)
{
	json_error_t	 je;
	json_t		*doc;
	char		 name[SPOOL_NAME_MAX];
	int		 udir, fd;

	if (!ulid_valid(id))
		return NULL;
	if ((udir = upload_dir(s, client, 0)) == -1)
		return NULL;
	snprintf(name, sizeof(name), "%s.json", id);
	fd = util_open_regular(udir, name, 1);
	close(udir);
	if (fd == -1)
		return NULL;
	doc = json_loadfd(fd, JSON_REJECT_DUPLICATES, &je);
	close(fd);
	if (msgdoc_upload_check(doc, id, time(NULL) - SPOOL_UPLOAD_TTL) ==
	    -1) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

int
spool_take(struct spool *s, enum spool_dir from, const char *name,
    json_t **doc, char *err, size_t errlen)
{
	struct stat	 a, b;
	int		 fd, dup_fd, e;

	*doc = NULL;
	if ((fd = doc_open(s, from, name, err, errlen)) == -1) {
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
	if (renameat(dfd(s, from), name, dfd(s, SPOOL_CUR), name) ==
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
	if (fstat(fd, &a) == -1 || fstatat(dfd(s, SPOOL_CUR), name, &b,
	    AT_SYMLINK_NOFOLLOW) == -1 || a.st_ino != b.st_ino ||
	    a.st_dev != b.st_dev) {
		renameat(dfd(s, SPOOL_CUR), name, dfd(s, from), name);
		close(fd);
		errno = EAGAIN;
		return -1;
	}
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
		if (fstatat(dfd(s, outcomes[i]), name, &st,
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
	doc = json_loadfd(rfd, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
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
	char		 why[512];
	time_t		 due;
	size_t		 n = 0;
	int		 fd;

	if ((dir = open_state(s, SPOOL_CUR)) == NULL)
		return 0;
	while ((de = readdir(dir)) != NULL) {
		if (!ulid_prefix(de->d_name))
			continue;
		if ((fd = doc_open(s, SPOOL_CUR, de->d_name, why,
		    sizeof(why))) == -1) {
			if (errno == EINVAL)
				set_aside(s, SPOOL_CUR, de->d_name, why);
			continue;
		}
		/* No lock held: its daemon is gone.  Clocks play no part. */
		if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
			close(fd);
			continue;
		}
		/* Its outcome was recorded, only the unlink was lost. */
		if (recorded(s, de->d_name))
			unlinkat(dfd(s, SPOOL_CUR), de->d_name, 0);
		else if ((to = recover_to(fd, &due)) == SPOOL_DEFERRED &&
		    renameat(dfd(s, SPOOL_CUR), de->d_name,
		    dfd(s, SPOOL_DEFERRED), de->d_name) == 0)
			/* Taken from deferred/ (a cancel that died): its
			 * time has not come. */
			log_warn("recovered %s into deferred/: due %lld",
			    de->d_name, (long long)due);
		else if (to == SPOOL_NEW && renameat(dfd(s, SPOOL_CUR),
		    de->d_name, dfd(s, SPOOL_NEW), de->d_name) == 0) {
			log_warn("recovered %s: its claim outlived its daemon",
			    de->d_name);
			n++;
		}
		close(fd);
	}
	closedir(dir);
	if (n > 0)
		fsync(dfd(s, SPOOL_NEW));
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
		    fstatat(dfd(s, SPOOL_DEFERRED), de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		if (!S_ISREG(st.st_mode)) {
			snprintf(why, sizeof(why), "%s/deferred/%s: not a "
			    "regular file", s->root, de->d_name);
			set_aside(s, SPOOL_DEFERRED, de->d_name, why);
		} else if (st.st_mtime <= now) {
			if (renameat(dfd(s, SPOOL_DEFERRED), de->d_name,
			    dfd(s, SPOOL_NEW), de->d_name) == 0)
				n++;
		} else if (*next == 0 || st.st_mtime < *next)
			*next = st.st_mtime;
	}
	closedir(dir);
	if (n > 0)
		fsync(dfd(s, SPOOL_NEW));
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
		if (de->d_name[0] == '.' && (de->d_name[1] == '\0' ||
		    (de->d_name[1] == '.' && de->d_name[2] == '\0')))
			continue;
		if (fstatat(dfd(s, d), de->d_name, &st, AT_SYMLINK_NOFOLLOW)
		    == -1 || !S_ISREG(st.st_mode) || st.st_mtime >= before)
			continue;
		if (unlinkat(dfd(s, d), de->d_name, 0) == 0)
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
spool_area(struct spool *s, const char *area, int create)
{
	struct stat	 model, st;
	char		 path[4096];
	int		 fd, e;

	if (strchr(area, '/') != NULL || area[0] == '.' ||
	    (size_t)snprintf(path, sizeof(path), "%s/%s", s->root, area) >=
	    sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd != -1 || errno != ENOENT || !create)
		return fd;
	if (mkdir(path, 0700) == -1 && errno != EEXIST) {
		e = errno;
		log_err("spool: %s: %s", path, strerror(e));
		errno = e;
		return -1;
	}
	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return -1;
	/* Whatever the umask; a group we are not in is logged, not fatal. */
	if (fstat(dfd(s, SPOOL_NEW), &model) == 0 &&
	    fstat(fd, &st) == 0 && st.st_uid == geteuid() &&
	    ((st.st_gid != model.st_gid &&
	    fchown(fd, (uid_t)-1, model.st_gid) == -1) ||
	    ((st.st_mode & 07777) != (model.st_mode & 07777) &&
	    fchmod(fd, model.st_mode & 07777) == -1)))
		log_warn("spool: %s: cannot give it the group and mode of "
		    "new/: %s", path, strerror(errno));
	return fd;
}

enum msg_status
spool_area_store(struct spool *s, const char *area, const json_t **docs,
    size_t n)
{
	const char	**names;
	char		(*idnames)[SPOOL_NAME_MAX];
	enum msg_status	 *st, rc = MSG_OK;
	time_t		 *mtimes;
	int		 *dirfds, fd;
	const char	 *id;
	size_t		  i;

	if (n == 0)
		return MSG_OK;
	if ((fd = spool_area(s, area, 1)) == -1)
		return errno_status(errno);
	names = calloc(n, sizeof(*names));
	idnames = calloc(n, sizeof(*idnames));
	st = calloc(n, sizeof(*st));
	mtimes = calloc(n, sizeof(*mtimes));
	dirfds = calloc(n, sizeof(*dirfds));
	if (names == NULL || idnames == NULL || st == NULL || mtimes == NULL ||
	    dirfds == NULL) {
		rc = MSG_TEMPFAIL;
		goto out;
	}
	for (i = 0; i < n; i++) {
		if ((id = msgdoc_id(docs[i])) == NULL || !ulid_valid(id)) {
			rc = MSG_PERMFAIL;
			goto out;
		}
		snprintf(idnames[i], sizeof(idnames[i]), "%s.json", id);
		names[i] = idnames[i];
		dirfds[i] = fd;
	}
	commit_files(s, docs, dirfds, names, mtimes, st, n);
	/* All or nothing: what was written of a failed set goes again. */
	for (i = 0; i < n; i++)
		if (st[i] != MSG_OK && (rc == MSG_OK || st[i] == MSG_TEMPFAIL))
			rc = st[i];
	if (rc != MSG_OK)
		for (i = 0; i < n; i++)
			if (st[i] == MSG_OK)
				unlinkat(fd, names[i], 0);
out:
	close(fd);
	free(names);
	free(idnames);
	free(st);
	free(mtimes);
	free(dirfds);
	return rc;
}

json_t *
spool_area_load(struct spool *s, const char *area, const char *name,
    char *err, size_t errlen)
{
	json_t	*doc;
	int	 afd, fd, e;

	if (strchr(name, '/') != NULL || name[0] == '.') {
		errno = EINVAL;
		return NULL;
	}
	if ((afd = spool_area(s, area, 0)) == -1)
		return NULL;
	fd = util_open_regular(afd, name, 1);
	e = errno;
	close(afd);
	if (fd == -1) {
		util_seterr(err, errlen, "%s/%s/%s: %s", s->root, area, name,
		    strerror(e));
		errno = e;
		return NULL;
	}
	doc = json_loadfd(fd, JSON_REJECT_DUPLICATES, NULL);
	close(fd);
	if (msgdoc_check(doc, area, name, err, errlen) == -1) {
		json_decref(doc);
		errno = EINVAL;
		return NULL;
	}
	return doc;
}

int
spool_area_remove(struct spool *s, const char *area, const char *name)
{
	int	afd, rc;

	if (strchr(name, '/') != NULL || name[0] == '.') {
		errno = EINVAL;
		return -1;
	}
	if ((afd = spool_area(s, area, 0)) == -1)
		return -1;
	rc = unlinkat(afd, name, 0);
	close(afd);
	return rc;
}

size_t
spool_area_prune(struct spool *s, const char *area, time_t before)
{
	DIR		*dir;
	struct dirent	*de;
	struct stat	 st;
	size_t		 n = 0;
	int		 afd;

	if ((afd = spool_area(s, area, 0)) == -1)
		return 0;
	if ((dir = fdopendir(afd)) == NULL) {
		close(afd);
		return 0;
	}
	while ((de = readdir(dir)) != NULL) {
		if (de->d_name[0] == '.' && (de->d_name[1] == '\0' ||
		    (de->d_name[1] == '.' && de->d_name[2] == '\0')))
			continue;
		if (fstatat(afd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode) && st.st_mtime < before &&
		    unlinkat(afd, de->d_name, 0) == 0)
			n++;
	}
	closedir(dir);
	return n;
}

int
spool_area_scan(struct spool *s, const char *area,
    int (*fn)(void *, const char *), void *arg)
{
	DIR		*dir;
	struct dirent	*de;
	char		**v = NULL, **nv;
	size_t		 n = 0, cap = 0, i;
	int		 afd, rc = 0;

	if ((afd = spool_area(s, area, 0)) == -1)
		return errno == ENOENT ? 0 : -1;
	if ((dir = fdopendir(afd)) == NULL) {
		close(afd);
		return -1;
	}
	while ((de = readdir(dir)) != NULL) {
		if (!ulid_prefix(de->d_name) ||
		    strlen(de->d_name) >= SPOOL_NAME_MAX)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			if ((nv = reallocarray(v, cap, sizeof(*v))) == NULL)
				break;
			v = nv;
		}
		if ((v[n] = strdup(de->d_name)) == NULL)
			break;
		n++;
	}
	closedir(dir);
	/* In the order they came: ids sort by time. */
	if (n > 0)
		qsort(v, n, sizeof(*v), namecmp);
	for (i = 0; i < n && rc == 0; i++)
		rc = fn(arg, v[i]);
	spool_names_free(v, n);
	return rc;
}

int
spool_index_put(struct spool *s, const char *key, const char *id)
{
	char	tmp[160];
	int	afd, fd, rc = -1;

	if (strchr(key, '/') != NULL || key[0] == '.' || strlen(key) > 128)
		return -1;
	if ((afd = spool_area(s, "index", 1)) == -1)
		return -1;
	snprintf(tmp, sizeof(tmp), ".%s.%ld", key, (long)getpid());
	if ((fd = openat(afd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, SPOOL_FILE_MODE)) != -1) {
		if (util_write_all(fd, id, strlen(id)) == 0 && close(fd) == 0 &&
		    renameat(afd, tmp, afd, key) == 0)
			rc = 0;
		else
			unlinkat(afd, tmp, 0);
	}
	close(afd);
	return rc;
}

int
spool_index_get(struct spool *s, const char *key, char *id)
{
	ssize_t	n;
	int	afd, fd;

	if (strchr(key, '/') != NULL || key[0] == '.')
		return -1;
	if ((afd = spool_area(s, "index", 0)) == -1)
		return -1;
	fd = util_open_regular(afd, key, 1);
	close(afd);
	if (fd == -1)
		return -1;
	n = read(fd, id, SPOOL_ID_LEN);
	close(fd);
	if (n != SPOOL_ID_LEN)
		return -1;
	id[SPOOL_ID_LEN] = '\0';
	return ulid_valid(id) ? 0 : -1;
}

int
spool_writable(struct spool *s, char *err, size_t errlen)
{
	int	d;

	for (d = 0; d < SPOOL__MAX; d++)
		if (dfd(s, d) == -1 || faccessat(dfd(s, d), ".", W_OK,
		    AT_EACCESS) == -1) {
			util_seterr(err, errlen, "%s/%s: %s", s->root,
			    dirnames[d], strerror(errno));
			return -1;
		}
	return 0;
}

int
spool_dirfd(struct spool *s, enum spool_dir d)
{
	return dfd(s, d);
}

size_t
spool_upload_prune(struct spool *s, time_t before)
{
	DIR		*top, *dir;
	struct dirent	*de, *fe;
	struct stat	 st;
	size_t		 n = 0;
	int		 tfd, cfd;
	char		 path[4096];

	snprintf(path, sizeof(path), "%s/uploads", s->root);
	if ((tfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return 0;
	if ((top = fdopendir(tfd)) == NULL) {
		close(tfd);
		return 0;
	}
	while ((de = readdir(top)) != NULL) {
		if (!keys_client_valid(de->d_name) || (cfd = openat(tfd,
		    de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
			continue;
		if ((dir = fdopendir(cfd)) == NULL) {
			close(cfd);
			continue;
		}
		while ((fe = readdir(dir)) != NULL)
			if (ulid_prefix(fe->d_name) && fstatat(cfd, fe->d_name,
			    &st, 0) == 0 && st.st_mtime < before &&
			    unlinkat(cfd, fe->d_name, 0) == 0)
				n++;
		closedir(dir);
	}
	closedir(top);
	return n;
}

ssize_t
spool_batch_add(struct spool_batch *b, json_t *doc, enum spool_dir dest)
{
	struct spool_item	*v;
	size_t			 cap;

	if (doc == NULL)
		return -1;
	if (b->n == b->cap) {
		cap = b->cap ? b->cap * 2 : 16;
		if ((v = reallocarray(b->items, cap, sizeof(*v))) == NULL) {
			json_decref(doc);
			return -1;
		}
		b->items = v;
		b->cap = cap;
	}
	b->items[b->n].doc = doc;
	b->items[b->n].dir = dest;
	b->items[b->n].name = NULL;
	b->items[b->n].from = SPOOL__MAX;
	b->items[b->n].status = MSG_TEMPFAIL;
	return (ssize_t)b->n++;
}

size_t
spool_batch_commit(struct spool *s, struct spool_batch *b)
{
	return b->n ? spool_commit(s, b->items, b->n) : 0;
}

enum msg_status
spool_batch_status(const struct spool_batch *b, size_t i)
{
	return i < b->n ? b->items[i].status : MSG_PERMFAIL;
}

void
spool_batch_free(struct spool_batch *b)
{
	size_t	i;

	for (i = 0; i < b->n; i++)
		json_decref((json_t *)b->items[i].doc);
	free(b->items);
	b->items = NULL;
	b->n = b->cap = 0;
}
