/*
 * webhook.c: sending webhook events to clients (webhook.h).
 *
 * A scan of events/ finds each client's events due, then starts them a
 * client at a time in turn, each to its share (policy_webhook_next):
 * one client's backlog, or its receiver that never answers, holds only
 * its own transfers.  An event's client never changes: a scan knows it
 * by name from the last one, and passes over the rest of a backlog of
 * a client with as many due as could start without opening them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "daemon/daemon_metrics.h"
#include "daemon/webhook.h"
#include "daemon/webhook_impl.h"
#include "providers/policy.h"
#include "spool/event.h"
#include "spool/receipt.h"

#define SCAN_EVERY	1	/* seconds between scans of events/ */

static void
hook_free(struct hook *h)
{
	if (h == NULL)
		return;
	if (h->easy != NULL)
		curl_easy_cleanup(h->easy);
	curl_slist_free_all(h->headers);
	free(h->body);
	json_decref(h->ev);
	free(h);
}

struct webhooks *
webhooks_new(CURLM *multi, const char *schedule, int once)
{
	struct webhooks	*w;

	if ((w = calloc(1, sizeof(*w))) == NULL)
		return NULL;
	w->multi = multi;
	w->once = once;
	w->dirty = 1;
	if ((w->nschedule = policy_schedule_parse(schedule ? schedule :
	    POLICY_WEBHOOK_SCHEDULE, w->schedule,
	    POLICY_WEBHOOK_TRIES_MAX)) == 0) {
		free(w);
		return NULL;
	}
	return w;
}

void
webhooks_free(struct webhooks *w)
{
	size_t	i;

	if (w == NULL)
		return;
	for (i = 0; i < w->nhooks; i++) {
		curl_multi_remove_handle(w->multi, w->hooks[i]->easy);
		hook_free(w->hooks[i]);
	}
	free(w->hooks);
	for (i = 0; i < w->nclients; i++) {
		free(w->clients[i].id);
		free(w->clients[i].due);
	}
	free(w->clients);
	free(w->turns);
	webhook_seen_free(w->seen, w->nseen);
	free(w);
}

/* Whether the config gives client id a webhook-url. */
static int
wants(const struct webhooks *w, const char *id)
{
	char	section[128];

	snprintf(section, sizeof(section), "client.%s", id);
	return config_get(w->cfg, section, "webhook-url") != NULL;
}

/* The index of client id (NULL: ""), added if new; 0, or -1 (memory). */
static int
client_of(struct webhooks *w, const char *id, size_t *out)
{
	struct policy_webhook_client	*t;
	struct client			*c;
	size_t				 i;

	if (id == NULL)
		id = "";
	for (i = 0; i < w->nclients; i++)
		if (strcmp(w->clients[i].id, id) == 0) {
			*out = i;
			return 0;
		}
	if ((c = reallocarray(w->clients, w->nclients + 1, sizeof(*c))) ==
	    NULL)
		return -1;
	w->clients = c;
	if ((t = reallocarray(w->turns, w->nclients + 1, sizeof(*t))) == NULL)
		return -1;
	w->turns = t;
	c += w->nclients;
	memset(c, 0, sizeof(*c));
	if ((c->id = strdup(id)) == NULL)
		return -1;
	t += w->nclients;
	memset(t, 0, sizeof(*t));
	t->wants = wants(w, id);
	*out = w->nclients++;
	return 0;
}

void
webhooks_configure(struct webhooks *w, const struct config *cfg,
    struct spool *spool, size_t cap)
{
	struct hook	**v;
	const char	 *sec;
	size_t		  room, i, c;

	w->cfg = cfg;
	w->any = 0;
	/* Each client with a webhook-url has a turn, events or not. */
	for (i = 0; i < w->nclients; i++) {
		w->turns[i].wants = wants(w, w->clients[i].id);
		free(w->clients[i].due);	/* cap of them */
		w->clients[i].due = NULL;
	}
	for (i = 0; (sec = config_section(cfg, i)) != NULL; i++)
		if (strncmp(sec, "client.", 7) == 0 &&
		    config_get(cfg, sec, "webhook-url") != NULL) {
			w->any = 1;
			if (client_of(w, sec + 7, &c) == -1)
				log_err("webhooks: out of memory");
		}
	w->spool = spool;
	room = cap > w->nhooks ? cap : w->nhooks;
	if (room < 1)
		room = 1;
	if ((v = reallocarray(w->hooks, room, sizeof(*v))) != NULL) {
		w->hooks = v;
		w->cap = cap < 1 ? 1 : cap;
	}
	w->dirty = 1;
}

void
webhooks_poke(struct webhooks *w)
{
	w->dirty = 1;
}

int
webhooks_busy(const struct webhooks *w)
{
	return w->nhooks > 0 || w->dirty;
}

int
webhooks_dirty(const struct webhooks *w)
{
	return w->dirty && w->nhooks < w->cap;
}

/* A delivery's result for GET /metrics: ok, retry, failed. */
static void
count(struct webhooks *w, const char *result)
{
	const char	*v[2] = { result, NULL };

	dmetrics_count(w->metrics, "webhooks", v);
}

void
webhooks_metrics(struct webhooks *w, struct dmetrics *m)
{
	w->metrics = m;
}

/* Keep an event for the operator in events-failed/, with why. */
static void
give_up(struct webhooks *w, const char *name, json_t *ev, const char *why)
{
	count(w, "failed");
	event_failed(ev, why, 0);
	if (spool_area_store(w->spool, EVENT_FAILED_AREA,
	    (const json_t **)&ev, 1) != MSG_OK) {
		log_err("webhook %s: cannot move it to %s/: %s",
		    event_id(ev), EVENT_FAILED_AREA, strerror(errno));
		return;
	}
	spool_area_remove(w->spool, EVENT_AREA, name);
	log_warn("webhook %s %s to %s: given up after %lld tries: %s",
	    event_id(ev), event_type(ev), event_client(ev),
	    event_attempts(ev), why);
}

/* A try failed: due again after the schedule's wait, or given up. */
static void
retry(struct webhooks *w, const char *name, json_t *ev, const char *why,
    long retry_after)
{
	struct timespec	now;
	long		delay;

	clock_gettime(CLOCK_REALTIME, &now);
	delay = policy_webhook_delay((long)event_attempts(ev) + 1, policy_jitter(),
	    retry_after, w->schedule, w->nschedule);
	if (delay == -1) {
		give_up(w, name, ev, why);
		return;
	}
	count(w, "retry");
	event_failed(ev, why, policy_not_before(&now, delay));
	if (spool_area_store(w->spool, EVENT_AREA, (const json_t **)&ev, 1)
	    != MSG_OK)
		log_err("webhook %s: cannot record its try: %s",
		    event_id(ev), strerror(errno));
	else
		log_warn("webhook %s %s to %s: %s; again in %ld s",
		    event_id(ev), event_type(ev), event_client(ev), why,
		    delay);
}

static size_t
discard(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

/*
 * Start the transfer of an event (taken) of client ci; 0, or -1 (its
 * try recorded, or given up).
 */
static int
start(struct webhooks *w, const char *name, json_t *ev, size_t ci)
{
	struct hook	*h;
	const char	*client, *url;
	char		 section[128], ts[32], hdr[256], err[512];
	char		*secret = NULL, *sig = NULL;

	client = event_client(ev);
	snprintf(section, sizeof(section), "client.%s", client ? client : "");
	if ((url = config_get(w->cfg, section, "webhook-url")) == NULL) {
		give_up(w, name, ev, "the client has no webhook-url now");
		json_decref(ev);
		return -1;
	}
	if ((secret = config_secret(w->cfg, section, "webhook-secret", err,
	    sizeof(err))) == NULL || !event_secret_valid(secret)) {
		if (secret != NULL)
			snprintf(err, sizeof(err), "[%s]: webhook-secret is "
			    "not valid", section);
		retry(w, name, ev, err, 0);
		free(secret);
		json_decref(ev);
		return -1;
	}
	if ((h = calloc(1, sizeof(*h))) == NULL)
		goto oom;
	h->ev = ev;
	ev = NULL;
	snprintf(h->name, sizeof(h->name), "%s", name);
	snprintf(ts, sizeof(ts), "%lld", (long long)time(NULL));
	if ((h->body = event_body(h->ev)) == NULL ||
	    (sig = receipt_stdwh_sign(secret, event_id(h->ev), ts, h->body,
	    strlen(h->body))) == NULL || (h->easy = curl_easy_init()) == NULL)
		goto oom;
	h->headers = curl_slist_append(NULL, "Content-Type: application/json");
	snprintf(hdr, sizeof(hdr), "webhook-id: %s", event_id(h->ev));
	h->headers = curl_slist_append(h->headers, hdr);
	snprintf(hdr, sizeof(hdr), "webhook-timestamp: %s", ts);
	h->headers = curl_slist_append(h->headers, hdr);
	snprintf(hdr, sizeof(hdr), "webhook-signature: %s", sig);
	h->headers = curl_slist_append(h->headers, hdr);
	/* No "Expect: 100-continue" round trip. */
	h->headers = curl_slist_append(h->headers, "Expect:");
	curl_easy_setopt(h->easy, CURLOPT_URL, url);
	curl_easy_setopt(h->easy, CURLOPT_PRIVATE, h);
	curl_easy_setopt(h->easy, CURLOPT_HTTPHEADER, h->headers);
	curl_easy_setopt(h->easy, CURLOPT_POSTFIELDS, h->body);
	curl_easy_setopt(h->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(h->body));
	curl_easy_setopt(h->easy, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(h->easy, CURLOPT_ERRORBUFFER, h->curlerr);
	curl_easy_setopt(h->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h->easy, CURLOPT_TIMEOUT, (long)POLICY_WEBHOOK_TIMEOUT);
	curl_easy_setopt(h->easy, CURLOPT_CONNECTTIMEOUT,
	    (long)POLICY_WEBHOOK_TIMEOUT);
	curl_easy_setopt(h->easy, CURLOPT_USERAGENT, "msgspool/1");
	curl_easy_setopt(h->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h->easy, CURLOPT_TCP_KEEPALIVE, 1L);
	if (curl_multi_add_handle(w->multi, h->easy) != CURLM_OK)
		goto oom;
	free(secret);
	free(sig);
	h->client = ci;
	w->turns[ci].busy++;
	w->hooks[w->nhooks++] = h;
	return 0;
oom:
	if (h != NULL) {
		ev = h->ev;
		h->ev = NULL;
		hook_free(h);
	}
	retry(w, name, ev, "cannot start the transfer", 0);
	json_decref(ev);
	free(secret);
	free(sig);
	return -1;
}

/*
 * spool_area_scan callback: note events/name if due, as its client's,
 * up to as many as could start (the rest wait for a later scan).
 */
static int
consider(void *arg, const char *name)
{
	struct webhooks		*w = arg;
	const struct seen	*known;
	struct client		*c;
	json_t			*ev;
	char			 err[512];
	size_t			 i, ci, room = w->cap - w->nhooks;

	for (i = 0; i < w->nhooks; i++)
		if (strcmp(w->hooks[i]->name, name) == 0) {
			webhook_seen_keep(w, name, w->hooks[i]->client);
			return 0;
		}
	if ((known = webhook_seen_find(w, name)) != NULL &&
	    w->clients[known->client].ndue >= room) {
		webhook_seen_keep(w, name, known->client);
		w->more = 1;
		return 0;
	}
	if ((ev = spool_area_load(w->spool, EVENT_AREA, name, err,
	    sizeof(err))) == NULL) {
		if (errno != ENOENT)
			log_err("webhooks: %s", err);
		return 0;
	}
	if (client_of(w, event_client(ev), &ci) == -1) {
		json_decref(ev);
		w->more = 1;
		return 0;
	}
	webhook_seen_keep(w, name, ci);
	if (event_due(ev) > w->now) {
		json_decref(ev);
		return 0;
	}
	/* No webhook-url now: given up at once, taking no transfer. */
	if (!w->turns[ci].wants) {
		start(w, name, ev, ci);
		return 0;
	}
	c = &w->clients[ci];
	if (c->ndue >= room || (c->due == NULL &&
	    (c->due = calloc(w->cap, sizeof(*c->due))) == NULL)) {
		json_decref(ev);
		w->more = 1;
		return 0;
	}
	snprintf(c->due[c->ndue].name, sizeof(c->due[c->ndue].name), "%s",
	    name);
	c->due[c->ndue++].ev = ev;
	w->turns[ci].due++;
	return 0;
}

/*
 * Start what the scan found, a client at a time in turn, each to its
 * share (policy.h); what is left waits for a transfer to end.
 */
static void
dispatch(struct webhooks *w)
{
	struct client	*c;
	struct pending	*p;
	size_t		 i;

	while (w->nhooks < w->cap && (i = policy_webhook_next(w->turns,
	    w->nclients, w->cap, &w->turn)) < w->nclients) {
		c = &w->clients[i];
		p = &c->due[c->next++];
		w->turns[i].due--;
		start(w, p->name, p->ev, i);
		p->ev = NULL;
	}
	for (i = 0; i < w->nclients; i++) {
		c = &w->clients[i];
		for (; c->next < c->ndue; c->next++) {
			json_decref(c->due[c->next].ev);
			w->more = 1;
		}
		c->ndue = c->next = 0;
		w->turns[i].due = 0;
	}
	/* --once: left over with none under way (a start failed). */
	if (w->more && w->nhooks == 0 && w->once) {
		w->more = 0;
		w->dirty = 1;
	}
}

void
webhooks_run(struct webhooks *w, time_t now)
{
	if (w->cfg == NULL || w->spool == NULL || w->nhooks >= w->cap)
		return;
	/*
	 * With no client's webhook-url, no event is made: events/ is read
	 * once a config (what earlier configs left is given up), not every
	 * SCAN_EVERY; on a shared spool that is a read less in the loop.
	 */
	if (!w->dirty && (w->once || now < w->next_scan || !w->any))
		return;
	w->dirty = 0;
	w->more = 0;
	w->next_scan = now + SCAN_EVERY;
	/*
	 * Due by the clock of the scan, not of the pass that called it: an
	 * event a receipt made during the pass is due at its own second,
	 * and --once would end without it.
	 */
	w->now = time(NULL) > now ? time(NULL) : now;
	spool_area_scan(w->spool, EVENT_AREA, consider, w);
	webhook_seen_swap(w);
	dispatch(w);
}

int
webhooks_reap(struct webhooks *w, CURL *easy, CURLcode rc, long code,
    long retry_after)
{
	struct hook	*h = NULL;
	char		 why[CURL_ERROR_SIZE + 64];
	size_t		 i;

	for (i = 0; i < w->nhooks; i++)
		if (w->hooks[i]->easy == easy) {
			h = w->hooks[i];
			w->hooks[i] = w->hooks[--w->nhooks];
			break;
		}
	if (h == NULL)
		return 0;
	w->turns[h->client].busy--;
	curl_multi_remove_handle(w->multi, easy);
	if (rc != CURLE_OK) {
		snprintf(why, sizeof(why), "%s", h->curlerr[0] ? h->curlerr :
		    curl_easy_strerror(rc));
		code = 0;
	} else
		snprintf(why, sizeof(why), "HTTP %ld", code);
	switch (policy_webhook_http(code)) {
	case MSG_OK:
		count(w, "ok");
		spool_area_remove(w->spool, EVENT_AREA, h->name);
		log_info("webhook %s %s to %s: %s", event_id(h->ev),
		    event_type(h->ev), event_client(h->ev), why);
		break;
	case MSG_PERMFAIL:
		give_up(w, h->name, h->ev, why);
		break;
	default:
		retry(w, h->name, h->ev, why, retry_after);
		break;
	}
	hook_free(h);
	/* A transfer is free: what waited for one may go. */
	if (w->more) {
		w->more = 0;
		w->dirty = 1;
	} else if (w->dirty == 0 && !w->once)
		w->next_scan = 0;
	return 1;
}
