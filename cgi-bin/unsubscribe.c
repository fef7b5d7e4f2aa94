/*
 * unsubscribe: GET and POST /unsubscribe/{token} (conf/openapi.yaml), the
 * one-click unsubscribe of RFC 8058 behind the List-Unsubscribe of each
 * email of a client with list-unsubscribe = yes (msgspool.conf(5)).  No
 * API key: the token names the client and the address and is signed
 * with unsubscribe-secret (content/unsub.h).
 *
 * A POST unsubscribes: whatever its body (RFC 8058's form field
 * "List-Unsubscribe=One-Click", urlencoded or multipart, the page's own
 * form, or none; it is not read), the address is suppressed for the
 * token's client on email, source "unsubscribe" (spool/suppress.h), and
 * a small page says so.  A GET (and HEAD) answers a page with a button
 * that posts the same form, and changes nothing: mail scanners and link
 * previews follow links.  A token that does not verify is 404: a page
 * to a GET, which a person reads, a problem to a POST.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/log.h"
#include "content/html.h"
#include "content/unsub.h"
#include "endpoints.h"
#include "http/cgi.h"
#include "http/problem.h"
#include "spool/spool.h"
#include "spool/suppress.h"

/*
 * The token of the request's path: PATH_INFO "/TOKEN" (the server mapped
 * /unsubscribe/TOKEN to this program), else REQUEST_URI's.  Copied into
 * token (UNSUB_TOKEN_MAX + 1 bytes); -1 when there is none.
 */
static int
path_token(const struct request *req, char *token)
{
	const char	*p;
	size_t		 len;

	if ((p = cgi_env(req->envp, "PATH_INFO")) != NULL && *p == '/')
		len = strlen(++p);
	else if ((p = cgi_env(req->envp, "REQUEST_URI")) != NULL &&
	    (p = strstr(p, "/unsubscribe/")) != NULL) {
		p += strlen("/unsubscribe/");
		len = strcspn(p, "?");
	} else
		return -1;
	if (len == 0 || len > UNSUB_TOKEN_MAX)
		return -1;
	memcpy(token, p, len);
	token[len] = '\0';
	return 0;
}

/*
 * A page: status, a title, and HTML made of before, the address
 * escaped (NULL: none) and after.  Nothing on it loads anything, and
 * its form may post only here (Content-Security-Policy); it is no one
 * else's to keep or frame.
 */
static struct response *
page(int status, const char *title, const char *before, const char *addr,
    const char *after)
{
	struct response	*r;
	struct buf	 b = { 0 };

	/* A failed append fails every one after it: b.failed says. */
	buf_puts(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
	    "<meta charset=\"utf-8\">\n<meta name=\"viewport\" "
	    "content=\"width=device-width, initial-scale=1\">\n"
	    "<meta name=\"robots\" content=\"noindex, nofollow\">\n"
	    "<title>");
	buf_puts(&b, title);
	buf_puts(&b, "</title>\n</head>\n<body>\n<h1>");
	buf_puts(&b, title);
	buf_puts(&b, "</h1>\n");
	buf_puts(&b, before);
	if (addr != NULL)
		html_escape(&b, addr, strlen(addr));
	buf_puts(&b, after);
	buf_puts(&b, "</body>\n</html>\n");
	if (b.failed) {
		buf_free(&b);
		return response_error(500, "out of memory");
	}
	r = response_new(status, "text/html; charset=utf-8", b.p, b.len);
	buf_free(&b);
	if (r != NULL && (response_header(r, "Cache-Control", "no-store") ==
	    -1 || response_header(r, "Referrer-Policy", "no-referrer") ==
	    -1 || response_header(r, "Content-Security-Policy",
	    "default-src 'none'; form-action 'self'; frame-ancestors 'none'") ==
	    -1)) {
		response_free(r);
		return response_error(500, "out of memory");
	}
	return r;
}

static struct response *
not_found(int get)
{
	if (!get)
		return problem_response(problem_new(404, "not-found",
		    "no such unsubscribe link"));
	return page(404, "Link not valid", "<p>This unsubscribe link is not "
	    "valid: it may have been cut short or changed on its way. Use the "
	    "link of the email as it came.</p>\n", NULL, "");
}

/*
 * Whether the request's token verifies: 1 with its client and address,
 * 0 when not, -1 with the response when the secret cannot be had.
 */
static int
verify(const struct ctx *ctx, char *client, char *addr,
    struct response **r)
{
	char		 token[UNSUB_TOKEN_MAX + 1], err[512], *secret;
	unsigned char	*key;
	size_t		 len;
	int		 ok;

	/* A config that cannot check a link is a server's failure. */
	if ((secret = config_secret(ctx->cfg, NULL, "unsubscribe-secret",
	    err, sizeof(err))) == NULL) {
		log_err("unsubscribe: %s: no link can be checked", err);
		*r = response_error(500, "the service is misconfigured");
		return -1;
	}
	key = config_secret_key(secret, &len);
	explicit_bzero(secret, strlen(secret));
	free(secret);
	if (key == NULL) {
		*r = response_error(500, "out of memory");
		return -1;
	}
	ok = path_token(ctx->req, token) == 0 &&
	    unsub_verify(key, len, token, client, addr);
	explicit_bzero(key, len);
	free(key);
	return ok;
}

static struct response *
unsubscribe(struct ctx *ctx)
{
	struct response	*r = NULL;
	char		 client[CLIENT_ID_MAX + 1], addr[UNSUB_ADDR_MAX + 1];
	int		 get = strcmp(ctx->req->method, "GET") == 0;

	switch (verify(ctx, client, addr, &r)) {
	case -1:
		return r;
	case 0:
		return not_found(get);
	}
	/* The page asks; only a POST, the button's or a mail program's, acts. */
	if (get)
		return page(200, "Unsubscribe", "<p>Stop the email of this "
		    "sender to <strong>", addr, "</strong>?</p>\n"
		    "<form method=\"post\">\n<input type=\"hidden\" "
		    "name=\"List-Unsubscribe\" value=\"One-Click\">\n"
		    "<button type=\"submit\">Unsubscribe</button>\n"
		    "</form>\n");
	/* Durable before the answer; one already there stays as it is. */
	if (suppress_add(ctx->spool, client, CHANNEL_EMAIL, addr,
	    "unsubscribe", NULL, NULL) == -1) {
		log_err("unsubscribe: %s: %s: %s", client, addr,
		    strerror(errno));
		return response_error(spool_errno_status(errno) ==
		    MSG_TEMPFAIL ? 503 : 500, "the unsubscribe cannot be "
		    "recorded now");
	}
	return page(200, "Unsubscribed", "<p><strong>", addr, "</strong> "
	    "will get no more email from this sender.</p>\n");
}

const struct endpoint ep_unsubscribe = {
	.method = "GET, POST",
	.needs_key = 0,
	.scope = 0,
	/* Its body is not read: the token says everything (RFC 8058). */
	.limit = LIMIT_NONE,
	.needs_spool = 1,
	.handler = unsubscribe,
};

CGI_MAIN(ep_unsubscribe)
