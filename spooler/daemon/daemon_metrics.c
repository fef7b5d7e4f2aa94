/*
 * daemon_metrics.c: what msgspoold counts for GET /metrics and the
 * console (msgspoold(8), Metrics): attempts, final statuses, receipts,
 * inbound messages, webhook deliveries and provider request times since
 * it started, its routes in or out, and sent, delivered and failed per
 * hour of the last 24 (kept across restarts).  Written to
 * status/daemon.json (its format in spool/metrics.h) every
 * METRICS_EVERY seconds and when it stops, and as Prometheus' text to
 * metrics-file when the config names one.
 *
 * Receipts and inbound messages may be counted on the keeper's thread:
 * a mutex guards the counts.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "base/log.h"
#include "base/netfs.h"
#include "spool/metrics.h"
#include "spool/spool.h"
#include "daemon/daemon.h"
#include "daemon/daemon_metrics.h"

#define HOURS	24

/* Each counter's labels, in the order dmetrics_count takes them. */
static const struct kind {
	const char	*name;
	const char	*labels[5];
} kinds[] = {
	{ "attempts", { "channel", "route", "provider", "result", NULL } },
	{ "completed", { "channel", "status", NULL } },
	{ "receipts", { "provider", NULL } },
	{ "inbound", { "channel", "provider", NULL } },
	{ "webhooks", { "result", NULL } },
};
#define NKINDS	(sizeof(kinds) / sizeof(kinds[0]))

struct dmetrics {
	pthread_mutex_t	 mu;
	/* kind -> {labels joined by TAB -> count} */
	json_t		*counts;
	/* provider -> {"buckets": [...], "count", "sum"} */
	json_t		*durations;
	json_t		*hours;		/* as in daemon.json */
	time_t		 started;
	time_t		 next_write;
};

struct dmetrics *
dmetrics_new(struct spool *s, time_t now)
{
	struct dmetrics	*m;
	json_t		*prev, *h;
	size_t		 i;

	if ((m = calloc(1, sizeof(*m))) == NULL)
		return NULL;
	pthread_mutex_init(&m->mu, NULL);
	m->counts = json_object();
	m->durations = json_object();
	m->hours = json_array();
	m->started = now;
	m->next_write = now;
	/* The hours of the last run, so that 24 hours survive a restart. */
	if ((prev = spool_status_get(s, METRICS_STATUS)) != NULL) {
		json_array_foreach(json_object_get(prev, "hours"), i, h)
			if (json_integer_value(json_object_get(h, "hour")) >
			    now - HOURS * 3600)
				json_array_append(m->hours, h);
		json_decref(prev);
	}
	return m;
}

void
dmetrics_free(struct dmetrics *m)
{
	if (m == NULL)
		return;
	json_decref(m->counts);
	json_decref(m->durations);
	json_decref(m->hours);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

void
dmetrics_count(struct dmetrics *m, const char *kind,
    const char *const *values)
{
	json_t		*k, *c;
	char		 key[1024];
	size_t		 i, n, len = 0;

	if (m == NULL)
		return;
	for (i = 0; i < NKINDS && strcmp(kinds[i].name, kind) != 0; i++)
		;
	if (i == NKINDS)
		return;
	key[0] = '\0';
	for (n = 0; kinds[i].labels[n] != NULL; n++) {
		len += (size_t)snprintf(key + len, sizeof(key) - len, "%s%s",
		    n > 0 ? "\t" : "", values[n] != NULL ? values[n] : "");
		if (len >= sizeof(key))
			return;
	}
	pthread_mutex_lock(&m->mu);
	if ((k = json_object_get(m->counts, kind)) == NULL) {
		k = json_object();
		json_object_set_new(m->counts, kind, k);
	}
	c = json_object_get(k, key);
	json_object_set_new(k, key, json_integer(json_integer_value(c) + 1));
	pthread_mutex_unlock(&m->mu);
}

void
dmetrics_duration(struct dmetrics *m, const char *provider, double secs)
{
	json_t	*p, *b;
	size_t	 i;

	if (m == NULL || provider == NULL)
		return;
	pthread_mutex_lock(&m->mu);
	if ((p = json_object_get(m->durations, provider)) == NULL) {
		b = json_array();
		for (i = 0; i < METRICS_NBUCKETS; i++)
			json_array_append_new(b, json_integer(0));
		p = json_pack("{s:o, s:i, s:f}", "buckets", b, "count", 0,
		    "sum", 0.0);
		json_object_set_new(m->durations, provider, p);
	}
	b = json_object_get(p, "buckets");
	for (i = 0; i < METRICS_NBUCKETS; i++)
		if (secs <= metrics_buckets[i])
			json_array_set_new(b, i, json_integer(
			    json_integer_value(json_array_get(b, i)) + 1));
	json_object_set_new(p, "count", json_integer(json_integer_value(
	    json_object_get(p, "count")) + 1));
	json_object_set_new(p, "sum", json_real(json_number_value(
	    json_object_get(p, "sum")) + secs));
	pthread_mutex_unlock(&m->mu);
}

void
dmetrics_hour(struct dmetrics *m, const char *field, time_t now)
{
	json_t		*h = NULL, *e;
	json_int_t	 hour = (json_int_t)(now - now % 3600);
	size_t		 i;

	if (m == NULL)
		return;
	pthread_mutex_lock(&m->mu);
	json_array_foreach(m->hours, i, e)
		if (json_integer_value(json_object_get(e, "hour")) == hour)
			h = e;
	if (h == NULL) {
		h = json_pack("{s:I, s:i, s:i, s:i}", "hour", hour, "sent", 0,
		    "delivered", 0, "failed", 0);
		json_array_append_new(m->hours, h);
	}
	json_object_set_new(h, field, json_integer(json_integer_value(
	    json_object_get(h, field)) + 1));
	pthread_mutex_unlock(&m->mu);
}

/* The document of status/daemon.json, under the lock. */
static json_t *
document(struct daemon *d, struct dmetrics *m, time_t now)
{
	json_t		*doc, *a, *e, *v, *h;
	const char	*key, *kv;
	char		 host[256], *copy, *tok, *save;
	size_t		 i, j, n;
	struct route	*r;

	if (netfs_hostname(host, sizeof(host)) == NULL)
		snprintf(host, sizeof(host), "?");
	doc = json_pack("{s:i, s:s, s:s, s:I, s:I}", "pid", (int)getpid(),
	    "host", host, "version", MSGSPOOL_VERSION, "started",
	    (json_int_t)m->started, "heartbeat", (json_int_t)now);
	if (doc == NULL)
		return NULL;
	for (i = 0; i < NKINDS; i++) {
		a = json_array();
		json_object_foreach(json_object_get(m->counts, kinds[i].name),
		    key, v) {
			if ((copy = strdup(key)) == NULL)
				continue;
			e = json_object();
			/* strsep keeps the empty values. */
			save = copy;
			for (n = 0; kinds[i].labels[n] != NULL; n++) {
				tok = strsep(&save, "\t");
				json_object_set_new(e, kinds[i].labels[n],
				    json_string(tok != NULL ? tok : ""));
			}
			free(copy);
			json_object_set(e, "count", v);
			json_array_append_new(a, e);
		}
		json_object_set_new(doc, kinds[i].name, a);
	}
	a = json_array();
	json_object_foreach(m->durations, kv, v) {
		e = json_pack("{s:s, s:[f,f,f,f,f,f,f,f,f], s:O, s:O, s:O}",
		    "provider", kv, "le", metrics_buckets[0],
		    metrics_buckets[1], metrics_buckets[2], metrics_buckets[3],
		    metrics_buckets[4], metrics_buckets[5], metrics_buckets[6],
		    metrics_buckets[7], metrics_buckets[8], "buckets",
		    json_object_get(v, "buckets"), "count",
		    json_object_get(v, "count"), "sum",
		    json_object_get(v, "sum"));
		json_array_append_new(a, e);
	}
	json_object_set_new(doc, "durations", a);
	a = json_array();
	for (i = 0; i < d->nroutes; i++) {
		r = d->routes[i];
		/* The test keys' route is no operator's. */
		if (strcmp(r->section, PROVIDER_TEST_SECTION) == 0)
			continue;
		json_array_append_new(a, json_pack("{s:s, s:i}", "route",
		    r->name != NULL ? r->name : r->section, "up",
		    r->out_until == 0 && !r->probing &&
		    (r->provider->ready == NULL || r->provider->ready(r->state))
		    ? 1 : 0));
	}
	json_object_set_new(doc, "routes", a);
	/* The last 24 hours, oldest first. */
	a = json_array();
	for (j = HOURS; j-- > 0;) {
		json_int_t want = (json_int_t)(now - now % 3600) -
		    (json_int_t)j * 3600;

		json_array_foreach(m->hours, i, h)
			if (json_integer_value(json_object_get(h, "hour")) ==
			    want)
				json_array_append(a, h);
	}
	json_array_clear(m->hours);
	json_array_extend(m->hours, a);
	json_object_set_new(doc, "hours", a);
	return doc;
}

/* Write text to path whole: a temporary file beside it, renamed. */
static int
write_file(const char *path, const char *text, size_t len)
{
	char	tmp[4096];
	int	fd;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path,
	    (int)getpid()) >= sizeof(tmp))
		return -1;
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0644)) == -1)
		return -1;
	if (write(fd, text, len) != (ssize_t)len) {
		close(fd);
		unlink(tmp);
		return -1;
	}
	if (close(fd) == -1 || rename(tmp, path) == -1) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

void
dmetrics_write(struct daemon *d, time_t now)
{
	struct dmetrics	*m = d->metrics;
	struct buf	 b = { 0 };
	json_t		*doc;
	char		*path;

	if (m == NULL)
		return;
	m->next_write = now + METRICS_EVERY;
	pthread_mutex_lock(&m->mu);
	doc = document(d, m, now);
	pthread_mutex_unlock(&m->mu);
	if (doc == NULL || spool_status_put(d->spool, METRICS_STATUS, doc)
	    == -1)
		log_warn("status/%s.json: cannot be written: %s",
		    METRICS_STATUS, strerror(errno));
	if ((path = config_path(d->cfg, NULL, "metrics-file", NULL)) != NULL) {
		if (metrics_render(d->spool, doc, now, &b) == -1 ||
		    write_file(path, b.p, b.len) == -1)
			log_warn("metrics-file %s: cannot be written: %s",
			    path, strerror(errno));
		buf_free(&b);
		free(path);
	}
	json_decref(doc);
}

void
dmetrics_tick(struct daemon *d, time_t now)
{
	if (d->metrics != NULL && now >= d->metrics->next_write)
		dmetrics_write(d, now);
}
