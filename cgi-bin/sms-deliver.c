/*
 * sms-deliver: POST /sms/v1/deliver, one SMS (conf/openapi.yaml).
 * 202 Queued, or 200 Scheduled when sendAt is in the future.
 */
#include <unistd.h>

#include "content/sms.h"
#include "endpoints.h"
#include "http/cgi.h"
#include "http/problem.h"

static struct response *
sms_deliver(struct ctx *ctx)
{
	struct sms_queued	 q;
	struct problem		*p;
	json_t			*errors;
	char			 at[32];
	enum msg_status		 rc;

	if ((errors = json_object()) == NULL)
		return NULL;
	rc = sms_queue(ctx->spool, ctx->client, ctx->body, "", errors, &q);
	/* Only what the client sent can be its fault: the spool's is ours. */
	if (json_object_size(errors) > 0) {
		if ((p = problem_new(400, "invalid-field",
		    "the SMS has invalid fields")) != NULL) {
			json_object_update(p->errors, errors);
		}
		json_decref(errors);
		return problem_response(p);
	}
	json_decref(errors);
	if (rc == MSG_TEMPFAIL)
		return response_error(503, "the spool cannot take messages now");
	if (rc != MSG_OK)
		return response_error(500, "the SMS could not be queued");
	if (!q.scheduled)
		return response_json(202, json_pack("{s:s, s:s}",
		    "smsId", q.id, "status", "Queued"));
	rfc3339_format(q.send_at, at, sizeof(at));
	return response_json(200, json_pack("{s:s, s:s, s:s}",
	    "smsId", q.id, "status", "Scheduled", "sendAt", at));
}

/* One SMS a request, for the client's rate. */
static size_t
messages(const json_t *body)
{
	(void)body;
	return 1;
}

const struct endpoint ep_sms_deliver = {
	.method = "POST",
	.needs_key = 1,
	.scope = SCOPE_SMS,
	.limit = LIMIT_BODY,
	.needs_spool = 1,
	.handler = sms_deliver,
	.messages = messages,
};

CGI_MAIN(ep_sms_deliver)
