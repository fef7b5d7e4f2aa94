/*
 * daemon_metrics.h: msgspoold's counts for GET /metrics and the console,
 * written to status/daemon.json and metrics-file (daemon_metrics.c;
 * msgspoold(8), Metrics).
 */
#ifndef DAEMON_METRICS_H
#define DAEMON_METRICS_H

#include <time.h>

struct daemon;
struct dmetrics;
struct spool;

#define METRICS_EVERY	15	/* seconds between writes */

/* Counts from now; the hours of status/daemon.json kept.  NULL: none. */
struct dmetrics	*dmetrics_new(struct spool *, time_t now);
void		 dmetrics_free(struct dmetrics *);
/*
 * One more of kind ("attempts", "completed", "receipts", "inbound",
 * "webhooks") with these label values, in spool/metrics.h's order.  A
 * NULL m counts nothing.  Safe from any thread.
 */
void		 dmetrics_count(struct dmetrics *m, const char *kind,
		    const char *const *values);
/* A provider's request that took secs. */
void		 dmetrics_duration(struct dmetrics *m, const char *provider,
		    double secs);
/* One more "sent", "delivered" or "failed" in the hour of now. */
void		 dmetrics_hour(struct dmetrics *m, const char *field,
		    time_t now);
/* Write the state (and metrics-file) now; when due. */
void		 dmetrics_write(struct daemon *, time_t now);
void		 dmetrics_tick(struct daemon *, time_t now);

#endif
