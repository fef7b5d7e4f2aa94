/*
 * messages: GET and DELETE /messages/{id} (conf/openapi.yaml,
 * MessageStatus): what happened to one message of the caller, and its
 * cancel.  The status comes from where the file is and what it records
 * (msgdoc_status); a lookup is a few opens and one read, whatever the
 * spool's size, and under msgspool-fcgi a reply made from the same bytes
 * before is answered again without parsing them (memo.h).  A cancel takes the file the way a daemon claims it (a
 * lock and a rename into cur/), so the two never both win, and records
 * it in failed/ marked canceled.
 *
 * An inbound message (inbox.h) is one of its client's messages too: GET
 * answers its inbound object; it was received, not sent, so there is
 * nothing to cancel (409).
 *
 * GET /messages (conf/openapi.yaml, MessageList) lists the caller's
 * messages, newest first, a page at a time, from the client's list in
 * the spool (list.h): a page costs what it holds, not what the spool
 * holds.
 *
 * A key with the admin scope may add client=ID to any of them to act for
 * that client (msgspool.conf(5), KEYS FILE; cgi_acting_client).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "endpoints.h"
#include "http/cgi.h"
#include "http/memo.h"
#include "http/problem.h"
#include "spool/cancel.h"
#include "spool/inbox.h"
#include "spool/list.h"
#include "spool/receipt.h"
#include "spool/spool.h"

/* Where lookup found an inbound message: in no state, in inbox/. */
#define INBOUND_DIR	SPOOL__MAX

/*
 * The id of the request's path: PATH_INFO "/ID" (the server mapped
 * /messages/ID to this program), else REQUEST_URI "/messages/ID".
 * Copied into id; -1 when there is none or it is not an id.  PATH_INFO
 * is decoded: a '?' there came as "%3F" and is part of no id.
 */
static int
path_id(const struct request *req, char *id)
{
	const char	*p;
	size_t		 len;

	if ((p = cgi_env(req->envp, "PATH_INFO")) != NULL && *p == '/')
		len = strlen(++p);
	else if ((p = cgi_env(req->envp, "REQUEST_URI")) != NULL &&
	    (p = strstr(p, "/messages/")) != NULL) {
		p += strlen("/messages/");
		len = strcspn(p, "?");
	} else
		return -1;
	if (len != SPOOL_ID_LEN)
		return -1;
	memcpy(id, p, len);
	id[len] = '\0';
	return ulid_valid(id) ? 0 : -1;
}

static struct response *
not_found(const char *id)
{
	return problem_response(problem_new(404, "not-found",
	    "no message %s for this client", id));
}

/*
 * The caller's inbound message id: its document, *dir INBOUND_DIR; or
 * NULL with *r NULL (none: not found) or the response (500).
 */
static json_t *
lookup_inbound(struct ctx *ctx, const char *id, enum spool_dir *dir,
    struct response **r)
{
	json_t	*doc;
	char	 err[512];

	*r = NULL;
	if ((doc = inbox_load(ctx->spool, id, err, sizeof(err))) == NULL) {
		if (errno != ENOENT) {
			log_err("messages: %s", err);
			*r = response_error(500, "the message cannot be read");
		}
		return NULL;
	}
	if (strcmp(inbox_client(doc) ? inbox_client(doc) : "",
	    ctx->client->id) != 0) {
		json_decref(doc);
		return NULL;
	}
	*dir = INBOUND_DIR;
	return doc;
}

static struct response *
status_reply(const json_t *doc, enum spool_dir dir)
{
	if (dir == INBOUND_DIR)
		return response_json(200, inbox_object(doc));
	return response_json(200, msgdoc_status_object(doc,
	    spool_dirname(dir), 1));
}

/*
 * No message id of the caller's in the spool's states (why in err,
 * errno ENOENT), or one that cannot be read (any other errno): its
 * inbound message, 404, or 500.
 */
static struct response *
not_in_states(struct ctx *ctx, const char *id, const char *err)
{
	struct response	*r;
	enum spool_dir	 dir;
	json_t		*doc;

	if (errno != ENOENT) {
		log_err("messages: %s", err);
		return response_error(500, "the message cannot be read");
	}
	if ((doc = lookup_inbound(ctx, id, &dir, &r)) == NULL)
		return r != NULL ? r : not_found(id);
	r = status_reply(doc, dir);
	json_decref(doc);
	return r;
}

/*
 * GET /messages/{id}: the caller's message's status, from its file,
 * read for each request.  A persistent process's memo (memo.h) answers
 * a file whose bytes and state are those of an earlier reply with that
 * reply, unparsed; any other is parsed, answered and remembered.
 */
static struct response *
status_get(struct ctx *ctx, const char *id)
{
	struct memo	*memo = ctx->req->io != NULL ? ctx->req->io->memo :
			    NULL;
	struct response	*r;
	enum spool_dir	 dir;
	json_t		*doc;
	unsigned char	 digest[MEMO_DIGEST];
	char		 name[SPOOL_NAME_MAX], err[512], *text;
	char		 kept[MEMO_SLOT_SIZE];
	size_t		 len, klen;
	int		 k = 0;

	if (spool_find_read(ctx->spool, id, &dir, name, &text, &len, err,
	    sizeof(err)) == -1)
		return not_in_states(ctx, id, err);
	if (memo != NULL) {
		memo_digest(text, len, digest);
		k = memo_get(memo, name, (int)dir, digest, ctx->client->id,
		    kept, &klen);
	}
	if (k == 1) {
		free(text);
		return response_new(200, "application/json", kept, klen);
	}
	if (k == 2) {
		/* Another client's does not exist for this one. */
		free(text);
		errno = ENOENT;
		return not_in_states(ctx, id, "");
	}
	if ((doc = spool_lookup_doc(ctx->spool, text, len, dir, name,
	    ctx->client->id, err, sizeof(err))) == NULL) {
		free(text);
		return not_in_states(ctx, id, err);
	}
	r = status_reply(doc, dir);
	if (memo != NULL && r != NULL && r->status == 200)
		memo_put(memo, name, (int)dir, digest, msgdoc_client(doc),
		    r->body, r->body_len);
	free(text);
	json_decref(doc);
	return r;
}

/*
 * Cancel the message the caller owns (spool_cancel, cancel.h): 200 with
 * its status, canceled; 409 when it is past canceling, inbound (it was
 * received, not sent), or busy (a daemon holds its claim: it is sending
 * it, or recording how its try went).
 */
static struct response *
cancel(struct ctx *ctx, const char *id)
{
	struct response		*r = NULL;
	struct cancel		 c;
	enum cancel_result	 cr;
	enum spool_dir		 dir;
	json_t			*doc;

	cr = spool_cancel(ctx->spool, ctx->cfg, id, ctx->client->id,
	    time(NULL), &c);
	switch (cr) {
	case CANCEL_DONE:
	case CANCEL_ALREADY:
		r = status_reply(c.doc, c.dir);
		break;
	case CANCEL_NOT_FOUND:
		if ((doc = lookup_inbound(ctx, id, &dir, &r)) == NULL)
			return r != NULL ? r : not_found(id);
		json_decref(doc);
		return problem_response(problem_new(409, "not-cancelable",
		    "the message is inbound: it was received, not sent, and "
		    "only a scheduled, queued or retrying message can be "
		    "canceled"));
	case CANCEL_TOO_LATE:
	case CANCEL_BUSY:
		r = problem_response(problem_new(409, "not-cancelable",
		    "the message is %s: only a scheduled, queued or retrying "
		    "message can be canceled", cr == CANCEL_BUSY ? "sending" :
		    msgdoc_status(c.doc, spool_dirname(c.dir))));
		break;
	case CANCEL_ERROR:
		log_err("messages: cancel %s: %s", id, c.err);
		return response_error(c.status == MSG_TEMPFAIL ? 503 : 500,
		    "the message cannot be canceled now");
	}
	json_decref(c.doc);
	return r;
}

/* GET /messages: limit's default and most; a reference's most. */
#define LIST_LIMIT_DEFAULT	50
#define LIST_LIMIT_MAX		500
#define REFERENCE_MAX		128
/* The room a page's buffer starts with, an entry. */
#define LIST_ENTRY_ROOM		512

/*
 * Whether the request is for the list, /messages, not one message: no
 * PATH_INFO and a path that ends there (or none to say otherwise).
 */
static int
is_list(const struct request *req)
{
	const char	*p;
	char		*path;
	size_t		 len;
	int		 r;

	if ((p = cgi_env(req->envp, "PATH_INFO")) != NULL && *p != '\0')
		return 0;
	if ((path = cgi_path(cgi_env(req->envp, "REQUEST_URI"))) == NULL)
		return 1;
	len = strlen(path);
	r = len >= 9 && strcmp(path + len - 9, "/messages") == 0;
	free(path);
	return r;
}

/* Whether v is a reference: 1 to 128 characters, none a control. */
static int
reference_ok(const char *v)
{
	const unsigned char	*p;
	size_t			 n = 0;

	for (p = (const unsigned char *)v; *p != '\0'; p++) {
		if (*p < 0x20 || *p == 0x7f)
			return 0;
		/* C1 controls: U+0080 to U+009F, C2 80 to C2 9F. */
		if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			return 0;
		if ((*p & 0xc0) != 0x80)
			n++;
	}
	return n >= 1 && n <= REFERENCE_MAX;
}

/* Percent-encode v into b: all but RFC 3986's unreserved. */
static void
put_encoded(struct buf *b, const char *v)
{
	static const char	hex[] = "0123456789ABCDEF";
	const unsigned char	*p;

	for (p = (const unsigned char *)v; *p != '\0'; p++)
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' ||
		    *p == '_' || *p == '~')
			buf_putc(b, (char)*p);
		else {
			buf_putc(b, '%');
			buf_putc(b, hex[*p >> 4]);
			buf_putc(b, hex[*p & 15]);
		}
}

/*
 * The query's parameters, each once: name -> value, decoded.  A pair
 * that does not decode (a bad escape, a NUL, bytes not UTF-8) or a name
 * given twice goes to p, under its name when the name itself decodes.
 * NULL out of memory.
 */
static json_t *
query_params(struct ctx *ctx, struct problem *p)
{
	const char	*q, *amp, *eq, *key;
	json_t		*params, *one, *val;
	size_t		 len;

	if ((q = cgi_env(ctx->req->envp, "QUERY_STRING")) == NULL)
		q = "";
	if ((params = json_object()) == NULL)
		return NULL;
	for (; *q != '\0'; q = *amp ? amp + 1 : amp) {
		amp = q + strcspn(q, "&");
		if (amp == q)
			continue;
		if ((one = receipt_form_parse(q, (size_t)(amp - q))) == NULL) {
			/* Its name alone, to say which. */
			eq = memchr(q, '=', (size_t)(amp - q));
			len = (size_t)((eq ? eq : amp) - q);
			if ((one = receipt_form_parse(q, len)) != NULL &&
			    json_object_size(one) == 1) {
				json_object_foreach(one, key, val)
					if (json_object_get(p->errors, key) ==
					    NULL)
						problem_add(p, key, "must be "
						    "percent-encoded UTF-8, "
						    "with no NUL");
			} else if (json_object_get(p->errors, "") == NULL)
				problem_add(p, "", "must be name=value pairs "
				    "joined by '&', percent-encoded UTF-8");
			json_decref(one);
			continue;
		}
		json_object_foreach(one, key, val) {
			/* A name given twice says two things: which? */
			if (json_object_get(params, key) != NULL) {
				if (json_object_get(p->errors, key) == NULL)
					problem_add(p, key, "is given more "
					    "than once");
				continue;
			}
			json_object_set(params, key, val);
		}
		json_decref(one);
	}
	return params;
}

/* Parse GET /messages's query into f; the problems go to p. */
static void
query_filter(json_t *params, struct list_filter *f, struct problem *p,
    char *addr, size_t addrlen)
{
	const char	*key, *v, *s, *comma;
	json_t		*val;
	char		*end;
	long		 limit;
	time_t		 t;
	int		 st, c;

	memset(f, 0, sizeof(*f));
	f->channel = f->direction = -1;
	f->since = f->until = -1;
	f->limit = LIST_LIMIT_DEFAULT;
	json_object_foreach(params, key, val) {
		v = json_string_value(val);
		if (json_object_get(p->errors, key) != NULL)
			continue;
		if (strcmp(key, "status") == 0) {
			for (s = v; ; s = comma + 1) {
				comma = s + strcspn(s, ",");
				if ((st = list_status_parse(s,
				    (size_t)(comma - s))) == -1) {
					problem_add(p, key, "must be one or "
					    "more of scheduled, queued, "
					    "sending, retrying, sent, "
					    "delivered, read, undelivered, "
					    "failed, canceled, separated by "
					    "commas");
					break;
				}
				f->statuses |= 1u << st;
				if (*comma == '\0')
					break;
			}
		} else if (strcmp(key, "channel") == 0) {
			if ((c = channel_parse(v)) == -1)
				problem_add(p, key, "must be sms, ott, email "
				    "or voice");
			else
				f->channel = c;
		} else if (strcmp(key, "direction") == 0) {
			if (strcmp(v, "outbound") == 0)
				f->direction = LIST_OUTBOUND;
			else if (strcmp(v, "inbound") == 0)
				f->direction = LIST_INBOUND;
			else
				problem_add(p, key, "must be outbound or "
				    "inbound");
		} else if (strcmp(key, "recipient") == 0) {
			if (list_address_key(v, addr, addrlen) == -1)
				problem_add(p, key, "must be a phone number "
				    "or an email address");
			else
				f->address = addr;
		} else if (strcmp(key, "reference") == 0) {
			if (!reference_ok(v))
				problem_add(p, key, "must be 1 to %d "
				    "characters, none a control character",
				    REFERENCE_MAX);
			else
				f->reference = v;
		} else if (strcmp(key, "since") == 0 ||
		    strcmp(key, "until") == 0) {
			if (rfc3339_parse(v, &t) == -1)
				problem_add(p, key, "must be an RFC 3339 "
				    "time, e.g. 2026-01-02T03:04:05Z");
			else if (key[0] == 's')
				f->since = t;
			else
				f->until = t;
		} else if (strcmp(key, "limit") == 0) {
			errno = 0;
			limit = strtol(v, &end, 10);
			if (*v < '0' || *v > '9' || *end != '\0' ||
			    errno != 0 || limit < 1 ||
			    limit > LIST_LIMIT_MAX)
				problem_add(p, key, "must be a whole number "
				    "from 1 to %d", LIST_LIMIT_MAX);
			else
				f->limit = (size_t)limit;
		} else if (strcmp(key, "after") == 0) {
			if (!ulid_valid(v))
				problem_add(p, key, "must be the next of a "
				    "page of this list");
			else
				f->after = v;
		} else if (strcmp(key, "client") != 0)
			/* client=: cgi_acting_client's, judged already. */
			problem_add(p, key, "is not a known parameter");
	}
}

/* The Link of the next page: the same query, after next. */
static int
link_next(struct ctx *ctx, json_t *params, const char *next,
    struct response *r)
{
	struct buf	 b = { 0 };
	const char	*key;
	json_t		*val;
	char		*path;
	int		 rc;

	path = cgi_path(cgi_env(ctx->req->envp, "REQUEST_URI"));
	buf_putc(&b, '<');
	buf_puts(&b, path != NULL && *path == '/' ? path : "/messages");
	free(path);
	buf_putc(&b, '?');
	json_object_foreach(params, key, val) {
		if (strcmp(key, "after") == 0)
			continue;
		put_encoded(&b, key);
		buf_putc(&b, '=');
		put_encoded(&b, json_string_value(val));
		buf_putc(&b, '&');
	}
	buf_puts(&b, "after=");
	buf_puts(&b, next);
	buf_puts(&b, ">; rel=\"next\"");
	rc = b.failed ? -1 : response_header(r, "Link", b.p);
	buf_free(&b);
	return rc;
}

/* GET /messages?status=&channel=&direction=&recipient=&reference=
 * &since=&until=&limit=&after=&client= */
static struct response *
list(struct ctx *ctx)
{
	struct list_filter	 f;
	struct problem		*p;
	struct response		*r;
	struct buf		 b = { 0 };
	json_t			*params;
	char			 addr[LIST_ADDRESS_MAX];
	char			 next[SPOOL_ID_LEN + 1];
	size_t			 n;
	long			 retention = 0;

	if ((p = problem_new(400, "invalid-query", "the query has invalid "
	    "parameters")) == NULL)
		return NULL;
	if ((params = query_params(ctx, p)) == NULL)
		return problem_response(p);
	query_filter(params, &f, p, addr, sizeof(addr));
	if (problem_count(p) > 0) {
		json_decref(params);
		return problem_response(p);
	}
	problem_free(p);
	if (config_seconds(ctx->cfg, NULL, "retention", 7 * 86400,
	    &retention) == -1)
		retention = 7 * 86400;
	/* Room for the page at once: an entry is some 400 bytes. */
	buf_reserve(&b, f.limit * LIST_ENTRY_ROOM);
	buf_puts(&b, "{\"messages\":[");
	if (list_page(ctx->spool, ctx->client->id, &f, time(NULL), retention,
	    &b, &n, next) == -1) {
		log_err("messages: the list of %s: %s", ctx->client->id,
		    strerror(errno));
		json_decref(params);
		buf_free(&b);
		return response_error(spool_errno_status(errno) ==
		    MSG_TEMPFAIL ? 503 : 500, "the list cannot be read now");
	}
	buf_puts(&b, "],\"next\":");
	if (next[0] != '\0') {
		buf_putc(&b, '"');
		buf_puts(&b, next);
		buf_putc(&b, '"');
	} else
		buf_puts(&b, "null");
	buf_puts(&b, "}\n");
	if (b.failed) {
		json_decref(params);
		buf_free(&b);
		return NULL;
	}
	r = response_buf(200, "application/json", &b);
	if (r != NULL && next[0] != '\0' &&
	    link_next(ctx, params, next, r) == -1) {
		response_free(r);
		r = NULL;
	}
	json_decref(params);
	buf_free(&b);
	return r;
}

static struct response *
messages(struct ctx *ctx)
{
	struct response	*r;
	struct client	 acting;
	struct ctx	 actx;
	char		 id[SPOOL_ID_LEN + 1];

	/* An admin key's client=ID: that client's messages, not its own. */
	if (cgi_acting_client(ctx, &acting, &r) == -1)
		return r;
	actx = *ctx;
	actx.client = &acting;
	ctx = &actx;
	if (is_list(ctx->req))
		return list(ctx);
	if (path_id(ctx->req, id) == -1)
		return problem_response(problem_new(400, "invalid-id",
		    "the path must be /messages/ID with a message id of "
		    "26 characters"));
	if (strcmp(ctx->req->method, "DELETE") == 0)
		return cancel(ctx, id);
	return status_get(ctx, id);
}

/* /messages lists (GET); /messages/{id} is one message (GET, DELETE). */
static const char *
methods(const struct request *req)
{
	return is_list(req) ? "GET" : "GET, DELETE";
}

const struct endpoint ep_messages = {
	.method = "GET, DELETE",
	.methods = methods,
	.needs_key = 1,
	.scope = 0,
	.limit = LIMIT_NONE,
	.needs_spool = 1,
	.handler = messages,
};

CGI_MAIN(ep_messages)
