/*
 * daemon_batch.c: a batch of outcomes written (msgspoold(8), Claims): on
 * the recorder's thread (recorder.h), with its own spool handle, or on
 * the loop when it cannot take it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "base/log.h"
#include "daemon/claimkeep.h"
#include "daemon/daemon.h"
#include "spool/event.h"
#include "spool/msgdoc.h"
#include "spool/spool.h"

void
batch_free(struct batch *b)
{
	size_t	i;

	if (b == NULL)
		return;
	for (i = 0; i < b->nevs; i++)
		json_decref(b->evs[i]);
	free(b->jobs);
	free(b->items);
	free(b->evs);
	free(b->evitem);
	free(b);
}

/*
 * The spool's part of flush_done, on the recorder's thread with its own
 * handle: events, outcomes, the index, the log lines.
 */
void
record_batch(struct spool *s, void *arg)
{
	struct batch		 *b = arg;
	struct job		 *job;
	struct spool_item	 *rec;
	const json_t		**evs;
	const char		 *id;
	char			  evname[SPOOL_NAME_MAX];
	size_t			  i, j, nrec = 0, nevs = 0;
	int			 *lost;

	/*
	 * Each claim proved once more just before it is recorded: one lost
	 * while this batch waited (the server away) records nothing, not
	 * even its event.
	 */
	rec = calloc(b->n, sizeof(*rec));
	lost = calloc(b->n, sizeof(*lost));
	evs = calloc(b->nevs ? b->nevs : 1, sizeof(*evs));
	if (rec == NULL || lost == NULL || evs == NULL) {
		for (i = 0; i < b->n; i++)
			b->items[i].status = MSG_TEMPFAIL;
		goto log;
	}
	for (i = 0; i < b->n; i++)
		if (b->jobs[i]->kept != NULL &&
		    keeper_prove(b->jobs[i]->kept) == -1) {
			lost[i] = 1;
			log_err("%s: claim lost before its outcome was "
			    "recorded (%s): recording nothing", b->jobs[i]->name,
			    strerror(errno));
		} else
			rec[nrec++] = b->items[i];
	for (i = 0; i < b->nevs; i++)
		if (!lost[b->evitem[i]])
			evs[nevs++] = b->evs[i];
	/* An address gone for good suppressed before the outcome says so. */
	for (i = 0; i < b->n; i++)
		if (!lost[i])
			bounce_outcome(s, b->jobs[i]);
	if (nevs > 0 && spool_area_store(s, EVENT_AREA, evs, nevs) !=
	    MSG_OK)
		log_err("webhooks: cannot store %zu events: %s", nevs,
		    strerror(errno));
	else
		b->poke = nevs > 0;
	spool_commit(s, rec, nrec);
	for (i = j = 0; i < b->n; i++)
		b->items[i].status = lost[i] ? MSG_TEMPFAIL : rec[j++].status;
	for (i = 0; i < b->nevs; i++)
		if (!lost[b->evitem[i]] &&
		    b->items[b->evitem[i]].status != MSG_OK) {
			snprintf(evname, sizeof(evname), "%s.json",
			    event_id(b->evs[i]));
			spool_area_remove(s, EVENT_AREA, evname);
		}
log:
	for (i = 0; i < b->n; i++) {
		job = b->jobs[i];
		id = json_string_value(json_object_get(job->doc, "id"));
		if (lost != NULL && lost[i])
			continue;
		if (b->items[i].status != MSG_OK) {
			log_err("%s: cannot record the outcome", id);
			b->errors++;
		} else if (b->items[i].dir == SPOOL_SENT &&
		    index_provider_id(s, job->doc) == 0)
			log_info("sent %s channel=%s to=%s", id,
			    json_string_value(json_object_get(job->doc,
			    "channel")), msgdoc_recipient(job->doc));
		else
			log_warn("%s %s to=%s attempts=%lld: %s",
			    b->items[i].dir == SPOOL_DEFERRED ? "deferred" :
			    "failed", id, msgdoc_recipient(job->doc),
			    (long long)json_integer_value(json_object_get(
			    job->doc, "attempts")), job->err);
	}
	free(rec);
	free(lost);
	free(evs);
}

/*
 * The recorder's work (recorder.h): the batches handed over while it
 * wrote the last, recorded as one, so that they share its syncs.
 */
void
record_batches(struct spool *s, void **args, size_t n)
{
	struct batch	 m, *b;
	size_t		 i, j, k, total = 0, nevs = 0;

	if (n == 1) {
		record_batch(s, args[0]);
		return;
	}
	for (i = 0; i < n; i++) {
		total += ((struct batch *)args[i])->n;
		nevs += ((struct batch *)args[i])->nevs;
	}
	memset(&m, 0, sizeof(m));
	m.jobs = calloc(total, sizeof(*m.jobs));
	m.items = calloc(total, sizeof(*m.items));
	m.evs = calloc(nevs ? nevs : 1, sizeof(*m.evs));
	m.evitem = calloc(nevs ? nevs : 1, sizeof(*m.evitem));
	if (m.jobs == NULL || m.items == NULL || m.evs == NULL ||
	    m.evitem == NULL) {
		/* Out of memory: each alone, as handed over. */
		for (i = 0; i < n; i++)
			record_batch(s, args[i]);
		goto out;
	}
	for (i = 0; i < n; i++) {
		b = args[i];
		for (j = 0; j < b->nevs; j++) {
			m.evs[m.nevs] = b->evs[j];
			m.evitem[m.nevs++] = m.n + b->evitem[j];
		}
		memcpy(m.jobs + m.n, b->jobs, b->n * sizeof(*m.jobs));
		memcpy(m.items + m.n, b->items, b->n * sizeof(*m.items));
		m.n += b->n;
	}
	record_batch(s, &m);
	for (i = k = 0; i < n; i++) {
		b = args[i];
		b->poke = m.poke;
		/* Only their sum is counted (batch_done): all in the first. */
		b->errors = i == 0 ? m.errors : 0;
		for (j = 0; j < b->n; j++, k++)
			b->items[j].status = m.items[k].status;
	}
out:
	free(m.jobs);
	free(m.items);
	free(m.evs);
	free(m.evitem);
}

