/*
 * metrics_queue.c: the messages of the queue by state and channel, for
 * GET /metrics and the console's overview (metrics.h, metrics_queue).
 *
 * A state whose directory is as it was when it was last counted is not
 * listed again: SPOOL/metrics/count-STATE (msgspool-spool(5), metrics/)
 * keeps the directory's inode, mtime and ctime with the counts
 * made then, and a directory whose entries change gets a new mtime.
 * Its attributes are asked of the file system itself (statx,
 * AT_STATX_FORCE_SYNC: on NFS the server's, not the client's cache).
 * Counts are kept only when the directory did not change while it was
 * listed and its mtime is over a second older than the listing's start
 * (a change within the same tick of the clock leaves mtime as it was:
 * such counts are not trusted, and the next request lists again).  So a
 * spool at rest costs a statx and a small read per state, whatever its
 * size; a state that changes costs its listing, as before.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/channel.h"
#include "base/ulid.h"
#include "spool/metrics.h"

const enum spool_dir metrics_states[METRICS_NSTATES] = {
	SPOOL_NEW, SPOOL_DEFERRED, SPOOL_CUR, SPOOL_FAILED, SPOOL_SENT
};

/*
 * A message's channel never changes: a cache of each state's files'
 * channels in the area METRICS_AREA, queue-STATE, a line "ID C" per file
 * (C the channel's number), rewritten whole when the state's files are
 * not the ones it lists; only the files it does not list are read.
 * Looked up in a hash table.  A cache that cannot be read or written
 * costs time, never a wrong count.
 */
#define LINE_LEN	(ULID_LEN + 3)

struct slot {
	char		id[ULID_LEN];
	signed char	ch;		/* -1: empty */
	char		seen;
};

struct cache {
	struct slot	*slots;
	size_t		 cap;		/* a power of two */
	size_t		 n;
	int		 dirty;		/* files not in it, or gone */
};

struct queue_scan {
	struct spool		*s;
	struct metrics_state	*st;	/* dir, and the counts made */
	struct cache		*cache;	/* NULL: out of memory */
};

static size_t
id_hash(const char *id)
{
	size_t	h = 14695981039346656037ULL;
	size_t	i;

	for (i = 0; i < ULID_LEN; i++)
		h = (h ^ (unsigned char)id[i]) * 1099511628211ULL;
	return h;
}

static struct slot *
cache_find(struct cache *c, const char *id)
{
	size_t	i;

	for (i = id_hash(id) & (c->cap - 1); c->slots[i].ch != -1;
	    i = (i + 1) & (c->cap - 1))
		if (memcmp(c->slots[i].id, id, ULID_LEN) == 0)
			break;
	return &c->slots[i];
}

static int
cache_grow(struct cache *c)
{
	struct slot	*old = c->slots, *sl;
	size_t		 oldcap = c->cap, i;

	c->cap = oldcap ? oldcap * 2 : 1024;
	if ((c->slots = malloc(c->cap * sizeof(*c->slots))) == NULL) {
		c->slots = old;
		c->cap = oldcap;
		return -1;
	}
	for (i = 0; i < c->cap; i++)
		c->slots[i].ch = -1;
	for (i = 0; i < oldcap; i++)
		if (old[i].ch != -1) {
			sl = cache_find(c, old[i].id);
			*sl = old[i];
		}
	free(old);
	return 0;
}

/* Add id's channel ch (not there yet); -1 out of memory. */
static struct slot *
cache_add(struct cache *c, const char *id, int ch)
{
	struct slot	*sl;

	if ((c->n + 1) * 2 > c->cap && cache_grow(c) == -1)
		return NULL;
	sl = cache_find(c, id);
	memcpy(sl->id, id, ULID_LEN);
	sl->ch = (signed char)ch;
	sl->seen = 0;
	c->n++;
	return sl;
}

static void
cache_name(enum spool_dir d, char *name, size_t len)
{
	snprintf(name, len, "queue-%s", spool_dirname(d));
}

/* The cache of state d from its file; an empty one when there is none. */
static void
cache_load(struct spool *s, enum spool_dir d, struct cache *c)
{
	char		 name[32], *text = NULL, *p;
	struct stat	 st = { 0 };
	int		 afd, fd = -1;

	memset(c, 0, sizeof(*c));
	cache_name(d, name, sizeof(name));
	if ((afd = spool_area(s, METRICS_AREA, 0)) == -1) {
		cache_grow(c);
		return;
	}
	/* Room for its lines twice over: no growing on the way. */
	if ((fd = openat(afd, name, O_RDONLY | O_CLOEXEC)) != -1 &&
	    fstat(fd, &st) == 0)
		while (c->cap < (size_t)st.st_size / LINE_LEN * 2 &&
		    cache_grow(c) == 0)
			;
	if (c->slots == NULL && cache_grow(c) == -1)
		goto out;
	if (fd == -1 || st.st_size <= 0 ||
	    (text = malloc((size_t)st.st_size)) == NULL ||
	    read(fd, text, (size_t)st.st_size) != st.st_size)
		goto out;
	for (p = text; p + LINE_LEN <= text + st.st_size; p += LINE_LEN) {
		if (p[ULID_LEN] != ' ' || p[ULID_LEN + 2] != '\n' ||
		    p[ULID_LEN + 1] < '0' ||
		    p[ULID_LEN + 1] >= '0' + CHANNEL__MAX)
			break;
		if (cache_find(c, p)->ch == -1 &&
		    cache_add(c, p, p[ULID_LEN + 1] - '0') == NULL)
			break;
	}
out:
	free(text);
	if (fd != -1)
		close(fd);
	close(afd);
}

/* Write the entries seen, when they differ from the file's. */
static void
cache_store(struct spool *s, enum spool_dir d, struct cache *c)
{
	char	 name[32], tmp[64], *text, *p;
	size_t	 i, n = 0;
	int	 afd, fd;

	for (i = 0; i < c->cap; i++)
		if (c->slots[i].ch != -1 && c->slots[i].seen)
			n++;
	if (!c->dirty && n == c->n)
		return;
	if ((text = malloc(n * LINE_LEN + 1)) == NULL)
		return;
	for (p = text, i = 0; i < c->cap; i++)
		if (c->slots[i].ch != -1 && c->slots[i].seen) {
			memcpy(p, c->slots[i].id, ULID_LEN);
			p[ULID_LEN] = ' ';
			p[ULID_LEN + 1] = (char)('0' + c->slots[i].ch);
			p[ULID_LEN + 2] = '\n';
			p += LINE_LEN;
		}
	cache_name(d, name, sizeof(name));
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", name, (long)getpid());
	if ((afd = spool_area(s, METRICS_AREA, 1)) != -1) {
		if ((fd = openat(afd, tmp, O_WRONLY | O_CREAT | O_TRUNC |
		    O_CLOEXEC, SPOOL_FILE_MODE)) != -1) {
			if (write(fd, text, n * LINE_LEN) ==
			    (ssize_t)(n * LINE_LEN) && close(fd) == 0)
				(void)renameat(afd, tmp, afd, name);
			else {
				close(fd);
				(void)unlinkat(afd, tmp, 0);
			}
		}
		close(afd);
	}
	free(text);
}

/*
 * The channel of a message file from the first bytes of its document:
 * the value of its "channel" key; -1 when not found there.
 */
static int
prefix_channel(const char *p)
{
	const char	*q, *end;
	char		 name[16];
	size_t		 n;

	if ((q = strstr(p, "\"channel\"")) == NULL)
		return -1;
	q += strlen("\"channel\"");
	while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')
		q++;
	if (*q++ != ':')
		return -1;
	while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')
		q++;
	if (*q++ != '"' || (end = strchr(q, '"')) == NULL)
		return -1;
	if ((n = (size_t)(end - q)) >= sizeof(name))
		return -1;
	memcpy(name, q, n);
	name[n] = '\0';
	return channel_parse(name);
}

static int
file_channel(struct queue_scan *qs, const char *name)
{
	char		 head[1024], err[128];
	ssize_t		 n;
	int		 fd, c;
	json_t		*doc;

	if ((fd = openat(spool_dirfd(qs->s, qs->st->dir), name,
	    O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, head, sizeof(head) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	head[n] = '\0';
	if ((c = prefix_channel(head)) != -1 || (size_t)n < sizeof(head) - 1)
		return c;
	if ((doc = spool_load(qs->s, qs->st->dir, name, err,
	    sizeof(err))) == NULL)
		return -1;
	c = channel_parse(json_string_value(json_object_get(doc, "channel")));
	json_decref(doc);
	return c;
}

static int
queue_file(void *arg, const char *name)
{
	struct queue_scan	*qs = arg;
	int			 c;

	/* Only the messages: "ID.json", no claims or others. */
	if (strlen(name) != ULID_LEN + 5 ||
	    strcmp(name + ULID_LEN, ".json") != 0)
		return 0;
	if (qs->st->oldest[0] == '\0' ||
	    strncmp(name, qs->st->oldest, ULID_LEN) < 0) {
		memcpy(qs->st->oldest, name, ULID_LEN);
		qs->st->oldest[ULID_LEN] = '\0';
	}
	if (qs->cache != NULL) {
		struct slot *sl = cache_find(qs->cache, name);

		if (sl->ch == -1) {
			if ((c = file_channel(qs, name)) < 0 ||
			    (sl = cache_add(qs->cache, name, c)) == NULL)
				return 0;
			qs->cache->dirty = 1;
		}
		sl->seen = 1;
		qs->st->count[(int)sl->ch]++;
		return 0;
	}
	/* A file gone meanwhile (sent, retried) is not counted here. */
	if ((c = file_channel(qs, name)) >= 0)
		qs->st->count[c]++;
	return 0;
}

/*
 * What a state's directory was when its counts were made: not its
 * device, which each NFS client numbers its own way.
 */
struct dirstamp {
	unsigned long long	 ino;
	long long		 msec, csec;
	long			 mnsec, cnsec;
};

/* The directory of state d as the file system has it now; -1 on error. */
static int
dir_stamp(struct spool *s, enum spool_dir d, struct dirstamp *ds)
{
	struct statx	 sx;

	if (statx(spool_dirfd(s, d), "", AT_EMPTY_PATH | AT_STATX_FORCE_SYNC,
	    STATX_INO | STATX_MTIME | STATX_CTIME, &sx) == -1)
		return -1;
	ds->ino = sx.stx_ino;
	ds->msec = sx.stx_mtime.tv_sec;
	ds->mnsec = (long)sx.stx_mtime.tv_nsec;
	ds->csec = sx.stx_ctime.tv_sec;
	ds->cnsec = (long)sx.stx_ctime.tv_nsec;
	return 0;
}

static int
stamp_equal(const struct dirstamp *a, const struct dirstamp *b)
{
	return a->ino == b->ino && a->msec == b->msec &&
	    a->mnsec == b->mnsec && a->csec == b->csec && a->cnsec == b->cnsec;
}

/*
 * The counts of state st->dir from count-STATE when its stamp is ds:
 * 1, st filled; else 0.
 */
static int
counts_load(struct spool *s, const struct dirstamp *ds,
    struct metrics_state *st)
{
	struct dirstamp	 was;
	char		 name[32], text[512], oldest[ULID_LEN + 2];
	unsigned long	 n[4];
	ssize_t		 len;
	int		 afd, fd, got;

	snprintf(name, sizeof(name), "count-%s", spool_dirname(st->dir));
	if ((afd = spool_area(s, METRICS_AREA, 0)) == -1)
		return 0;
	fd = openat(afd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(afd);
	if (fd == -1)
		return 0;
	len = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (len <= 0)
		return 0;
	text[len] = '\0';
	got = sscanf(text, "1 %llu %lld %ld %lld %ld %lu %lu %lu %lu %27s\n",
	    &was.ino, &was.msec, &was.mnsec, &was.csec, &was.cnsec, &n[0],
	    &n[1], &n[2], &n[3], oldest);
	if (got != 10 || CHANNEL__MAX != 4 || !stamp_equal(&was, ds) ||
	    (strcmp(oldest, "-") != 0 && !ulid_valid(oldest)))
		return 0;
	memcpy(st->count, n, sizeof(n));
	if (strcmp(oldest, "-") == 0)
		st->oldest[0] = '\0';
	else {
		/* ulid_valid: ULID_LEN characters. */
		memcpy(st->oldest, oldest, ULID_LEN);
		st->oldest[ULID_LEN] = '\0';
	}
	return 1;
}

/* Keep st's counts with the stamp ds (count-STATE, replaced whole). */
static void
counts_store(struct spool *s, const struct dirstamp *ds,
    const struct metrics_state *st)
{
	char	name[32], tmp[64], text[512];
	int	afd, fd, n;

	snprintf(name, sizeof(name), "count-%s", spool_dirname(st->dir));
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", name, (long)getpid());
	n = snprintf(text, sizeof(text), "1 %llu %lld %ld %lld %ld %lu %lu "
	    "%lu %lu %s\n", ds->ino, ds->msec, ds->mnsec, ds->csec,
	    ds->cnsec, st->count[0], st->count[1], st->count[2], st->count[3],
	    st->oldest[0] != '\0' ? st->oldest : "-");
	if (n <= 0 || (size_t)n >= sizeof(text) ||
	    (afd = spool_area(s, METRICS_AREA, 1)) == -1)
		return;
	if ((fd = openat(afd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    SPOOL_FILE_MODE)) != -1) {
		if (write(fd, text, (size_t)n) == n && close(fd) == 0)
			(void)renameat(afd, tmp, afd, name);
		else {
			close(fd);
			(void)unlinkat(afd, tmp, 0);
		}
	}
	close(afd);
}

/* List state st->dir and count its files by channel; -1 on error. */
static int
scan_state(struct spool *s, struct metrics_state *st)
{
	struct queue_scan	 qs = { .s = s, .st = st };
	struct cache		 cache;
	int			 rc;

	cache_load(s, st->dir, &cache);
	if (cache.slots != NULL)
		qs.cache = &cache;
	rc = spool_scan(s, st->dir, queue_file, &qs);
	if (qs.cache != NULL && rc != -1)
		cache_store(s, st->dir, &cache);
	free(cache.slots);
	return rc;
}

int
metrics_queue(struct spool *s, struct metrics_state q[METRICS_NSTATES])
{
	struct dirstamp	 before, after;
	size_t		 i;
	time_t		 start;
	int		 stamped;

	for (i = 0; i < METRICS_NSTATES; i++) {
		memset(&q[i], 0, sizeof(q[i]));
		q[i].dir = metrics_states[i];
		stamped = dir_stamp(s, q[i].dir, &before) == 0;
		if (stamped && counts_load(s, &before, &q[i]))
			continue;
		start = time(NULL);
		if (scan_state(s, &q[i]) == -1)
			return -1;
		/* Kept only when nothing changed, then or within a second. */
		if (stamped && dir_stamp(s, q[i].dir, &after) == 0 &&
		    stamp_equal(&before, &after) && before.msec < start - 1)
			counts_store(s, &before, &q[i]);
	}
	return 0;
}
