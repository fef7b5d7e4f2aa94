/*
 * metrics.c: the Prometheus text of GET /metrics and msgspoold's
 * metrics-file (metrics.h).
 */
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/channel.h"
#include "base/log.h"
#include "base/ulid.h"
#include "spool/counts.h"
#include "spool/metrics.h"

const double metrics_buckets[METRICS_NBUCKETS] = {
	0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30
};

/* The states msgspool_queue_messages shows, and their order. */
static const enum spool_dir queue_states[] = {
	SPOOL_NEW, SPOOL_DEFERRED, SPOOL_CUR, SPOOL_FAILED, SPOOL_SENT
};
#define NSTATES	(sizeof(queue_states) / sizeof(queue_states[0]))

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
	struct spool	*s;
	enum spool_dir	 dir;
	unsigned long	 count[CHANNEL__MAX];
	char		 oldest[ULID_LEN + 1];
	struct cache	*cache;		/* NULL: out of memory */
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

void
metrics_escape(struct buf *out, const char *v)
{
	for (; *v != '\0'; v++)
		switch (*v) {
		case '\\':
			buf_puts(out, "\\\\");
			break;
		case '"':
			buf_puts(out, "\\\"");
			break;
		case '\n':
			buf_puts(out, "\\n");
			break;
		default:
			buf_putc(out, *v);
		}
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

	if ((fd = openat(spool_dirfd(qs->s, qs->dir), name,
	    O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, head, sizeof(head) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	head[n] = '\0';
	if ((c = prefix_channel(head)) != -1 || (size_t)n < sizeof(head) - 1)
		return c;
	if ((doc = spool_load(qs->s, qs->dir, name, err, sizeof(err))) == NULL)
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
	if (qs->oldest[0] == '\0' || strncmp(name, qs->oldest, ULID_LEN) < 0) {
		memcpy(qs->oldest, name, ULID_LEN);
		qs->oldest[ULID_LEN] = '\0';
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
		qs->count[(int)sl->ch]++;
		return 0;
	}
	/* A file gone meanwhile (sent, retried) is not counted here. */
	if ((c = file_channel(qs, name)) >= 0)
		qs->count[c]++;
	return 0;
}

static void
header(struct buf *out, const char *name, const char *type, const char *help)
{
	buf_puts(out, "# HELP ");
	buf_puts(out, name);
	buf_putc(out, ' ');
	buf_puts(out, help);
	buf_puts(out, "\n# TYPE ");
	buf_puts(out, name);
	buf_putc(out, ' ');
	buf_puts(out, type);
	buf_putc(out, '\n');
}

static void
number(struct buf *out, double v)
{
	char	num[64];

	snprintf(num, sizeof(num), "%.17g", v);
	buf_puts(out, num);
}

/*
 * One sample: name{labels} value, labels given as a NULL-ended list of
 * name, value pairs.
 */
static void
sample(struct buf *out, const char *name, const char *const *labels,
    double v)
{
	size_t	i;

	buf_puts(out, name);
	if (labels != NULL && labels[0] != NULL) {
		buf_putc(out, '{');
		for (i = 0; labels[i] != NULL; i += 2) {
			if (i > 0)
				buf_putc(out, ',');
			buf_puts(out, labels[i]);
			buf_puts(out, "=\"");
			metrics_escape(out, labels[i + 1] != NULL ?
			    labels[i + 1] : "");
			buf_putc(out, '"');
		}
		buf_putc(out, '}');
	}
	buf_putc(out, ' ');
	number(out, v);
	buf_putc(out, '\n');
}

static const char *
str(const json_t *o, const char *key)
{
	const char	*v = json_string_value(json_object_get(o, key));

	return v != NULL ? v : "";
}

static double
num(const json_t *o, const char *key)
{
	return json_number_value(json_object_get(o, key));
}

/* A counter from an array of daemon.json: its entries' labels, "count". */
static void
counter(struct buf *out, const json_t *daemon, const char *key,
    const char *name, const char *help, const char *const *labels)
{
	const json_t	*a = json_object_get(daemon, key), *e;
	const char	*lv[12];
	size_t		 i, j;

	header(out, name, "counter", help);
	json_array_foreach(a, i, e) {
		for (j = 0; labels[j] != NULL && j < 5; j++) {
			lv[2 * j] = labels[j];
			lv[2 * j + 1] = str(e, labels[j]);
		}
		lv[2 * j] = NULL;
		sample(out, name, lv, num(e, "count"));
	}
}

static void
durations(struct buf *out, const json_t *daemon)
{
	static const char name[] = "msgspool_provider_request_duration_seconds";
	const json_t	*a = json_object_get(daemon, "durations"), *e, *le,
			*bk;
	const char	*lv[5];
	char		 bound[32], full[96];
	size_t		 i, j;

	header(out, name, "histogram",
	    "Time of msgspoold's requests to providers, in seconds.");
	json_array_foreach(a, i, e) {
		le = json_object_get(e, "le");
		bk = json_object_get(e, "buckets");
		lv[0] = "provider";
		lv[1] = str(e, "provider");
		lv[2] = "le";
		lv[4] = NULL;
		snprintf(full, sizeof(full), "%s_bucket", name);
		for (j = 0; j < json_array_size(le) &&
		    j < json_array_size(bk); j++) {
			snprintf(bound, sizeof(bound), "%g",
			    json_number_value(json_array_get(le, j)));
			lv[3] = bound;
			sample(out, full, lv, json_number_value(
			    json_array_get(bk, j)));
		}
		lv[3] = "+Inf";
		sample(out, full, lv, num(e, "count"));
		lv[2] = NULL;
		snprintf(full, sizeof(full), "%s_sum", name);
		sample(out, full, lv, num(e, "sum"));
		snprintf(full, sizeof(full), "%s_count", name);
		sample(out, full, lv, num(e, "count"));
	}
}

/*
 * msgspool_messages_completed_total{status="canceled"}: the CGI
 * programs' counter (counts.h; msgspoold cancels nothing); a channel
 * with none is left out.
 */
static void
canceled(struct spool *s, struct buf *out)
{
	unsigned long long	 v[CHANNEL__MAX];
	const char		*lv[5];
	int			 c;

	if (counts_read(s, COUNTS_CANCELED, v) == -1)
		log_warn("metrics: the count of canceled messages: %s",
		    strerror(errno));
	for (c = 0; c < CHANNEL__MAX; c++) {
		if (v[c] == 0)
			continue;
		lv[0] = "channel";
		lv[1] = channel_info((enum channel)c)->name;
		lv[2] = "status";
		lv[3] = "canceled";
		lv[4] = NULL;
		sample(out, "msgspool_messages_completed_total", lv,
		    (double)v[c]);
	}
}

int
metrics_render(struct spool *s, const json_t *daemon, time_t now,
    struct buf *out)
{
	static const char *const l_chan_route[] =
	    { "channel", "route", "provider", "result", NULL };
	static const char *const l_completed[] = { "channel", "status", NULL };
	static const char *const l_provider[] = { "provider", NULL };
	static const char *const l_inbound[] = { "channel", "provider", NULL };
	static const char *const l_result[] = { "result", NULL };
	struct queue_scan	 qs[NSTATES];
	const char		*lv[5];
	const json_t		*e;
	struct statvfs		 vfs;
	long long		 t;
	size_t			 i;
	int			 c;

	for (i = 0; i < NSTATES; i++) {
		struct cache	cache;
		int		rc;

		memset(&qs[i], 0, sizeof(qs[i]));
		qs[i].s = s;
		qs[i].dir = queue_states[i];
		cache_load(s, qs[i].dir, &cache);
		if (cache.slots != NULL)
			qs[i].cache = &cache;
		rc = spool_scan(s, qs[i].dir, queue_file, &qs[i]);
		if (qs[i].cache != NULL && rc != -1)
			cache_store(s, qs[i].dir, &cache);
		if (qs[i].cache != NULL)
			free(cache.slots);
		qs[i].cache = NULL;
		if (rc == -1)
			return -1;
	}

	header(out, "msgspool_queue_messages", "gauge",
	    "Messages in the spool by state and channel.");
	for (i = 0; i < NSTATES; i++)
		for (c = 0; c < CHANNEL__MAX; c++) {
			lv[0] = "state";
			lv[1] = spool_dirname(qs[i].dir);
			lv[2] = "channel";
			lv[3] = channel_info((enum channel)c)->name;
			lv[4] = NULL;
			sample(out, "msgspool_queue_messages", lv,
			    (double)qs[i].count[c]);
		}

	header(out, "msgspool_queue_oldest_age_seconds", "gauge",
	    "Age of the oldest message waiting in a state, in seconds.");
	for (i = 0; i < 2; i++) {
		double	age = 0;

		if (qs[i].oldest[0] != '\0' &&
		    (t = ulid_time(qs[i].oldest)) >= 0 &&
		    (double)now - (double)t / 1000.0 > 0)
			age = (double)now - (double)t / 1000.0;
		lv[0] = "state";
		lv[1] = spool_dirname(qs[i].dir);
		lv[2] = NULL;
		sample(out, "msgspool_queue_oldest_age_seconds", lv, age);
	}

	counter(out, daemon, "attempts", "msgspool_attempts_total",
	    "Delivery attempts by channel, route, provider and result.",
	    l_chan_route);
	counter(out, daemon, "completed", "msgspool_messages_completed_total",
	    "Messages that reached a final status.", l_completed);
	canceled(s, out);
	durations(out, daemon);
	counter(out, daemon, "receipts", "msgspool_receipts_total",
	    "Delivery receipts applied, by provider.", l_provider);
	counter(out, daemon, "inbound", "msgspool_inbound_messages_total",
	    "Inbound messages handed over, by channel and provider.",
	    l_inbound);
	counter(out, daemon, "webhooks", "msgspool_webhook_deliveries_total",
	    "Webhook deliveries by result.", l_result);

	header(out, "msgspool_route_up", "gauge",
	    "Whether a route is in (1) or out by its breaker or unbound (0).");
	json_array_foreach(json_object_get(daemon, "routes"), i, e) {
		lv[0] = "route";
		lv[1] = str(e, "route");
		lv[2] = NULL;
		sample(out, "msgspool_route_up", lv, num(e, "up"));
	}

	header(out, "msgspool_daemon_heartbeat_timestamp_seconds", "gauge",
	    "When msgspoold last wrote its state, in Unix seconds.");
	sample(out, "msgspool_daemon_heartbeat_timestamp_seconds", NULL,
	    num(daemon, "heartbeat"));

	header(out, "msgspool_spool_free_bytes", "gauge",
	    "Space left to the spool's writers, in bytes.");
	sample(out, "msgspool_spool_free_bytes", NULL,
	    fstatvfs(spool_dirfd(s, SPOOL_NEW), &vfs) == 0 ?
	    (double)vfs.f_bavail * (double)vfs.f_frsize : 0);

	header(out, "msgspool_build_info", "gauge",
	    "Always 1: the version of msgspool in its label.");
	lv[0] = "version";
	lv[1] = MSGSPOOL_VERSION;
	lv[2] = NULL;
	sample(out, "msgspool_build_info", lv, 1);
	return out->failed ? -1 : 0;
}
