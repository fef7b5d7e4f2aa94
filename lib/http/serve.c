/*
 * serve.c: cgi_serve and cgi_run, the pipeline every route shares, as a
 * CGI program or in msgspool-fcgi: method, key, length, type, body,
 * spool, Idempotency-Key, rate, handler, response (conf/openapi.yaml).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/channel.h"
#include "base/log.h"
#include "base/util.h"
#include "content/keys.h"
#include "content/route.h"
#include "http/cgi.h"
#include "http/idem.h"
#include "http/problem.h"
#include "http/rate.h"
#include "spool/dsync.h"
#include "spool/spool.h"

/*
 * An unread body is drained up to this before an early answer; larger
 * ones are left to the server: not worth the time.
 */
#define CGI_DRAIN_MAX	(64 * 1024 * 1024)

static struct response *
unauthorized(const char *detail)
{
	struct response	*r;

	r = problem_response(problem_new(401, "unauthorized", "%s", detail));
	if (r != NULL)
		response_header(r, "WWW-Authenticate",
		    "ApiKey header=\"X-API-KEY\"");
	return r;
}

/*
 * Authenticate: NULL with *client filled, or the 401/403/500 response.
 */
static struct response *
authenticate(const struct endpoint *ep, const struct request *req,
    const struct config *cfg, struct client *client)
{
	char	*keys;
	enum keys_result kr;

	if (req->api_key == NULL || *req->api_key == '\0')
		return unauthorized("the X-API-KEY header is missing");
	if ((keys = config_path(cfg, NULL, "keys", "keys")) == NULL)
		return response_error(500, "out of memory");
	if (req->io != NULL && req->io->keys != NULL)
		kr = req->io->keys(req->io->arg, keys, req->api_key,
		    strlen(req->api_key), client);
	else
		kr = keys_lookup(keys, req->api_key, strlen(req->api_key),
		    client);
	free(keys);
	switch (kr) {
	case KEYS_OK:
		break;
	case KEYS_UNKNOWN:
		return unauthorized("the API key is not valid");
	case KEYS_DISABLED:
		return problem_response(problem_new(403, "forbidden",
		    "the API key of client '%s' is disabled", client->id));
	default:
		return response_error(500, "the keys file cannot be read");
	}
	if (ep->scope != 0 && (client->scopes & ep->scope) == 0)
		return problem_response(problem_new(403, "forbidden",
		    "client '%s' lacks the '%s' scope", client->id,
		    channel_scope_name(ep->scope)));
	return NULL;
}

static struct response *
parse_body(const struct request *req, json_t **out)
{
	struct problem	*p;
	json_error_t	 je;

	/*
	 * NULs are allowed through the parser so that the validators can
	 * reject them naming the field; duplicate keys are ambiguous.
	 */
	*out = json_loadb(req->body, req->body_len,
	    JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	if (*out != NULL)
		return NULL;
	p = problem_new(400, "invalid-json",
	    "the body is not valid UTF-8 JSON: %s (line %d, column %d)",
	    je.text, je.line, je.column);
	return problem_response(p);
}

/* Whether method is one of a list such as "GET, DELETE". */
static int
method_allowed(const char *list, const char *method)
{
	size_t	len = strlen(method);

	while (*list != '\0') {
		if (strncmp(list, method, len) == 0 &&
		    (list[len] == '\0' || list[len] == ','))
			return 1;
		list += strcspn(list, ",");
		list += strspn(list, ", ");
	}
	return 0;
}

/*
 * Whether the request's body is read and parsed by the pipeline: a POST
 * or PUT of a route with a limit, unless an optional body is left out:
 * no Content-Length, or 0.  A Content-Type without a Content-Length
 * says there is one of a length unknown (busybox httpd passes a PUT's
 * so): it is checked, so 411.
 */
static int
has_body(const struct endpoint *ep, const struct request *req)
{
	if (ep->limit == LIMIT_NONE || ep->limit == LIMIT_RAW ||
	    (strcmp(req->method, "POST") != 0 &&
	    strcmp(req->method, "PUT") != 0))
		return 0;
	if (!ep->body_optional)
		return 1;
	if (req->has_length)
		return req->content_length > 0;
	return req->content_type != NULL && *req->content_type != '\0';
}

/*
 * The Allow of a route's methods: the list, with HEAD after GET (a HEAD
 * is answered wherever a GET is, cgi_request_init).
 */
static void
allow_of(const char *list, char *buf, size_t len)
{
	size_t	n, used = 0;

	buf[0] = '\0';
	while (*list != '\0' && used < len) {
		n = strcspn(list, ",");
		snprintf(buf + used, len - used, "%s%.*s%s", used ? ", " : "",
		    (int)n, list, n == 3 && strncmp(list, "GET", 3) == 0 ?
		    ", HEAD" : "");
		used = strlen(buf);
		list += n;
		list += strspn(list, ", ");
	}
}

/* Add the RateLimit headers of rate to r. */
static void
rate_reply(struct response *r, const struct rate *rate)
{
	char	policy[64], state[64];

	rate_headers(rate, policy, sizeof(policy), state, sizeof(state));
	response_header(r, "RateLimit-Policy", policy);
	response_header(r, "RateLimit", state);
}

/*
 * Take the request's messages from the client's rate, when it has one
 * (*limited set).  NULL to go on, else the 429 (over the limit) or 503
 * (the count cannot be kept) to answer.
 */
static struct response *
rate_check(size_t n, struct ctx *ctx, struct rate *rate, int *limited)
{
	struct response	*r;
	const char	*spec;
	char		 section[16 + CLIENT_ID_MAX], secs[24];
	int		 rc;

	*limited = 0;
	snprintf(section, sizeof(section), "client.%s", ctx->client->id);
	if ((spec = config_get(ctx->cfg, section, "rate")) == NULL)
		return NULL;
	if (rate_parse(spec, rate) == -1) {
		log_err("config: [%s] rate = %s: not N/s, N/min or N/h",
		    section, spec);
		return response_error(500, "the service is misconfigured");
	}
	*limited = 1;
	if ((rc = rate_take(ctx->spool, ctx->client->id, rate, n,
	    time(NULL))) == 1)
		return NULL;
	if (rc == -1)
		return response_error(503, "the rate limit cannot be counted "
		    "now");
	r = problem_response(problem_new(429, "rate-limited", "the client's "
	    "rate of %ld messages in %ld s leaves %ld now; this request has "
	    "%zu", rate->limit, rate->window, rate->remaining, n));
	if (r != NULL) {
		snprintf(secs, sizeof(secs), "%ld", rate->reset > 0 ?
		    rate->reset : 1);
		response_header(r, "Retry-After", secs);
	}
	return r;
}

/*
 * The client's rate as it stands, nothing taken (*limited set when it
 * has one that can be read), for a reply that ended before the count:
 * a 400, 411, 413, 415 or 503, a kept reply, the upload.
 */
static void
rate_peek(struct ctx *ctx, struct rate *rate, int *limited)
{
	struct response	*r;
	char		*root, err[512], section[16 + CLIENT_ID_MAX];

	*limited = 0;
	if (ctx->cfg == NULL)
		return;
	/* No spool opened for a client without a rate. */
	snprintf(section, sizeof(section), "client.%s", ctx->client->id);
	if (config_get(ctx->cfg, section, "rate") == NULL)
		return;
	if (ctx->spool == NULL) {
		if ((root = config_path(ctx->cfg, NULL, "spool", "spool")) ==
		    NULL)
			return;
		/* dispatch frees it with the request's. */
		ctx->spool = spool_open(root, 0, err, sizeof(err));
		free(root);
		if (ctx->spool == NULL)
			return;
		if (ctx->req->io != NULL && ctx->req->io->keep != NULL)
			spool_lend(ctx->spool, ctx->req->io->keep);
	}
	if ((r = rate_check(0, ctx, rate, limited)) != NULL) {
		response_free(r);
		*limited = 0;
	}
}

/*
 * The request's Idempotency-Key (conf/openapi.yaml): none, NULL with
 * *idem NULL; else NULL with the key held in *idem, or the response to
 * give now (the kept reply, 400, 409, 422, 503).
 */
struct tmpl *
cgi_tmpl_load(const struct ctx *ctx, enum tmpl_kind kind, const char *id,
    enum msg_status *status, char *err, size_t errlen)
{
	const struct cgi_io	*io = ctx->req->io;

	if (io != NULL && io->tmpl != NULL)
		return io->tmpl(io->arg, ctx->templates, ctx->client->id, kind,
		    id, status, err, errlen);
	return tmpl_load(ctx->templates, ctx->client->id, kind, id, status,
	    err, errlen);
}

static struct response *
idem_check(const struct request *req, struct ctx *ctx, struct idem **idem)
{
	struct response	*r;
	const char	*v, *uri;
	char		 key[IDEM_KEY_MAX + 1], *route;
	long		 ttl;

	*idem = NULL;
	if ((v = cgi_env(req->envp, "HTTP_IDEMPOTENCY_KEY")) == NULL)
		return NULL;
	if (idem_key_parse(v, key) == -1)
		return problem_response(problem_new(400,
		    "invalid-idempotency-key", "Idempotency-Key must be 1 to "
		    "%d printable ASCII characters, plain or as a quoted "
		    "string", IDEM_KEY_MAX));
	if (config_seconds(ctx->cfg, NULL, "idempotency-ttl", IDEM_TTL,
	    &ttl) == -1 || ttl <= 0) {
		log_err("config: idempotency-ttl: not a duration");
		return response_error(500, "the service is misconfigured");
	}
	/*
	 * The route is part of the request: its path as the server routed
	 * it, not as it was written ("/sms/v1//deliver" is /sms/v1/deliver;
	 * msgspool-spool(5), Idempotency), nor the query.
	 */
	if ((uri = cgi_env(req->envp, "REQUEST_URI")) == NULL &&
	    (uri = cgi_env(req->envp, "SCRIPT_NAME")) == NULL)
		uri = "";
	if ((route = cgi_path(uri)) == NULL)
		return response_error(500, "out of memory");
	r = idem_begin(ctx->spool, ctx->client->id, key, route, req->body,
	    req->body_len, ttl, time(NULL), idem);
	free(route);
	if (r == NULL && *idem == NULL)
		r = response_error(500, "out of memory");
	return r;
}

struct response *
cgi_server_error(char *const *envp)
{
	const char	*v = cgi_env(envp, "REDIRECT_STATUS");
	const char	*type;
	int		 status;

	if (v == NULL || strlen(v) != 3 || strspn(v, "0123456789") != 3 ||
	    (status = atoi(v)) < 400 || status > 599)
		return NULL;
	switch (status) {
	case 404:
		type = "not-found";
		break;
	case 405:
		type = "method-not-allowed";
		break;
	case 411:
		type = "length-required";
		break;
	case 413:
		type = "payload-too-large";
		break;
	default:
		type = status >= 500 ? "internal" : "invalid-request";
		break;
	}
	return problem_response(problem_new(status, type, "%s",
	    status == 404 ? "no such route" : status == 411 ?
	    "a Content-Length is required" : status == 413 ?
	    "the body exceeds the limit of the web server" : status >= 500 ?
	    "the web server failed" : "the web server refused the request"));
}

/* The response for this request, before it is written. */
static struct response *
dispatch(const struct endpoint *ep, struct request *req,
    const struct cgi_io *io)
{
	struct response	*r = NULL;
	struct config	*own = NULL;
	const struct config *cfg;
	struct limits	 limits;
	struct client	 client;
	struct ctx	 ctx;
	struct problem	*p;
	struct rate	 rate;
	struct idem	*idem = NULL;
	enum spool_sync	 how;
	const char	*methods;
	char		 err[512], allow[64], *root = NULL;
	size_t		 limit;
	int		 limited = -1;	/* not counted yet */

	memset(&ctx, 0, sizeof(ctx));
	ctx.req = req;
	if ((r = cgi_server_error(req->envp)) != NULL)
		return r;
	methods = ep->methods != NULL ? ep->methods(req) : ep->method;
	if (!method_allowed(methods, req->method)) {
		allow_of(methods, allow, sizeof(allow));
		p = problem_new(405, "method-not-allowed",
		    "%s is not allowed here; use %s", req->head ? "HEAD" :
		    req->method, allow);
		if ((r = problem_response(p)) != NULL)
			response_header(r, "Allow", allow);
		return r;
	}
	/* The health check answers even when the config is broken. */
	if (!ep->needs_key && ep->limit == LIMIT_NONE && !ep->needs_spool)
		return ep->handler(&ctx);
	/* A persistent process's config is its own (cgi_io). */
	if (io->config != NULL)
		cfg = io->config(io->arg, config_default_path(req->envp),
		    err, sizeof(err));
	else
		cfg = own = config_load(config_default_path(req->envp), err,
		    sizeof(err));
	if (cfg == NULL || config_limits(cfg, &limits, err, sizeof(err))) {
		log_err("config: %s", err);
		r = response_error(500, "the service is misconfigured");
		goto done;
	}
	ctx.cfg = cfg;
	ctx.limits = &limits;
	if (ep->needs_key) {
		if ((r = authenticate(ep, req, cfg, &client)) != NULL)
			goto done;
		ctx.client = &client;
	}
	if (ep->limit == LIMIT_RAW && strcmp(req->method, "POST") == 0) {
		if (!req->has_length) {
			r = problem_response(problem_new(411,
			    "length-required",
			    "a Content-Length is required"));
			goto done;
		}
		if (req->content_length > CGI_RAW_MAX) {
			r = problem_response(problem_new(413,
			    "payload-too-large",
			    "the body exceeds the limit of %d bytes",
			    CGI_RAW_MAX));
			goto done;
		}
		if (cgi_request_read_io(req, io) == -1) {
			r = problem_response(problem_new(400, "invalid-body",
			    "the body is shorter than its Content-Length"));
			goto done;
		}
	} else if (has_body(ep, req)) {
		limit = ep->limit == LIMIT_EMAIL ? limits.body_email :
		    limits.body;
		if (!req->has_length) {
			r = problem_response(problem_new(411,
			    "length-required",
			    "a Content-Length is required"));
			goto done;
		}
		if (req->content_length > limit) {
			r = problem_response(problem_new(413,
			    "payload-too-large",
			    "the body exceeds the limit of %zu bytes", limit));
			goto done;
		}
		if (!cgi_is_json(req->content_type)) {
			r = problem_response(problem_new(415,
			    "unsupported-media-type",
			    "Content-Type must be application/json"));
			goto done;
		}
		if (cgi_request_read_io(req, io) == -1) {
			r = problem_response(problem_new(400, "invalid-body",
			    "the body is shorter than its Content-Length"));
			goto done;
		}
		if ((r = parse_body(req, &ctx.body)) != NULL)
			goto done;
		/* The raw body stays for the Idempotency-Key's digest. */
	}
	if ((ctx.templates = config_path(cfg, NULL, "templates",
	    "templates")) == NULL) {
		r = response_error(500, "out of memory");
		goto done;
	}
	if (ep->needs_spool) {
		root = config_path(cfg, NULL, "spool", "spool");
		if (root != NULL)
			ctx.spool = io->seen != NULL ? spool_open_seen(root,
			    io->seen, err, sizeof(err)) : spool_open(root, 0,
			    err, sizeof(err));
		if (root == NULL || ctx.spool == NULL) {
			log_err("spool: %s", root ? err : "out of memory");
			r = response_error(503,
			    "the spool cannot take messages now");
			goto done;
		}
		if (io->keep != NULL)
			spool_lend(ctx.spool, io->keep);
		if (spool_sync_parse(config_get(cfg, NULL, "sync"), &how) ==
		    -1) {
			log_err("config: sync = %s: neither file nor "
			    "filesystem", config_get(cfg, NULL, "sync"));
			r = response_error(500, "the service is misconfigured");
			goto done;
		}
		spool_sync_set(ctx.spool, how);
	}
	/*
	 * The routes a message may take (msgspool.conf(5), Routes), once
	 * for the request's messages: a config msgspoold would refuse at
	 * start is ours to fix, not the client's.
	 */
	if (ep->messages != NULL && (ctx.routes = route_table_new(cfg, err,
	    sizeof(err))) == NULL) {
		log_err("config: %s", err);
		r = response_error(500, "the service is misconfigured");
		goto done;
	}
	/* A key: the kept reply, 409 or 422, or on with the key held. */
	if ((ep->messages != NULL || ep->idempotent) && ctx.client != NULL &&
	    (r = idem_check(req, &ctx, &idem)) != NULL)
		goto done;
	/* Handlers see the parsed body; the raw one can go now. */
	if (ctx.body != NULL)
		cgi_request_free(req);
	/* The client's rate (msgspool.conf(5)): before anything is queued. */
	if (ep->messages != NULL && ctx.client != NULL && (r = rate_check(
	    ep->messages(ctx.body), &ctx, &rate, &limited)) != NULL)
		goto done;
	r = ep->handler(&ctx);
done:
	if (idem != NULL)
		r = idem_finish(idem, r);
	/* Every reply to a limited client's POST tells its rate. */
	if (r != NULL && ctx.client != NULL && (ep->messages != NULL ||
	    ep->idempotent)) {
		if (limited == -1)
			rate_peek(&ctx, &rate, &limited);
		if (limited == 1)
			rate_reply(r, &rate);
	}
	idem_free(idem);
	json_decref(ctx.body);
	route_table_free(ctx.routes);
	spool_free(ctx.spool);
	free(ctx.templates);
	free(root);
	config_free(own);
	return r;
}

int
cgi_serve(const struct endpoint *ep, char *const *envp,
    const struct cgi_io *io)
{
	struct request	 req;
	struct response	*r;
	int		 rc;

	cgi_request_init(&req, envp);
	req.io = io;
	if ((r = dispatch(ep, &req, io)) == NULL)
		r = response_error(500, "out of memory");
	/* An early answer: take the body off the server's hands first. */
	cgi_request_drain_io(&req, io, CGI_DRAIN_MAX);
	cgi_request_free(&req);
	if (io->done != NULL)
		io->done(io->arg);
	if (r == NULL)
		return 1;
	rc = cgi_respond(io, r, req.head);
	if (r->status >= 500)
		log_err("%s: %d", req.method, r->status);
	response_free(r);
	return rc == 0 ? 0 : 1;
}

int
cgi_run(const struct endpoint *ep, char *const *envp, int infd, int outfd)
{
	struct cgi_fds	 fds;
	struct cgi_io	 io;
	size_t		 seed = 0;

	cgi_fd_io(&io, &fds, infd, outfd);
	alarm(CGI_TIMEOUT);
	/* Seed jansson's hashes (against collisions) without opening a file. */
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == sizeof(seed) &&
	    seed != 0)
		json_object_seed(seed);
	return cgi_serve(ep, envp, &io);
}
