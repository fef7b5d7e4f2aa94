/*
 * sms-deliver: POST /sms/v1/deliver, one SMS (conf/openapi.yaml).
 * 202 Queued, or 200 Scheduled when sendAt is in the future; 400
 * no-route when no route takes the recipient (msgspool.conf(5), Routes),
 * 422 when the client suppressed it.
 */
#include <unistd.h>

#include "content/sms.h"
#include "endpoints.h"
#include "http/batch.h"
#include "http/cgi.h"
#include "http/problem.h"

static struct response *
sms_deliver(struct ctx *ctx)
{
	struct sms_queued	 q;
	struct problem		*p;
	struct response		*r;
	enum spool_dir		 dest;
	json_t			*errors, *doc;
	char			 at[32];

	if ((errors = json_object()) == NULL)
		return NULL;
	doc = sms_build(ctx->client, ctx->body, "", errors, &q, &dest);
	/* Only what the client sent can be its fault: the spool's is ours. */
	if (json_object_size(errors) > 0) {
		if ((p = problem_new(400, "invalid-field",
		    "the SMS has invalid fields")) != NULL) {
			json_object_update(p->errors, errors);
		}
		json_decref(errors);
		json_decref(doc);
		return problem_response(p);
	}
	json_decref(errors);
	if (doc == NULL)
		return response_error(503, "the spool cannot take messages now");
	/* No route: 400; a suppressed recipient: 422; nothing queued. */
	if (batch_queue_one(ctx->spool, ctx->routes, doc, dest, &r) == -1) {
		json_decref(doc);
		return r;
	}
	json_decref(doc);
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
