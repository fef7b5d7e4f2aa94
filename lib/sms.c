/*
 * sms.c: validating and queueing one SMS.
 */
#include <string.h>
#include <time.h>

#include "sms.h"

const struct field sms_fields[] = {
	{ "recipient", FIELD_STRING, FIELD_REQUIRED, 0, 0, valid_e164,
	    NULL, 0 },
	{ "messageBody", FIELD_STRING, FIELD_REQUIRED | FIELD_NONEMPTY, 1,
	    SMS_BODY_MAX, NULL, NULL, 0 },
	{ "sendAt", FIELD_STRING, FIELD_NULLABLE, 0, 0, valid_rfc3339,
	    NULL, 0 },
	FIELD_END
};

enum msg_status
sms_queue(struct spool *spool, const char *client, const json_t *sms,
    const char *prefix, json_t *errors, struct sms_queued *out)
{
	json_t		*msg, *doc;
	const char	*at;
	time_t		 now = time(NULL);
	enum msg_status	 rc;

	memset(out, 0, sizeof(*out));
	if (valid_object(sms, sms_fields, prefix, errors) > 0)
		return MSG_PERMFAIL;
	at = json_string_value(json_object_get(sms, "sendAt"));
	if (at != NULL && valid_time_parse(at, &out->send_at) == 0 &&
	    out->send_at > now)
		out->scheduled = 1;
	if (spool_id_new(out->id) == -1)
		return MSG_TEMPFAIL;
	msg = json_pack("{s:O, s:O}",
	    "to", json_object_get(sms, "recipient"),
	    "body", json_object_get(sms, "messageBody"));
	doc = spool_doc_new(out->id, "sms", client,
	    out->scheduled ? out->send_at : now, msg);
	if (doc == NULL)
		return MSG_TEMPFAIL;
	rc = spool_enqueue(spool, doc,
	    out->scheduled ? SPOOL_DEFERRED : SPOOL_NEW);
	json_decref(doc);
	return rc;
}
