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

struct spool {
	char	*root;
	int	 rootfd;
	int	 fds[SPOOL__MAX];	/* opened on first use: see dirdup() */
};

static const char *const dirnames[SPOOL__MAX] = {
	"tmp", "new", "deferred", "cur", "sent", "failed"
};

/* Crockford's base32: no I, L, O, U; sorts like the numbers it encodes. */
static const char crockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

static void
seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list	ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

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
		seterr(err, errlen, "out of memory");
		return NULL;
	}
	s->rootfd = -1;
	for (i = 0; i < SPOOL__MAX; i++)
		s->fds[i] = -1;
	if (create && mkdir(root, 0700) == -1 && errno != EEXIST) {
		seterr(err, errlen, "%s: %s", root, strerror(errno));
		goto fail;
	}
	if ((s->rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) ==
	    -1) {
		seterr(err, errlen, "%s: %s", root, strerror(errno));
		goto fail;
	}
	/* Every state must be there, even those this process won't use. */
	for (i = 0; i < SPOOL__MAX; i++) {
		if (create && mkdirat(s->rootfd, dirnames[i], 0700) == -1 &&
		    errno != EEXIST) {
			seterr(err, errlen, "%s/%s: %s", root, dirnames[i],
			    strerror(errno));
			goto fail;
		}
		if (fstatat(s->rootfd, dirnames[i], &st, 0) == -1 ||
		    !S_ISDIR(st.st_mode)) {
			seterr(err, errlen, "%s/%s: %s", root, dirnames[i],
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
spool_id_new(char *out)
{
	struct timespec		ts;
	unsigned long long	ms;
	unsigned char		rnd[10];
	unsigned		acc = 0, bits = 0;
	size_t			i, j;

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return -1;
	clock_gettime(CLOCK_REALTIME, &ts);
	ms = (unsigned long long)ts.tv_sec * 1000 +
	    (unsigned long long)ts.tv_nsec / 1000000;
	/* 48 bits of milliseconds in 10 characters, most significant first. */
	for (i = 0; i < 10; i++)
		out[i] = crockford[(ms >> (45 - 5 * i)) & 31];
	/* 80 random bits in 16 characters. */
	for (i = 0, j = 10; i < sizeof(rnd); i++) {
		acc = (acc << 8) | rnd[i];
		bits += 8;
		while (bits >= 5) {
			out[j++] = crockford[(acc >> (bits - 5)) & 31];
			bits -= 5;
		}
	}
	out[SPOOL_ID_LEN] = '\0';
	return 0;
}

/* Whether s begins with an id. */
static int
id_prefix(const char *s)
{
	size_t	i;

	for (i = 0; i < SPOOL_ID_LEN; i++)
		if (s[i] == '\0' || strchr(crockford, s[i]) == NULL)
			return 0;
	/* The first character holds only 3 bits of the time. */
	return s[0] <= '7';
}

int
spool_id_valid(const char *s)
{
	return id_prefix(s) && s[SPOOL_ID_LEN] == '\0';
}

long long
spool_id_time(const char *id)
{
	long long	ms = 0;
	size_t		i;

	for (i = 0; i < 10; i++)
		ms = (ms << 5) | (strchr(crockford, id[i]) - crockford);
	return ms;
}

void
spool_time_format(time_t t, char *buf, size_t len)
{
	struct tm	tm;

	/* Not strftime: it reads the time zone database, a cost per CGI. */
	gmtime_r(&t, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
	    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

json_t *
spool_doc_new(const char *id, const char *channel, const char *client,
    time_t notbefore, json_t *message)
{
	char	created[32], next[32];
	time_t	now = time(NULL);

	if (message == NULL)
		return NULL;
	spool_time_format(now, created, sizeof(created));
	spool_time_format(notbefore > now ? notbefore : now, next,
	    sizeof(next));
	return json_pack("{s:i, s:s, s:s, s:s, s:s, s:i, s:s, s:n, s:n, s:o}",
	    "version", SPOOL_VERSION, "id", id, "channel", channel,
	    "client", client, "created", created, "attempts", 0,
	    "nextAttempt", next, "lastError", "providerReply",
	    "message", message);
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

/* When a document is due: its nextAttempt, else now. */
static time_t
doc_due(const json_t *doc)
{
	const char	*next;
	time_t		 t;

	next = json_string_value(json_object_get(doc, "nextAttempt"));
	if (next == NULL || valid_time_parse(next, &t) == -1)
		return time(NULL);
	return t;
}

static int
write_all(int fd, const char *buf, size_t len)
{
	ssize_t	n;

	while (len > 0) {
		n = write(fd, buf, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Write doc to tmp/ under a fresh unique name, durably, and rename it to
 * name in the directory dirfd, then sync that directory.  The temporary file never survives a failure.
 */
static enum msg_status
commit(struct spool *s, int dirfd, const char *name, const json_t *doc,
    time_t mtime)
{
	struct timespec	 times[2];
	char	 tmpname[SPOOL_NAME_MAX + 32], id[SPOOL_ID_LEN + 1];
	char	*text;
	int	 fd, e;

	if (spool_id_new(id) == -1)
		return MSG_TEMPFAIL;
	/* The tmp name is unique even when a file is rewritten in place. */
	snprintf(tmpname, sizeof(tmpname), "%s.%s.%ld", name, id,
	    (long)getpid());
	if ((text = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS)) == NULL)
		return MSG_TEMPFAIL;
	fd = openat(dfd(s, SPOOL_TMP), tmpname,
	    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd == -1) {
		e = errno;
		free(text);
		log_err("spool: %s/tmp/%s: %s", s->root, tmpname, strerror(e));
		return errno_status(e);
	}
	/* A deferred file's mtime is when it is due: a stat tells, no parse. */
	times[0].tv_sec = times[1].tv_sec = mtime;
	times[0].tv_nsec = times[1].tv_nsec = 0;
	if (write_all(fd, text, strlen(text)) == -1 ||
	    write_all(fd, "\n", 1) == -1 ||
	    (mtime > 0 && futimens(fd, times) == -1) || fsync(fd) == -1) {
		e = errno;
		close(fd);
		goto fail;
	}
	if (close(fd) == -1) {
		e = errno;
		goto fail;
	}
	if (renameat(dfd(s, SPOOL_TMP), tmpname, dirfd, name) == -1) {
		e = errno;
		goto fail;
	}
	free(text);
	/* The rename is durable only once the directory is. */
	if (fsync(dirfd) == -1) {
		e = errno;
		log_err("spool: fsync of the directory of %s: %s", name,
		    strerror(e));
		unlinkat(dirfd, name, 0);
		return errno_status(e);
	}
	return MSG_OK;
fail:
	free(text);
	unlinkat(dfd(s, SPOOL_TMP), tmpname, 0);
	log_err("spool: %s/tmp/%s: %s", s->root, tmpname, strerror(e));
	return errno_status(e);
}

enum msg_status
spool_enqueue(struct spool *s, const json_t *doc, enum spool_dir dest)
{
	const char	*id;
	char		 name[SPOOL_NAME_MAX];

	id = json_string_value(json_object_get(doc, "id"));
	if (id == NULL || !spool_id_valid(id) ||
	    (dest != SPOOL_NEW && dest != SPOOL_DEFERRED))
		return MSG_PERMFAIL;
	snprintf(name, sizeof(name), "%s.json", id);
	return commit(s, dfd(s, dest), name, doc,
	    dest == SPOOL_DEFERRED ? doc_due(doc) : 0);
}

enum msg_status
spool_store(struct spool *s, enum spool_dir dir, const char *name,
    const json_t *doc, enum spool_dir from)
{
	enum msg_status	rc;

	if (strchr(name, '/') != NULL || name[0] == '.')
		return MSG_PERMFAIL;
	if ((rc = commit(s, dfd(s, dir), name, doc,
	    dir == SPOOL_DEFERRED ? doc_due(doc) : 0)) != MSG_OK)
		return rc;
	if (from != SPOOL__MAX && from != dir) {
		if (unlinkat(dfd(s, from), name, 0) == -1 && errno != ENOENT)
			return errno_status(errno);
		fsync(dfd(s, from));
	}
	return MSG_OK;
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

json_t *
spool_load(struct spool *s, enum spool_dir d, const char *name, char *err,
    size_t errlen)
{
	json_error_t	 je;
	json_t		*doc;
	FILE		*f;
	int		 fd, e;

	if (strchr(name, '/') != NULL || name[0] == '.') {
		seterr(err, errlen, "%s: bad name", name);
		errno = EINVAL;
		return NULL;
	}
	if ((fd = openat(dfd(s, d), name, O_RDONLY | O_CLOEXEC)) == -1 ||
	    (f = fdopen(fd, "r")) == NULL) {
		e = errno;
		seterr(err, errlen, "%s/%s/%s: %s", s->root, dirnames[d],
		    name, strerror(e));
		if (fd != -1)
			close(fd);
		errno = e;
		return NULL;
	}
	doc = json_loadf(f, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	fclose(f);
	if (doc == NULL) {
		seterr(err, errlen, "%s/%s/%s: line %d: %s", s->root,
		    dirnames[d], name, je.line, je.text);
		errno = EINVAL;
		return NULL;
	}
	if (!json_is_object(doc) || json_integer_value(json_object_get(doc,
	    "version")) != SPOOL_VERSION || !json_is_string(
	    json_object_get(doc, "id"))) {
		seterr(err, errlen, "%s/%s/%s: not a version %d spool file",
		    s->root, dirnames[d], name, SPOOL_VERSION);
		json_decref(doc);
		errno = EINVAL;
		return NULL;
	}
	return doc;
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
	int		 fd, e;

	*names = NULL;
	if ((fd = dup(dfd(s, d))) == -1)
		return -1;
	if ((dir = fdopendir(fd)) == NULL) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	rewinddir(dir);
	while ((de = readdir(dir)) != NULL) {
		if (!id_prefix(de->d_name) ||
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

	if (!spool_id_valid(id))
		return -1;
	for (d = SPOOL_NEW; d < SPOOL__MAX; d++) {
		snprintf(name, SPOOL_NAME_MAX, "%s.json", id);
		if (fstatat(dfd(s, d), name, &st, 0) == 0) {
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
	char	path[16 + CLIENT_ID_MAX];
	int	rootfd, fd;

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
	if (id == NULL || !spool_id_valid(id))
		return MSG_PERMFAIL;
	if ((fd = upload_dir(s, client, 1)) == -1)
		return errno_status(errno);
	snprintf(name, sizeof(name), "%s.json", id);
	/* Written through tmp/ like every message, then renamed across. */
	rc = commit(s, fd, name, doc, 0);
	close(fd);
	return rc;
}

json_t *
spool_upload_load(struct spool *s, const char *client, const char *id)
{
	json_error_t	 je;
	json_t		*doc;
	const char	*created;
	char		 name[SPOOL_NAME_MAX];
	time_t		 t;
	int		 dirdup, fd;

	if (!spool_id_valid(id))
		return NULL;
	if ((dirdup = upload_dir(s, client, 0)) == -1)
		return NULL;
	snprintf(name, sizeof(name), "%s.json", id);
	fd = openat(dirdup, name, O_RDONLY | O_CLOEXEC);
	close(dirdup);
	if (fd == -1)
		return NULL;
	doc = json_loadfd(fd, JSON_REJECT_DUPLICATES, &je);
	close(fd);
	created = json_string_value(json_object_get(doc, "created"));
	if (created == NULL || valid_time_parse(created, &t) == -1 ||
	    time(NULL) - t > SPOOL_UPLOAD_TTL) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

int
spool_claim(struct spool *s, const char *name, json_t **doc, char *err,
    size_t errlen)
{
	struct stat	 a, b;
	json_error_t	 je;
	FILE		*f;
	int		 fd, dup_fd;

	*doc = NULL;
	if (strchr(name, '/') != NULL || name[0] == '.') {
		errno = EINVAL;
		return -1;
	}
	if ((fd = openat(dfd(s, SPOOL_NEW), name, O_RDONLY | O_CLOEXEC)) ==
	    -1)
		return -1;
	/* The lock marks a live claim; it is never taken from a living one. */
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		close(fd);
		errno = EBUSY;
		return -1;
	}
	if (renameat(dfd(s, SPOOL_NEW), name, dfd(s, SPOOL_CUR), name) ==
	    -1) {
		close(fd);
		return -1;
	}
	/*
	 * The name may have been given to another file between our open and
	 * our rename (sent, deferred, due again): then we moved a file we do
	 * not hold.  Put it back and leave it to the next scan.
	 */
	if (fstat(fd, &a) == -1 || fstatat(dfd(s, SPOOL_CUR), name, &b, 0) ==
	    -1 || a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
		renameat(dfd(s, SPOOL_CUR), name, dfd(s, SPOOL_NEW), name);
		close(fd);
		errno = EAGAIN;
		return -1;
	}
	if ((dup_fd = dup(fd)) == -1 || (f = fdopen(dup_fd, "r")) == NULL) {
		if (dup_fd != -1)
			close(dup_fd);
		snprintf(err, errlen, "%s: %s", name, strerror(errno));
		*doc = NULL;
		return fd;
	}
	*doc = json_loadf(f, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	fclose(f);
	if (*doc == NULL)
		snprintf(err, errlen, "%s/cur/%s: line %d: %s", s->root, name,
		    je.line, je.text);
	else if (!json_is_object(*doc) || json_integer_value(json_object_get(
	    *doc, "version")) != SPOOL_VERSION) {
		snprintf(err, errlen, "%s/cur/%s: not a version %d spool file",
		    s->root, name, SPOOL_VERSION);
		json_decref(*doc);
		*doc = NULL;
	}
	return fd;
}

size_t
spool_recover(struct spool *s)
{
	DIR		*dir;
	struct dirent	*de;
	size_t		 n = 0;
	int		 fd, dirdup;

	if ((dirdup = dup(dfd(s, SPOOL_CUR))) == -1)
		return 0;
	if ((dir = fdopendir(dirdup)) == NULL) {
		close(dirdup);
		return 0;
	}
	rewinddir(dir);
	while ((de = readdir(dir)) != NULL) {
		if (!id_prefix(de->d_name))
			continue;
		fd = openat(dfd(s, SPOOL_CUR), de->d_name,
		    O_RDONLY | O_CLOEXEC);
		if (fd == -1)
			continue;
		/* No lock held: its daemon is gone.  Clocks play no part. */
		if (flock(fd, LOCK_EX | LOCK_NB) == 0 &&
		    renameat(dfd(s, SPOOL_CUR), de->d_name,
		    dfd(s, SPOOL_NEW), de->d_name) == 0) {
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
	size_t		 n = 0;
	int		 dirdup;

	*next = 0;
	if ((dirdup = dup(dfd(s, SPOOL_DEFERRED))) == -1)
		return 0;
	if ((dir = fdopendir(dirdup)) == NULL) {
		close(dirdup);
		return 0;
	}
	rewinddir(dir);
	/* Streamed: memory stays flat however many files wait. */
	while ((de = readdir(dir)) != NULL) {
		if (!id_prefix(de->d_name) ||
		    fstatat(dfd(s, SPOOL_DEFERRED), de->d_name, &st, 0) == -1)
			continue;
		if (st.st_mtime <= now) {
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
	int		 dirdup;

	if ((dirdup = dup(dfd(s, d))) == -1)
		return 0;
	if ((dir = fdopendir(dirdup)) == NULL) {
		close(dirdup);
		return 0;
	}
	rewinddir(dir);
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
	int		 dirdup, rc = 0;

	if ((dirdup = dup(dfd(s, d))) == -1)
		return -1;
	if ((dir = fdopendir(dirdup)) == NULL) {
		close(dirdup);
		return -1;
	}
	rewinddir(dir);
	while (rc == 0 && (de = readdir(dir)) != NULL)
		if (id_prefix(de->d_name) &&
		    strlen(de->d_name) < SPOOL_NAME_MAX)
			rc = fn(arg, de->d_name);
	closedir(dir);
	return rc;
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
			if (id_prefix(fe->d_name) && fstatat(cfd, fe->d_name,
			    &st, 0) == 0 && st.st_mtime < before &&
			    unlinkat(cfd, fe->d_name, 0) == 0)
				n++;
		closedir(dir);
	}
	closedir(top);
	return n;
}
