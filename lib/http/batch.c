/*
 * batch.c: several messages of one request, committed together, and the
 * one message of a one-message route; a message no route takes
 * (msgspool.conf(5), Routes) and a recipient its client suppressed
 * (msgspool-spool(5), Suppressions) refused either way.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/channel.h"
#include "base/log.h"
#include "content/route.h"
#include "http/batch.h"
#include "http/http.h"
#include "http/problem.h"
#include "spool/suppress.h"

/* An entry whose recipient's list cannot be read now. */
#define BATCH_UNCHECKED	"the recipient's suppressions cannot be read " \
			"now; retry this entry"

int
batch_init(struct batch *b, struct spool *spool,
    const struct route_table *routes, size_t n, const char *idkey)
{
	b->spool = spool;
	b->routes = routes;
	b->unchecked = 0;
	b->docs.items = NULL;
	b->docs.n = b->docs.cap = 0;
	b->n = b->queued = 0;
	b->cap = n ? n : 1;
	b->idkey = idkey;
	suppress_look_init(&b->look);
	b->slots = calloc(b->cap, sizeof(*b->slots));
	b->replies = json_array();
	if (b->slots == NULL || b->replies == NULL) {
		batch_free(b);
		return -1;
	}
	return 0;
}

/* Turn an entry's reply into an error saying why. */
static void
entry_error(json_t *res, const char *idkey, const char *why)
{
	json_object_set_new(res, idkey, json_null());
	json_object_set_new(res, "status", json_string("error"));
	json_object_set_new(res, "error", json_string(why));
	json_object_del(res, "sendAt");
}

/*
 * What routes of chsec take, after "routes of X take " in the reason of
 * a message none takes: their prefixes as a client writes them ("+49"
 * for sms and voice, whose numbers have a "+"; "49" for ott; "@domain"
 * for email), as many as fit in buf.
 */
static void
prefixes_of(const struct route_table *t, const char *chsec, char *buf,
    size_t len)
{
	const struct route_conf	*r;
	const char		*plus;
	size_t			 i, k, used = 0;
	int			 n;

	plus = strcmp(chsec, "sms") == 0 || strcmp(chsec, "voice") == 0 ?
	    "+" : "";
	buf[0] = '\0';
	for (i = 0; (r = route_at(t, i)) != NULL; i++) {
		if (strcmp(r->channel, chsec) != 0)
			continue;
		for (k = 0; k < r->nprefixes; k++) {
			n = snprintf(buf + used, len - used, "%s%s%s",
			    used ? ", " : "", r->prefixes[k][0] == '@' ? "" :
			    plus, r->prefixes[k]);
			/* The rest does not fit: say there is more. */
			if (n < 0 || (size_t)n + 6 >= len - used) {
				snprintf(buf + used, len - used, "%s...",
				    used ? ", " : "");
				return;
			}
			used += (size_t)n;
		}
	}
}

const char *
batch_noroute(const struct route_table *t, const json_t *doc, char *buf,
    size_t len)
{
	const struct route_conf	*r;
	const char		*chsec, *dot;
	char			 sec[32], took[160];
	size_t			 i;

	if (t == NULL || (chsec = channel_section(doc, sec, sizeof(sec))) ==
	    NULL || route_pick(t, chsec, msgdoc_recipient(doc)) != NULL)
		return NULL;
	dot = strchr(chsec, '.');
	for (i = 0; (r = route_at(t, i)) != NULL; i++)
		if (strcmp(r->channel, chsec) == 0)
			break;
	/* No section routes the channel: an [ott.N] nobody configured. */
	if (r == NULL) {
		if (dot != NULL)
			snprintf(buf, len, "channelType %s is not configured",
			    dot + 1);
		else
			snprintf(buf, len, "%s is not configured", chsec);
		return buf;
	}
	/* Every route of it has prefixes, and none is the recipient's. */
	prefixes_of(t, chsec, took, sizeof(took));
	snprintf(buf, len, "no route takes this recipient (routes of %s%s "
	    "take %s)", dot != NULL ? "channelType " : "", dot != NULL ?
	    dot + 1 : chsec, took);
	return buf;
}

/*
 * Why doc may not be queued, into buf: no route takes it, its recipient
 * is suppressed, or its list cannot be read (*unread set); NULL when it
 * may.
 */
static const char *
refused(struct batch *b, const json_t *doc, char *buf, size_t len,
    int *unread)
{
	json_t	*sup;
	char	 why[64], nr[256];

	*unread = 0;
	/* No route: before the spool is read at all. */
	if (batch_noroute(b->routes, doc, nr, sizeof(nr)) != NULL) {
		snprintf(buf, len, "%s: %s", BATCH_NO_ROUTE, nr);
		return buf;
	}
	if ((sup = suppress_doc_look(b->spool, &b->look, doc)) != NULL) {
		snprintf(buf, len, "recipient: %s", suppress_why(sup, why,
		    sizeof(why)));
		json_decref(sup);
		return buf;
	}
	if (errno == 0)
		return NULL;
	log_err("batch: suppressions of %s: %s", msgdoc_id(doc) ?
	    msgdoc_id(doc) : "?", strerror(errno));
	*unread = 1;
	snprintf(buf, len, "%s", BATCH_UNCHECKED);
	return buf;
}

int
batch_add(struct batch *b, json_t *reply, json_t *doc, enum spool_dir dest)
{
	ssize_t		*v, slot = -1;
	const char	*why;
	char		 buf[320];
	int		 unread;

	if (reply == NULL) {
		json_decref(doc);
		return -1;
	}
	/* Refused before anything is written. */
	if (doc != NULL && (why = refused(b, doc, buf, sizeof(buf),
	    &unread)) != NULL) {
		b->unchecked += unread;
		entry_error(reply, b->idkey, why);
		json_decref(doc);
		doc = NULL;
	}
	if (b->n == b->cap) {
		if ((v = reallocarray(b->slots, b->cap * 2,
		    sizeof(*v))) == NULL) {
			json_decref(reply);
			json_decref(doc);
			return -1;
		}
		b->slots = v;
		b->cap *= 2;
	}
	if (doc != NULL && (slot = spool_batch_add(&b->docs, doc, dest)) ==
	    -1) {
		json_decref(reply);
		return -1;
	}
	if (json_array_append_new(b->replies, reply) == -1)
		return -1;
	b->slots[b->n++] = slot;
	return 0;
}

int
batch_has_doc(const struct batch *b, size_t i)
{
	return i < b->n && b->slots[i] >= 0;
}

int
batch_commit(struct batch *b)
{
	enum msg_status	 st;
	json_t		*res;
	size_t		 i, temp = 0, perm = 0;

	/* Every entry is checked: the lists are let go before the commit. */
	suppress_look_end(&b->look);
	spool_batch_commit(b->spool, &b->docs);
	b->queued = 0;
	for (i = 0; i < b->n; i++) {
		if (b->slots[i] < 0)
			continue;
		if ((st = spool_batch_status(&b->docs, (size_t)b->slots[i])) ==
		    MSG_OK) {
			b->queued++;
			continue;
		}
		if (st == MSG_TEMPFAIL)
			temp++;
		else
			perm++;
		res = json_array_get(b->replies, i);
		entry_error(res, b->idkey, BATCH_TRY_AGAIN);
	}
	/* Nothing queued for a reason of ours is not a 200. */
	temp += b->unchecked;
	if (b->queued == 0 && temp + perm > 0)
		return temp > 0 ? 503 : 500;
	return 0;
}

int
batch_queue_one(struct spool *s, const struct route_table *routes,
    const json_t *doc, enum spool_dir dest, struct response **r)
{
	struct problem	*p;
	enum msg_status	 st;
	json_t		*sup;
	char		 why[64], nr[256];

	*r = NULL;
	/* Like an unconfigured channel: the request's fault, a 400. */
	if (batch_noroute(routes, doc, nr, sizeof(nr)) != NULL) {
		if ((p = problem_new(400, BATCH_NO_ROUTE, "no route takes "
		    "the recipient: nothing is sent to it")) != NULL)
			problem_add(p, "recipient", "%s", nr);
		*r = problem_response(p);
		return -1;
	}
	if ((sup = suppress_doc(s, doc)) != NULL) {
		suppress_why(sup, why, sizeof(why));
		json_decref(sup);
		if ((p = problem_new(422, "suppressed", "the recipient is %s: "
		    "nothing is sent to it", why)) != NULL)
			problem_add(p, "recipient", "%s", why);
		*r = problem_response(p);
		return -1;
	}
	if (errno != 0) {
		log_err("batch: suppressions of %s: %s", msgdoc_id(doc) ?
		    msgdoc_id(doc) : "?", strerror(errno));
		*r = response_error(spool_errno_status(errno) ==
		    MSG_TEMPFAIL ? 503 : 500, "the recipient's suppressions "
		    "cannot be read now");
		return -1;
	}
	if ((st = spool_enqueue(s, doc, dest)) == MSG_OK)
		return 0;
	*r = response_error(st == MSG_TEMPFAIL ? 503 : 500,
	    "the spool cannot take messages now");
	return -1;
}

struct response *
batch_respond(struct batch *b)
{
	json_t	*replies;
	int	 fail;

	if ((fail = batch_commit(b)) != 0) {
		batch_free(b);
		return response_error(fail, "the spool cannot take messages now");
	}
	replies = json_incref(batch_replies(b));
	batch_free(b);
	return response_json(200, replies);
}

int
batch_queued(const struct batch *b, size_t i)
{
	return batch_has_doc(b, i) && spool_batch_status(&b->docs,
	    (size_t)b->slots[i]) == MSG_OK;
}

json_t *
batch_replies(const struct batch *b)
{
	return b->replies;
}

void
batch_free(struct batch *b)
{
	suppress_look_end(&b->look);
	spool_batch_free(&b->docs);
	json_decref(b->replies);
	free(b->slots);
	b->replies = NULL;
	b->slots = NULL;
	b->n = b->cap = 0;
}
