/*
 * voice-deliver: POST /voice/v1/deliver (conf/openapi.yaml): a single
 * call, {"recipient","message"|"audioUrl","callerId"?,"language"?,
 * "reference"?}, or a campaign, {"campaignName","recipients":[…],
 * "message"|"audioUrl","callerId"?,"language"?,"sendAt"?,"reference"?},
 * each recipient a number or {"recipient","reference"?}: its own
 * reference, in place of the campaign's.  One spool file per call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/valid.h"
#include "endpoints.h"
#include "http/batch.h"
#include "http/cgi.h"
#include "http/problem.h"
#include "spool/spool.h"

#define SPEAK_MAX	4000	/* characters of text to speak */

static const char *
valid_language(const char *s, size_t len)
{
	size_t	i;

	/* BCP 47 as the providers take it: "en", "en-US", "pt-BR". */
	if (len < 2 || len > 35)
		return "must be a language tag such as en-US";
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') || (s[i] == '-' && i > 0)))
			return "must be a language tag such as en-US";
	return NULL;
}

#define SPEECH_FIELDS							\
	{ "message", FIELD_STRING, FIELD_NONEMPTY, 1, SPEAK_MAX, NULL,	\
	    NULL, 0 },							\
	{ "audioUrl", FIELD_STRING, 0, 0, 0, valid_https_url, NULL, 0 },	\
	{ "callerId", FIELD_STRING, 0, 0, 0, valid_e164, NULL, 0 },	\
	{ "language", FIELD_STRING, 0, 0, 0, valid_language, NULL, 0 }

static const struct field call_fields[] = {
	{ "recipient", FIELD_STRING, FIELD_REQUIRED, 0, 0, valid_e164, NULL,
	    0 },
	SPEECH_FIELDS,
	FIELD_REFERENCE,
	FIELD_END
};

static const struct field campaign_fields[] = {
	{ "campaignName", FIELD_STRING, FIELD_REQUIRED | FIELD_NONEMPTY, 1,
	    200, valid_header, NULL, 0 },
	/* Each recipient is checked alone: a bad one is rejected, not all. */
	{ "recipients", FIELD_ARRAY, FIELD_REQUIRED, 1, 0, NULL, NULL,
	    FIELD_OBJECT },
	{ "sendAt", FIELD_STRING, FIELD_NULLABLE, 0, 0, valid_rfc3339, NULL,
	    0 },
	SPEECH_FIELDS,
	/* Every call's, unless its recipient gives its own. */
	FIELD_REFERENCE,
	FIELD_END
};

/* A campaign recipient given as an object. */
static const struct field recipient_fields[] = {
	{ .name = "recipient", .type = FIELD_STRING, .flags = FIELD_REQUIRED,
	    .check = valid_e164 },
	FIELD_REFERENCE,
	FIELD_END
};

/* The call as the provider gets it, shared by every call of a request. */
static json_t *
call_message(const json_t *body)
{
	json_t	*m;

	m = json_pack("{s:O?, s:O?, s:O?, s:O?}",
	    "say", json_object_get(body, "message"),
	    "play", json_object_get(body, "audioUrl"),
	    "from", json_object_get(body, "callerId"),
	    "language", json_object_get(body, "language"));
	return m;
}

/*
 * One call's document to a recipient, with its client's reference (or
 * NULL), id filled; NULL out of memory.
 */
static json_t *
call_doc(struct ctx *ctx, const json_t *base, const char *to,
    const char *reference, time_t notbefore, char *id)
{
	json_t	*msg, *doc;

	if (ulid_new(id) == -1 || (msg = json_deep_copy(base)) == NULL)
		return NULL;
	json_object_set_new(msg, "to", json_string(to));
	if ((doc = msgdoc_new(id, "voice", ctx->client->id, notbefore,
	    msg)) == NULL)
		return NULL;
	if (ctx->client->test)
		msgdoc_set_test(doc);
	msgdoc_set_reference(doc, reference);
	return doc;
}

/* The number of a campaign recipient, a string or an object's. */
static const json_t *
number_of(const json_t *r)
{
	return json_is_object(r) ? json_object_get(r, "recipient") : r;
}

/*
 * Why campaign recipient i is rejected ("recipients[i]: ..." into buf),
 * or NULL.
 */
static const char *
check_recipient(const json_t *recipients, size_t i, char *buf, size_t len)
{
	const json_t	*r = json_array_get(recipients, i), *o;
	const char	*why = NULL;
	json_t		*errors;
	char		 path[48], *line;
	size_t		 j;

	snprintf(path, sizeof(path), "recipients[%zu]", i);
	if (json_is_object(r)) {
		if ((errors = json_object()) == NULL)
			return BATCH_TRY_AGAIN;
		line = valid_object(r, recipient_fields, path, errors) > 0 ?
		    problem_errors_line(errors) : NULL;
		json_decref(errors);
		if (line != NULL) {
			snprintf(buf, len, "%s", line);
			free(line);
			return buf;
		}
	} else if (!json_is_string(r))
		why = "must be a number or {\"recipient\", \"reference\"}";
	else
		why = valid_e164(json_string_value(r), json_string_length(r));
	for (j = 0; why == NULL && j < i; j++) {
		o = number_of(json_array_get(recipients, j));
		if (json_is_string(o) && json_equal(o, number_of(r)))
			why = "duplicate recipient";
	}
	if (why == NULL)
		return NULL;
	snprintf(buf, len, "%s: %s", path, why);
	return buf;
}

static struct response *
campaign(struct ctx *ctx, json_t *base)
{
	struct batch	 b;
	json_t		*recipients, *calls, *r, *res, *doc;
	const json_t	*to, *ref;
	const char	*at, *why;
	char		 cid[SPOOL_ID_LEN + 1], id[SPOOL_ID_LEN + 1];
	char		 line[512], stamp[RFC3339_LEN];
	time_t		 notbefore = 0;
	size_t		 i;
	enum spool_dir	 dest;
	int		 fail;

	if ((at = json_string_value(json_object_get(ctx->body, "sendAt"))))
		rfc3339_parse(at, &notbefore);
	recipients = json_object_get(ctx->body, "recipients");
	if (ulid_new(cid) == -1)
		return response_error(503, "the spool cannot take messages now");
	if (batch_init(&b, ctx->spool, ctx->routes,
	    json_array_size(recipients), "callId") == -1)
		return NULL;
	json_object_set_new(base, "campaignId", json_string(cid));
	json_object_set(base, "campaignName",
	    json_object_get(ctx->body, "campaignName"));
	dest = notbefore > time(NULL) ? SPOOL_DEFERRED : SPOOL_NEW;
	json_array_foreach(recipients, i, r) {
		doc = NULL;
		to = number_of(r);
		/* Its own reference, else the campaign's. */
		if ((ref = json_object_get(r, "reference")) == NULL ||
		    json_is_null(ref))
			ref = json_object_get(ctx->body, "reference");
		if ((why = check_recipient(recipients, i, line,
		    sizeof(line))) == NULL && (doc = call_doc(ctx, base,
		    json_string_value(to), json_string_value(ref), notbefore,
		    id)) == NULL)
			why = BATCH_TRY_AGAIN;
		if (why == NULL)
			res = json_pack("{s:O, s:s, s:s, s:n}", "recipient", to,
			    "callId", id, "status", "queued", "error");
		else
			res = json_pack("{s:O, s:n, s:s, s:s}", "recipient",
			    json_is_string(to) ? to : json_null(), "callId",
			    "status", "error", "error", why);
		if (batch_add(&b, res, doc, dest) == -1) {
			batch_free(&b);
			return NULL;
		}
	}
	/* One durable commit for the whole campaign. */
	if ((fail = batch_commit(&b)) != 0) {
		batch_free(&b);
		return response_error(fail, "the spool cannot take calls now");
	}
	calls = json_incref(batch_replies(&b));
	res = json_pack("{s:s, s:s, s:O, s:I, s:I, s:o}", "campaignId", cid,
	    "status", "queued", "campaignName", json_object_get(ctx->body,
	    "campaignName"), "accepted", (json_int_t)b.queued, "rejected",
	    (json_int_t)(json_array_size(calls) - b.queued), "calls", calls);
	batch_free(&b);
	if (res != NULL && notbefore > time(NULL)) {
		rfc3339_format(notbefore, stamp, sizeof(stamp));
		json_object_set_new(res, "sendAt", json_string(stamp));
	}
	return response_json(202, res);
}

static struct response *
voice_deliver(struct ctx *ctx)
{
	struct problem	*p;
	struct response	*r;
	json_t		*base, *doc;
	const json_t	*body = ctx->body;
	char		 id[SPOOL_ID_LEN + 1];
	int		 is_campaign, rc;

	if ((p = problem_new(400, "invalid-field",
	    "the call request is not valid")) == NULL)
		return NULL;
	is_campaign = json_object_get(body, "recipients") != NULL ||
	    json_object_get(body, "campaignName") != NULL;
	if (valid_object(body, is_campaign ? campaign_fields : call_fields,
	    "", p->errors) > 0 || (is_campaign && valid_batch(body,
	    "recipients", ctx->limits->batch, p->errors) > 0))
		return problem_response(p);
	if ((json_object_get(body, "message") != NULL) ==
	    (json_object_get(body, "audioUrl") != NULL)) {
		problem_add(p, json_object_get(body, "message") ? "audioUrl" :
		    "message", "supply message (text to speak) or audioUrl "
		    "(https audio to play), not both");
		return problem_response(p);
	}
	problem_free(p);
	if ((base = call_message(body)) == NULL)
		return NULL;
	if (is_campaign) {
		r = campaign(ctx, base);
		json_decref(base);
		return r;
	}
	doc = call_doc(ctx, base, json_string_value(json_object_get(body,
	    "recipient")), json_string_value(json_object_get(body,
	    "reference")), 0, id);
	json_decref(base);
	if (doc == NULL)
		return response_error(503, "the spool cannot take messages now");
	/* No route: 400; a suppressed recipient: 422; nothing queued. */
	rc = batch_queue_one(ctx->spool, ctx->routes, doc, SPOOL_NEW, &r);
	json_decref(doc);
	if (rc == -1)
		return r;
	return response_json(202, json_pack("{s:s, s:s}", "callId", id,
	    "status", "queued"));
}

/* A call, or one per recipient of a campaign, for the client's rate. */
static size_t
messages(const json_t *body)
{
	const json_t	*r = json_object_get(body, "recipients");

	return json_is_array(r) ? json_array_size(r) : 1;
}

const struct endpoint ep_voice_deliver = {
	.method = "POST",
	.needs_key = 1,
	.scope = SCOPE_VOICE,
	.limit = LIMIT_BODY,
	.needs_spool = 1,
	.handler = voice_deliver,
	.messages = messages,
};

CGI_MAIN(ep_voice_deliver)
