/*
 * msgdoc.c: the spool document's fields, written and read.
 */
#include <string.h>
#include <time.h>

#include "msgdoc.h"
#include "rfc3339.h"
#include "ulid.h"
#include "util.h"

json_t *
msgdoc_new(const char *id, const char *channel, const char *client,
    time_t notbefore, json_t *message)
{
	char	 created[RFC3339_LEN], next[RFC3339_LEN];
	time_t	 now = time(NULL);
	json_t	*doc;

	if (message == NULL)
		return NULL;
	rfc3339_format(now, created, sizeof(created));
	rfc3339_format(notbefore > now ? notbefore : now, next,
	    sizeof(next));
	doc = json_pack("{s:i, s:s, s:s, s:s, s:s, s:i, s:s, s:n, s:n, s:o}",
	    "version", MSGDOC_VERSION, "id", id, "channel", channel,
	    "client", client, "created", created, "attempts", 0,
	    "nextAttempt", next, "lastError", "providerReply",
	    "message", message);
	/* Scheduled: max-age counts from here, not from created. */
	if (doc != NULL && notbefore > now)
		json_object_set_new(doc, "sendAt", json_string(next));
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
	rfc3339_format(now, stamp, sizeof(stamp));
	json_object_set_new(doc, "lastAttempt", json_string(stamp));
	json_object_set_new(doc, "providerReply", reply ?
	    json_deep_copy(reply) : json_null());
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
msgdoc_retry(json_t *doc, time_t now)
{
	char	stamp[RFC3339_LEN];

	rfc3339_format(now, stamp, sizeof(stamp));
	json_object_set_new(doc, "nextAttempt", json_string(stamp));
	json_object_set_new(doc, "retriedAt", json_string(stamp));
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
