/*
 * daemon_record.c: msgspoold records outcomes (msgspool-spool(5)): each
 * finished attempt written into its document and moved to sent/,
 * deferred/ or failed/, with its events, every finished job at once in
 * one commit, by the recorder's thread (recorder.h).
 */
#include <pthread.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/channel.h"
#include "base/config.h"
#include "base/log.h"
#include "base/netfs.h"
#include "base/valid.h"
#include "daemon/claimkeep.h"
#include "daemon/daemon.h"
#include "daemon/daemon_metrics.h"
#include "daemon/recorder.h"
#include "daemon/webhook.h"
#include "http/idem.h"
#include "http/rate.h"
#include "providers/policy.h"
#include "providers/provider.h"
#include "spool/blob.h"
#include "spool/event.h"
#include "spool/receipt.h"
#include "spool/spool.h"
#include "spool/suppress.h"

/*
 * A job is freed here, where its outcome is recorded: its transfer, its
 * documents and its claim (released, or its lock closed: the claim ends).
 */
void
job_free(struct job *job)
{
	if (job == NULL)
		return;
	if (job->easy != NULL)
		curl_easy_cleanup(job->easy);
	curl_slist_free_all(job->headers);
	curl_slist_free_all(job->rcpts);
	free(job->body);
	buf_free(&job->resp);
	json_decref(job->reply);
	json_decref(job->doc);
	if (job->kept != NULL)
		keeper_release(job->kept);	/* not closed here: may block */
	else if (job->lockfd != -1)
		close(job->lockfd);	/* the claim ends here */
	free(job);
}

int
job_refused(struct job *job, json_t *sup, int superr)
{
	char	why[64];

	if (sup != NULL) {
		/* Never handed to a provider: failed, and said why. */
		suppress_why(sup, why, sizeof(why));
		json_decref(sup);
		job->status = MSG_PERMFAIL;
		snprintf(job->err, sizeof(job->err), "the recipient is %s",
		    why);
		json_decref(job->reply);
		job->reply = json_pack("{s:s}", "code", "suppressed");
		log_info("%s: not sent: the recipient is %s", job->name, why);
		return 1;
	}
	if (superr == 0)
		return 0;
	job->status = MSG_TEMPFAIL;
	snprintf(job->err, sizeof(job->err), "the recipient's suppressions "
	    "cannot be read: %s", strerror(superr));
	log_err("%s: %s", job->name, job->err);
	return 1;
}

/*
 * An attempt's outcome for GET /metrics: its result, a final failure,
 * the hour's sent or failed.
 */
static void
count_attempt(struct daemon *d, const struct job *job, const char *route,
    enum msg_status st, time_t now)
{
	const char	*v[5];

	v[0] = json_string_value(json_object_get(job->doc, "channel"));
	v[1] = route;
	v[2] = job->route->provider->name;
	v[3] = st == MSG_OK ? "sent" : st == MSG_TEMPFAIL ? "retry" :
	    "failed";
	v[4] = NULL;
	dmetrics_count(d->metrics, "attempts", v);
	if (st == MSG_TEMPFAIL)
		return;
	dmetrics_hour(d->metrics, st == MSG_OK ? "sent" : "failed", now);
	if (st != MSG_OK) {
		v[1] = "failed";
		v[2] = NULL;
		dmetrics_count(d->metrics, "completed", v);
	}
}

/*
 * Write the outcome of an attempt into the document and say where it
 * goes: sent/, deferred/ (with the next attempt) or failed/.
 */
static enum spool_dir
outcome(struct daemon *d, struct job *job)
{
	enum msg_status	 st;
	const char	*gave_up;
	struct timespec	 ts;
	time_t		 now, next = 0;
	char		 section[64];
	const char	*route;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = ts.tv_sec;
	st = policy_max_age(job->status, now, msgdoc_age_from(job->doc),
	    d->max_age, &gave_up);
	/* The provider's Retry-After, when it gave one, wins. */
	/* Backoff counts the waits, not each route of a failover. */
	if (st == MSG_TEMPFAIL)
		next = policy_not_before(&ts, job->retry_after > 0 ?
		    job->retry_after : policy_backoff(msgdoc_attempts(job->doc) +
		    2 - (long)job->tried, policy_jitter()));
	msgdoc_attempt(job->doc, st, job->err, job->reply, now, next,
	    gave_up);
	/*
	 * The route that tried it (msgspool-spool(5), route), on the
	 * document and its attempt's event; a test key's is its channel's,
	 * as a live key's message names it.
	 */
	if (job->route != NULL) {
		route = job->route->name != NULL ? job->route->name :
		    strcmp(job->route->section, PROVIDER_TEST_SECTION) != 0 ?
		    job->route->section : channel_section(job->doc, section,
		    sizeof(section));
		msgdoc_set_route(job->doc, route);
		msgdoc_event_note(job->doc, route, st != MSG_OK ? job->err :
		    NULL);
		count_attempt(d, job, route, st, now);
	}
	return st == MSG_OK ? SPOOL_SENT : st == MSG_TEMPFAIL ?
	    SPOOL_DEFERRED : SPOOL_FAILED;
}

/*
 * On a shared spool, before recording: a job whose claim was lost is
 * dropped (another host has the message: nothing is recorded, the
 * claim is let go), one whose claim was not proved lately waits (its
 * proof is asked for).  The jobs to record now are left first in
 * d->done (d->ndone of them), the waiting ones after them; returns how
 * many wait.
 */
static size_t
hold_unproved(struct daemon *d)
{
	struct job	**v = d->done;
	size_t		  i, n = 0, w = 0, total = d->ndone;
	time_t		  now = time(NULL);

	if (d->keeper == NULL)
		return 0;
	for (i = 0; i < total; i++) {
		if (v[i]->kept == NULL) {
			v[n++] = v[i];
			continue;
		}
		switch (keeper_state(d->keeper, v[i]->kept, now)) {
		case KEEP_OK:
			v[n++] = v[i];
			break;
		case KEEP_LOST:
			log_err("%s: claim lost before its outcome was "
			    "recorded: recording nothing", v[i]->name);
			job_free(v[i]);
			break;
		case KEEP_DOUBT:
			keeper_poke(d->keeper, v[i]->kept);
			/* Kept after the others, in order. */
			v[total - 1 - w++] = v[i];
			break;
		}
	}
	/* The waiting ones were stacked from the end: put them right after. */
	for (i = 0; i < w; i++)
		v[n + i] = v[total - 1 - i];
	d->ndone = n;
	return w;
}

static void batch_done(struct daemon *, struct batch *);

/*
 * d->done[0 .. d->ndone) as a batch, their outcomes decided here (so
 * never decided again, wherever they are written); NULL out of memory.
 */
static struct batch *
batch_of(struct daemon *d)
{
	struct batch	*b;
	json_t		*ev;
	size_t		 i, n = d->ndone;
	time_t		 now = time(NULL);

	if ((b = calloc(1, sizeof(*b))) == NULL ||
	    (b->jobs = calloc(n, sizeof(*b->jobs))) == NULL ||
	    (b->items = calloc(n, sizeof(*b->items))) == NULL ||
	    (b->evs = calloc(n, sizeof(*b->evs))) == NULL ||
	    (b->evitem = calloc(n, sizeof(*b->evitem))) == NULL) {
		batch_free(b);
		return NULL;
	}
	b->n = n;
	for (i = 0; i < n; i++) {
		b->jobs[i] = d->done[i];
		b->items[i].doc = d->done[i]->doc;
		b->items[i].dir = outcome(d, d->done[i]);
		b->items[i].name = d->done[i]->name;
		b->items[i].from = SPOOL_CUR;
		/* sent or failed: its client's event, if wanted. */
		if (b->items[i].dir != SPOOL_DEFERRED &&
		    (ev = event_of(d->cfg, d->done[i]->doc,
		    spool_dirname(b->items[i].dir), now)) != NULL) {
			b->evs[b->nevs] = ev;
			b->evitem[b->nevs++] = i;
		}
	}
	return b;
}

/* A recorded batch: the events announced, the claims ended. */
static void
batch_done(struct daemon *d, struct batch *b)
{
	size_t	i;

	if (b->poke)
		webhooks_poke(d->wh);
	d->spool_errors += b->errors;
	for (i = 0; i < b->n; i++) {
		/* The claim ends: its owner record goes with it. */
		if (b->jobs[i]->kept == NULL && b->jobs[i]->lockfd != -1) {
			spool_release(d->spool, b->jobs[i]->name,
			    b->jobs[i]->lockfd);
			b->jobs[i]->lockfd = -1;
		}
		job_free(b->jobs[i]);
	}
	d->recording -= b->n;
	batch_free(b);
}

/* Take back the batches the recorder's thread recorded. */
void
collect_recorded(struct daemon *d)
{
	struct batch	*b;

	if (d->rec != NULL)
		while ((b = recorder_recorded(d->rec)) != NULL)
			batch_done(d, b);
}

/*
 * Record every finished job at once: one spool_commit, so the directory
 * syncs are shared; by the recorder's thread, or here when it cannot
 * take them.  Only then are the claims released (batch_done).
 */
void
flush_done(struct daemon *d)
{
	struct batch	*b;
	struct job	*job;
	size_t		 i, held;

	/* Only claims proved lately are recorded (claimkeep.h). */
	held = hold_unproved(d);
	if (d->ndone == 0) {
		d->ndone = held;
		return;
	}
	if ((b = batch_of(d)) != NULL) {
		d->recording += b->n;
		if (d->rec == NULL || recorder_run(d->rec, b) == -1) {
			record_batch(d->spool, b);
			batch_done(d, b);
		}
	} else
		for (i = 0; i < d->ndone; i++) {
			/* Left in cur/: recovery returns it to new/. */
			job = d->done[i];
			log_err("%s: cannot record the outcome (out of "
			    "memory)", job->name);
			d->spool_errors++;
			if (job->kept == NULL && job->lockfd != -1) {
				spool_release(d->spool, job->name,
				    job->lockfd);
				job->lockfd = -1;
			}
			job_free(job);
		}
	/* The claims in doubt wait for their proof, first in line. */
	memmove(d->done, d->done + d->ndone, held * sizeof(*d->done));
	d->ndone = held;
}

static long long
mono_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
flush_wait_ms(struct daemon *d)
{
	long long	now = mono_ms();

	if (d->ndone == 0) {
		d->done_since = 0;
		return FLUSH_WAIT_MS;
	}
	if (d->done_since == 0)
		d->done_since = now;
	return now - d->done_since >= FLUSH_WAIT_MS ? 0 :
	    (int)(FLUSH_WAIT_MS - (now - d->done_since));
}

void
flush_due(struct daemon *d, int now)
{
	/*
	 * The syncs of a commit cost the same for one outcome as for
	 * sixteen: the finished jobs keep their slots (admit) until
	 * enough of them share one.  A recording thread takes them at once:
	 * those handed over while it writes go together next.
	 */
	if (flush_wait_ms(d) == 0 || d->rec != NULL ||
	    now || d->inflight == 0 || d->ndone * 2 >= d->concurrency) {
		flush_done(d);
		if (d->ndone == 0)
			d->done_since = 0;
	}
}
