/*
 * console: GET /console (the overview), /console/messages (every
 * client's, filtered) and /console/messages/ID; POST /console/sign-in,
 * /console/sign-out, /console/messages/ID/cancel and .../retry;
 * GET /console/inbound, /console/suppressions, POST
 * /console/suppressions/add and .../remove: the
 * operator console (README.md, Operator console; msgspool.conf(5),
 * console-secret).  Off, 404, unless console-secret or
 * console-secret-file gives a secret.
 *
 * This file routes a request to its page or form and signs in; the
 * session and its tokens are console_session.c's, the pages' frame
 * console_html.c's, the pages console_overview.c, console_msgs.c and
 * console_supp.c (console.h).
 *
 * Pages are HTML drawn here: nothing loads from elsewhere, no script,
 * one inline style (Content-Security-Policy), framed by no one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "console.h"
#include "base/log.h"
#include "endpoints.h"
#include "http/problem.h"
#include "spool/receipt.h"

/* The form of a POST; NULL with *r set when it is not one. */
static json_t *
form(const struct console *c, struct response **r)
{
	const struct request	*req = c->ctx->req;
	const char		*ct = req->content_type;
	json_t			*f;

	*r = NULL;
	if (ct == NULL || strncasecmp(ct,
	    "application/x-www-form-urlencoded", 33) != 0 ||
	    (ct[33] != '\0' && ct[33] != ';' && ct[33] != ' ')) {
		*r = problem_response(problem_new(415,
		    "unsupported-media-type", "Content-Type must be "
		    "application/x-www-form-urlencoded"));
		return NULL;
	}
	if ((f = receipt_form_parse(req->body != NULL ? req->body : "",
	    req->body_len)) == NULL)
		*r = problem_response(problem_new(400, "invalid-body",
		    "the form is not valid UTF-8 and percent-encoding"));
	return f;
}

static struct response *
sign_in(struct console *c, const json_t *f)
{
	const char	*key;
	char		*keys, *val;
	struct client	 cl;
	enum keys_result kr;
	struct response	*r;

	/* The form's token first: a form from elsewhere learns nothing of
	 * the key it carries. */
	if (!console_sign_in_ok(c, f))
		return console_sign_in_page(c, 403, "This form has expired or "
		    "did not come from this console: sign in again.");
	if ((key = json_string_value(json_object_get(f, "key"))) == NULL ||
	    *key == '\0')
		return console_sign_in_page(c, 403, "An API key of the admin "
		    "scope signs in.");
	if ((keys = config_path(c->ctx->cfg, NULL, "keys", "keys")) == NULL)
		return response_error(500, "out of memory");
	if (c->ctx->req->io != NULL && c->ctx->req->io->keys != NULL)
		kr = c->ctx->req->io->keys(c->ctx->req->io->arg, keys, key,
		    strlen(key), &cl);
	else
		kr = keys_lookup(keys, key, strlen(key), &cl);
	free(keys);
	if (kr == KEYS_ERROR)
		return response_error(500, "the keys file cannot be read");
	if (kr != KEYS_OK || (cl.scopes & SCOPE_ADMIN) == 0)
		return console_sign_in_page(c, 403, "That key does not sign in "
		    "here: it takes an enabled key of the admin scope.");
	if ((val = console_session_cookie(c, cl.id)) == NULL)
		return response_error(500, "out of memory");
	log_info("console: client '%s' signed in", cl.id);
	r = console_see_other(c, "", val);
	free(val);
	return r;
}

/*
 * The path below /console of the request: "" for the console itself,
 * "/sign-in" and so on ("" too when it is not one of ours); *base
 * (when not NULL) where the console was reached: CONSOLE_BASE_CGI when
 * the request's path starts with it (busybox httpd serves the program
 * there only, console.h), else CONSOLE_BASE.
 */
static const char *
sub_path(const struct request *req, char *buf, size_t len,
    const char **base)
{
	const char	*p;
	char		*path, *q;
	size_t		 n = strlen(CONSOLE_BASE_CGI);

	*buf = '\0';
	if (base != NULL)
		*base = CONSOLE_BASE;
	path = cgi_path(cgi_env(req->envp, "REQUEST_URI"));
	if (path != NULL && base != NULL && strncmp(path, CONSOLE_BASE_CGI,
	    n) == 0 && (path[n] == '\0' || path[n] == '/'))
		*base = CONSOLE_BASE_CGI;
	if ((p = cgi_env(req->envp, "PATH_INFO")) != NULL && *p == '/')
		snprintf(buf, len, "%s", p);
	else if (path != NULL && (q = strstr(path, "/console")) != NULL &&
	    (q[8] == '\0' || q[8] == '/'))
		snprintf(buf, len, "%s", q + 8);
	free(path);
	return buf;
}

/*
 * The methods of the console's path: a page GET, a form POST (an
 * unknown path either, and 404).
 */
static const char *
methods(const struct request *req)
{
	char		 sub[256];
	const char	*slash;

	sub_path(req, sub, sizeof(sub), NULL);
	if (*sub == '\0' || strcmp(sub, "/") == 0 ||
	    strcmp(sub, "/messages") == 0 || strcmp(sub, "/inbound") == 0 ||
	    strcmp(sub, "/suppressions") == 0)
		return "GET";
	if (strcmp(sub, "/sign-in") == 0 || strcmp(sub, "/sign-out") == 0 ||
	    strcmp(sub, "/suppressions/add") == 0 ||
	    strcmp(sub, "/suppressions/remove") == 0)
		return "POST";
	if (strncmp(sub, "/messages/", 10) == 0) {
		slash = strchr(sub + 10, '/');
		if (slash == NULL)
			return "GET";
		if (strcmp(slash, "/cancel") == 0 ||
		    strcmp(slash, "/retry") == 0)
			return "POST";
	}
	return "GET, POST";
}

/* Signed out: the session cookie cleared, the form again. */
static struct response *
sign_out(const struct console *c)
{
	char	set[128];

	snprintf(set, sizeof(set), COOKIE_NAME "=; Max-Age=0; Path=%s; "
	    "HttpOnly; SameSite=Strict", c->base);
	return console_see_other(c, "", set);
}

static struct response *
console(struct ctx *ctx)
{
	struct console	 c = { .ctx = ctx };
	struct response	*r = NULL;
	json_t		*f = NULL;
	char		 err[512], *secret, sub[256];
	int		 post = strcmp(ctx->req->method, "POST") == 0;

	if (!config_secret_given(ctx->cfg, NULL, "console-secret"))
		return problem_response(problem_new(404, "not-found",
		    "the console is off: no console-secret"));
	if ((secret = config_secret(ctx->cfg, NULL, "console-secret", err,
	    sizeof(err))) == NULL) {
		log_err("console: %s", err);
		return response_error(500, "the service is misconfigured");
	}
	c.key = config_secret_key(secret, &c.keylen);
	explicit_bzero(secret, strlen(secret));
	free(secret);
	if (c.key == NULL)
		return response_error(500, "out of memory");
	sub_path(ctx->req, sub, sizeof(sub), &c.base);
	console_session(&c);
	if (!post) {
		if (!c.signed_in && (*sub == '\0' || strcmp(sub, "/") == 0 ||
		    strncmp(sub, "/messages", 9) == 0 ||
		    strcmp(sub, "/inbound") == 0 ||
		    strcmp(sub, "/suppressions") == 0))
			r = console_sign_in_page(&c, 200, NULL);
		else if (*sub == '\0' || strcmp(sub, "/") == 0)
			r = console_overview(&c);
		else if (strcmp(sub, "/messages") == 0)
			r = console_messages_page(&c);
		else if (strncmp(sub, "/messages/", 10) == 0)
			r = console_message_page(&c, sub + 10);
		else if (strcmp(sub, "/inbound") == 0)
			r = console_inbound_page(&c);
		else if (strcmp(sub, "/suppressions") == 0)
			r = console_suppressions_page(&c);
		else
			r = problem_response(problem_new(404, "not-found",
			    "no such page of the console"));
		goto done;
	}
	if ((f = form(&c, &r)) == NULL)
		goto done;
	if (strcmp(sub, "/sign-in") == 0)
		r = sign_in(&c, f);
	else if (strcmp(sub, "/sign-out") == 0)
		r = !console_csrf_ok(&c, f, "sign-out") ?
		    console_refused(&c) : sign_out(&c);
	else if (strncmp(sub, "/messages/", 10) == 0)
		r = console_message_post(&c, sub + 10, f);
	else if (strncmp(sub, "/suppressions/", 14) == 0)
		r = console_suppressions_post(&c, sub + 14, f);
	else
		r = problem_response(problem_new(404, "not-found",
		    "no such form of the console"));
done:
	json_decref(f);
	explicit_bzero(c.key, c.keylen);
	free(c.key);
	return r;
}

const struct endpoint ep_console = {
	.method = "GET, POST",
	.methods = methods,
	.needs_key = 0,
	.scope = 0,
	/* A form (application/x-www-form-urlencoded), parsed here. */
	.limit = LIMIT_RAW,
	.needs_spool = 1,
	.handler = console,
};

CGI_MAIN(ep_console)
