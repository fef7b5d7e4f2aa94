/*
 * daemon_routes.c: the route each message goes by, failover and the
 * breaker (msgspool.conf(5), Routes; msgspoold(8), Routes).
 *
 * A claimed message tries its route (route_pick: the longest prefix of
 * its recipient), then the routes of its fallback list (route_order), at
 * once, each time the one before fails temporarily; a permanent failure
 * is final.  When every route failed temporarily the message waits its
 * backoff and starts again from its first route.  A route that fails
 * temporarily "breaker" times in a row is out for "breaker-time": its
 * messages go straight to the next route of their list, or wait when
 * none is left; then one message probes it, and an answer brings it in
 * again.  A route with a session (smpp) is out while its session is not
 * bound instead (the session reconnects with its own backoff).  Each
 * change is logged once and written to the route's status file for
 * msgspool(8) status.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/channel.h"
#include "base/log.h"
#include "base/rfc3339.h"
#include "content/route.h"
#include "daemon/daemon.h"
#include "daemon/daemon_metrics.h"
#include "spool/spool.h"

/* The status file of a route that keeps failing: at most this often. */
#define REPORT_EVERY	1

/* Write r's status file (status/route-NAME.json). */
static void
report(struct daemon *d, struct route *r, time_t now)
{
	char		 name[160], since[RFC3339_LEN], until[RFC3339_LEN];
	char		 at[RFC3339_LEN];
	const char	*state;
	json_t		*doc;

	if (r->name == NULL)
		return;
	state = r->probing ? "probing" : r->out_until != 0 ? "out" : "in";
	rfc3339_format(r->since ? r->since : now, since, sizeof(since));
	rfc3339_format(r->out_until, until, sizeof(until));
	rfc3339_format(now, at, sizeof(at));
	doc = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s?, s:I, s:s?, s:I, "
	    "s:s}", "route", r->name, "section", r->section, "provider",
	    r->provider->name, "state", state, "since", since, "outUntil",
	    r->out_until != 0 ? until : NULL, "failures", (json_int_t)r->fails,
	    "lastError", r->lasterr[0] != '\0' ? r->lasterr : NULL, "pid",
	    (json_int_t)getpid(), "updated", at);
	snprintf(name, sizeof(name), "route-%s", r->name);
	if (doc == NULL || spool_status_put(d->spool, name, doc) == -1)
		log_warn("route %s: cannot write its status", r->name);
	json_decref(doc);
	r->reported = (int)(now > 0 ? now : 1);
}

void
routes_report(struct daemon *d)
{
	time_t	now = time(NULL);
	size_t	i;

	for (i = 0; i < d->nroutes; i++)
		if (d->routes[i]->name != NULL && d->routes[i]->reported == 0)
			report(d, d->routes[i], now);
}

/* The daemon's route of c, made on first use and given c's breaker. */
static struct route *
route_of_conf(struct daemon *d, const struct route_conf *c,
    const char *channel, char *err, size_t errlen)
{
	struct route	*r;

	if ((r = route_get(d, c->section, channel, err, errlen)) == NULL)
		return NULL;
	if (r->name == NULL) {
		r->name = c->name;
		r->breaker = c->breaker;
		r->breaker_time = c->breaker_time;
		r->since = time(NULL);
		report(d, r, r->since);
	}
	return r;
}

/*
 * Whether r takes a message now: in, or out long enough to be probed by
 * one (this one: it is marked probing).
 */
static int
breaker_lets(struct daemon *d, struct route *r, time_t now)
{
	if (r->out_until == 0)
		return 1;
	if (now < r->out_until || r->probing)
		return 0;
	r->probing = 1;
	log_info("route %s: out since %lld s, tried again with one message",
	    r->name, (long long)(now - r->since));
	report(d, r, now);
	return 1;
}

/*
 * From job->tried on, the first route that takes the message now: set
 * as job->route (job->tried its index).  0, or -1 when none does.
 */
static int
next_usable(struct daemon *d, struct job *job, time_t now)
{
	struct route	*r;
	int		 last;

	for (; job->tried < job->ntries; job->tried++) {
		r = job->tries[job->tried];
		last = job->tried + 1 == job->ntries;
		/* A session not bound passes it on, unless it is the last
		 * route: then it waits in the session's queue. */
		if (r->provider->ready != NULL && !r->provider->ready(r->state) &&
		    !last)
			continue;
		/*
		 * Until it has answered (at start, after a failure) a route
		 * has at most what is left of its breaker in flight, so that
		 * a route that is down sees no more than "breaker" attempts
		 * before it is out, however many messages wait; the rest go
		 * on down the list (the last route takes them all).
		 */
		if (!r->proven && !last && r->out_until == 0 &&
		    r->provider->ready == NULL &&
		    (long)r->inflight >= (r->breaker - r->fails > 1 ?
		    r->breaker - r->fails : 1))
			continue;
		if (!breaker_lets(d, r, now))
			continue;
		job->route = r;
		return 0;
	}
	job->route = NULL;
	return -1;
}

int
job_plan(struct daemon *d, struct job *job, time_t now)
{
	const struct route_conf	*first, *order[JOB_TRIES_MAX];
	const char		*channel;
	struct route		*r;
	char			 section[64], err[512];
	time_t			 back = 0;
	size_t			 n, i;

	job->route = NULL;
	job->ntries = job->tried = 0;
	channel = msgdoc_channel(job->doc);
	if (route_section(job->doc, section, sizeof(section)) == NULL) {
		job->status = MSG_PERMFAIL;
		snprintf(job->err, sizeof(job->err), "no channel to route by");
		return -1;
	}
	/* A test key's messages: the one route that sends nothing. */
	if (strcmp(section, PROVIDER_TEST_SECTION) == 0) {
		if ((r = route_get(d, section, channel, err,
		    sizeof(err))) == NULL) {
			job->status = MSG_PERMFAIL;
			snprintf(job->err, sizeof(job->err), "%s", err);
			return -1;
		}
		job->tries[job->ntries++] = job->route = r;
		return 0;
	}
	/* No route: the config changed since it was accepted.  An operator
	 * mends that: it waits, as for a provider's bad keys. */
	if ((first = route_pick(d->rtable, section, msgdoc_recipient(
	    job->doc))) == NULL) {
		job->status = MSG_TEMPFAIL;
		snprintf(job->err, sizeof(job->err), "no route takes %s (%s)",
		    msgdoc_recipient(job->doc), section);
		return -1;
	}
	n = route_order(d->rtable, first, order, JOB_TRIES_MAX);
	for (i = 0; i < n; i++) {
		if ((r = route_of_conf(d, order[i], channel, err,
		    sizeof(err))) == NULL) {
			job->status = MSG_TEMPFAIL;
			snprintf(job->err, sizeof(job->err), "%s", err);
			return -1;
		}
		job->tries[job->ntries++] = r;
	}
	if (next_usable(d, job, now) == 0)
		return 0;
	/* Every route out: it waits until the first is due a probe. */
	for (i = 0; i < job->ntries; i++) {
		r = job->tries[i];
		if (r->out_until > now && (back == 0 || r->out_until < back))
			back = r->out_until;
	}
	job->status = MSG_TEMPFAIL;
	job->retry_after = back > now ? (long)(back - now) : 1;
	r = job->tries[0];
	snprintf(job->err, sizeof(job->err), "every route is out (route %s: "
	    "%.200s)", r->name, r->lasterr[0] ? r->lasterr : "not taking "
	    "messages");
	return -1;
}

/* Tell r's breaker how an attempt went. */
static void
account(struct daemon *d, struct route *r, enum msg_status st,
    const char *err, time_t now)
{
	int	changed = 0;

	if (st != MSG_TEMPFAIL) {
		/* It answered (a permanent failure is the message's). */
		if (r->out_until != 0 || r->probing) {
			log_info("route %s: in again", r->name);
			r->out_until = 0;
			r->probing = 0;
			r->since = now;
			changed = 1;
		}
		r->fails = 0;
		r->proven = 1;
		if (changed)
			report(d, r, now);
		return;
	}
	snprintf(r->lasterr, sizeof(r->lasterr), "%s", err);
	/*
	 * A route with a session (smpp) has its own: it is out while the
	 * session is not bound (provider ready), which reconnects with a
	 * backoff of its own; its messages' failures do not count.
	 */
	if (r->provider->ready != NULL) {
		if (now - r->reported >= REPORT_EVERY)
			report(d, r, now);
		return;
	}
	r->fails++;
	r->proven = 0;
	if (r->probing) {
		r->probing = 0;
		r->out_until = now + r->breaker_time;
		r->since = now;
		changed = 1;
		log_warn("route %s: the probe failed (%s): out for %ld s more",
		    r->name, err, r->breaker_time);
	} else if (r->out_until == 0 && r->fails >= r->breaker) {
		r->out_until = now + r->breaker_time;
		r->since = now;
		changed = 1;
		log_warn("route %s: out for %ld s after %ld temporary failures "
		    "in a row: %s", r->name, r->breaker_time, r->fails, err);
	}
	if (changed || now - r->reported >= REPORT_EVERY)
		report(d, r, now);
}

/* Make a job that ended ready to start on another route. */
static void
job_reset(struct job *job)
{
	if (job->easy != NULL) {
		curl_easy_cleanup(job->easy);
		job->easy = NULL;
	}
	curl_slist_free_all(job->headers);
	curl_slist_free_all(job->rcpts);
	job->headers = job->rcpts = NULL;
	free(job->body);
	job->body = NULL;
	job->bodylen = job->bodyoff = 0;
	buf_free(&job->resp);
	json_decref(job->reply);
	job->reply = NULL;
	job->curlerr[0] = '\0';
	job->err[0] = '\0';
	job->retry_after = 0;
	job->pending = 0;
	job->status = MSG_OK;
}

int
job_failover(struct daemon *d, struct job *job, int stopping, time_t now)
{
	struct route	*r = job->route, *next;
	size_t		 at = job->tried;

	if (r == NULL || r->name == NULL)
		return 0;
	account(d, r, job->status, job->err, now);
	if (job->status != MSG_TEMPFAIL || stopping)
		return 0;
	job->tried = at + 1;
	if (next_usable(d, job, now) == -1) {
		/* None left: it waits its backoff, as tried last. */
		job->route = r;
		job->tried = at;
		return 0;
	}
	next = job->route;
	/* The attempt that failed, in the document; on to the next. */
	msgdoc_attempt(job->doc, MSG_TEMPFAIL, job->err, job->reply, now, now,
	    NULL);
	msgdoc_set_route(job->doc, r->name);
	msgdoc_event_note(job->doc, r->name, job->err);
	{
		const char *v[5] = { json_string_value(json_object_get(job->doc,
		    "channel")), r->name, r->provider->name, "retry", NULL };

		dmetrics_count(d->metrics, "attempts", v);
	}
	log_info("%s: route %s failed (%s); trying route %s", job->name,
	    r->name, job->err, next->name);
	job_reset(job);
	r->inflight--;
	next->inflight++;
	return 1;
}
