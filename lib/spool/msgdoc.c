/*
 * msgdoc.c: the spool document's fields, written and read; what
 * receipts change in it is in msgdoc_receipt.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include "base/rfc3339.h"
#include "base/ulid.h"
#include "base/util.h"
#include "spool/msgdoc.h"

/*
 * Set key (a literal) of o to v (taken), as json_pack's "s:o" does: a
 * NULL v, or a set that fails, marks *bad.  Cheaper than json_pack,
 * which parses its format each call (10% of a queued SMS's work).
 */
static void
set(json_t *o, const char *key, json_t *v, int *bad)
{
	if (v == NULL || json_object_set_new_nocheck(o, key, v) == -1)
		*bad = 1;
}

/* json_pack's "s": a string, NULL (an error) for none. */
static json_t *
str(const char *s)
{
	return s != NULL ? json_string(s) : NULL;
}

json_t *
msgdoc_new(const char *id, const char *channel, const char *client,
    time_t notbefore, json_t *message)
{
	char	 created[RFC3339_LEN], next[RFC3339_LEN];
	time_t	 now = time(NULL), made;
	json_t	*doc, *ev, *evs;
	int	 bad = 0;

	if (message == NULL)
		return NULL;
	/*
	 * Made when its id was (the id's clock, not a second read of it),
	 * so that createdAt falls as ids do in GET /messages.
	 */
	made = ulid_valid(id) ? (time_t)(ulid_time(id) / 1000) : now;
	/* time(NULL) may lag the id's clock by a tick. */
	if (made > now + 1 || made < now - 60)
		made = now;
	rfc3339_format(made, created, sizeof(created));
	rfc3339_format(notbefore > now ? notbefore : now, next,
	    sizeof(next));
	if ((doc = json_object()) == NULL) {
		json_decref(message);
		return NULL;
	}
	set(doc, "version", json_integer(MSGDOC_VERSION), &bad);
	set(doc, "id", str(id), &bad);
	set(doc, "channel", str(channel), &bad);
	set(doc, "client", str(client), &bad);
	set(doc, "created", json_string(created), &bad);
	set(doc, "attempts", json_integer(0), &bad);
	set(doc, "nextAttempt", json_string(next), &bad);
	set(doc, "lastError", json_null(), &bad);
	set(doc, "providerReply", json_null(), &bad);
	set(doc, "message", message, &bad);
	if ((ev = json_object()) != NULL) {
		set(ev, "status", json_string(notbefore > now ? "scheduled" :
		    "queued"), &bad);
		set(ev, "at", json_string(created), &bad);
	}
	if ((evs = json_array()) != NULL &&
	    json_array_append_new(evs, ev) == -1)
		bad = 1;
	set(doc, "events", evs, &bad);
	/* Scheduled: max-age counts from here, not from created. */
	if (notbefore > now)
		set(doc, "sendAt", json_string(next), &bad);
	if (bad) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

int
msgdoc_check(const json_t *doc, const char *where, const char *name,
    char *err, size_t errlen)
{
	const char	*id;

	if (!json_is_object(doc) || json_integer_value(json_object_get(doc,
	    "version")) != MSGDOC_VERSION) {
		util_seterr(err, errlen, "%s/%s: not a version %d spool file",
		    where, name, MSGDOC_VERSION);
		return -1;
	}
	/* Providers and the CLI build names from the id: it must be one. */
	id = msgdoc_id(doc);
	if (id == NULL || !ulid_valid(id) ||
	    strncmp(name, id, ULID_LEN) != 0 ||
	    (name[ULID_LEN] != '\0' && name[ULID_LEN] != '.')) {
		util_seterr(err, errlen, "%s/%s: its id is not its file name",
		    where, name);
		return -1;
	}
	return 0;
}

const char *
msgdoc_id(const json_t *doc)
{
	return json_string_value(json_object_get(doc, "id"));
}

const char *
msgdoc_channel(const json_t *doc)
{
	return json_string_value(json_object_get(doc, "channel"));
}

const char *
msgdoc_client(const json_t *doc)
{
	return json_string_value(json_object_get(doc, "client"));
}

json_t *
msgdoc_message(const json_t *doc)
{
	return json_object_get(doc, "message");
}

const char *
msgdoc_recipient(const json_t *doc)
{
	const char	*to;

	to = json_string_value(json_object_get(msgdoc_message(doc), "to"));
	return to ? to : "?";
}

long long
msgdoc_attempts(const json_t *doc)
{
	return (long long)json_integer_value(json_object_get(doc,
	    "attempts"));
}

time_t
msgdoc_due(const json_t *doc)
{
	const char	*next;
	time_t		 t;

	next = json_string_value(json_object_get(doc, "nextAttempt"));
	if (next == NULL || rfc3339_parse(next, &t) == -1)
		return time(NULL);
	return t;
}

time_t
msgdoc_age_from(const json_t *doc)
{
	static const char *const keys[] = { "created", "sendAt", "retriedAt" };
	const char	*v;
	time_t		 t, from = 0;
	size_t		 i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if ((v = json_string_value(json_object_get(doc, keys[i]))) &&
		    rfc3339_parse(v, &t) == 0 && t > from)
			from = t;
	return from ? from : time(NULL);
}

void
msgdoc_attempt(json_t *doc, enum msg_status status, const char *why,
    const json_t *reply, time_t now, time_t next, const char *gave_up)
{
	char	stamp[RFC3339_LEN];

	json_object_set_new(doc, "attempts", json_integer(
	    msgdoc_attempts(doc) + 1));
	/* Sent after all (moved back into new/ by hand): not canceled. */
	json_object_del(doc, "canceled");
	rfc3339_format(now, stamp, sizeof(stamp));
	json_object_set_new(doc, "lastAttempt", json_string(stamp));
	json_object_set_new(doc, "providerReply", reply ?
	    json_deep_copy(reply) : json_null());
	msgdoc_event(doc, status == MSG_OK ? "sent" : status == MSG_TEMPFAIL ?
	    "retrying" : "failed", now, NULL);
	switch (status) {
	case MSG_OK:
		json_object_set_new(doc, "lastError", json_null());
		json_object_set_new(doc, "nextAttempt", json_null());
		json_object_set_new(doc, "sentAt", json_string(stamp));
		break;
	case MSG_TEMPFAIL:
		json_object_set_new(doc, "lastError", json_string(why));
		rfc3339_format(next, stamp, sizeof(stamp));
		json_object_set_new(doc, "nextAttempt", json_string(stamp));
		break;
	default:
		json_object_set_new(doc, "lastError", json_string(why));
		json_object_set_new(doc, "nextAttempt", json_null());
		if (gave_up != NULL)
			json_object_set_new(doc, "gaveUp",
			    json_string(gave_up));
		break;
	}
}

void
msgdoc_set_test(json_t *doc)
{
	json_object_set_new(doc, "test", json_true());
}

int
msgdoc_is_test(const json_t *doc)
{
	return json_is_true(json_object_get(doc, "test"));
}

void
msgdoc_set_reply(json_t *doc, const char *inbound_id, const char *keyword)
{
	json_object_set_new(doc, "inReplyTo", json_pack("{s:s, s:s}", "id",
	    inbound_id, "keyword", keyword));
}

int
msgdoc_is_stop_reply(const json_t *doc)
{
	const char	*k;

	k = json_string_value(json_object_get(json_object_get(doc,
	    "inReplyTo"), "keyword"));
	return k != NULL && strcmp(k, "stop") == 0;
}

void
msgdoc_retry(json_t *doc, time_t now)
{
	char	stamp[RFC3339_LEN];

	rfc3339_format(now, stamp, sizeof(stamp));
	json_object_set_new(doc, "nextAttempt", json_string(stamp));
	json_object_set_new(doc, "retriedAt", json_string(stamp));
	json_object_del(doc, "canceled");
	msgdoc_event(doc, "queued", now, "retry");
}

void
msgdoc_cancel(json_t *doc, time_t now)
{
	char	stamp[RFC3339_LEN];

	rfc3339_format(now, stamp, sizeof(stamp));
	json_object_set_new(doc, "canceled", json_string(stamp));
	json_object_set_new(doc, "nextAttempt", json_null());
	msgdoc_event(doc, "canceled", now, "client");
}

void
msgdoc_event(json_t *doc, const char *status, time_t at, const char *source)
{
	char	 stamp[RFC3339_LEN];
	json_t	*events, *ev;

	rfc3339_format(at, stamp, sizeof(stamp));
	if (!json_is_array(events = json_object_get(doc, "events"))) {
		json_object_set_new(doc, "events", json_array());
		events = json_object_get(doc, "events");
	}
	ev = json_pack("{s:s, s:s}", "status", status, "at", stamp);
	if (ev != NULL && source != NULL)
		json_object_set_new(ev, "source", json_string(source));
	json_array_append_new(events, ev);
}

void
msgdoc_event_note(json_t *doc, const char *route, const char *error)
{
	json_t	*events = json_object_get(doc, "events"), *ev;

	if ((ev = json_array_get(events, json_array_size(events) - 1)) ==
	    NULL)
		return;
	if (route != NULL)
		json_object_set_new(ev, "route", json_string(route));
	if (error != NULL && *error != '\0')
		json_object_set_new(ev, "error", json_string(error));
}

/* A final status: nothing more will happen to the message. */
static int
final(const char *status)
{
	static const char *const finals[] = { "delivered", "read",
	    "undelivered", "failed", "canceled" };
	size_t	i;

	for (i = 0; i < sizeof(finals) / sizeof(finals[0]); i++)
		if (strcmp(status, finals[i]) == 0)
			return 1;
	return 0;
}

const char *
msgdoc_status(const json_t *doc, const char *state)
{
	const char	*receipt;

	if (strcmp(state, "deferred") == 0)
		return msgdoc_attempts(doc) > 0 ? "retrying" : "scheduled";
	if (strcmp(state, "new") == 0 || strcmp(state, "tmp") == 0)
		return "queued";
	if (strcmp(state, "cur") == 0)
		return "sending";
	if (strcmp(state, "sent") == 0) {
		/* Where receipts took it: delivered, read, undelivered. */
		receipt = json_string_value(json_object_get(doc,
		    "receiptStatus"));
		return receipt != NULL ? receipt : "sent";
	}
	return json_object_get(doc, "canceled") != NULL ? "canceled" :
	    "failed";
}

void
msgdoc_set_reference(json_t *doc, const char *reference)
{
	if (reference != NULL)
		json_object_set_new(doc, "reference", json_string(reference));
}

const char *
msgdoc_reference(const json_t *doc)
{
	return json_string_value(json_object_get(doc, "reference"));
}

void
msgdoc_set_route(json_t *doc, const char *route)
{
	if (route != NULL)
		json_object_set_new(doc, "route", json_string(route));
}

const char *
msgdoc_route(const json_t *doc)
{
	return json_string_value(json_object_get(doc, "route"));
}

const char *
msgdoc_provider(const json_t *doc)
{
	return json_string_value(json_object_get(json_object_get(doc,
	    "providerReply"), "provider"));
}

const char *
msgdoc_provider_id(const json_t *doc)
{
	static const char *const keys[] = { "sid", "wamid", "messageId",
	    "id" };
	json_t	*reply, *v;
	size_t	 i;

	reply = json_object_get(doc, "providerReply");
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (json_is_string(v = json_object_get(reply, keys[i])))
			return json_string_value(v);
	/* The http provider keeps the webhook's answer as it came. */
	reply = json_object_get(reply, "body");
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (json_is_string(v = json_object_get(reply, keys[i])))
			return json_string_value(v);
	return NULL;
}

/* A string field as a JSON value, null when absent. */
static json_t *
opt(const json_t *doc, const char *key)
{
	json_t	*v = json_object_get(doc, key);

	return json_is_string(v) ? json_incref(v) : json_null();
}

/*
 * The code a provider's error reply gave, as it gave it (a string or an
 * integer), or null: Twilio's and an SMTP server's {"code"}, the Graph
 * API's {"error":{"code"}}, an SMSC's command_status (0 is none).
 */
static json_t *
reply_code(const json_t *reply)
{
	json_t	*code = json_object_get(reply, "code");

	if (!json_is_string(code) && !json_is_integer(code))
		code = json_object_get(json_object_get(reply, "error"),
		    "code");
	if (!json_is_string(code) && !json_is_integer(code) &&
	    json_integer_value(json_object_get(reply, "commandStatus")) != 0)
		code = json_object_get(reply, "commandStatus");
	return json_is_string(code) || json_is_integer(code) ?
	    json_incref(code) : json_null();
}

json_t *
msgdoc_status_object(const json_t *doc, const char *state, int events)
{
	const char	*status, *last_at = NULL, *final_at = NULL, *err, *s;
	json_t		*o, *ev, *reply, *e;
	size_t		 i;
	int		 bad = 0;

	status = msgdoc_status(doc, state);
	ev = json_object_get(doc, "events");
	json_array_foreach(ev, i, e) {
		if (!json_is_string(json_object_get(e, "at")))
			continue;
		last_at = json_string_value(json_object_get(e, "at"));
		/* When it reached its status, not a late event's time. */
		if ((s = json_string_value(json_object_get(e, "status"))) !=
		    NULL && strcmp(s, status) == 0)
			final_at = last_at;
	}
	reply = json_object_get(doc, "providerReply");
	if ((o = json_object()) == NULL)
		return NULL;
	set(o, "id", json_incref(json_object_get(doc, "id")), &bad);
	set(o, "direction", json_string("outbound"), &bad);
	set(o, "channel", json_incref(json_object_get(doc, "channel")), &bad);
	set(o, "recipient", str(msgdoc_recipient(doc)), &bad);
	set(o, "reference", opt(doc, "reference"), &bad);
	set(o, "status", str(status), &bad);
	set(o, "createdAt", opt(doc, "created"), &bad);
	set(o, "updatedAt", last_at ? json_string(last_at) : opt(doc,
	    "created"), &bad);
	set(o, "sendAt", opt(doc, "sendAt"), &bad);
	set(o, "attempts", json_integer((json_int_t)msgdoc_attempts(doc)),
	    &bad);
	set(o, "nextAttemptAt", strcmp(status, "scheduled") == 0 ||
	    strcmp(status, "retrying") == 0 ? opt(doc, "nextAttempt") :
	    json_null(), &bad);
	set(o, "sentAt", opt(doc, "sentAt"), &bad);
	if (bad) {
		json_decref(o);
		return NULL;
	}
	if (final_at == NULL)
		final_at = last_at;
	json_object_set_new(o, "completedAt", final(status) && final_at ?
	    json_string(final_at) : json_null());
	json_object_set_new(o, "route", opt(doc, "route"));
	json_object_set_new(o, "provider", json_is_string(json_object_get(
	    reply, "provider")) ? json_incref(json_object_get(reply,
	    "provider")) : json_null());
	json_object_set_new(o, "providerMessageId", msgdoc_provider_id(doc) ?
	    json_string(msgdoc_provider_id(doc)) : json_null());
	err = json_string_value(json_object_get(doc, "lastError"));
	if (json_is_object(json_object_get(doc, "receiptError")))
		json_object_set(o, "error", json_object_get(doc,
		    "receiptError"));
	else if (err != NULL && (strcmp(status, "retrying") == 0 ||
	    strcmp(status, "failed") == 0))
		json_object_set_new(o, "error", json_pack("{s:o, s:s}",
		    "code", reply_code(reply), "message", err));
	else
		json_object_set_new(o, "error", json_null());
	if (events)
		json_object_set_new(o, "events", json_is_array(ev) ?
		    json_incref(ev) : json_array());
	return o;
}

json_t *
msgdoc_upload_new(const char *id, const char *client, const char *name,
    const char *type, size_t size, time_t created, const char *content)
{
	char	stamp[RFC3339_LEN];

	rfc3339_format(created, stamp, sizeof(stamp));
	return json_pack("{s:i, s:s, s:s, s:s, s:s, s:I, s:s, s:s}",
	    "version", MSGDOC_VERSION, "attachmentId", id, "client", client,
	    "attachmentName", name, "contentType", type, "size",
	    (json_int_t)size, "created", stamp, "content", content);
}

int
msgdoc_upload_check(const json_t *doc, const char *id, time_t notbefore)
{
	const char	*aid, *created;
	time_t		 t;

	aid = json_string_value(json_object_get(doc, "attachmentId"));
	created = json_string_value(json_object_get(doc, "created"));
	if (!json_is_object(doc) || json_integer_value(json_object_get(doc,
	    "version")) != MSGDOC_VERSION || aid == NULL ||
	    strcmp(aid, id) != 0 || created == NULL ||
	    rfc3339_parse(created, &t) == -1 || t < notbefore)
		return -1;
	return 0;
}


json_t *
msgdoc_loadfd(int fd, size_t flags, json_error_t *je)
{
	json_t	*doc;
	char	*buf;
	size_t	 len;

	if (util_read_all(fd, MSGDOC_READ_MAX, &buf, &len) == -1) {
		if (je != NULL) {
			memset(je, 0, sizeof(*je));
			je->line = -1;
			snprintf(je->text, sizeof(je->text),
			    "cannot be read: %s", strerror(errno));
		}
		return NULL;
	}
	doc = json_loadb(buf, len, flags, je);
	free(buf);
	return doc;
}
