/*
 * email-deliver: POST /deliver and POST /email/v1/deliver, one program
 * and one behaviour (conf/openapi.yaml).  The shape is told by the body:
 * "payload" items with "recipient" (EmailDeliverRequest) or "recipients"
 * items with "to" (EmailRequest); the reply is EmailDeliverResponse, and
 * for the second shape repeats the request.
 *
 * Request-level problems (its rules, an unknown template, a bad
 * sender or attachment) are a 400 and nothing is queued; a recipient with
 * a bad address or a missing merge field fails alone.  Addresses are
 * those mime.h can send: ASCII, one each.  Each queued file holds the
 * rendered message: subject, HTML, its text alternative, and the
 * attachments with their detected types.  Attachments given once for
 * several recipients are stored once (msgspool-spool(5), blob.h): written and
 * linked under every message id before the messages are committed, the
 * messages naming them by index instead of carrying them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/mime.h"
#include "base/valid.h"
#include "content/html.h"
#include "content/tmpl.h"
#include "endpoints.h"
#include "http/attach.h"
#include "http/batch.h"
#include "http/cgi.h"
#include "http/problem.h"
#include "spool/blob.h"
#include "spool/spool.h"

#define SUBJECT_MAX	998	/* characters: one RFC 5322 line */

/*
 * "a@example.com" or "Name <a@example.com>": one address as
 * mime_address_parse reads it (ASCII, a phrase or quoted display name).
 */
static const char *
valid_from(const char *s, size_t len)
{
	struct mime_address	a;

	if (valid_header(s, len) != NULL)
		return "must not contain CR or LF";
	return mime_address_parse(s, len, &a);
}

static const struct field attachment_fields[] = {
	{ "attachmentName", FIELD_STRING, 0, 0, 0, mime_filename_check, NULL,
	    0 },
	{ "content", FIELD_STRING, 0, 0, 0, NULL, NULL, 0 },
	{ "attachmentId", FIELD_STRING, 0, 0, 0, valid_ident, NULL, 0 },
	FIELD_END
};

#define ATTACHMENTS_FIELD						\
	{ "attachments", FIELD_ARRAY, FIELD_NULLABLE, 0, 100, NULL,	\
	    attachment_fields, FIELD_OBJECT }

/*
 * A recipient's reference: its type here, its value (valid_reference)
 * by prepare_one, so that a bad one fails that recipient alone, as a
 * bad address does.
 */
#define REFERENCE_FIELD							\
	{ .name = "reference", .type = FIELD_STRING,			\
	    .flags = FIELD_NULLABLE }

static const struct field payload_fields[] = {		/* EmailDeliverRequest */
	{ "recipient", FIELD_STRING, FIELD_REQUIRED, 0, 0, NULL, NULL, 0 },
	{ "fields", FIELD_STRMAP, FIELD_NULLABLE, 0, 0, NULL, NULL, 0 },
	ATTACHMENTS_FIELD,
	REFERENCE_FIELD,
	FIELD_END
};

static const struct field recipient_fields[] = {	/* EmailRequest */
	{ "to", FIELD_STRING, FIELD_REQUIRED, 0, 0, NULL, NULL, 0 },
	{ "fields", FIELD_STRMAP, FIELD_NULLABLE, 0, 0, NULL, NULL, 0 },
	ATTACHMENTS_FIELD,
	REFERENCE_FIELD,
	FIELD_END
};

#define COMMON_FIELDS							\
	{ "from", FIELD_STRING, FIELD_NULLABLE, 0, 0, valid_from, NULL,	\
	    0 },							\
	{ "templateId", FIELD_STRING, FIELD_NULLABLE, 0, 0, valid_ident,	\
	    NULL, 0 },							\
	{ "html", FIELD_STRING, FIELD_NULLABLE | FIELD_NONEMPTY, 1, 0,	\
	    NULL, NULL, 0 },						\
	{ "subject", FIELD_STRING, FIELD_NULLABLE, 0, SUBJECT_MAX,	\
	    valid_header, NULL, 0 },					\
	ATTACHMENTS_FIELD

static const struct field deliver_fields[] = {		/* POST /deliver */
	COMMON_FIELDS,
	{ "payload", FIELD_ARRAY, FIELD_REQUIRED, 1, 0, NULL, payload_fields,
	    FIELD_OBJECT },
	FIELD_END
};

static const struct field v1_fields[] = {	/* POST /email/v1/deliver */
	COMMON_FIELDS,
	{ "recipients", FIELD_ARRAY, FIELD_REQUIRED, 1, 0, NULL,
	    recipient_fields, FIELD_OBJECT },
	FIELD_END
};

/* One request, checked: what every recipient's message is made from. */
struct email {
	int			 v1;	/* the EmailRequest shape */
	const char		*list;	/* "payload" or "recipients" */
	const char		*addr;	/* "recipient" or "to" */
	const char		*from;
	const char		*subject;
	const char		*html;
	size_t			 html_len;
	struct tmpl		*tmpl;
	struct attachments	 shared;	/* request-level */
	struct attachments	*own;	/* each recipient's, decoded once */
	size_t			 nown;
	int			 stored;	/* shared goes to blobs/ */
	struct attach_ctx	 att;		/* decoding them */
	json_t			*notices;	/* request-level notices */
	int			 oom;		/* out of memory: a 500 */
};

/*
 * Check the request against the rules of the email routes
 * (conf/openapi.yaml) and load what the recipients share.  NULL when it
 * is good (or, with e->oom set, when memory ran out), else the 400/413
 * problem.
 */
static struct problem *
prepare(struct ctx *ctx, struct email *e)
{
	const json_t	*body = ctx->body, *item;
	struct problem	*p;
	enum msg_status	 st;
	const char	*id, *uri, *why;
	char		 err[256], path[64];
	size_t		 i;
	int		 per_recipient = 0;

	p = problem_new(400, "invalid-field", "the email request is not valid");
	if (p == NULL) {
		e->oom = 1;
		return NULL;
	}
	if (json_object_get(body, "payload") != NULL &&
	    json_object_get(body, "recipients") != NULL) {
		problem_add(p, "recipients", "use payload (POST /deliver) or "
		    "recipients (POST /email/v1/deliver), not both");
		return p;
	}
	/*
	 * The body's list tells the shape; with neither list, the route
	 * does, so the error names the field that route expects.
	 */
	if (json_object_get(body, "recipients") != NULL)
		e->v1 = 1;
	else if (json_object_get(body, "payload") == NULL)
		e->v1 = (uri = cgi_env(ctx->req->envp, "REQUEST_URI")) != NULL &&
		    strncmp(uri, "/email/v1/", 10) == 0;
	e->list = e->v1 ? "recipients" : "payload";
	e->addr = e->v1 ? "to" : "recipient";
	if (valid_object(body, e->v1 ? v1_fields : deliver_fields, "",
	    p->errors) > 0 || valid_batch(body, e->list, ctx->limits->batch,
	    p->errors) > 0)
		return p;

#define GETS(k)	json_string_value(json_object_get(body, k))
	id = GETS("templateId");
	e->html = GETS("html");
	e->html_len = json_string_length(json_object_get(body, "html"));
	e->subject = GETS("subject");
	e->from = GETS("from");
#undef GETS
	/* Rule 1: templateId or html, not both. */
	if (id != NULL && e->html != NULL)
		problem_add(p, "html", "supply templateId or html, not both");
	else if (id == NULL && e->html == NULL)
		problem_add(p, "templateId", "templateId or html is required");
	/* Rule 2: subject with html. */
	if (e->html != NULL && id == NULL && e->subject == NULL)
		problem_add(p, "subject", "is required when html is used");
	/* Rule 4: attachments at one level only. */
	json_array_foreach(json_object_get(body, e->list), i, item)
		if (json_array_size(json_object_get(item, "attachments")) > 0)
			per_recipient = 1;
	if (per_recipient &&
	    json_array_size(json_object_get(body, "attachments")) > 0)
		problem_add(p, "attachments", "put attachments at request "
		    "level or in each recipient's item, not both");
	if (problem_count(p) > 0)
		return p;

	if (id != NULL) {
		e->tmpl = cgi_tmpl_load(ctx, TMPL_EMAIL, id, &st, err,
		    sizeof(err));
		if (e->tmpl == NULL && st == MSG_PERMFAIL) {
			problem_free(p);
			p = problem_new(400, "unknown-template",
			    "no email template '%s' for this client", id);
			problem_add(p, "templateId", "no email template '%s' "
			    "for this client", id);
			return p;
		}
		if (e->tmpl == NULL) {
			problem_free(p);
			return problem_new(500, "internal",
			    "the template cannot be read");
		}
		e->html = e->tmpl->body;
		e->html_len = e->tmpl->body_len;
		/* Rule 3: the template's subject applies. */
		if (e->subject != NULL)
			json_array_append_new(e->notices, json_pack(
			    "{s:s, s:s}", "field", "subject", "message",
			    "ignored: the template's subject applies"));
		e->subject = e->tmpl->subject ? e->tmpl->subject : "";
		if (e->from == NULL)
			e->from = e->tmpl->from;
		if (valid_header(e->subject, strlen(e->subject)) != NULL) {
			problem_add(p, "templateId", "the template's Subject "
			    "is not a single line");
			return p;
		}
	}
	if (e->from == NULL) {
		problem_add(p, "from", "is required (the template has no "
		    "From)");
		return p;
	}
	/* Given, it was checked with the fields; the template's is here. */
	if ((why = valid_from(e->from, strlen(e->from))) != NULL) {
		problem_add(p, "from", "the template's From %s", why);
		return p;
	}
	/* Once for several recipients: stored once, not in each message. */
	e->stored = json_array_size(json_object_get(body, e->list)) > 1 &&
	    json_array_size(json_object_get(body, "attachments")) > 0;
	e->att.spool = ctx->spool;
	e->att.client = ctx->client->id;
	e->att.max_one = ctx->limits->attachment;
	e->att.max_total = ctx->limits->attachments;
	if (attach_load(&e->att, json_object_get(body, "attachments"),
	    "attachments", &e->shared, p, e->stored) == -1)
		return p;
	/* Each recipient's own, decoded and checked once, kept for it. */
	e->nown = json_array_size(json_object_get(body, e->list));
	if (per_recipient && (e->own = calloc(e->nown,
	    sizeof(*e->own))) == NULL) {
		e->oom = 1;
		problem_free(p);
		return NULL;
	}
	json_array_foreach(json_object_get(body, e->list), i, item) {
		if (json_array_size(json_object_get(item, "attachments")) == 0)
			continue;
		snprintf(path, sizeof(path), "%s[%zu].attachments", e->list, i);
		attach_load(&e->att, json_object_get(item, "attachments"),
		    path, &e->own[i], p, 0);
	}
	if (problem_count(p) > 0)
		return p;
	problem_free(p);
	return NULL;
}

/*
 * Store the request-level attachments once for every recipient whose
 * message is about to be committed (ids[i] of those with a document):
 * before the commit, so no message names a blob that is not there.
 */
static enum msg_status
store_shared(struct ctx *ctx, const struct email *e,
    char (*ids)[SPOOL_ID_LEN + 1], const struct batch *b, size_t total)
{
	struct blob_data	*v;
	const char		**names;
	enum msg_status		 st;
	size_t			 i, n = 0;

	v = calloc(e->shared.n ? e->shared.n : 1, sizeof(*v));
	names = calloc(total ? total : 1, sizeof(*names));
	if (v == NULL || names == NULL) {
		free(v);
		free(names);
		return MSG_TEMPFAIL;
	}
	for (i = 0; i < e->shared.n; i++) {
		v[i].p = e->shared.v[i].data;
		v[i].len = e->shared.v[i].size;
	}
	for (i = 0; i < total; i++)
		if (batch_has_doc(b, i))
			names[n++] = ids[i];
	st = blob_store(ctx->spool, v, e->shared.n, names, n);
	free(v);
	free(names);
	return st;
}

/*
 * Render one recipient's message into *doc.  NULL on success (id
 * filled), else why this recipient failed (in err).
 */
static const char *
prepare_one(struct ctx *ctx, struct email *e, size_t i, const json_t *item,
    char *id, json_t **doc, char *err, size_t errlen)
{
	const struct attachments *atts = &e->shared;
	const json_t		*fields, *to, *ref;
	json_t			*msg;
	char			 missing[512], hmissing[256];
	char			 list[520], word[260], *tok, *save;
	char			*subject, *html, *text;
	size_t			 slen, hlen;
	const char		*why;

	to = json_object_get(item, e->addr);
	if ((why = mime_addr_spec_check(json_string_value(to),
	    json_string_length(to))) != NULL) {
		snprintf(err, errlen, "%s: %s", e->addr, why);
		return err;
	}
	ref = json_object_get(item, "reference");
	if (json_is_string(ref) && (why = valid_reference(json_string_value(
	    ref), json_string_length(ref))) != NULL) {
		snprintf(err, errlen, "reference: %s", why);
		return err;
	}
	fields = json_object_get(item, "fields");
	if (!json_is_object(fields))
		fields = NULL;
	subject = tmpl_merge(e->subject, strlen(e->subject), fields, 0, &slen,
	    missing, sizeof(missing));
	html = tmpl_merge(e->html, e->html_len, fields, 1, &hlen, hmissing,
	    sizeof(hmissing));
	if (subject == NULL || html == NULL) {
		/* Name every missing field, from subject and body, once. */
		for (tok = strtok_r(hmissing, ", ", &save); tok != NULL;
		    tok = strtok_r(NULL, ", ", &save)) {
			snprintf(word, sizeof(word), ", %s,", tok);
			snprintf(list, sizeof(list), ", %s,", missing);
			if (strstr(list, word) == NULL)
				snprintf(missing + strlen(missing),
				    sizeof(missing) - strlen(missing), "%s%s",
				    *missing ? ", " : "", tok);
		}
		free(subject);
		free(html);
		/* The list is bounded so the message always fits err. */
		snprintf(err, errlen, "fields: no value for merge "
		    "field%s %.400s", strchr(missing, ',') ? "s" : "", missing);
		return err;
	}
	if (valid_header(subject, slen) != NULL) {
		free(subject);
		free(html);
		snprintf(err, errlen, "fields: a value merged into the "
		    "subject contains CR or LF");
		return err;
	}
	if (e->own != NULL && e->own[i].n > 0)
		atts = &e->own[i];
	text = html_to_text(html, hlen);
	msg = json_pack("{s:s, s:O, s:s%, s:s%, s:s?, s:o}",
	    "from", e->from, "to", to, "subject", subject, slen,
	    "html", html, hlen, "text", text, "attachments",
	    attach_json(atts, atts == &e->shared && e->stored));
	if (msg != NULL && e->tmpl != NULL)
		json_object_set_new(msg, "templateId",
		    json_string(e->tmpl->id));
	free(subject);
	free(html);
	free(text);
	if (msg == NULL || ulid_new(id) == -1) {
		json_decref(msg);
		return BATCH_TRY_AGAIN;
	}
	if ((*doc = msgdoc_new(id, "email", ctx->client->id, 0, msg)) == NULL)
		return BATCH_TRY_AGAIN;
	if (ctx->client->test)
		msgdoc_set_test(*doc);
	msgdoc_set_reference(*doc, json_string_value(ref));
	return NULL;
}

static struct response *
email_deliver(struct ctx *ctx)
{
	struct email		 e;
	struct batch		 b;
	struct problem		*p;
	json_t			*item, *res, *out = NULL, *to, *doc;
	const char		*why;
	char			 id[SPOOL_ID_LEN + 1], err[512];
	char			(*ids)[SPOOL_ID_LEN + 1] = NULL;
	struct response		*r = NULL;
	enum msg_status		 st;
	size_t			 i, total;
	int			 fail = 0;

	memset(&e, 0, sizeof(e));
	if ((e.notices = json_array()) == NULL)
		return NULL;
	if (batch_init(&b, ctx->spool, ctx->routes, 1, "messageId") == -1) {
		json_decref(e.notices);
		return NULL;
	}
	p = prepare(ctx, &e);
	if (e.att.failed) {
		/* Ours, not the request's: whatever p says, a 500. */
		problem_free(p);
		p = NULL;
		fail = 500;
		r = response_error(500, "the attachments cannot be read now");
		goto done;
	}
	if (p != NULL || e.oom)
		goto done;
	total = json_array_size(json_object_get(ctx->body, e.list));
	if ((ids = calloc(total ? total : 1, sizeof(*ids))) == NULL) {
		e.oom = 1;
		goto done;
	}
	json_array_foreach(json_object_get(ctx->body, e.list), i, item) {
		doc = NULL;
		why = prepare_one(ctx, &e, i, item, id, &doc, err,
		    sizeof(err));
		if (why == NULL)
			memcpy(ids[i], id, sizeof(ids[i]));
		to = json_object_get(item, e.addr);
		res = json_pack("{s:O, s:s?, s:s, s:s?}", "recipient", to,
		    "messageId", why ? NULL : id, "status",
		    why ? "error" : "queued", "error", why);
		if (res != NULL && e.v1) {
			json_object_set(res, "to", to);
			json_object_set_new(res, "fields", json_is_object(
			    json_object_get(item, "fields")) ? json_incref(
			    json_object_get(item, "fields")) : json_object());
		}
		if (batch_add(&b, res, doc, SPOOL_NEW) == -1) {
			e.oom = 1;
			goto done;
		}
	}
	if (e.stored && (st = store_shared(ctx, &e, ids, &b, total)) !=
	    MSG_OK) {
		fail = st == MSG_TEMPFAIL ? 503 : 500;
		r = response_error(fail, "the spool cannot take messages now");
		goto done;
	}
	/* One durable commit for every recipient. */
	fail = batch_commit(&b);
	/* The blobs of a message the spool did not take go with it. */
	for (i = 0; e.stored && i < total; i++)
		if (batch_has_doc(&b, i) && !batch_queued(&b, i))
			blob_remove(ctx->spool, ids[i]);
	if (fail != 0) {
		r = response_error(fail, "the spool cannot take messages now");
		goto done;
	}
	out = json_pack("{s:s, s:o, s:o}", "overallStatus",
	    b.queued == total ? "success" : b.queued == 0 ? "failed" :
	    "partial", "errors", json_array_size(e.notices) ?
	    json_incref(e.notices) : json_null(), "recipients",
	    json_incref(batch_replies(&b)));
	if (out != NULL && e.v1) {
		json_object_set(out, "subject", json_object_get(ctx->body,
		    "subject") ? json_object_get(ctx->body, "subject") :
		    json_null());
		json_object_set_new(out, "from", e.from ? json_string(e.from) :
		    json_null());
		json_object_set(out, "templateId", json_object_get(ctx->body,
		    "templateId") ? json_object_get(ctx->body, "templateId") :
		    json_null());
	}
done:
	batch_free(&b);
	free(ids);
	attach_free(&e.shared);
	for (i = 0; e.own != NULL && i < e.nown; i++)
		attach_free(&e.own[i]);
	free(e.own);
	attach_ctx_free(&e.att);
	tmpl_free(e.tmpl);
	json_decref(e.notices);
	if (p != NULL)
		return problem_response(p);
	if (fail != 0)
		return r;
	/* Out of memory: NULL, which the pipeline answers 500. */
	return e.oom ? NULL : response_json(200, out);
}

/* One message a recipient, for the client's rate. */
static size_t
messages(const json_t *body)
{
	return json_array_size(json_object_get(body, "payload")) +
	    json_array_size(json_object_get(body, "recipients"));
}

const struct endpoint ep_email_deliver = {
	.method = "POST",
	.needs_key = 1,
	.scope = SCOPE_EMAIL,
	.limit = LIMIT_EMAIL,
	.needs_spool = 1,
	.handler = email_deliver,
	.messages = messages,
};

CGI_MAIN(ep_email_deliver)
