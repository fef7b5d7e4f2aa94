/*
 * sms-batch: POST /sms/v1/deliver/batch, {"messages":[SMS…]} (CONTRACT
 * section 5).  200 with one result per entry, in input order; the good
 * entries are queued, the bad ones say why.
 */
#include <stdlib.h>
#include <unistd.h>

#include "cgi.h"
#include "problem.h"
#include "sms.h"

static const struct field batch_fields[] = {
	{ "messages", FIELD_ARRAY, FIELD_REQUIRED, 1, 0, NULL, NULL,
	    FIELD_OBJECT },
	FIELD_END
};

#define TRY_AGAIN	"the spool cannot take messages now; retry this entry"

/*
 * The result entry for one input entry, its document added to the batch
 * (*slot its index) when it is good.
 */
static json_t *
prepare_one(struct ctx *ctx, const json_t *entry, struct spool_batch *b,
    ssize_t *slot)
{
	struct sms_queued	 q;
	enum spool_dir		 dest;
	json_t			*errors, *recipient, *doc, *res;
	char			*why, at[32];

	*slot = -1;
	recipient = json_object_get(entry, "recipient");
	if (!json_is_string(recipient))
		recipient = json_null();
	if ((errors = json_object()) == NULL)
		return NULL;
	doc = sms_build(ctx->client->id, entry, "", errors, &q, &dest);
	if (doc == NULL) {
		why = json_object_size(errors) ? problem_errors_line(errors) :
		    NULL;
		res = json_pack("{s:O, s:n, s:s, s:s}", "recipient", recipient,
		    "smsId", "status", "error", "error", why ? why : TRY_AGAIN);
		free(why);
	} else if ((*slot = spool_batch_add(b, doc, dest)) == -1) {
		res = NULL;
	} else if (q.scheduled) {
		rfc3339_format(q.send_at, at, sizeof(at));
		res = json_pack("{s:O, s:s, s:s, s:n, s:s}", "recipient",
		    recipient, "smsId", q.id, "status", "Scheduled", "error",
		    "sendAt", at);
	} else
		res = json_pack("{s:O, s:s, s:s, s:n}", "recipient", recipient,
		    "smsId", q.id, "status", "Queued", "error");
	json_decref(errors);
	return res;
}

static struct response *
sms_batch(struct ctx *ctx)
{
	struct spool_batch	 b = { NULL, 0, 0 };
	struct problem		*p;
	json_t			*entry, *out, *res;
	ssize_t			*slots;
	size_t			 i, n;
	int			 fail;

	p = problem_new(400, "invalid-field", "the batch is not valid");
	if (p == NULL)
		return NULL;
	if (valid_object(ctx->body, batch_fields, "", p->errors) > 0 ||
	    valid_batch(ctx->body, "messages", ctx->limits->batch,
	    p->errors) > 0)
		return problem_response(p);
	problem_free(p);
	n = json_array_size(json_object_get(ctx->body, "messages"));
	if ((out = json_array()) == NULL ||
	    (slots = calloc(n, sizeof(*slots))) == NULL) {
		json_decref(out);
		return NULL;
	}
	json_array_foreach(json_object_get(ctx->body, "messages"), i, entry) {
		if ((res = prepare_one(ctx, entry, &b, &slots[i])) == NULL ||
		    json_array_append_new(out, res) == -1) {
			json_decref(out);
			spool_batch_free(&b);
			free(slots);
			return NULL;
		}
	}
	/* One durable commit for the whole batch. */
	cgi_batch_commit(ctx->spool, &b, out, slots, "smsId", &fail);
	spool_batch_free(&b);
	free(slots);
	if (fail != 0) {
		json_decref(out);
		return response_error(fail, "the spool cannot take messages now");
	}
	return response_json(200, out);
}

static const struct endpoint endpoint = {
	.method = "POST",
	.needs_key = 1,
	.scope = SCOPE_SMS,
	.limit = LIMIT_BODY,
	.needs_spool = 1,
	.handler = sms_batch,
};

CGI_MAIN(endpoint)
