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

/* One result entry for one input entry. */
static json_t *
queue_one(struct ctx *ctx, const json_t *entry)
{
	struct sms_queued	 q;
	json_t			*errors, *recipient, *res;
	char			*why, at[32];
	enum msg_status		 rc;

	recipient = json_object_get(entry, "recipient");
	if (!json_is_string(recipient))
		recipient = json_null();
	if ((errors = json_object()) == NULL)
		return NULL;
	rc = sms_queue(ctx->spool, ctx->client->id, entry, "", errors, &q);
	if (rc != MSG_OK) {
		why = rc == MSG_PERMFAIL ? problem_errors_line(errors) : NULL;
		res = json_pack("{s:O, s:n, s:s, s:s}", "recipient", recipient,
		    "smsId", "status", "error", "error", why ? why :
		    "the spool cannot take messages now; retry this entry");
		free(why);
	} else if (q.scheduled) {
		spool_time_format(q.send_at, at, sizeof(at));
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
	struct problem	*p;
	json_t		*messages, *entry, *out, *res;
	size_t		 i;

	p = problem_new(400, "invalid-field", "the batch is not valid");
	if (p == NULL)
		return NULL;
	if (valid_object(ctx->body, batch_fields, "", p->errors) > 0 ||
	    valid_batch(ctx->body, "messages", ctx->limits->batch,
	    p->errors) > 0)
		return problem_response(p);
	problem_free(p);
	messages = json_object_get(ctx->body, "messages");
	if ((out = json_array()) == NULL)
		return NULL;
	json_array_foreach(messages, i, entry) {
		if ((res = queue_one(ctx, entry)) == NULL) {
			json_decref(out);
			return NULL;
		}
		json_array_append_new(out, res);
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

int
main(int argc, char *argv[], char *envp[])
{
	(void)argc;
	(void)argv;
	return cgi_run(&endpoint, envp, STDIN_FILENO, STDOUT_FILENO);
}
