/*
 * suppressions: the caller's suppression lists (conf/openapi.yaml,
 * Suppression; msgspool-spool(5), Suppressions).  GET /suppressions
 * lists them, newest first, a page at a time; GET, PUT and DELETE
 * /suppressions/{channel}/{address} read, add (source "manual") and
 * lift one.  Any valid key; a client sees and changes only its own,
 * but a key with the admin scope may add client=ID to act for that
 * client (msgspool.conf(5), KEYS FILE; cgi_acting_client).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/valid.h"
#include "endpoints.h"
#include "http/cgi.h"
#include "http/problem.h"
#include "spool/receipt.h"
#include "spool/spool.h"
#include "spool/suppress.h"

#define LIMIT_DEFAULT	100
#define LIMIT_MAX	500
#define REASON_MAX	1000	/* characters */

/* PUT's optional body. */
static const struct field put_fields[] = {
	{ .name = "reason", .type = FIELD_STRING, .flags = FIELD_NULLABLE,
	  .max = REASON_MAX },
	FIELD_END
};

/* What a server routes no program to: its own 404, word for word. */
static struct response *
no_route(void)
{
	return problem_response(problem_new(404, "not-found",
	    "no such route"));
}

/* A failure of the spool: 503 when it may pass, else 500. */
static struct response *
spool_failure(int e, const char *what)
{
	log_err("suppressions: %s: %s", what, strerror(e));
	return response_error(spool_errno_status(e) == MSG_TEMPFAIL ? 503 :
	    500, "the suppression list cannot be read or written now");
}

/* GET /suppressions?channel=&limit=&after=&client= */
static struct response *
list(struct ctx *ctx)
{
	struct problem	*p;
	struct response	*r;
	const char	*q, *key, *v, *after = NULL;
	json_t		*params, *val, *page;
	char		*next = NULL, *end;
	enum channel	 ch = CHANNEL__MAX;
	long		 limit = LIMIT_DEFAULT;
	int		 c;

	if ((q = cgi_env(ctx->req->envp, "QUERY_STRING")) == NULL)
		q = "";
	if ((p = problem_new(400, "invalid-query", "the query has invalid "
	    "parameters")) == NULL)
		return NULL;
	if ((params = receipt_form_parse(q, strlen(q))) == NULL) {
		problem_add(p, "", "must be name=value pairs joined by '&', "
		    "percent-encoded UTF-8");
		return problem_response(p);
	}
	json_object_foreach(params, key, val) {
		v = json_string_value(val);
		if (strcmp(key, "channel") == 0) {
			if ((c = channel_parse(v)) == -1)
				problem_add(p, key, "must be sms, ott, email "
				    "or voice");
			else
				ch = (enum channel)c;
		} else if (strcmp(key, "limit") == 0) {
			errno = 0;
			limit = strtol(v, &end, 10);
			if (*v < '0' || *v > '9' || *end != '\0' ||
			    errno != 0 || limit < 1 || limit > LIMIT_MAX)
				problem_add(p, key, "must be a whole number "
				    "from 1 to %d", LIMIT_MAX);
		} else if (strcmp(key, "after") == 0) {
			if (!suppress_cursor_valid(v))
				problem_add(p, key, "must be the next of a "
				    "page of this list");
			else
				after = v;
		} else if (strcmp(key, "client") != 0)
			/* client=: cgi_acting_client's, judged already. */
			problem_add(p, key, "is not a known parameter");
	}
	if (problem_count(p) > 0) {
		json_decref(params);
		return problem_response(p);
	}
	problem_free(p);
	page = suppress_list(ctx->spool, ctx->client->id, ch, after,
	    (size_t)limit, &next);
	json_decref(params);
	if (page == NULL)
		return spool_failure(errno, "list");
	r = response_json(200, json_pack("{s:o, s:s?}", "suppressions", page,
	    "next", next));
	free(next);
	return r;
}

/*
 * The one suppression a path names: PATH_INFO "/CHANNEL/ADDRESS", which
 * the server decoded (the address was percent-encoded: %2B for '+', %40
 * for '@').  0 with *ch and *addr (borrowed) set; 1 when the path names
 * none (the list); -1 when it is no route.
 */
static int
path_target(const struct request *req, const char **chname,
    size_t *chlen, const char **addr)
{
	const char	*p, *slash;

	if ((p = cgi_env(req->envp, "PATH_INFO")) == NULL || *p == '\0')
		return 1;
	if (*p++ != '/' || (slash = strchr(p, '/')) == NULL || slash == p ||
	    slash[1] == '\0')
		return -1;
	*chname = p;
	*chlen = (size_t)(slash - p);
	*addr = slash + 1;
	return 0;
}

/* 400 for a channel or address that is none, naming which. */
static struct response *
bad_target(const char *field, const char *why)
{
	struct problem	*p;

	if ((p = problem_new(400, "invalid-field", "the path names no "
	    "suppression")) != NULL)
		problem_add(p, field, "%s", why);
	return problem_response(p);
}

static struct response *
not_found(enum channel ch, const char *addr)
{
	return problem_response(problem_new(404, "not-found",
	    "%s is not suppressed on %s for this client", addr,
	    channel_info(ch)->name));
}

/* GET, PUT or DELETE /suppressions/{channel}/{address}. */
static struct response *
one(struct ctx *ctx, enum channel ch, const char *addr)
{
	struct problem	*p;
	const char	*reason = NULL;
	const char	*m = ctx->req->method;
	json_t		*obj, *errors;
	int		 rc;

	if (strcmp(m, "GET") == 0) {
		if ((obj = suppress_get(ctx->spool, ctx->client->id, ch,
		    addr)) == NULL)
			return errno == 0 ? not_found(ch, addr) :
			    spool_failure(errno, "get");
		return response_json(200, obj);
	}
	if (strcmp(m, "DELETE") == 0) {
		if ((rc = suppress_remove(ctx->spool, ctx->client->id, ch,
		    addr, NULL)) == -1)
			return spool_failure(errno, "remove");
		return rc == 1 ? not_found(ch, addr) :
		    response_new(204, NULL, NULL, 0);
	}
	/* PUT, with {"reason"} or nothing. */
	if (ctx->body != NULL) {
		if ((errors = json_object()) == NULL)
			return NULL;
		if (valid_object(ctx->body, put_fields, "", errors) > 0) {
			if ((p = problem_new(400, "invalid-field", "the "
			    "suppression has invalid fields")) != NULL)
				json_object_update(p->errors, errors);
			json_decref(errors);
			return problem_response(p);
		}
		json_decref(errors);
		reason = json_string_value(json_object_get(ctx->body,
		    "reason"));
	}
	if ((rc = suppress_add(ctx->spool, ctx->client->id, ch, addr,
	    "manual", reason, &obj)) == -1)
		return spool_failure(errno, "add");
	return response_json(rc == 1 ? 201 : 200, obj);
}

static struct response *
suppressions(struct ctx *ctx)
{
	struct response	*r;
	struct client	 acting;
	struct ctx	 actx;
	const char	*chname, *addr;
	char		 norm[SUPPRESS_ADDR_MAX], name[16];
	size_t		 chlen;
	int		 c;

	/* An admin key's client=ID: that client's lists, not its own. */
	if (cgi_acting_client(ctx, &acting, &r) == -1)
		return r;
	actx = *ctx;
	actx.client = &acting;
	ctx = &actx;
	switch (path_target(ctx->req, &chname, &chlen, &addr)) {
	case 1:
		/* /suppressions: the list (GET alone: methods). */
		return list(ctx);
	case -1:
		return no_route();
	}
	if (chlen >= sizeof(name) || (memcpy(name, chname, chlen),
	    name[chlen] = '\0', c = channel_parse(name)) == -1)
		return bad_target("channel", "must be sms, ott, email or "
		    "voice");
	if (suppress_normalize((enum channel)c, addr, norm,
	    sizeof(norm)) == -1)
		return bad_target("address", c == CHANNEL_EMAIL ? "must be an "
		    "email address such as name@example.com" : c ==
		    CHANNEL_OTT ? "must be 8 to 15 digits with the country "
		    "code" : "must be '+' and 8 to 15 digits (E.164), the '+' "
		    "percent-encoded as %2B");
	return one(ctx, (enum channel)c, norm);
}

/* The list is read alone; one suppression is read, added and lifted. */
static const char *
methods(const struct request *req)
{
	const char	*chname, *addr;
	size_t		 chlen;

	return path_target(req, &chname, &chlen, &addr) == 1 ? "GET" :
	    "GET, PUT, DELETE";
}

const struct endpoint ep_suppressions = {
	.method = "GET, PUT, DELETE",
	.methods = methods,
	.needs_key = 1,
	.scope = 0,
	.limit = LIMIT_BODY,
	.body_optional = 1,
	.needs_spool = 1,
	.handler = suppressions,
};

CGI_MAIN(ep_suppressions)
