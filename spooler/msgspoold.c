/*
 * msgspoold: the spool daemon (msgspoold(8), msgspool-spool(5)).
 *
 *	msgspoold [-c FILE] [--once]
 *
 * It claims each file of new/ (an flock held for as long as the send
 * runs, and a rename into cur/), hands it to the provider its channel's
 * config section names, and records the outcome: sent/ with the
 * provider's reply, deferred/ with a backoff for what may succeed later,
 * failed/ with the reason for what never will.  Transfers run on one
 * curl multi handle, at most "concurrency" at once; once more than one
 * channel is in use, none may take more than three quarters of them, so
 * a slow one cannot starve the others.  inotify on new/ wakes it when a message is queued; deferred
 * files are due at their mtime.  Webhook events to clients (webhook.c)
 * go out on the same multi handle, in a share of their own.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "blob.h"
#include "channel.h"
#include "claimkeep.h"
#include "config.h"
#include "event.h"
#include "idem.h"
#include "log.h"
#include "netfs.h"
#include "policy.h"
#include "rate.h"
#include "receipt.h"
#include "provider.h"
#include "spool.h"
#include "valid.h"
#include "webhook.h"

#define RECOVER_EVERY	30	/* seconds between scans of cur/ */
#define PROMOTE_EVERY	60	/* at most this between scans of deferred/ */
#define RESCAN_EVERY	5	/* fallback scan of new/ without inotify */
#define NETFS_RESCAN_EVERY 1	/* on a network filesystem (inotify sees
				   only this host's files): within 2 s */
#define NETFS_RECOVER_EVERY 5	/* another host's dead claims come back
				   when its lease ends: look often */
#define PRUNE_EVERY	3600
#define TMP_MAX_AGE	(36 * 3600)
#define RECEIPT_KEEP	86400	/* a receipt waits this for its outcome */
#define RECEIPT_EVERY	1	/* seconds between scans of receipts/ */
#define WAIT_SESSIONS_MAX	16	/* sockets of sessions (smpp) waited on */
/* Webhook transfers at most, beside "concurrency" messages. */
#define WEBHOOK_SHARE(conc)	((conc) / 4 > 1 ? (conc) / 4 : 1)

/* A provider instantiated for one config section. */
struct route {
	char			*section;
	const struct provider	*provider;
	void			*state;
	size_t			 inflight;
};

struct daemon {
	const char	*config_path;
	struct config	*cfg;
	struct spool	*spool;
	struct route	**routes;	/* each allocated alone: jobs point
					   at them while the array grows */
	size_t		 nroutes;
	long		 max_age;
	long		 retention;
	long		 idem_ttl;	/* idempotency-ttl */
	size_t		 concurrency;
	size_t		 route_cap;
	struct webhooks	*wh;		/* events to clients */

	CURLM		*multi;
	int		 ino;		/* inotify on new/ and deferred/ */
	int		 wd_new, wd_deferred;
	size_t		 inflight;
	int		 once;
	int		 netfs;		/* the spool is shared with other hosts */
	struct keeper	*keeper;	/* proves claims there (claimkeep.h) */
	size_t		 recording;	/* jobs its thread is recording */
	int		 spool_away;	/* its server does not answer */
	int		 new_dirty;	/* new/ may hold work */
	size_t		 skipped;	/* this scan: of saturated routes */
	time_t		 next_promote, next_recover, next_prune, next_rescan;
	time_t		 next_receipts;
	struct job	**done;		/* finished, outcome not yet recorded */
	size_t		 ndone, donecap;
	size_t		 spool_errors;	/* claims or records the spool refused */
	time_t		 last_spool_log;
};

/* Set by signal handlers, read by the loop: the daemon's only globals. */
static volatile sig_atomic_t stopping, reloading;

static void
on_signal(int sig)
{
	if (sig == SIGHUP)
		reloading = 1;
	else
		stopping = 1;
}

static void
routes_free(struct daemon *d)
{
	size_t	i;

	for (i = 0; i < d->nroutes; i++) {
		d->routes[i]->provider->free_state(d->routes[i]->state);
		free(d->routes[i]->section);
		free(d->routes[i]);
	}
	free(d->routes);
	d->routes = NULL;
	d->nroutes = 0;
}

/*
 * The route of a config section, made on first use.  NULL with a reason
 * in err when the section names an unknown provider or its keys are bad.
 */
static struct route *
route_get(struct daemon *d, const char *section, const char *channel,
    char *err, size_t errlen)
{
	const struct provider	*p;
	struct route		*r, **v;
	const char		*name;
	void			*state;
	size_t			 i;

	for (i = 0; i < d->nroutes; i++)
		if (strcmp(d->routes[i]->section, section) == 0)
			return d->routes[i];
	if ((name = config_get(d->cfg, section, "provider")) == NULL)
		name = "file";
	/* A test key's messages go nowhere a config could name. */
	if (strcmp(section, PROVIDER_TEST_SECTION) == 0) {
		p = &provider_test;
		name = p->name;
	} else if ((p = provider_find(name)) == NULL) {
		snprintf(err, errlen, "[%s]: unknown provider '%s'", section,
		    name);
		return NULL;
	}
	if (!provider_serves(p, channel)) {
		snprintf(err, errlen, "[%s]: provider '%s' does not send %s",
		    section, name, channel);
		return NULL;
	}
	if ((state = p->init(d->cfg, section, spool_root(d->spool), err,
	    errlen)) == NULL)
		return NULL;
	if ((v = reallocarray(d->routes, d->nroutes + 1, sizeof(*v))) != NULL)
		d->routes = v;
	if (v == NULL || (r = calloc(1, sizeof(*r))) == NULL ||
	    (r->section = strdup(section)) == NULL) {
		if (v != NULL && r != NULL)
			free(r);
		p->free_state(state);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->routes[d->nroutes++] = r;
	r->provider = p;
	r->state = state;
	r->inflight = 0;
	log_info("[%s]: provider %s", section, name);
	return r;
}

/*
 * Check every delivery section of a config before it is used: a known
 * channel, a provider that serves it, and keys its provider accepts.  So
 * a typo stops the daemon at start (or keeps the old config on SIGHUP)
 * instead of deferring every message until max-age.  0, or -1 (logged).
 */
static int
check_sections(const struct config *cfg, const char *root)
{
	struct rate		 rt;
	const struct provider	*p;
	const char		*sec, *name, *ch;
	char			 err[512];
	void			*state;
	size_t			 i;
	int			 c, rc = 0;

	for (i = 0; (sec = config_section(cfg, i)) != NULL; i++) {
		if (strncmp(sec, "client.", 7) == 0) {
			/* A client's webhook (msgspool.conf(5)). */
			if (event_check_section(cfg, sec, err, sizeof(err)) ==
			    -1) {
				log_err("config: %s", err);
				rc = -1;
			}
			/* Its rate, which the CGI programs count by. */
			if (config_get(cfg, sec, "rate") != NULL &&
			    rate_parse(config_get(cfg, sec, "rate"), &rt) ==
			    -1) {
				log_err("config: [%s] rate: not N/s, N/min or "
				    "N/h", sec);
				rc = -1;
			}
			continue;
		}
		if ((c = channel_of_section(sec)) != -1)
			ch = channel_info((enum channel)c)->name;
		else {
			log_err("config: [%s]: not a channel (sms, voice, "
			    "email, ott.N) nor a client (client.ID)", sec);
			rc = -1;
			continue;
		}
		if ((name = config_get(cfg, sec, "provider")) == NULL)
			name = "file";
		if ((p = provider_find(name)) == NULL ||
		    !provider_serves(p, ch)) {
			log_err("config: [%s]: provider '%s' %s", sec, name,
			    p ? "does not send this channel" : "is unknown");
			rc = -1;
			continue;
		}
		if ((state = p->init(cfg, sec, root, err, sizeof(err))) ==
		    NULL) {
			log_err("config: %s", err);
			rc = -1;
			continue;
		}
		p->free_state(state);
	}
	return rc;
}

/*
 * The routes of providers with a session of their own (smpp), made at
 * start and on reload rather than with a first message: delivery
 * receipts come in on the session whether or not there is anything to
 * send.  Not with --once, which binds only to send.
 */
static void
open_sessions(struct daemon *d)
{
	const struct provider	*p;
	const char		*sec, *name;
	char			 err[512];
	size_t			 i;
	int			 c;

	for (i = 0; !d->once && (sec = config_section(d->cfg, i)) != NULL;
	    i++)
		if ((name = config_get(d->cfg, sec, "provider")) != NULL &&
		    (p = provider_find(name)) != NULL && p->run != NULL &&
		    (c = channel_of_section(sec)) != -1 &&
		    route_get(d, sec, channel_info((enum channel)c)->name, err,
		    sizeof(err)) == NULL)
			log_err("config: %s", err);
}

static int
load_config(struct daemon *d)
{
	struct config	*cfg;
	struct spool	*spool;
	struct limits	 lim;
	char		 err[512], *root;
	long		 max_age, retention, idem_ttl;
	size_t		 conc;

	if ((cfg = config_load(d->config_path, err, sizeof(err))) == NULL ||
	    config_limits(cfg, &lim, err, sizeof(err)) == -1) {
		log_err("config: %s", err);
		config_free(cfg);
		return -1;
	}
	if (config_seconds(cfg, NULL, "max-age", 86400, &max_age) == -1 ||
	    config_seconds(cfg, NULL, "retention", 7 * 86400, &retention) ==
	    -1 || config_size(cfg, NULL, "concurrency", 16, &conc) == -1 ||
	    conc < 1 || conc > 1024 || config_seconds(cfg, NULL,
	    "idempotency-ttl", IDEM_TTL, &idem_ttl) == -1 || idem_ttl <= 0) {
		log_err("config: max-age, retention, idempotency-ttl or "
		    "concurrency (1 to 1024) is not valid");
		config_free(cfg);
		return -1;
	}
	if ((root = config_path(cfg, NULL, "spool", "spool")) == NULL ||
	    (spool = spool_open(root, 1, err, sizeof(err))) == NULL) {
		log_err("spool: %s", root ? err : "out of memory");
		free(root);
		config_free(cfg);
		return -1;
	}
	if (check_sections(cfg, root) == -1) {
		free(root);
		spool_free(spool);
		config_free(cfg);
		return -1;
	}
	free(root);
	routes_free(d);
	spool_free(d->spool);
	config_free(d->cfg);
	d->cfg = cfg;
	d->spool = spool;
	d->max_age = max_age;
	d->retention = retention;
	d->idem_ttl = idem_ttl;
	d->concurrency = conc;
	d->route_cap = conc > 1 ? conc * 3 / 4 : 1;
	/* Webhooks: a quarter more, never taken from messages. */
	webhooks_configure(d->wh, cfg, spool, WEBHOOK_SHARE(conc));
	curl_multi_setopt(d->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
	    (long)(conc + WEBHOOK_SHARE(conc)));
	curl_multi_setopt(d->multi, CURLMOPT_MAXCONNECTS,
	    (long)(conc + WEBHOOK_SHARE(conc)));
	open_sessions(d);
	return 0;
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
	time_t		 now = time(NULL), next = 0;

	st = policy_max_age(job->status, now, msgdoc_age_from(job->doc),
	    d->max_age, &gave_up);
	/* The provider's Retry-After, when it gave one, wins. */
	if (st == MSG_TEMPFAIL)
		next = now + (job->retry_after > 0 ? job->retry_after :
		    policy_backoff(msgdoc_attempts(job->doc) + 2, policy_jitter()));
	msgdoc_attempt(job->doc, st, job->err, job->reply, now, next,
	    gave_up);
	return st == MSG_OK ? SPOOL_SENT : st == MSG_TEMPFAIL ?
	    SPOOL_DEFERRED : SPOOL_FAILED;
}

static void job_free(struct job *);
static void start_job(struct daemon *, struct job *);

/*
 * Remember which message the provider's own id names, so that a
 * receipt that names only that (WhatsApp's wamid) finds it.  0.
 */
static int
index_provider_id(struct spool *s, const json_t *doc)
{
	const char	*prov = msgdoc_provider(doc), *pmid;
	char		 key[41];
	size_t		 i;

	if (prov == NULL)
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
 * Apply a receipt to doc (sent/name) and store it, with the event its
 * client wants when the status moved (stored first: a crash between the
 * two sends it twice, never not at all).  0, or 1 when it could not be
 * stored (the receipt is kept).
 */
static int
record_receipt(struct daemon *d, json_t *doc, const char *name,
    const char *pmid, const char *status, time_t when, const json_t *error)
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
	if (!msgdoc_receipt(doc, "sent", status, when, error) && !part)
		return 0;
	if (strcmp(was, msgdoc_status(doc, "sent")) != 0) {
		if (event_record(d->spool, d->cfg, doc, "sent", time(NULL),
		    ev) != MSG_OK)
			return 1;
		if (ev[0] != '\0')
			webhooks_poke(d->wh);
	}
	if (spool_store(d->spool, SPOOL_SENT, name, doc, SPOOL__MAX) !=
	    MSG_OK) {
		if (ev[0] != '\0')
			spool_area_remove(d->spool, EVENT_AREA, ev);
		return 1;
	}
	return 0;
}

/*
 * spool_area_scan callback: apply one receipt of receipts/ to its
 * message (msgspool-spool(5)).  A receipt whose message has no outcome
 * yet waits for it, at most RECEIPT_KEEP; one for a message that is
 * not ours, or not sent, is dropped with a log line.
 */
static int
apply_receipt(void *arg, const char *rname)
{
	struct daemon	*d = arg;
	enum spool_dir	 dir;
	const char	*msgid, *pmid, *prov, *status, *at, *recv;
	json_t		*r, *doc;
	char		 key[41], id[SPOOL_ID_LEN + 1], name[SPOOL_NAME_MAX];
	char		 err[512];
	time_t		 when, got, now = time(NULL);
	int		 keep = 0;

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
			keep = record_receipt(d, doc, name, pmid, status, when,
			    json_object_get(r, "error"));
			if (!keep)
				log_info("receipt %s: %s %s", msgid, prov,
				    status);
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

struct batch;
static void batch_done(struct daemon *, struct batch *);

/* Outcomes recorded by the keeper's thread (record_async). */
struct batch {
	struct job		**jobs;
	struct spool_item	 *items;
	json_t			**evs;
	size_t			 *evitem;
	size_t			  n, nevs;
	size_t			  errors;	/* outcomes not recorded */
	int			  poke;		/* events were stored */
};

static void
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
 * The spool's part of flush_done, on the keeper's recording thread with
 * its own handle: events, outcomes, the index, the log lines.
 */
static void
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
 * Hand d->done[0 .. d->ndone) to the keeper's recording thread: the
 * outcomes are decided here, written there.  0, or -1 (nothing handed:
 * record them here).
 */
static int
record_async(struct daemon *d)
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
		return -1;
	}
	b->n = n;
	for (i = 0; i < n; i++) {
		b->jobs[i] = d->done[i];
		b->items[i].doc = d->done[i]->doc;
		b->items[i].dir = outcome(d, d->done[i]);
		b->items[i].name = d->done[i]->name;
		b->items[i].from = SPOOL_CUR;
		if (b->items[i].dir != SPOOL_DEFERRED &&
		    (ev = event_of(d->cfg, d->done[i]->doc,
		    spool_dirname(b->items[i].dir), now)) != NULL) {
			b->evs[b->nevs] = ev;
			b->evitem[b->nevs++] = i;
		}
	}
	d->recording += n;
	if (keeper_record(d->keeper, record_batch, b) == -1) {
		/* Decided already: recorded here, never decided again. */
		record_batch(d->spool, b);
		batch_done(d, b);
	}
	return 0;
}

/* A recorded batch: the events announced, the claims ended. */
static void
batch_done(struct daemon *d, struct batch *b)
{
	size_t	i;

	if (b->poke)
		webhooks_poke(d->wh);
	d->spool_errors += b->errors;
	for (i = 0; i < b->n; i++)
		job_free(b->jobs[i]);
	d->recording -= b->n;
	batch_free(b);
}

/* Take back the batches the keeper's thread recorded. */
static void
collect_recorded(struct daemon *d)
{
	struct batch	*b;

	if (d->keeper == NULL)
		return;
	while ((b = keeper_recorded(d->keeper)) != NULL)
		batch_done(d, b);
}

/*
 * Record every finished job at once: one spool_commit, so the directory
 * syncs are shared.  Only then are the claims released.
 */
static void
flush_done(struct daemon *d)
{
	struct spool_item	*items;
	struct job		*job;
	const char		*id;
	json_t			**evs = NULL, *ev;
	size_t			 i, nevs = 0, *evitem = NULL, held;
	char			 evname[SPOOL_NAME_MAX];
	time_t			 now = time(NULL);

	/* Only claims proved lately are recorded (claimkeep.h). */
	held = hold_unproved(d);
	if (d->ndone == 0) {
		d->ndone = held;
		return;
	}
	/* On a shared spool, by the keeper's thread. */
	if (d->keeper != NULL && record_async(d) == 0) {
		memmove(d->done, d->done + d->ndone, held * sizeof(*d->done));
		d->ndone = held;
		return;
	}
	if ((items = calloc(d->ndone, sizeof(*items))) != NULL) {
		evs = calloc(d->ndone, sizeof(*evs));
		if ((evitem = calloc(d->ndone, sizeof(*evitem))) == NULL) {
			free(evs);
			evs = NULL;
		}
		for (i = 0; i < d->ndone; i++) {
			items[i].doc = d->done[i]->doc;
			items[i].dir = outcome(d, d->done[i]);
			items[i].name = d->done[i]->name;
			items[i].from = SPOOL_CUR;
			/* sent or failed: its client's event, if wanted. */
			if (evs != NULL && items[i].dir != SPOOL_DEFERRED &&
			    (ev = event_of(d->cfg, d->done[i]->doc,
			    spool_dirname(items[i].dir), now)) != NULL) {
				evs[nevs] = ev;
				evitem[nevs++] = i;
			}
		}
		/* The events first: a crash before the outcomes sends one
		 * twice (the message goes again), never none. */
		if (nevs > 0 && spool_area_store(d->spool, EVENT_AREA,
		    (const json_t **)evs, nevs) != MSG_OK)
			log_err("webhooks: cannot store %zu events: %s", nevs,
			    strerror(errno));
		else if (nevs > 0)
			webhooks_poke(d->wh);
		spool_commit(d->spool, items, d->ndone);
	}
	for (i = 0; i < nevs; i++) {
		/* Its outcome was not recorded: it is not news yet. */
		if (items[evitem[i]].status != MSG_OK) {
			snprintf(evname, sizeof(evname), "%s.json",
			    event_id(evs[i]));
			spool_area_remove(d->spool, EVENT_AREA, evname);
		}
		json_decref(evs[i]);
	}
	free(evs);
	free(evitem);
	for (i = 0; i < d->ndone; i++) {
		job = d->done[i];
		id = json_string_value(json_object_get(job->doc, "id"));
		if (items == NULL || items[i].status != MSG_OK) {
			/* Left in cur/: recovery returns it to new/. */
			log_err("%s: cannot record the outcome", id);
			d->spool_errors++;
		}
		else if (items[i].dir == SPOOL_SENT &&
		    index_provider_id(d->spool, job->doc) == 0)
			log_info("sent %s channel=%s to=%s", id,
			    json_string_value(json_object_get(job->doc,
			    "channel")), msgdoc_recipient(job->doc));
		else
			log_warn("%s %s to=%s attempts=%lld: %s",
			    items[i].dir == SPOOL_DEFERRED ? "deferred" :
			    "failed", id, msgdoc_recipient(job->doc),
			    (long long)json_integer_value(json_object_get(
			    job->doc, "attempts")), job->err);
		job_free(job);
	}
	free(items);
	/* The claims in doubt wait for their proof, first in line. */
	memmove(d->done, d->done + d->ndone, held * sizeof(*d->done));
	d->ndone = held;
}

static void
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

/* A job is over: release its slot; its outcome is recorded in a batch. */
static void
job_done(struct daemon *d, struct job *job)
{
	struct job	**v;

	if (job->route != NULL)
		job->route->inflight--;
	d->inflight--;
	d->new_dirty = 1;
	if (job->easy != NULL) {
		curl_easy_cleanup(job->easy);
		job->easy = NULL;
	}
	if (d->ndone == d->donecap) {
		v = reallocarray(d->done, d->donecap ? d->donecap * 2 : 64,
		    sizeof(*v));
		if (v == NULL) {
			/* Record it alone rather than lose track of it. */
			flush_done(d);
			if (d->ndone == d->donecap) {
				log_err("out of memory; %s stays in cur/",
				    job->name);
				job_free(job);
				return;
			}
		} else {
			d->done = v;
			d->donecap = d->donecap ? d->donecap * 2 : 64;
		}
	}
	d->done[d->ndone++] = job;
}

/*
 * The route a document goes by, or NULL with the reason in err and in
 * *status whether an operator can fix it (MSG_TEMPFAIL: a section's
 * provider or keys are wrong) or never (MSG_PERMFAIL: the document
 * names no channel).
 */
static struct route *
route_of(struct daemon *d, const json_t *doc, char *err, size_t errlen,
    enum msg_status *status)
{
	char		 section[64];
	struct route	*r;

	*status = MSG_PERMFAIL;
	if (msgdoc_is_test(doc) && msgdoc_channel(doc) != NULL)
		return route_get(d, PROVIDER_TEST_SECTION,
		    msgdoc_channel(doc), err, errlen);
	if (channel_section(doc, section, sizeof(section)) == NULL) {
		snprintf(err, errlen, "no channel to route by");
		return NULL;
	}
	if ((r = route_get(d, section, json_string_value(json_object_get(doc,
	    "channel")), err, errlen)) == NULL)
		*status = MSG_TEMPFAIL;
	return r;
}

/*
 * The spool refused a claim or a record (read-only, full, permissions):
 * logged once a minute, counted for the exit status of --once.
 */
static void
spool_failure(struct daemon *d, const char *name, int e)
{
	time_t	now = time(NULL);

	d->spool_errors++;
	if (now - d->last_spool_log >= 60 || d->once) {
		log_err("spool: cannot claim %s: %s", name, strerror(e));
		d->last_spool_log = now;
	}
}

/* spool_scan callback: claim and start new/name.  1 stops the scan. */
static int
admit(void *arg, const char *name)
{
	struct daemon	*d = arg;
	struct job	*job;
	struct route	*r = NULL;
	json_t		*peek;
	enum msg_status	 st;
	char		 err[512];
	size_t		 i, cap;
	int		 fd, saturated = 0;

	/*
	 * A finished job whose outcome is not yet recorded is still in
	 * flight for a crash: a kill would send it again.  So finished jobs
	 * are recorded before a slot is reused, and a kill at any moment
	 * re-sends at most "concurrency" messages, even with a provider
	 * that finishes inside start().
	 */
	if (d->inflight + d->ndone >= d->concurrency)
		flush_done(d);
	if (stopping || reloading || d->inflight >= d->concurrency) {
		d->new_dirty = 1;
		return 1;
	}
	/*
	 * The cap keeps one channel from starving the others; with only one
	 * channel in use it would only waste slots.  Only when a route is
	 * full is a file read before it is claimed.
	 */
	cap = d->nroutes > 1 ? d->route_cap : d->concurrency;
	for (i = 0; i < d->nroutes; i++)
		saturated |= d->routes[i]->inflight >= cap;
	if (saturated) {
		peek = spool_load(d->spool, SPOOL_NEW, name, err, sizeof(err));
		r = peek ? route_of(d, peek, err, sizeof(err), &st) : NULL;
		json_decref(peek);
		if (r != NULL && r->inflight >= (d->nroutes > 1 ?
		    d->route_cap : d->concurrency)) {
			/* Bounded: a long queue of one channel is not read
			 * through on every scan. */
			return ++d->skipped > 4 * d->concurrency;
		}
	}
	if ((job = calloc(1, sizeof(*job))) == NULL)
		return 1;
	job->lockfd = -1;
	snprintf(job->name, sizeof(job->name), "%s", name);
	err[0] = '\0';
	if ((fd = spool_claim(d->spool, name, &job->doc, err,
	    sizeof(err))) == -1) {
		/* Gone, or another daemon's: not an error.  Set aside: logged. */
		if (errno != ENOENT && errno != EBUSY && errno != EAGAIN &&
		    errno != EINVAL)
			spool_failure(d, name, errno);
		free(job);
		return 0;
	}
	job->lockfd = fd;
	if (job->doc == NULL) {
		log_err("%s; moved to failed/", err);
		spool_move(d->spool, SPOOL_CUR, SPOOL_FAILED, name);
		job_free(job);
		return 0;
	}
	start_job(d, job);
	return 0;
}

/*
 * Start a claimed job: its route, its provider, its transfer.  It counts
 * as in flight from here until job_done.
 */
static void
start_job(struct daemon *d, struct job *job)
{
	struct route	*r;
	enum msg_status	 st;
	char		 err[512];

	d->inflight++;
	if ((r = route_of(d, job->doc, err, sizeof(err), &st)) == NULL) {
		/* A config error is fixed by an operator: keep the message. */
		job->status = st;
		snprintf(job->err, sizeof(job->err), "%s", err);
		job_done(d, job);
		return;
	}
	job->route = r;
	r->inflight++;
	r->provider->start(r->state, job);
	if (job->pending)
		return;		/* a session has it (provider.h) */
	if (job->easy == NULL) {
		job_done(d, job);
		return;
	}
	if (curl_multi_add_handle(d->multi, job->easy) != CURLM_OK) {
		job->status = MSG_TEMPFAIL;
		snprintf(job->err, sizeof(job->err), "cannot start transfer");
		job_done(d, job);
	}
}

/*
 * On a shared spool the keeper's thread claims (claimkeep.h): start what
 * it claimed while there is room, then ask for as much as is left.
 */
static void
feed_claims(struct daemon *d)
{
	struct claimed	*c;
	struct job	*job;
	size_t		 room;

	collect_recorded(d);
	for (;;) {
		/*
		 * As admit: finished jobs are recorded before slots are
		 * reused, so those being recorded still hold theirs.
		 */
		if (d->inflight + d->ndone + d->recording >= d->concurrency)
			flush_done(d);
		if (stopping || reloading || d->inflight + d->ndone +
		    d->recording >= d->concurrency)
			break;
		if ((c = keeper_take(d->keeper)) == NULL)
			break;
		if ((job = calloc(1, sizeof(*job))) == NULL) {
			keeper_release(c->kept);
			json_decref(c->doc);
			free(c);
			break;
		}
		job->lockfd = -1;
		snprintf(job->name, sizeof(job->name), "%s", c->name);
		job->doc = c->doc;
		job->kept = c->kept;
		free(c);
		start_job(d, job);
	}
	room = stopping || reloading || d->inflight + d->ndone +
	    d->recording >= d->concurrency ? 0 : d->concurrency -
	    d->inflight - d->ndone - d->recording;
	keeper_want(d->keeper, room, d->new_dirty);
	d->new_dirty = 0;
}

/* Collect the transfers that ended. */
static void
reap(struct daemon *d)
{
	struct job	*job;
	struct route	*r;
	CURLMsg		*m;
	curl_off_t	 ra = 0;
	long		 code = 0;
	size_t		 i;
	int		 left;

	while ((m = curl_multi_info_read(d->multi, &left)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		code = 0;
		ra = 0;
		curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE,
		    &code);
		if (curl_easy_getinfo(m->easy_handle, CURLINFO_RETRY_AFTER,
		    &ra) != CURLE_OK)
			ra = 0;
		if (webhooks_reap(d->wh, m->easy_handle, m->data.result, code,
		    policy_retry_after((long long)ra)))
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE,
		    (char **)&job);
		job->retry_after = policy_retry_after((long long)ra);
		curl_multi_remove_handle(d->multi, m->easy_handle);
		job->route->provider->finish(job->route->state, job,
		    m->data.result, code);
		job_done(d, job);
	}
	/* And the providers with a session of their own (smpp). */
	for (i = 0; i < d->nroutes; i++) {
		r = d->routes[i];
		if (r->provider->run == NULL)
			continue;
		r->provider->run(r->state, stopping);
		while ((job = r->provider->reap(r->state)) != NULL)
			job_done(d, job);
	}
}

/* Housekeeping that is due: deferred/, dead claims, old files. */
static void
chores(struct daemon *d, time_t now)
{
	time_t	next;
	size_t	n;

	/*
	 * On a shared spool whose server does not answer a keeper's thread
	 * (claimkeep.h), the loop leaves the spool alone: the transfers under
	 * way go on.
	 */
	if (d->keeper != NULL && keeper_stuck(d->keeper, now)) {
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

	if (now >= d->next_promote) {
		if (spool_promote(d->spool, now, &next) > 0)
			d->new_dirty = 1;
		d->next_promote = next > 0 && next < now + PROMOTE_EVERY ?
		    next : now + PROMOTE_EVERY;
	}
	if (now >= d->next_receipts) {
		spool_area_scan(d->spool, "receipts", apply_receipt, d);
		d->next_receipts = now + RECEIPT_EVERY;
	}
	webhooks_run(d->wh, now);
	/* On a shared spool the keeper's thread does it (claimkeep.h). */
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
	if (now >= d->next_prune) {
		/* Never a request's held messages while its key lives. */
		if ((n = spool_prune(d->spool, SPOOL_TMP, now - (TMP_MAX_AGE >
		    d->idem_ttl + 3600 ? TMP_MAX_AGE : d->idem_ttl + 3600)) +
		    spool_tmp_sweep(d->spool)))
			log_info("removed %zu stale files from tmp/", n);
		if ((n = idem_prune(d->spool, now - d->idem_ttl)))
			log_info("removed %zu expired idempotency keys", n);
		if ((n = spool_prune(d->spool, SPOOL_SENT,
		    now - d->retention)))
			log_info("pruned %zu sent messages", n);
		/* After sent/: attachments of messages gone from every state
		 * (blobs/ is made here at start when it is missing). */
		if ((n = blob_prune(d->spool, now - TMP_MAX_AGE)))
			log_info("removed %zu stored attachments of messages "
			    "no longer spooled", n);
		spool_upload_prune(d->spool, now - SPOOL_UPLOAD_TTL);
		/* A provider's id outlives its message in sent/ no longer. */
		spool_area_prune(d->spool, "index", now - d->retention);
		d->next_prune = now + PRUNE_EVERY;
	}
}

/*
 * Read what inotify saw: a file in new/ means a scan; one in deferred/ is
 * stat'ed, and the next promotion comes no later than it is due.
 */
static void
drain_inotify(struct daemon *d)
{
	const struct inotify_event	*ev;
	char				 buf[8192], path[4096];
	struct stat			 st;
	ssize_t				 n, i;

	if (d->ino == -1)
		return;
	while ((n = read(d->ino, buf, sizeof(buf))) > 0) {
		for (i = 0; i < n; i += (ssize_t)sizeof(*ev) + ev->len) {
			ev = (const struct inotify_event *)(buf + i);
			if (ev->mask & IN_Q_OVERFLOW) {
				d->new_dirty = 1;
				d->next_promote = 0;
			} else if (ev->wd == d->wd_new)
				d->new_dirty = 1;
			else if (ev->wd == d->wd_deferred && ev->len > 0 &&
			    spool_path(d->spool, SPOOL_DEFERRED, ev->name, path,
			    sizeof(path)) == 0 && stat(path, &st) == 0 &&
			    st.st_mtime < d->next_promote)
				d->next_promote = st.st_mtime;
		}
	}
}

/* Wait for a transfer, a file in new/, a signal, or the next chore. */
static void
wait_for_work(struct daemon *d, time_t now)
{
	struct curl_waitfd	 w[2 + WAIT_SESSIONS_MAX];
	const struct provider	*p;
	time_t			 until;
	size_t			 i;
	int			 ms, n = 0;

	until = d->next_promote < d->next_recover ? d->next_promote :
	    d->next_recover;
	if (d->next_rescan < until)
		until = d->next_rescan;
	ms = until > now ? (int)(until - now) * 1000 : 0;
	if (ms > 1000)
		ms = 1000;	/* signals are seen within a second */
	if ((d->new_dirty && d->inflight < d->concurrency && !reloading) ||
	    webhooks_dirty(d->wh))
		ms = 0;
	/* Files arriving only matter when there is room for them. */
	if (d->ino != -1 && d->inflight < d->concurrency) {
		w[n].fd = d->ino;
		w[n].events = CURL_WAIT_POLLIN;
		w[n++].revents = 0;
	}
	/* Claims the keeper's thread made ready. */
	if (d->keeper != NULL && d->inflight < d->concurrency) {
		w[n].fd = keeper_fd(d->keeper);
		w[n].events = CURL_WAIT_POLLIN;
		w[n++].revents = 0;
	}
	/* The sessions' sockets, and their timers. */
	for (i = 0; i < d->nroutes; i++)
		if ((p = d->routes[i]->provider)->fds != NULL)
			n += (int)p->fds(d->routes[i]->state, w + n,
			    WAIT_SESSIONS_MAX + 2 - (size_t)n, &ms);
	curl_multi_poll(d->multi, n ? w : NULL, (unsigned)n, ms, NULL);
	drain_inotify(d);
}

static void
usage(void)
{
	fprintf(stderr, "usage: msgspoold [-c FILE] [--once]\n");
}

int
main(int argc, char *argv[], char *envp[])
{
	static const struct option longopts[] = {
		{ "once", no_argument, NULL, 'o' },
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct daemon		 d;
	struct netfs_mount	 mnt;
	struct sigaction	 sa;
	char			 path[4096];
	time_t			 now;
	int			 ch, running, last_pass = 0;

	memset(&d, 0, sizeof(d));
	d.ino = -1;
	d.config_path = config_default_path(envp);
	while ((ch = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			d.config_path = optarg;
			break;
		case 'o':
			d.once = 1;
			break;
		case 'h':
			usage();
			return 0;
		default:
			usage();
			return 1;
		}
	}
	if (optind != argc) {
		usage();
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK ||
	    (d.multi = curl_multi_init()) == NULL) {
		log_err("libcurl cannot start");
		return 1;
	}
	/* For tests only (msgspoold(8), ENVIRONMENT): a shorter schedule. */
	if ((d.wh = webhooks_new(d.multi, getenv("MSGSPOOL_WEBHOOK_SCHEDULE"),
	    d.once)) == NULL) {
		log_err("MSGSPOOL_WEBHOOK_SCHEDULE: not seconds separated by "
		    "commas");
		curl_multi_cleanup(d.multi);
		return 1;
	}
	if (load_config(&d) == -1) {
		webhooks_free(d.wh);
		curl_multi_cleanup(d.multi);
		return 1;
	}
	/*
	 * Several hosts, one spool: only on a mount that keeps it safe
	 * (msgspool-spool(5)).  A table that cannot be read is no refusal.
	 */
	if ((ch = netfs_check(spool_root(d.spool), &mnt, path,
	    sizeof(path))) == -1 && !mnt.nfs)
		log_warn("spool: its filesystem is unknown: %s", path);
	else if (mnt.network)
		log_info("spool: on %s %s at %s, shared with other hosts: "
		    "new/ rescanned every %d s", mnt.fstype, mnt.source,
		    mnt.point, NETFS_RESCAN_EVERY);
	d.netfs = mnt.network;
	/* --once claims in its loop: it ends when one pass finds nothing. */
	if (d.netfs && !d.once && (d.keeper = keeper_new(spool_root(d.spool),
	    path, sizeof(path))) == NULL)
		ch = -1;
	if ((ch == -1 && (mnt.nfs || d.netfs)) ||
	    spool_writable(d.spool, path, sizeof(path)) == -1) {
		log_err("spool: %s; not starting", path);
		webhooks_free(d.wh);
		routes_free(&d);
		spool_free(d.spool);
		config_free(d.cfg);
		curl_multi_cleanup(d.multi);
		return 1;
	}
	if (!d.once && (d.ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) != -1 &&
	    (spool_path(d.spool, SPOOL_NEW, "", path, sizeof(path)) == -1 ||
	    (d.wd_new = inotify_add_watch(d.ino, path, IN_MOVED_TO |
	    IN_CLOSE_WRITE)) == -1 ||
	    spool_path(d.spool, SPOOL_DEFERRED, "", path, sizeof(path)) == -1 ||
	    (d.wd_deferred = inotify_add_watch(d.ino, path, IN_MOVED_TO |
	    IN_CLOSE_WRITE | IN_ATTRIB)) == -1)) {
		log_warn("inotify on new/: %s; scanning every %d s",
		    strerror(errno), RESCAN_EVERY);
		close(d.ino);
		d.ino = -1;
	}
	log_info("started: config %s, spool %s, concurrency %zu%s",
	    d.config_path, spool_root(d.spool), d.concurrency,
	    d.once ? ", once" : "");
	d.new_dirty = 1;
	for (;;) {
		if (reloading && d.inflight == 0 && d.recording == 0) {
			reloading = 0;
			if (load_config(&d) == 0)
				log_info("reloaded %s", d.config_path);
			d.new_dirty = 1;
		}
		now = time(NULL);
		collect_recorded(&d);
		if (!stopping) {
			chores(&d, now);
			if (d.keeper != NULL) {
				feed_claims(&d);
				flush_done(&d);
			} else if (d.new_dirty && d.inflight < d.concurrency &&
			    !reloading) {
				d.new_dirty = 0;
				d.skipped = 0;
				spool_scan(d.spool, SPOOL_NEW, admit, &d);
				flush_done(&d);
			}
		}
		if (d.inflight == 0 && d.recording == 0 && (stopping ||
		    (d.once && !d.new_dirty && !webhooks_busy(d.wh)))) {
			/* --once: the receipts this run made (test keys) too. */
			if (d.once && !stopping && !last_pass) {
				last_pass = 1;
				d.next_receipts = 0;
				continue;
			}
			break;
		}
		curl_multi_perform(d.multi, &running);
		reap(&d);
		flush_done(&d);
		if (d.inflight == 0 && d.once && !d.new_dirty &&
		    !webhooks_busy(d.wh) && last_pass)
			break;
		wait_for_work(&d, time(NULL));
		curl_multi_perform(d.multi, &running);
		reap(&d);
		flush_done(&d);
	}
	free(d.done);
	keeper_free(d.keeper);
	log_info("stopped");
	if (d.ino != -1)
		close(d.ino);
	webhooks_free(d.wh);
	routes_free(&d);
	curl_multi_cleanup(d.multi);
	curl_global_cleanup();
	spool_free(d.spool);
	config_free(d.cfg);
	if (d.once && d.spool_errors > 0) {
		log_err("%zu messages could not be claimed or recorded",
		    d.spool_errors);
		return 1;
	}
	return 0;
}
