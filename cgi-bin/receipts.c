/*
 * receipts: POST /receipts/{twilio,whatsapp,http} and the WhatsApp
 * handshake GET /receipts/whatsapp (conf/openapi.yaml).  No API key: each
 * request is the provider's, proved by its signature (checked in
 * constant time against the exact bytes and URL received); a missing
 * or wrong one is a 403 and nothing is written, and so is any checked
 * with a secret that is missing, empty or too short (msgspool.conf(5),
 * Values: never a key anyone has), which is logged.  A receipt is stored
 * durably in receipts/ (msgspool-spool(5)) before the provider hears
 * 2xx; msgspoold applies it to its message.  This program never
 * rewrites a message.
 *
 * The same callbacks bring inbound messages (inbound.h): each is given
 * the client whose inbound key lists its number and kept in inbox/, once
 * whatever the provider repeats, before the 2xx (inbox.h); msgspoold
 * hands it to the client.  Twilio's incoming message is answered with
 * an empty TwiML <Response/>.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/channel.h"
#include "base/log.h"
#include "endpoints.h"
#include "http/cgi.h"
#include "http/problem.h"
#include "spool/inbound.h"
#include "spool/inbox.h"
#include "spool/receipt.h"
#include "spool/spool.h"

/* What Twilio gets for an incoming message: reply nothing. */
#define TWIML_EMPTY	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>" \
			"<Response/>\n"

/*
 * What a request brought: receipts to store, every one of them.  The
 * body's 64 KiB (CGI_RAW_MAX) bound how many a WhatsApp webhook holds.
 */
struct batchr {
	json_t		**docs;
	size_t		 n;
	size_t		 cap;
	size_t		 dropped;	/* for messages we do not know */
	char		 last[ULID_LEN + 1];	/* the last receipt's id */
	json_t		*inbound;	/* inbound messages (an array) */
	int		 twiml;		/* answer Twilio's incoming message */
};

/* 400: the inbound message of a signed body cannot be kept. */
static struct response *
invalid(const struct inbound_err *e)
{
	struct problem	*p;

	if ((p = problem_new(400, "invalid-field", "the inbound message "
	    "has invalid fields")) != NULL)
		problem_add(p, e->path, "%s", e->why);
	return problem_response(p);
}

static struct response *
forbidden(const char *why)
{
	return problem_response(problem_new(403, "bad-signature", "%s", why));
}

/* The provider's name from PATH_INFO "/NAME" or REQUEST_URI. */
static const char *
provider_of(const struct request *req, char *buf, size_t len)
{
	const char	*p, *end = "/";
	size_t		 n;

	/* PATH_INFO comes decoded: a '?' in it was %3F, part of no name. */
	if ((p = cgi_env(req->envp, "PATH_INFO")) != NULL && *p == '/')
		p++;
	else if ((p = cgi_env(req->envp, "REQUEST_URI")) != NULL &&
	    (p = strstr(p, "/receipts/")) != NULL) {
		p += strlen("/receipts/");
		end = "?/";
	} else
		return NULL;
	n = strcspn(p, end);
	if (n == 0 || n >= len)
		return NULL;
	memcpy(buf, p, n);
	buf[n] = '\0';
	return buf;
}

/*
 * The first delivery section of the config whose provider is name and
 * whose key has the value want (NULL: any): its name, or NULL.
 */
static const char *
section_of(const struct config *cfg, const char *name, const char *key,
    const char *want, size_t *from)
{
	const char	*sec, *prov, *v;

	for (; (sec = config_section(cfg, *from)) != NULL; (*from)++) {
		prov = config_get(cfg, sec, "provider");
		if (prov == NULL || strcmp(prov, name) != 0)
			continue;
		v = key ? config_get(cfg, sec, key) : NULL;
		if (key == NULL || (v != NULL && want != NULL &&
		    strcmp(v, want) == 0)) {
			(*from)++;
			return sec;
		}
	}
	return NULL;
}

/*
 * A receipt document: for message id (or NULL) / the provider's id, our
 * status and the provider's, when, and the error (stolen, may be NULL).
 * Its id sorts after the request's earlier ones: msgspoold applies
 * receipts in id order, so those of one request in the order they came.
 */
static json_t *
receipt_doc(struct batchr *b, const char *provider, const char *msgid,
    const char *pmid, const char *status, const char *theirs, time_t at,
    json_t *error)
{
	char	 rid[SPOOL_ID_LEN + 1];

	if (ulid_after(rid, b->last) == -1) {
		json_decref(error);
		return NULL;
	}
	memcpy(b->last, rid, sizeof(b->last));
	return msgdoc_receipt_new(rid, provider, msgid, pmid, status, theirs,
	    at, error);
}

/*
 * Add a receipt for msgid (when known) or pmid.  A receipt naming a
 * message id we do not have is dropped (logged): providers would retry
 * an error for ever.
 */
static int
add(struct ctx *ctx, struct batchr *b, json_t *doc)
{
	enum spool_dir	 d;
	const char	*msgid;
	char		 name[SPOOL_NAME_MAX];
	json_t		**v;

	if (doc == NULL)
		return -1;
	msgid = json_string_value(json_object_get(doc, "message"));
	if (msgid != NULL && spool_find(ctx->spool, msgid, &d, name) == -1) {
		log_warn("receipts: %s receipt for unknown message %s dropped",
		    json_string_value(json_object_get(doc, "provider")), msgid);
		b->dropped++;
		json_decref(doc);
		return 0;
	}
	if (b->n == b->cap) {
		if ((v = reallocarray(b->docs, b->cap ? 2 * b->cap : 16,
		    sizeof(*v))) == NULL) {
			json_decref(doc);
			return -1;
		}
		b->docs = v;
		b->cap = b->cap ? 2 * b->cap : 16;
	}
	b->docs[b->n++] = doc;
	return 0;
}

/*
 * The secret key of section, checked by config_secret; NULL (logged:
 * the operator must hear why a provider's receipts are all refused)
 * when it is absent, empty or too weak, so that nothing is checked
 * against it.
 */
static char *
secret(const struct config *cfg, const char *section, const char *key)
{
	char	*s, err[512];

	if ((s = config_secret(cfg, section, key, err, sizeof(err))) == NULL)
		log_warn("receipts: %s: receipts that need it are refused",
		    err);
	return s;
}

/* The URL Twilio signed: public-url, the route, the query string. */
static char *
twilio_url(const struct ctx *ctx)
{
	const char	*base, *q;
	char		*url;
	size_t		 blen;

	if ((base = config_get(ctx->cfg, NULL, "public-url")) == NULL)
		return NULL;
	blen = strlen(base);
	while (blen > 0 && base[blen - 1] == '/')
		blen--;
	q = cgi_env(ctx->req->envp, "QUERY_STRING");
	if (asprintf(&url, "%.*s/receipts/twilio%s%s", (int)blen, base,
	    q && *q ? "?" : "", q && *q ? q : "") == -1)
		return NULL;
	return url;
}

static struct response *
twilio(struct ctx *ctx, struct batchr *b)
{
	const struct request	*req = ctx->req;
	const char		*sec, *sid, *theirs, *ours, *pmid, *code;
	char			*token, *url;
	json_t			*form, *query, *error = NULL, *doc;
	struct inbound_err	 e;
	size_t			 from = 0;
	int			 ok = 0, call;

	/* NULL from here on: go on and store what was added. */
	if ((form = receipt_form_parse(req->body ? req->body : "",
	    req->body_len)) == NULL)
		return forbidden("the body is not a Twilio form");
	sid = json_string_value(json_object_get(form, "AccountSid"));
	url = twilio_url(ctx);
	while (sid != NULL && url != NULL && !ok &&
	    (sec = section_of(ctx->cfg, "twilio", "account-sid", sid,
	    &from)) != NULL) {
		token = secret(ctx->cfg, sec, "auth-token");
		ok = token != NULL && receipt_twilio_verify(token, url, form,
		    cgi_env(req->envp, "HTTP_X_TWILIO_SIGNATURE"));
		free(token);
	}
	free(url);
	if (!ok) {
		json_decref(form);
		return forbidden("no valid X-Twilio-Signature for this "
		    "account");
	}
	if (inbound_twilio_is(form)) {
		doc = inbound_twilio(form, time(NULL), &e);
		json_decref(form);
		if (doc == NULL)
			return invalid(&e);
		b->twiml = 1;
		return json_array_append_new(b->inbound, doc) == 0 ? NULL :
		    response_error(500, "out of memory");
	}
	call = json_object_get(form, "CallStatus") != NULL;
	theirs = json_string_value(json_object_get(form, call ? "CallStatus" :
	    "MessageStatus"));
	pmid = json_string_value(json_object_get(form, call ? "CallSid" :
	    "MessageSid"));
	/* A call's ringing, in-progress ...: nothing to tell a client. */
	if ((ours = receipt_twilio_status(theirs, call)) != NULL) {
		query = receipt_form_parse(cgi_env(req->envp, "QUERY_STRING") ?
		    cgi_env(req->envp, "QUERY_STRING") : "", strlen(
		    cgi_env(req->envp, "QUERY_STRING") ?
		    cgi_env(req->envp, "QUERY_STRING") : ""));
		if ((code = json_string_value(json_object_get(form,
		    "ErrorCode"))) != NULL && *code != '\0')
			error = json_pack("{s:s, s:s}", "code", code, "message",
			    json_string_value(json_object_get(form,
			    "ErrorMessage")) ? json_string_value(
			    json_object_get(form, "ErrorMessage")) : theirs);
		if (add(ctx, b, receipt_doc(b, "twilio", ulid_valid(
		    json_string_value(json_object_get(query, "id")) ?
		    json_string_value(json_object_get(query, "id")) : "") ?
		    json_string_value(json_object_get(query, "id")) : NULL,
		    pmid, ours, theirs, time(NULL), error)) == -1) {
			json_decref(query);
			json_decref(form);
			return response_error(500, "out of memory");
		}
		json_decref(query);
	}
	json_decref(form);
	return NULL;
}

/* The handshake: hub.verify_token must be a whatsapp section's. */
static struct response *
whatsapp_verify(struct ctx *ctx)
{
	const char	*q, *mode, *tok, *challenge, *sec;
	char		*want;
	json_t		*query;
	struct response	*r = NULL;
	size_t		 from = 0;

	q = cgi_env(ctx->req->envp, "QUERY_STRING");
	if ((query = receipt_form_parse(q ? q : "", q ? strlen(q) : 0)) ==
	    NULL)
		return forbidden("not a verification request");
	mode = json_string_value(json_object_get(query, "hub.mode"));
	tok = json_string_value(json_object_get(query, "hub.verify_token"));
	challenge = json_string_value(json_object_get(query,
	    "hub.challenge"));
	while (r == NULL && mode != NULL && strcmp(mode, "subscribe") == 0 &&
	    tok != NULL && challenge != NULL &&
	    (sec = section_of(ctx->cfg, "whatsapp", NULL, NULL, &from)) !=
	    NULL) {
		/* A section without one takes no part in the handshake. */
		want = config_secret_given(ctx->cfg, sec, "verify-token") ?
		    secret(ctx->cfg, sec, "verify-token") : NULL;
		if (want != NULL && strlen(want) == strlen(tok) &&
		    receipt_equal(want, tok, strlen(tok)))
			r = response_new(200, "text/plain", challenge,
			    strlen(challenge));
		free(want);
	}
	json_decref(query);
	return r ? r : forbidden("the verify token is not ours");
}

static struct response *
whatsapp(struct ctx *ctx, struct batchr *b)
{
	const struct request	*req = ctx->req;
	const char		*phone, *sec, *theirs, *ours, *ts;
	char			*key, path[128];
	json_t			*body, *entry, *change, *value, *st, *e0;
	json_t			*error, *msg, *doc;
	struct inbound_err	 e;
	size_t			 i, j, k, from, signed_values = 0;
	int			 ok;

	if ((body = json_loadb(req->body ? req->body : "", req->body_len, 0,
	    NULL)) == NULL)
		return forbidden("the body is not a Cloud API webhook");
	/* Every value's phone number must be one of ours, signed by it. */
	json_array_foreach(json_object_get(body, "entry"), i, entry)
	json_array_foreach(json_object_get(entry, "changes"), j, change) {
		value = json_object_get(change, "value");
		phone = json_string_value(json_object_get(json_object_get(
		    value, "metadata"), "phone_number_id"));
		from = 0;
		ok = 0;
		while (phone != NULL && !ok && (sec = section_of(ctx->cfg,
		    "whatsapp", "phone-number-id", phone, &from)) != NULL) {
			key = secret(ctx->cfg, sec, "app-secret");
			ok = key != NULL && receipt_meta_verify(key,
			    req->body, req->body_len, cgi_env(req->envp,
			    "HTTP_X_HUB_SIGNATURE_256"));
			free(key);
		}
		if (!ok) {
			json_decref(body);
			return forbidden("no valid X-Hub-Signature-256 for "
			    "this phone number");
		}
		signed_values++;
	}
	/* Nothing signed at all is no webhook of ours. */
	if (signed_values == 0) {
		json_decref(body);
		return forbidden("no value with a phone number of ours, so no "
		    "signature to check");
	}
	/* The messages people sent: every one kept, or none (a 400). */
	json_array_foreach(json_object_get(body, "entry"), i, entry)
	json_array_foreach(json_object_get(entry, "changes"), j, change) {
		value = json_object_get(change, "value");
		snprintf(path, sizeof(path), "entry[%zu].changes[%zu].value."
		    "messages", i, j);
		if (json_object_get(value, "messages") != NULL &&
		    !json_is_array(json_object_get(value, "messages"))) {
			json_decref(body);
			snprintf(e.path, sizeof(e.path), "%s", path);
			snprintf(e.why, sizeof(e.why), "not an array");
			return invalid(&e);
		}
		json_array_foreach(json_object_get(value, "messages"), k,
		    msg) {
			snprintf(path, sizeof(path), "entry[%zu].changes[%zu]."
			    "value.messages[%zu]", i, j, k);
			if ((doc = inbound_whatsapp(value, msg, path,
			    time(NULL), &e)) == NULL) {
				json_decref(body);
				return invalid(&e);
			}
			if (json_array_append_new(b->inbound, doc) == -1) {
				json_decref(body);
				return response_error(500, "out of memory");
			}
		}
	}
	json_array_foreach(json_object_get(body, "entry"), i, entry)
	json_array_foreach(json_object_get(entry, "changes"), j, change)
	json_array_foreach(json_object_get(json_object_get(change, "value"),
	    "statuses"), k, st) {
		theirs = json_string_value(json_object_get(st, "status"));
		if ((ours = receipt_meta_status(theirs)) == NULL)
			continue;
		ts = json_string_value(json_object_get(st, "timestamp"));
		error = NULL;
		if ((e0 = json_array_get(json_object_get(st, "errors"), 0)))
			error = json_pack("{s:O?, s:O?}", "code",
			    json_object_get(e0, "code"), "message",
			    json_object_get(e0, "message") ? json_object_get(e0,
			    "message") : json_object_get(e0, "title"));
		if (add(ctx, b, receipt_doc(b, "whatsapp", NULL,
		    json_string_value(json_object_get(st, "id")), ours, theirs,
		    receipt_meta_time(ts, time(NULL)), error)) == -1) {
			json_decref(body);
			return response_error(500, "out of memory");
		}
	}
	json_decref(body);
	return NULL;
}

static struct response *
http(struct ctx *ctx, struct batchr *b)
{
	const struct request	*req = ctx->req;
	const char		*sec, *id, *status, *at;
	char			*hmac, key[41];
	char			 found[SPOOL_ID_LEN + 1];
	json_t			*body, *doc;
	struct inbound_err	 e;
	time_t			 when = time(NULL);
	size_t			 from = 0;
	int			 ok = 0, ours;

	while (!ok && (sec = section_of(ctx->cfg, "http", NULL, NULL,
	    &from)) != NULL) {
		/* A section without one sends no receipts. */
		if (!config_secret_given(ctx->cfg, sec, "receipt-secret"))
			continue;
		hmac = secret(ctx->cfg, sec, "receipt-secret");
		ok = hmac != NULL && receipt_stdwh_verify(hmac,
		    cgi_env(req->envp, "HTTP_WEBHOOK_ID"),
		    cgi_env(req->envp, "HTTP_WEBHOOK_TIMESTAMP"),
		    req->body ? req->body : "", req->body_len,
		    cgi_env(req->envp, "HTTP_WEBHOOK_SIGNATURE"), time(NULL));
		free(hmac);
	}
	if (!ok)
		return forbidden("no valid webhook-signature");
	body = json_loadb(req->body ? req->body : "", req->body_len, 0, NULL);
	if (inbound_http_is(body)) {
		/* The channel of the section whose secret signed it. */
		doc = inbound_http(body, channel_of_section(sec) ==
		    CHANNEL_OTT ? "ott" : "sms", time(NULL), &e);
		json_decref(body);
		if (doc == NULL)
			return invalid(&e);
		return json_array_append_new(b->inbound, doc) == 0 ? NULL :
		    response_error(500, "out of memory");
	}
	if (body == NULL || !json_is_string(json_object_get(body, "id")) ||
	    !json_is_string(json_object_get(body, "status"))) {
		json_decref(body);
		return problem_response(problem_new(400, "invalid-field",
		    "a receipt is {\"id\", \"status\", \"at\"?, \"error\"?}, "
		    "an inbound message {\"type\":\"inbound\", \"from\", "
		    "\"to\", \"text\", \"id\"?, \"at\"?}"));
	}
	id = json_string_value(json_object_get(body, "id"));
	status = json_string_value(json_object_get(body, "status"));
	if (receipt_moves("sent", status) == 0 && strcmp(status, "sent") != 0) {
		json_decref(body);
		return problem_response(problem_new(400, "invalid-field",
		    "status must be sent, delivered, read or undelivered"));
	}
	if ((at = json_string_value(json_object_get(body, "at"))) != NULL)
		rfc3339_parse(at, &when);
	/*
	 * A message id, unless the provider's own ids look like ours and
	 * the index knows this one as the id of a message it took.
	 */
	ours = ulid_valid(id);
	if (ours) {
		receipt_index_key("http", id, key);
		ours = spool_index_get(ctx->spool, key, found) == -1;
	}
	if (add(ctx, b, receipt_doc(b, "http", ours ? id : NULL,
	    ours ? NULL : id, status, status, when,
	    json_is_object(json_object_get(body, "error")) ? json_incref(
	    json_object_get(body, "error")) : NULL)) == -1) {
		json_decref(body);
		return response_error(500, "out of memory");
	}
	json_decref(body);
	return NULL;
}

/*
 * Keep the inbound messages of a request, each given its client, once
 * (inbox_keep): before anything is answered.  NULL, or the response of
 * a failure (the provider delivers them again; those kept are kept
 * once).
 */
static struct response *
keep_inbound(struct ctx *ctx, json_t *inbound)
{
	enum msg_status	 st;
	json_t		*doc;
	size_t		 i;
	int		 dup;

	json_array_foreach(inbound, i, doc) {
		inbox_set_owner(doc, ctx->cfg);
		if ((st = inbox_keep(ctx->spool, doc, NULL, &dup)) != MSG_OK) {
			log_err("receipts: an inbound %s message from %s "
			    "cannot be kept: %s", json_string_value(
			    json_object_get(doc, "provider")), inbox_from(doc),
			    strerror(errno));
			return response_error(st == MSG_TEMPFAIL ? 503 : 500,
			    "the inbound message cannot be kept now");
		}
	}
	return NULL;
}

static struct response *
receipts(struct ctx *ctx)
{
	struct batchr	 b;
	struct response	*r;
	enum msg_status	 st;
	char		 name[32];
	const char	*p;
	size_t		 i;

	memset(&b, 0, sizeof(b));
	if ((p = provider_of(ctx->req, name, sizeof(name))) == NULL ||
	    (strcmp(p, "twilio") != 0 && strcmp(p, "whatsapp") != 0 &&
	    strcmp(p, "http") != 0))
		return problem_response(problem_new(404, "not-found",
		    "no such provider: /receipts/twilio, /receipts/whatsapp "
		    "or /receipts/http"));
	if (strcmp(ctx->req->method, "GET") == 0) {
		if (strcmp(p, "whatsapp") != 0) {
			r = problem_response(problem_new(405,
			    "method-not-allowed", "GET is for the WhatsApp "
			    "handshake only; use POST"));
			if (r != NULL)
				response_header(r, "Allow", "POST");
			return r;
		}
		return whatsapp_verify(ctx);
	}
	if ((b.inbound = json_array()) == NULL)
		return response_error(500, "out of memory");
	r = strcmp(p, "twilio") == 0 ? twilio(ctx, &b) :
	    strcmp(p, "whatsapp") == 0 ? whatsapp(ctx, &b) : http(ctx, &b);
	if (r == NULL)
		r = keep_inbound(ctx, b.inbound);
	if (r == NULL && b.n > 0 && (st = spool_area_store(ctx->spool,
	    "receipts", (const json_t **)b.docs, b.n)) != MSG_OK)
		r = response_error(st == MSG_TEMPFAIL ? 503 : 500,
		    "the receipt cannot be stored now");
	if (r == NULL && b.twiml)
		r = response_new(200, "text/xml", TWIML_EMPTY,
		    strlen(TWIML_EMPTY));
	else if (r == NULL && json_array_size(b.inbound) > 0)
		r = response_json(200, json_pack("{s:I, s:I, s:I}", "stored",
		    (json_int_t)b.n, "dropped", (json_int_t)b.dropped,
		    "received", (json_int_t)json_array_size(b.inbound)));
	else if (r == NULL)
		r = response_json(200, json_pack("{s:I, s:I}", "stored",
		    (json_int_t)b.n, "dropped", (json_int_t)b.dropped));
	for (i = 0; i < b.n; i++)
		json_decref(b.docs[i]);
	free(b.docs);
	json_decref(b.inbound);
	return r;
}

const struct endpoint ep_receipts = {
	.method = "POST, GET",
	.needs_key = 0,
	.scope = 0,
	.limit = LIMIT_RAW,
	.needs_spool = 1,
	.handler = receipts,
};

CGI_MAIN(ep_receipts)
