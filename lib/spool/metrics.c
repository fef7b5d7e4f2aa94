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
	struct metrics_state	 qs[METRICS_NSTATES];
	const char		*lv[5];
	const json_t		*e;
	struct statvfs		 vfs;
	long long		 t;
	size_t			 i;
	int			 c;

	if (metrics_queue(s, qs) == -1)
		return -1;

	header(out, "msgspool_queue_messages", "gauge",
	    "Messages in the spool by state and channel.");
	for (i = 0; i < METRICS_NSTATES; i++)
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

