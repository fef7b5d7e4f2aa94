/*
 * sms-batch: POST /sms/v1/deliver/batch, {"messages":[SMS…]}
 * (conf/openapi.yaml).  200 with one result per entry, in input order; the good
 * entries are queued, the bad ones say why.
 */
#include <stdlib.h>
#include <unistd.h>

#include "content/sms.h"
#include "endpoints.h"
#include "http/batch.h"
#include "http/cgi.h"
#include "http/problem.h"

static const struct field batch_fields[] = {
	{ "messages", FIELD_ARRAY, FIELD_REQUIRED, 1, 0, NULL, NULL,
	    FIELD_OBJECT },
	FIELD_END
};

/* Add one input entry to the batch: its reply, and its document when good. */
static int
add_one(struct ctx *ctx, const json_t *entry, struct batch *b)
{
	struct sms_queued	 q;
	enum spool_dir		 dest;
	json_t			*errors, *recipient, *doc, *res;
	char			*why, at[RFC3339_LEN];

	recipient = json_object_get(entry, "recipient");
	if (!json_is_string(recipient))
		recipient = json_null();
	if ((errors = json_object()) == NULL)
		return -1;
	doc = sms_build(ctx->client, entry, "", errors, &q, &dest);
	if (doc == NULL) {
		why = json_object_size(errors) ? problem_errors_line(errors) :
		    NULL;
		res = json_pack("{s:O, s:n, s:s, s:s}", "recipient", recipient,
		    "smsId", "status", "error", "error", why ? why :
		    BATCH_TRY_AGAIN);
		free(why);
	} else if (q.scheduled) {
		rfc3339_format(q.send_at, at, sizeof(at));
		res = json_pack("{s:O, s:s, s:s, s:n, s:s}", "recipient",
		    recipient, "smsId", q.id, "status", "Scheduled", "error",
		    "sendAt", at);
	} else
		res = json_pack("{s:O, s:s, s:s, s:n}", "recipient", recipient,
		    "smsId", q.id, "status", "Queued", "error");
	json_decref(errors);
	return batch_add(b, res, doc, dest);
}

static struct response *
sms_batch(struct ctx *ctx)
{
	struct batch	 b;
	struct problem	*p;
	json_t		*entry, *list;
	size_t		 i;

	p = problem_new(400, "invalid-field", "the batch is not valid");
	if (p == NULL)
		return NULL;
	if (valid_object(ctx->body, batch_fields, "", p->errors) > 0 ||
	    valid_batch(ctx->body, "messages", ctx->limits->batch,
	    p->errors) > 0)
		return problem_response(p);
	problem_free(p);
	list = json_object_get(ctx->body, "messages");
	if (batch_init(&b, ctx->spool, ctx->routes, json_array_size(list),
	    "smsId") == -1)
		return NULL;
	json_array_foreach(list, i, entry) {
		if (add_one(ctx, entry, &b) == -1) {
			batch_free(&b);
			return NULL;
		}
	}
	/* One durable commit for the whole batch. */
	return batch_respond(&b);
}

/* Each entry is a message, for the client's rate. */
static size_t
messages(const json_t *body)
{
	return json_array_size(json_object_get(body, "messages"));
}

const struct endpoint ep_sms_batch = {
	.method = "POST",
	.needs_key = 1,
	.scope = SCOPE_SMS,
	.limit = LIMIT_BODY,
	.needs_spool = 1,
	.handler = sms_batch,
	.messages = messages,
};

CGI_MAIN(ep_sms_batch)
