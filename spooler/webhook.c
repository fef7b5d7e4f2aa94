/*
 * webhook.c: sending webhook events to clients (webhook.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "event.h"
#include "log.h"
#include "policy.h"
#include "receipt.h"
#include "webhook.h"

#define SCAN_EVERY	1	/* seconds between scans of events/ */

/* One event on its way. */
struct hook {
	char			 name[SPOOL_NAME_MAX];
	json_t			*ev;
	CURL			*easy;
	struct curl_slist	*headers;
	char			*body;
	char			 curlerr[CURL_ERROR_SIZE];
};

struct webhooks {
	CURLM			*multi;
	const struct config	*cfg;
	struct spool		*spool;
	size_t			 cap;
	long			 schedule[POLICY_WEBHOOK_TRIES_MAX];
	size_t			 nschedule;
	int			 once;
	int			 dirty;		/* scan at the next run */
	int			 any;		/* a client has a webhook-url */
	time_t			 next_scan;
	struct hook		**hooks;	/* in flight */
	size_t			 nhooks;
	time_t			 now;		/* of the scan under way */
};

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
	free(w);
}

void
webhooks_configure(struct webhooks *w, const struct config *cfg,
    struct spool *spool, size_t cap)
{
	struct hook	**v;
	const char	 *sec;
	size_t		  room, i;

	w->cfg = cfg;
	w->any = 0;
	for (i = 0; (sec = config_section(cfg, i)) != NULL; i++)
		if (strncmp(sec, "client.", 7) == 0 &&
		    config_get(cfg, sec, "webhook-url") != NULL)
			w->any = 1;
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

/* Keep an event for the operator in events-failed/, with why. */
static void
give_up(struct webhooks *w, const char *name, json_t *ev, const char *why)
{
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

/* Start the transfer of an event; 0, or -1 (its try recorded). */
static int
start(struct webhooks *w, const char *name, json_t *ev)
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

/* spool_area_scan callback: start events/name if due.  1 stops. */
static int
consider(void *arg, const char *name)
{
	struct webhooks	*w = arg;
	json_t		*ev;
	char		 err[512];
	size_t		 i;

	if (w->nhooks >= w->cap) {
		w->dirty = 1;	/* more may be due: look again when one ends */
		return 1;
	}
	for (i = 0; i < w->nhooks; i++)
		if (strcmp(w->hooks[i]->name, name) == 0)
			return 0;
	if ((ev = spool_area_load(w->spool, EVENT_AREA, name, err,
	    sizeof(err))) == NULL) {
		if (errno != ENOENT)
			log_err("webhooks: %s", err);
		return 0;
	}
	if (event_due(ev) > w->now) {
		json_decref(ev);
		return 0;
	}
	start(w, name, ev);
	return 0;
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
	w->next_scan = now + SCAN_EVERY;
	/*
	 * Due by the clock of the scan, not of the pass that called it: an
	 * event a receipt made during the pass is due at its own second,
	 * and --once would end without it.
	 */
	w->now = time(NULL) > now ? time(NULL) : now;
	spool_area_scan(w->spool, EVENT_AREA, consider, w);
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
	curl_multi_remove_handle(w->multi, easy);
	if (rc != CURLE_OK) {
		snprintf(why, sizeof(why), "%s", h->curlerr[0] ? h->curlerr :
		    curl_easy_strerror(rc));
		code = 0;
	} else
		snprintf(why, sizeof(why), "HTTP %ld", code);
	switch (policy_webhook_http(code)) {
	case MSG_OK:
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
	/* A slot is free: what waited for one may go. */
	if (w->dirty == 0 && !w->once)
		w->next_scan = 0;
	return 1;
}
