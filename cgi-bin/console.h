/*
 * console.h: what the files of the operator console share (console.c the
 * routes and the sign-in, console_session.c the session and its tokens,
 * console_html.c the pages' frame, console_overview.c the overview,
 * console_msgs.c the messages and inbound pages, console_supp.c the
 * suppressions page), and nothing else sees.  README.md, Operator
 * console; msgspool.conf(5), console-secret.
 */
#ifndef CONSOLE_H
#define CONSOLE_H

#include <stddef.h>
#include <jansson.h>
#include <nettle/sha2.h>

#include "base/buf.h"
#include "content/keys.h"
#include "http/cgi.h"

#define COOKIE_NAME	"msgspool_console"
#define SESSION_TTL	(12 * 3600)
#define MAC_HEX		(SHA256_DIGEST_SIZE * 2)
/* CLIENT "." EXPIRY "." MAC */
#define COOKIE_MAX	(CLIENT_ID_MAX + 1 + 20 + 1 + MAC_HEX)
/*
 * The pre-session cookie of the sign-in form: NONCE.EXPIRY.MAC, NONCE
 * 32 hex digits, good for an hour, sent again once it has less than 10
 * minutes left.
 */
#define PRE_NAME	"msgspool_console_pre"
#define PRE_TTL		3600
#define PRE_RENEW	600
#define PRE_MAX		(32 + 1 + 20 + 1 + MAC_HEX)

/*
 * Where the console is: /console, or /cgi-bin/console where the web
 * server cannot map /console to the program (busybox httpd).
 */
#define CONSOLE_BASE		"/console"
#define CONSOLE_BASE_CGI	"/cgi-bin/console"

/* The state of one request: the key, the session. */
struct console {
	struct ctx	*ctx;
	const char	*base;		/* CONSOLE_BASE or CONSOLE_BASE_CGI */
	unsigned char	*key;
	size_t		 keylen;
	int		 signed_in;
	char		 client[CLIENT_ID_MAX + 1];
	char		 cookie[COOKIE_MAX + 1];	/* its value */
};

/* console_session.c */

/*
 * The session of the request's cookie: c->signed_in, c->client and
 * c->cookie set when it verifies, has not expired and its client still
 * has an enabled key of the admin scope.
 */
void		 console_session(struct console *);
/*
 * A new session of client: c->cookie set, and the Set-Cookie header's
 * value returned (the caller frees it); NULL out of memory.
 */
char		*console_session_cookie(struct console *, const char *);
/*
 * The sign-in form's token (tok) and the Set-Cookie value of its
 * pre-session cookie, or "" when the request's own is still good (the
 * caller frees it); NULL out of memory or randomness.
 */
char		*console_pre_cookie(const struct console *, char [MAC_HEX + 1]);
/*
 * Whether the sign-in form f carries the token of the request's
 * pre-session cookie, which verifies and has not expired.
 */
int		 console_sign_in_ok(const struct console *, const json_t *);
/* The CSRF token of an action ("sign-out", "messages/ID/cancel", ...). */
void		 console_csrf_token(const struct console *, const char *,
		    char [MAC_HEX + 1]);
/* Whether form f carries the session's token of action. */
int		 console_csrf_ok(const struct console *, const json_t *,
		    const char *);

/* console_html.c: pages are built in a struct buf, then finished. */

/* The page's start: doctype, head with title, the style, <body>. */
void		 console_head(struct buf *, const char *);
/* A short formatted line (numbers, names of ours: nothing to escape). */
void		 console_printf(struct buf *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
/* s, HTML-escaped. */
void		 console_esc(struct buf *, const char *);
/* A <td> of o's string member key, escaped (empty when not a string). */
void		 console_cell(struct buf *, const json_t *, const char *);
/* A POST form of the session to /console/ACTION: its token, a button. */
void		 console_post_button(struct buf *, const struct console *,
		    const char *, const char *);
/* The pages' links and the signed-in client's Sign out. */
void		 console_nav(struct buf *, const struct console *);
/* The page b with status and the security headers; b is freed. */
struct response	*console_finish(struct buf *, int);
/*
 * The sign-in form with its token, and its pre-session cookie when the
 * request has none that is good (status 200, or 403 with the error).
 */
struct response	*console_sign_in_page(const struct console *, int,
		    const char *);
/* A page saying what is wrong with a request (400, 404, 409, ...). */
struct response	*console_error(const struct console *, int,
		    const char *, const char *);
/* 403: a form without its token; nothing was changed. */
struct response	*console_refused(const struct console *);
/*
 * 303 to the console's page sub ("" the overview, "/messages/ID"), with
 * a Set-Cookie when cookie_header is not NULL.
 */
struct response	*console_see_other(const struct console *, const char *,
		    const char *);

/* The pages: console_overview.c, console_msgs.c, console_supp.c. */
struct response	*console_overview(struct console *);
struct response	*console_messages_page(struct console *);
struct response	*console_message_page(struct console *, const char *);
/* POST /console/messages/ID/cancel and .../retry: sub is "ID/ACTION". */
struct response	*console_message_post(struct console *, const char *,
		    const json_t *);
struct response	*console_inbound_page(struct console *);
struct response	*console_suppressions_page(struct console *);
/* POST /console/suppressions/add and .../remove: what is "add" or
 * "remove". */
struct response	*console_suppressions_post(struct console *, const char *,
		    const json_t *);

#endif
