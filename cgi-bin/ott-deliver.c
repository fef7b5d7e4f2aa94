/*
 * ott-deliver: POST /ott/v1/deliver, {"payload":[OTT message…]}
 * (conf/openapi.yaml).  200 with one result per entry in
 * input order; an entry with a bad template, malformed data or a
 * recipient no route of its channelType takes (msgspool.conf(5), Routes:
 * an [ott.N] section or a [route.NAME] with channel = ott.N; batch.h
 * refuses it, "no-route: ...") fails alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/channel.h"
#include "base/valid.h"
#include "content/tmpl.h"
#include "endpoints.h"
#include "http/batch.h"
#include "http/cgi.h"
#include "http/problem.h"
#include "spool/spool.h"

static const struct field body_fields[] = {
	{ "payload", FIELD_ARRAY, FIELD_REQUIRED, 1, 0, NULL, NULL,
	    FIELD_OBJECT },
	FIELD_END
};

static const struct field entry_fields[] = {
	{ "recipient", FIELD_STRING, FIELD_REQUIRED, 0, 0, valid_msisdn,
	    NULL, 0 },
	{ "templateID", FIELD_STRING, FIELD_REQUIRED, 0, 0, valid_ident,
	    NULL, 0 },
	{ "templateParameters", FIELD_ARRAY, FIELD_NULLABLE, 0, 100, NULL,
	    NULL, FIELD_STRING },
	{ "channelType", FIELD_INTEGER, FIELD_REQUIRED, 0, 1000000, NULL,
	    NULL, 0 },
	FIELD_REFERENCE,
	FIELD_END
};

/* Templates loaded so far in this request, by id (NULL: unknown). */
struct cache {
	char		**ids;
	struct tmpl	**tmpls;
	size_t		  n;
};

static void
cache_free(struct cache *c)
{
	size_t	i;

	for (i = 0; i < c->n; i++) {
		free(c->ids[i]);
		tmpl_free(c->tmpls[i]);
	}
	free(c->ids);
	free(c->tmpls);
}

/* The template, or NULL with the reason in err. */
static const struct tmpl *
template(struct ctx *ctx, struct cache *c, const char *id, char *err,
    size_t errlen)
{
	enum msg_status	 st;
	struct tmpl	*t;
	char		**ids;
	struct tmpl	**tmpls;
	size_t		 i;

	for (i = 0; i < c->n; i++)
		if (strcmp(c->ids[i], id) == 0) {
			if (c->tmpls[i] == NULL)
				snprintf(err, errlen, "invalid template: no "
				    "OTT template '%s'", id);
			return c->tmpls[i];
		}
	t = cgi_tmpl_load(ctx, TMPL_OTT, id, &st, err, errlen);
	if (t == NULL && st == MSG_PERMFAIL)
		snprintf(err, errlen, "invalid template: no OTT template '%s'",
		    id);
	else if (t == NULL)
		snprintf(err, errlen, "template '%s' cannot be read", id);
	ids = reallocarray(c->ids, c->n + 1, sizeof(*ids));
	if (ids != NULL)
		c->ids = ids;
	tmpls = reallocarray(c->tmpls, c->n + 1, sizeof(*tmpls));
	if (tmpls != NULL)
		c->tmpls = tmpls;
	if (ids != NULL && tmpls != NULL && (ids[c->n] = strdup(id)) != NULL) {
		tmpls[c->n] = t;
		c->n++;
	} else
		tmpl_free(t), t = NULL;
	return t;
}

/*
 * Build one entry's document into *doc; NULL on success (id filled),
 * else why it failed (in err).
 */
static const char *
prepare_one(struct ctx *ctx, struct cache *c, const json_t *entry, char *id,
    json_t **doc, char *err, size_t errlen)
{
	const struct tmpl	*t;
	json_t			*errors, *params, *msg;
	char			 missing[256], *line, *body;
	json_int_t		 type;
	size_t			 blen;

	if ((errors = json_object()) == NULL)
		return "out of memory";
	if (valid_object(entry, entry_fields, "", errors) > 0) {
		line = problem_errors_line(errors);
		snprintf(err, errlen, "malformed: %s", line ? line :
		    "invalid entry");
		free(line);
		json_decref(errors);
		return err;
	}
	json_decref(errors);
	if ((t = template(ctx, c, json_string_value(json_object_get(entry,
	    "templateID")), err, errlen)) == NULL)
		return err;
	params = json_object_get(entry, "templateParameters");
	if (json_is_null(params))
		params = NULL;
	if (t->parameters >= 0 &&
	    json_array_size(params) != (size_t)t->parameters) {
		snprintf(err, errlen, "invalid template parameters: template "
		    "'%s' takes %ld, got %zu", t->id, t->parameters,
		    json_array_size(params));
		return err;
	}
	type = json_integer_value(json_object_get(entry, "channelType"));
	body = tmpl_merge(t->body, t->body_len, params, 0, &blen, missing,
	    sizeof(missing));
	if (body == NULL) {
		snprintf(err, errlen, "invalid template parameters: no value "
		    "for {{%s}}", missing);
		return err;
	}
	while (blen > 0 && (body[blen - 1] == '\n' || body[blen - 1] == '\r'))
		body[--blen] = '\0';
	if (ulid_new(id) == -1) {
		free(body);
		return BATCH_TRY_AGAIN;
	}
	msg = json_pack("{s:O, s:I, s:s, s:s?, s:s?, s:s?, s:o, s:s%}",
	    "to", json_object_get(entry, "recipient"), "channelType", type,
	    "templateId", t->id, "templateName", t->name,
	    "language", t->language, "providerTemplate", t->provider_template,
	    "parameters", params ? json_incref(params) : json_array(),
	    "body", body, blen);
	free(body);
	if ((*doc = msgdoc_new(id, "ott", ctx->client->id, 0, msg)) == NULL)
		return BATCH_TRY_AGAIN;
	if (ctx->client->test)
		msgdoc_set_test(*doc);
	msgdoc_set_reference(*doc, json_string_value(json_object_get(entry,
	    "reference")));
	return NULL;
}

static struct response *
ott_deliver(struct ctx *ctx)
{
	struct cache	 cache = { NULL, NULL, 0 };
	struct batch	 b;
	struct problem	*p;
	json_t		*entry, *list, *recipient, *res, *doc;
	const char	*why;
	char		 id[SPOOL_ID_LEN + 1], err[512];
	size_t		 i;

	if ((p = problem_new(400, "invalid-field",
	    "the request is not valid")) == NULL)
		return NULL;
	if (valid_object(ctx->body, body_fields, "", p->errors) > 0 ||
	    valid_batch(ctx->body, "payload", ctx->limits->batch,
	    p->errors) > 0)
		return problem_response(p);
	problem_free(p);
	list = json_object_get(ctx->body, "payload");
	if (batch_init(&b, ctx->spool, ctx->routes, json_array_size(list),
	    "messageId") == -1)
		return NULL;
	json_array_foreach(list, i, entry) {
		recipient = json_object_get(entry, "recipient");
		if (!json_is_string(recipient))
			recipient = json_null();
		doc = NULL;
		why = prepare_one(ctx, &cache, entry, id, &doc, err,
		    sizeof(err));
		if (why == NULL)
			res = json_pack("{s:O, s:s, s:s, s:n}", "recipient",
			    recipient, "messageId", id, "status", "queued",
			    "error");
		else
			res = json_pack("{s:O, s:n, s:s, s:s}", "recipient",
			    recipient, "messageId", "status", "error",
			    "error", why);
		if (batch_add(&b, res, doc, SPOOL_NEW) == -1) {
			cache_free(&cache);
			batch_free(&b);
			return NULL;
		}
	}
	cache_free(&cache);
	/* One durable commit for the whole request. */
	return batch_respond(&b);
}

/* Each entry is a message, for the client's rate. */
static size_t
messages(const json_t *body)
{
	return json_array_size(json_object_get(body, "payload"));
}

const struct endpoint ep_ott_deliver = {
	.method = "POST",
	.needs_key = 1,
	.scope = SCOPE_OTT,
	.limit = LIMIT_BODY,
	.needs_spool = 1,
	.handler = ott_deliver,
	.messages = messages,
};

CGI_MAIN(ep_ott_deliver)
