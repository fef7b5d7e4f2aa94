/*
 * metrics.h: GET /metrics and msgspoold's metrics-file, Prometheus' text
 * format 0.0.4 (msgspool.conf(5) metrics-file, msgspoold(8) Metrics,
 * conf/openapi.yaml /metrics).
 *
 * The gauges of the queue are read from the spool when the text is made:
 * msgspool_queue_messages counts each state's files by readdir, and
 * takes each one's channel from a cache, SPOOL/metrics/queue-STATE (a
 * line "ID C" per file; a message's channel never changes), rewritten
 * when the state's files changed; a file it does not list is read as
 * far as its "channel" (the first 1 KiB; the whole document when the key
 * is not there).  So 100,000 messages cost a readdir and a hash lookup
 * each, and only new ones a read (msgspool-spool(5), metrics/); and a
 * state whose directory has not changed since it was last counted, not
 * even the readdir (SPOOL/metrics/count-STATE, metrics_queue).
 * msgspool_queue_oldest_age_seconds is the time of the least id of
 * new/ and deferred/ (ids start with their time).
 *
 * The counters come from msgspoold's state, SPOOL/status/daemon.json
 * (msgspool-spool(5)), replaced whole every 15 s and when it stops:
 *
 *	{"pid", "host", "version", "started": UNIX, "heartbeat": UNIX,
 *	 "attempts": [{"channel", "route", "provider",
 *	     "result": "sent"|"retry"|"failed", "count"}],
 *	 "completed": [{"channel", "status", "count"}],
 *	 "receipts": [{"provider", "count"}],
 *	 "inbound": [{"channel", "provider", "count"}],
 *	 "webhooks": [{"result": "ok"|"retry"|"failed", "count"}],
 *	 "durations": [{"provider", "le": [0.05, ..., 30],
 *	     "buckets": [cumulative counts], "count", "sum"}],
 *	 "routes": [{"route", "up": 0|1}],
 *	 "hours": [{"hour": UNIX start of the UTC hour,
 *	     "sent", "delivered", "failed"}]}
 *
 * ("hours" the last 24 hours, kept across restarts).  Without the file
 * the counters are left out and the heartbeat is 0.
 *
 * Cancels happen in the CGI programs, not in msgspoold:
 * msgspool_messages_completed_total{status="canceled"} is the counter
 * they keep in the spool (counts.h, COUNTS_CANCELED), shown for each
 * channel that has one.
 */
#ifndef METRICS_H
#define METRICS_H

#include <time.h>
#include <jansson.h>

#include "base/buf.h"
#include "base/channel.h"
#include "base/ulid.h"
#include "spool/spool.h"

/* The version, from the newest entry of debian/changelog (Makefile). */
#ifndef MSGSPOOL_VERSION
#error "MSGSPOOL_VERSION: the Makefile defines it"
#endif

/*
 * The spool's area of the queue's caches (below) and of the CGI
 * programs' counters (counts.h): SPOOL/metrics/.
 */
#define METRICS_AREA	"metrics"

/* The name of msgspoold's state under status/. */
#define METRICS_STATUS	"daemon"

/* The Content-Type of the text. */
#define METRICS_CONTENT_TYPE	"text/plain; version=0.0.4; charset=utf-8"

/* The request durations' bucket bounds, in seconds. */
#define METRICS_NBUCKETS	9
extern const double metrics_buckets[METRICS_NBUCKETS];

/* The states msgspool_queue_messages shows, in its order. */
#define METRICS_NSTATES	5
extern const enum spool_dir metrics_states[METRICS_NSTATES];

/* The messages of one state of the queue. */
struct metrics_state {
	enum spool_dir	 dir;
	unsigned long	 count[CHANNEL__MAX];	/* by channel */
	char		 oldest[ULID_LEN + 1];	/* the least id; "" none */
};

/*
 * The queue: q[i] the messages of metrics_states[i] by channel, counted
 * as this file's head says (metrics_queue.c: a state at rest is not
 * listed again).  0, or -1 (a state directory unreadable).
 */
int	metrics_queue(struct spool *, struct metrics_state q[METRICS_NSTATES]);

/*
 * Append label value v escaped as the format wants (\\, \", \n) to out.
 */
void	metrics_escape(struct buf *out, const char *v);

/*
 * The text of every metric: the queue of spool s at now, the counters
 * of daemon (status/daemon.json's document, or NULL: none).  0, or -1
 * (out of memory, a state directory unreadable).
 */
int	metrics_render(struct spool *s, const json_t *daemon, time_t now,
	    struct buf *out);

#endif
