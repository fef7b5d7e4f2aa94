/*
 * sms.c: validating one SMS and building its spool document.
 */
#include <string.h>
#include <time.h>

#include "content/sms.h"

const struct field sms_fields[] = {
	{ "recipient", FIELD_STRING, FIELD_REQUIRED, 0, 0, valid_e164,
	    NULL, 0 },
	{ "messageBody", FIELD_STRING, FIELD_REQUIRED | FIELD_NONEMPTY, 1,
	    SMS_BODY_MAX, NULL, NULL, 0 },
	{ "sendAt", FIELD_STRING, FIELD_NULLABLE, 0, 0, valid_rfc3339,
	    NULL, 0 },
	FIELD_REFERENCE,
	FIELD_END
};

json_t *
sms_build(const struct client *client, const json_t *sms, const char *prefix,
    json_t *errors, struct sms_queued *out, enum spool_dir *dest)
{
	json_t		*msg, *doc;
	const char	*at;
	time_t		 now = time(NULL);

	memset(out, 0, sizeof(*out));
	if (valid_object(sms, sms_fields, prefix, errors) > 0)
		return NULL;
	at = json_string_value(json_object_get(sms, "sendAt"));
	if (at != NULL && rfc3339_parse(at, &out->send_at) == 0 &&
	    out->send_at > now)
		out->scheduled = 1;
	if (ulid_new(out->id) == -1)
		return NULL;
	msg = json_pack("{s:O, s:O}",
	    "to", json_object_get(sms, "recipient"),
	    "body", json_object_get(sms, "messageBody"));
	*dest = out->scheduled ? SPOOL_DEFERRED : SPOOL_NEW;
	doc = msgdoc_new(out->id, "sms", client->id,
	    out->scheduled ? out->send_at : now, msg);
	if (doc != NULL && client->test)
		msgdoc_set_test(doc);
	if (doc != NULL)
		msgdoc_set_reference(doc, json_string_value(json_object_get(sms,
		    "reference")));
	return doc;
}
