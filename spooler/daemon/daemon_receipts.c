/*
 * daemon_receipts.c: provider receipts applied by msgspoold
 * (msgspool-spool(5), Receipts): the index of providers' own ids, and
 * each stored receipt matched to its message and recorded.
 */
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
#include "daemon/webhook.h"
#include "http/idem.h"
#include "http/rate.h"
#include "providers/policy.h"
#include "providers/provider.h"
#include "spool/blob.h"
#include "spool/event.h"
#include "spool/list.h"
#include "spool/receipt.h"
#include "spool/spool.h"

/*
 * Remember which message the provider's own id names, so that a
 * receipt that names only that (WhatsApp's wamid) finds it.  0.  Not
 * an email's: its bounce names the message itself (msgspool-bounce(8):
 * the VERP return path, or the Message-ID <ID@domain> msgspool set), so
 * an entry would be a file written for every email and never read.
 */
int
index_provider_id(struct spool *s, const json_t *doc)
{
	const char	*prov = msgdoc_provider(doc), *pmid;
	char		 key[41];
	size_t		 i;

	if (prov == NULL || strcmp(prov, "smtp") == 0)
		return 0;
	/* Each part of a message sent in several has a receipt of its own. */
	for (i = 0; (pmid = msgdoc_provider_part(doc, i)) != NULL; i++) {
		if (pmid[0] == '\0')
			continue;	/* an SMSC that gave none */
		receipt_index_key(prov, pmid, key);
		if (spool_index_put(s, key, msgdoc_id(doc)) == -1)
			log_warn("%s: cannot index %s id %s: its receipts will "
			    "not find it", msgdoc_id(doc), prov, pmid);
	}
	return 0;
}

/*
 * Apply a receipt r to doc (sent/name) and store it, with the event its
 * client wants when the status moved (stored first: a crash between the
 * two sends it twice, never not at all), and the recipient suppressed
 * first when the receipt says it can never be reached.  0, or 1 when it
 * could not be stored (the receipt is kept).
 */
/*
 * A message a receipt made final, for GET /metrics: its status
 * (delivered, read, undelivered, failed) and the hour's delivered.
 */
static void
count_final(struct receipts_run *d, const json_t *doc, const char *was)
{
	static const char *const finals[] = { "delivered", "read",
	    "undelivered", "failed" };
	const char	*now = msgdoc_status(doc, "sent"), *v[3];
	size_t		 i;

	if (d->metrics == NULL || strcmp(was, now) == 0)
		return;
	for (i = 0; i < sizeof(finals) / sizeof(finals[0]); i++)
		if (strcmp(now, finals[i]) == 0) {
			v[0] = json_string_value(json_object_get(doc,
			    "channel"));
			v[1] = now;
			v[2] = NULL;
			dmetrics_count(d->metrics, "completed", v);
			if (i == 0)
				dmetrics_hour(d->metrics, "delivered",
				    time(NULL));
		}
}

static int
record_receipt(struct receipts_run *d, json_t *doc, const char *name,
    const json_t *r, const char *pmid, const char *status, time_t when,
    const json_t *error)
{
	const char	*before;
	char		 ev[SPOOL_NAME_MAX] = "", was[32];
	int		 part;

	before = msgdoc_status(doc, "sent");
	snprintf(was, sizeof(was), "%s", before);
	/* A part's receipt moves the message only when it decides it. */
	if ((status = msgdoc_part_receipt(doc, pmid, status, &part)) == NULL)
		return part && spool_store(d->spool, SPOOL_SENT, name, doc,
		    SPOOL__MAX) != MSG_OK;
	if (!msgdoc_receipt(doc, "sent", status, when, error) && !part) {
		/* Seen before: a crash may have come between its store and
		 * its line in the client's list (list.h), so say it again. */
		if (list_note(d->spool, doc, SPOOL_SENT) == -1)
			log_warn("receipts: %s: the list of its client: %s",
			    name, strerror(errno));
		return 0;
	}
	/* Not stored yet, so a receipt kept for this comes back as new. */
	if (bounce_receipt(d->spool, doc, r) == -1)
		return 1;
	if (strcmp(was, msgdoc_status(doc, "sent")) != 0) {
		if (event_record(d->spool, d->cfg, doc, "sent", time(NULL),
		    ev) != MSG_OK)
			return 1;
		if (ev[0] != '\0')
			d->events = 1;
	}
	if (spool_store(d->spool, SPOOL_SENT, name, doc, SPOOL__MAX) !=
	    MSG_OK) {
		if (ev[0] != '\0')
			spool_area_remove(d->spool, EVENT_AREA, ev);
		return 1;
	}
	count_final(d, doc, was);
	return 0;
}

/*
 * spool_area_scan callback (arg a struct receipts_run): apply one
 * receipt of receipts/ to its message (msgspool-spool(5)).  A receipt
 * whose message has no outcome yet waits for it, at most RECEIPT_KEEP;
 * one for a message that is not ours, or not sent, or that its source
 * may not change (msgdoc_receipt_applies), is dropped with a log line.
 */
int
apply_receipt(void *arg, const char *rname)
{
	struct receipts_run	*d = arg;
	enum spool_dir		 dir;
	const char		*msgid, *pmid, *prov, *status, *at, *recv;
	json_t			*r, *doc;
	char			 key[41], id[SPOOL_ID_LEN + 1];
	char			 name[SPOOL_NAME_MAX], err[512], why[256];
	time_t			 when, got, now = time(NULL);
	int			 keep = 0;

	if ((r = spool_area_load(d->spool, "receipts", rname, err,
	    sizeof(err))) == NULL) {
		if (errno != ENOENT) {
			log_err("receipts: %s; removed", err);
			spool_area_remove(d->spool, "receipts", rname);
		}
		return 0;
	}
	prov = json_string_value(json_object_get(r, "provider"));
	msgid = json_string_value(json_object_get(r, "message"));
	pmid = json_string_value(json_object_get(r, "providerMessageId"));
	status = json_string_value(json_object_get(r, "status"));
	if ((at = json_string_value(json_object_get(r, "at"))) == NULL ||
	    rfc3339_parse(at, &when) == -1)
		when = now;
	if ((recv = json_string_value(json_object_get(r, "received"))) ==
	    NULL || rfc3339_parse(recv, &got) == -1)
		got = now;
	if (msgid == NULL && prov != NULL && pmid != NULL) {
		receipt_index_key(prov, pmid, key);
		if (spool_index_get(d->spool, key, id) == 0)
			msgid = id;
	}
	if (status == NULL)
		;
	else if (msgid == NULL || spool_find(d->spool, msgid, &dir, name) ==
	    -1)
		/* Not recorded yet, or not ours: wait, within reason. */
		keep = msgid == NULL;
	else if (dir == SPOOL_SENT) {
		if ((doc = spool_load(d->spool, dir, name, err,
		    sizeof(err))) == NULL)
			keep = errno == ENOENT;
		else {
			/* Only its sender's receipts (msgspool-spool(5)). */
			if (!msgdoc_receipt_applies(doc, "sent", prov, status,
			    why, sizeof(why)))
				log_warn("receipts: %s %s for %s dropped: %s",
				    prov ? prov : "?", status, msgid, why);
			else if (!(keep = record_receipt(d, doc, name, r,
			    pmid, status, when, json_object_get(r, "error")))) {
				const char *v[2] = { prov, NULL };

				dmetrics_count(d->metrics, "receipts", v);
				log_info("receipt %s: %s %s", msgid, prov,
				    status);
			}
			json_decref(doc);
		}
	} else
		/* Its outcome is not recorded yet: wait for it. */
		keep = dir == SPOOL_NEW || dir == SPOOL_CUR ||
		    dir == SPOOL_DEFERRED;
	if (keep && now - got < RECEIPT_KEEP) {
		json_decref(r);
		return 0;
	}
	if (keep || status == NULL || msgid == NULL)
		log_warn("receipts: %s %s for %s dropped: no message of ours "
		    "to apply it to", prov ? prov : "?", status ? status : "?",
		    msgid ? msgid : pmid ? pmid : "?");
	spool_area_remove(d->spool, "receipts", rname);
	json_decref(r);
	return 0;
}
