/*
 * webhook.h: msgspoold's delivery of webhook events to clients
 * (msgspoold(8), Webhooks; lib/spool/event.h for the events themselves).
 *
 * Events due in events/ are POSTed on the daemon's curl multi handle,
 * at most a cap at once, never counted against messages, and shared
 * among clients in turn, each to its share (policy.h): a slow or dead
 * client endpoint holds only its own.  Each is signed per
 * Standard Webhooks with its client's secret, read afresh for each try
 * (so a new secret from "msgspool webhook-secret" takes effect at once).
 */
#ifndef WEBHOOK_H
#define WEBHOOK_H

#include <stddef.h>
#include <time.h>
#include <curl/curl.h>

#include "base/config.h"
#include "spool/spool.h"

struct webhooks;
struct dmetrics;

/*
 * A sender on multi (borrowed).  schedule: the retry waits in seconds
 * ("5,300"; NULL: POLICY_WEBHOOK_SCHEDULE), for tests.  once: scan
 * events/ only when poked (msgspoold --once), not every second.  NULL
 * when schedule is not valid or out of memory.
 */
struct webhooks	*webhooks_new(CURLM *multi, const char *schedule, int once);
/* Where each delivery's result is counted (daemon_metrics.h); NULL: not. */
void		 webhooks_metrics(struct webhooks *, struct dmetrics *);

/* Abort the transfers in flight (their events stay due) and free. */
void		 webhooks_free(struct webhooks *);

/* The config and spool to use (borrowed) and the transfer cap. */
void		 webhooks_configure(struct webhooks *, const struct config *,
		    struct spool *, size_t cap);

/* Events were stored: scan events/ at the next run. */
void		 webhooks_poke(struct webhooks *);

/* Start what is due, when a scan is due (poked, or each second). */
void		 webhooks_run(struct webhooks *, time_t now);

/*
 * If easy is a webhook transfer, record its outcome (rc, HTTP code,
 * Retry-After seconds) and return 1; else 0.
 */
int		 webhooks_reap(struct webhooks *, CURL *easy, CURLcode rc,
		    long code, long retry_after);

/* Whether transfers are in flight or a scan is pending. */
int		 webhooks_busy(const struct webhooks *);

/* Whether a scan is pending (poked). */
int		 webhooks_dirty(const struct webhooks *);

#endif
