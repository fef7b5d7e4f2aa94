/*
 * daemon_chores.c: msgspoold's housekeeping (msgspoold(8)): deferred/
 * promoted when due, receipts applied, inbound messages handed to their
 * clients, dead claims returned, new/ read again, old files pruned.  On
 * a spool of this host's own the loop does it between transfers.  On a
 * shared spool (msgspool-spool(5), Several hosts, one spool) the
 * keeper's housekeeping thread (claimkeep.h) does the spool's part, so
 * that a server that stops answering halfway through stalls no
 * transfer: the loop only hands the work over and collects what came of
 * it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <jansson.h>

#include "base/log.h"
#include "daemon/claimkeep.h"
#include "daemon/recorder.h"
#include "daemon/webhook.h"
#include "http/idem.h"
#include "smpp/provider_smpp.h"
#include "spool/blob.h"
#include "spool/inbox.h"
#include "spool/list.h"
#include "spool/spool.h"

#include "daemon/daemon.h"
#include "daemon/daemon_metrics.h"

/* One run of housekeeping on the keeper's thread: what is due, then
 * what came of it. */
struct tidy {
	const struct config	*cfg;	/* the loop reloads none meanwhile */
	time_t			 now;
	long			 retention, idem_ttl, parts_wait;
	int			 promote, receipts, prune;
	size_t			 promoted;
	time_t			 next;	/* deferred/'s next due, 0: none */
	int			 events;
	int			 queued;	/* a message into new/ */
	struct dmetrics		*metrics;
};

/* Files past their time: tmp/, keys, sent/, attachments, uploads. */
static void
prune(struct spool *s, time_t now, long retention, long idem_ttl)
{
	size_t	n;

	/* Never a request's held messages while its key lives. */
	if ((n = spool_prune(s, SPOOL_TMP, now - (TMP_MAX_AGE > idem_ttl +
	    3600 ? TMP_MAX_AGE : idem_ttl + 3600)) + spool_tmp_sweep(s)))
		log_info("removed %zu stale files from tmp/", n);
	if ((n = idem_prune(s, now - idem_ttl)))
		log_info("removed %zu expired idempotency keys", n);
	if ((n = spool_prune(s, SPOOL_SENT, now - retention)))
		log_info("pruned %zu sent messages", n);
	if ((n = spool_area_prune(s, INBOX_AREA, now - retention)))
		log_info("pruned %zu inbound messages", n);
	/* The clients' lists lose what went, and the lines behind. */
	if ((n = list_compact(s, now, retention)))
		log_info("lists: %zu messages gone from them", n);
	/* After sent/: attachments of messages gone from every state
	 * (blobs/ is made here at start when it is missing). */
	if ((n = blob_prune(s, now - TMP_MAX_AGE)))
		log_info("removed %zu stored attachments of messages no "
		    "longer spooled", n);
	spool_upload_prune(s, now - SPOOL_UPLOAD_TTL);
	/* A provider's id outlives its message in sent/ no longer. */
	spool_area_prune(s, "index", now - retention);
}

/* When deferred/ is next looked at: its next due, within PROMOTE_EVERY. */
static time_t
promote_next(time_t now, time_t next)
{
	return next > 0 && next < now + PROMOTE_EVERY ? next :
	    now + PROMOTE_EVERY;
}

/*
 * Receipts applied, SMPP parts that waited long enough kept as they are,
 * inbound messages handed to their clients.  Whether an event was made;
 * *queued whether a message was queued (a keyword's reply).
 */
static int
receive(struct spool *s, const struct config *cfg, time_t now,
    long parts_wait, int *queued, struct dmetrics *metrics)
{
	struct receipts_run	 rr = { s, cfg, 0, 0, metrics };

	spool_area_scan(s, "receipts", apply_receipt, &rr);
	smpp_parts_join(s, cfg, NULL, now, parts_wait);
	spool_area_scan(s, INBOX_NEW_AREA, hand_inbound, &rr);
	*queued = rr.queued;
	return rr.events;
}

/* On the keeper's housekeeping thread, with its spool handle. */
static void
tidy_run(struct spool *s, void *arg)
{
	struct tidy		*t = arg;

	if (t->promote)
		t->promoted = spool_promote(s, t->now, &t->next);
	if (t->receipts)
		t->events = receive(s, t->cfg, t->now, t->parts_wait,
		    &t->queued, t->metrics);
	if (t->prune)
		prune(s, t->now, t->retention, t->idem_ttl);
}

/*
 * A shared spool: collect the run that ended, and hand over what is due
 * unless one still runs or hold (a reload waits for none to run).
 */
static void
tidy_shared(struct daemon *d, time_t now, int hold)
{
	struct tidy	*t;

	if ((t = keeper_tidied(d->keeper)) != NULL) {
		if (t->promoted > 0 || t->queued)
			d->new_dirty = 1;
		/* inotify may have seen one due sooner meanwhile. */
		if (t->promote && promote_next(t->now, t->next) <
		    d->next_promote)
			d->next_promote = promote_next(t->now, t->next);
		if (t->events)
			webhooks_poke(d->wh);
		free(t);
		d->tidying = NULL;
	}
	if (d->tidying != NULL || hold || (now < d->next_promote &&
	    now < d->next_receipts && now < d->next_prune))
		return;
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return;
	t->cfg = d->cfg;
	t->now = now;
	t->retention = d->retention;
	t->idem_ttl = d->idem_ttl;
	t->parts_wait = d->parts_wait;
	t->metrics = d->metrics;
	t->promote = now >= d->next_promote;
	t->receipts = now >= d->next_receipts;
	t->prune = now >= d->next_prune;
	if (keeper_tidy(d->keeper, tidy_run, t) != 0) {
		free(t);
		return;
	}
	d->tidying = t;
	/* Until it is collected: then deferred/'s own time. */
	if (t->promote)
		d->next_promote = now + PROMOTE_EVERY;
	if (t->receipts)
		d->next_receipts = now + RECEIPT_EVERY;
	if (t->prune)
		d->next_prune = now + PRUNE_EVERY;
}

/* Housekeeping that is due; hold: start none on the keeper's thread. */
void
chores(struct daemon *d, time_t now, int hold)
{
	time_t	next, since;
	int	queued = 0;

	/*
	 * On a shared spool whose server does not answer a keeper's thread
	 * (claimkeep.h), the loop leaves the spool alone: the transfers under
	 * way go on.
	 */
	if (d->keeper != NULL && (keeper_stuck(d->keeper, now) ||
	    (d->rec != NULL && (since = recorder_busy_since(d->rec)) != 0 &&
	    now - since >= KEEP_STUCK))) {
		if (!d->spool_away)
			log_warn("spool: its server has not answered for %d s: "
			    "claims, records and housekeeping wait, transfers "
			    "under way go on", KEEP_STUCK);
		d->spool_away = 1;
		return;
	}
	if (d->spool_away) {
		log_info("spool: its server answers again");
		d->spool_away = 0;
	}

	if (d->keeper != NULL)
		tidy_shared(d, now, hold);
	else {
		if (now >= d->next_promote) {
			if (spool_promote(d->spool, now, &next) > 0)
				d->new_dirty = 1;
			d->next_promote = promote_next(now, next);
		}
		if (now >= d->next_receipts) {
			if (receive(d->spool, d->cfg, now, d->parts_wait,
			    &queued, d->metrics))
				webhooks_poke(d->wh);
			if (queued)
				d->new_dirty = 1;
			d->next_receipts = now + RECEIPT_EVERY;
		}
	}
	webhooks_run(d->wh, now);
	dmetrics_tick(d, now);
	/* On a shared spool the keeper's claiming thread does it. */
	if (now >= d->next_recover) {
		if (d->keeper == NULL && spool_recover(d->spool) > 0)
			d->new_dirty = 1;
		d->next_recover = now + (d->netfs ? NETFS_RECOVER_EVERY :
		    RECOVER_EVERY);
	}
	if (now >= d->next_rescan) {
		d->new_dirty = 1;
		d->next_rescan = now + (d->netfs ? NETFS_RESCAN_EVERY :
		    RESCAN_EVERY);
	}
	if (d->keeper == NULL && now >= d->next_prune) {
		prune(d->spool, now, d->retention, d->idem_ttl);
		d->next_prune = now + PRUNE_EVERY;
	}
}

/* After keeper_free: a run handed over and never collected. */
void
chores_end(struct daemon *d)
{
	free(d->tidying);
	d->tidying = NULL;
}
