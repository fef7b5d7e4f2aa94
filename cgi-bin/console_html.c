/*
 * console_html.c: the frame of the console's pages (console.h): the
 * head with its one inline style, the navigation, the forms of the
 * session, the answers that are not a page of their own (an error, a
 * refused form, a redirect), and the security headers of every answer
 * (README.md, Operator console).  Every value of a page goes through
 * console_esc (html_escape) or is a number or a name of ours.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console.h"
#include "content/html.h"
#include "http/problem.h"

#define CSP	"default-src 'none'; style-src 'unsafe-inline'; " \
		"img-src 'self' data:; form-action 'self'; " \
		"frame-ancestors 'none'"

#define STYLE	"<style>body{font-family:sans-serif;margin:0 auto;" \
		"max-width:60em;padding:0 1em}table{border-collapse:collapse}" \
		"td,th{border-bottom:1px solid #ccc;padding:.2em .6em;" \
		"text-align:left}nav form{display:inline}" \
		".err{color:#a00}</style>\n"

/* The security headers of every page, and no cache. */
static int
page_headers(struct response *r)
{
	return response_header(r, "Cache-Control", "no-store") == -1 ||
	    response_header(r, "Content-Security-Policy", CSP) == -1 ||
	    response_header(r, "X-Frame-Options", "DENY") == -1 ||
	    response_header(r, "X-Content-Type-Options", "nosniff") == -1 ||
	    response_header(r, "Referrer-Policy", "no-referrer") == -1 ? -1 :
	    0;
}

void
console_head(struct buf *b, const char *title)
{
	buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
	    "<meta charset=\"utf-8\">\n<meta name=\"viewport\" "
	    "content=\"width=device-width, initial-scale=1\">\n"
	    "<meta name=\"robots\" content=\"noindex, nofollow\">\n<title>");
	buf_puts(b, title);
	buf_puts(b, " - msgspool console</title>\n" STYLE "</head>\n<body>\n");
}

void
console_printf(struct buf *b, const char *fmt, ...)
{
	char	line[512];
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	buf_puts(b, line);
}

void
console_esc(struct buf *b, const char *s)
{
	html_escape(b, s, strlen(s));
}

/* b as a page of status; b is freed. */
struct response *
console_finish(struct buf *b, int status)
{
	struct response	*r;

	buf_puts(b, "</body>\n</html>\n");
	if (b->failed) {
		buf_free(b);
		return response_error(500, "out of memory");
	}
	r = response_new(status, "text/html; charset=utf-8", b->p, b->len);
	buf_free(b);
	/* Not now: when to try again, as every 503 says (problem.c). */
	if (r != NULL && (page_headers(r) == -1 || (status == 503 &&
	    response_header(r, "Retry-After", "60") == -1))) {
		response_free(r);
		return response_error(500, "out of memory");
	}
	return r;
}

struct response *
console_sign_in_page(const struct console *c, int status, const char *error)
{
	struct buf	 b = { 0 };
	struct response	*r;
	char		 tok[MAC_HEX + 1], *set;

	if ((set = console_pre_cookie(c, tok)) == NULL)
		return response_error(500, "the sign-in form cannot be made");
	console_head(&b, "Sign in");
	buf_puts(&b, "<h1>msgspool console</h1>\n");
	if (error != NULL) {
		buf_puts(&b, "<p class=\"err\">");
		console_esc(&b, error);
		buf_puts(&b, "</p>\n");
	}
	buf_puts(&b, "<form method=\"post\" action=\"");
	buf_puts(&b, c->base);
	buf_puts(&b, "/sign-in\">\n<input type=\"hidden\" name=\"csrf\" "
	    "value=\"");
	buf_puts(&b, tok);
	buf_puts(&b, "\">\n<label>API key of the admin scope<br>\n<input "
	    "type=\"password\" name=\"key\" autocomplete=\"current-password\" "
	    "required></label>\n<button type=\"submit\">Sign in</button>\n"
	    "</form>\n");
	r = console_finish(&b, status);
	if (r != NULL && r->status == status && *set != '\0' &&
	    response_header(r, "Set-Cookie", set) == -1) {
		response_free(r);
		r = response_error(500, "out of memory");
	}
	free(set);
	return r;
}

/* A POST form of the session: its action, its token, a button. */
void
console_post_button(struct buf *b, const struct console *c,
    const char *action, const char *label)
{
	char	tok[MAC_HEX + 1];

	console_csrf_token(c, action, tok);
	buf_puts(b, "<form method=\"post\" action=\"");
	buf_puts(b, c->base);
	buf_putc(b, '/');
	console_esc(b, action);
	buf_puts(b, "\"><input type=\"hidden\" name=\"csrf\" value=\"");
	buf_puts(b, tok);
	buf_puts(b, "\"><button type=\"submit\">");
	console_esc(b, label);
	buf_puts(b, "</button></form>");
}

void
console_nav(struct buf *b, const struct console *c)
{
	console_printf(b, "<nav><a href=\"%s\">Overview</a> | <a href=\""
	    "%s/messages\">Messages</a> | <a href=\"%s/inbound\">Inbound</a> "
	    "| <a href=\"%s/suppressions\">Suppressions</a> | signed in as "
	    "<strong>", c->base, c->base, c->base, c->base);
	console_esc(b, c->client);
	buf_puts(b, "</strong> ");
	console_post_button(b, c, "sign-out", "Sign out");
	buf_puts(b, "</nav>\n");
}

/* A page saying what is wrong with a request (400, 404, 409, ...). */
struct response *
console_error(const struct console *c, int status, const char *title,
    const char *msg)
{
	struct buf	b = { 0 };

	console_head(&b, title);
	if (c->signed_in)
		console_nav(&b, c);
	buf_puts(&b, "<h1>");
	console_esc(&b, title);
	buf_puts(&b, "</h1>\n<p class=\"err\">");
	console_esc(&b, msg);
	buf_puts(&b, "</p>\n");
	return console_finish(&b, status);
}

void
console_cell(struct buf *b, const json_t *o, const char *key)
{
	buf_puts(b, "<td>");
	if (json_is_string(json_object_get(o, key)))
		console_esc(b, json_string_value(json_object_get(o, key)));
	buf_puts(b, "</td>");
}

struct response *
console_see_other(const struct console *c, const char *sub,
    const char *cookie_header)
{
	struct response	*r;
	char		 location[320];

	snprintf(location, sizeof(location), "%s%s", c->base, sub);
	r = response_new(303, "text/plain; charset=utf-8", "", 0);
	if (r != NULL && (page_headers(r) == -1 ||
	    response_header(r, "Location", location) == -1 ||
	    (cookie_header != NULL && response_header(r, "Set-Cookie",
	    cookie_header) == -1))) {
		response_free(r);
		return response_error(500, "out of memory");
	}
	return r;
}

struct response *
console_refused(const struct console *c)
{
	struct buf	b = { 0 };

	console_head(&b, "Refused");
	buf_puts(&b, "<h1>Refused</h1>\n<p class=\"err\">This form has "
	    "expired or did not come from this console: nothing was "
	    "changed.</p>\n<p><a href=\"");
	buf_puts(&b, c->base);
	buf_puts(&b, "\">Back to the console</a></p>\n");
	return console_finish(&b, 403);
}

