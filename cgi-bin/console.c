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
 * An operator signs in with a key of the admin scope (msgspool.conf(5),
 * KEYS FILE), posted by the sign-in form; the answer is a session
 * cookie, msgspool_console=CLIENT.EXPIRY.HMAC, the hex HMAC-SHA256 of
 * "msgspool-console:CLIENT.EXPIRY" keyed by the secret, good for 12
 * hours.  No state is kept: a cookie that does not verify, has
 * expired, or names a client with no enabled key of the admin scope
 * any more, gets the sign-in form.  Every POST but the sign-in carries
 * the field csrf, the hex HMAC-SHA256 of "msgspool-console-csrf:",
 * the action's name, ":" and the cookie's value; one without it, or
 * with another, is refused (403) and changes nothing.
 *
 * Pages are HTML drawn here: nothing loads from elsewhere, no script,
 * one inline style (Content-Security-Policy), framed by no one.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <nettle/hmac.h>
#include <nettle/memops.h>

#include "base/buf.h"
#include "base/channel.h"
#include "base/log.h"
#include "base/msgspool.h"
#include "base/rfc3339.h"
#include "base/ulid.h"
#include "base/valid.h"
#include "content/html.h"
#include "content/keys.h"
#include "content/route.h"
#include "endpoints.h"
#include "http/cgi.h"
#include "http/problem.h"
#include "spool/event.h"
#include "spool/inbox.h"
#include "spool/list.h"
#include "spool/msgdoc.h"
#include "spool/receipt.h"
#include "spool/spool.h"
#include "spool/suppress.h"

#define COOKIE_NAME	"msgspool_console"
#define SESSION_TTL	(12 * 3600)
#define MAC_HEX		(SHA256_DIGEST_SIZE * 2)
/* CLIENT "." EXPIRY "." MAC */
#define COOKIE_MAX	(CLIENT_ID_MAX + 1 + 20 + 1 + MAC_HEX)

#define CSP	"default-src 'none'; style-src 'unsafe-inline'; " \
		"img-src 'self' data:; form-action 'self'; " \
		"frame-ancestors 'none'"

#define STYLE	"<style>body{font-family:sans-serif;margin:0 auto;" \
		"max-width:60em;padding:0 1em}table{border-collapse:collapse}" \
		"td,th{border-bottom:1px solid #ccc;padding:.2em .6em;" \
		"text-align:left}nav form{display:inline}" \
		".err{color:#a00}</style>\n"

/* The state of one request: the key, the session. */
struct console {
	struct ctx	*ctx;
	unsigned char	*key;
	size_t		 keylen;
	int		 signed_in;
	char		 client[CLIENT_ID_MAX + 1];
	char		 cookie[COOKIE_MAX + 1];	/* its value */
};

static int		 csrf_ok(const struct console *, const json_t *,
			    const char *);
static struct response	*refused(void);
static struct response	*see_other(const char *, const char *);
static int		 client_is_admin(const struct console *, const char *);

/* The hex HMAC-SHA256 of the concatenation of a, b and c under key. */
static void
mac_hex(const struct console *c, const char *a, const char *b,
    const char *cc, char out[MAC_HEX + 1])
{
	struct hmac_sha256_ctx	 h;
	uint8_t			 d[SHA256_DIGEST_SIZE];
	size_t			 i;

	hmac_sha256_set_key(&h, c->keylen, c->key);
	hmac_sha256_update(&h, strlen(a), (const uint8_t *)a);
	hmac_sha256_update(&h, strlen(b), (const uint8_t *)b);
	hmac_sha256_update(&h, strlen(cc), (const uint8_t *)cc);
	hmac_sha256_digest(&h, sizeof(d), d);
	for (i = 0; i < sizeof(d); i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
	explicit_bzero(&h, sizeof(h));
}

static int
hex_equal(const char *a, const char *b)
{
	return strlen(a) == MAC_HEX && strlen(b) == MAC_HEX &&
	    memeql_sec(a, b, MAC_HEX);
}

/* The CSRF token of an action of the session. */
static void
csrf_token(const struct console *c, const char *action,
    char out[MAC_HEX + 1])
{
	char	purpose[64];

	snprintf(purpose, sizeof(purpose), "msgspool-console-csrf:%s:",
	    action);
	mac_hex(c, purpose, c->cookie, "", out);
}

/*
 * The session of the request's cookie: signed_in, client and cookie
 * set when it verifies and has not expired.
 */
static void
session(struct console *c)
{
	const char	*h, *p, *end;
	char		 v[COOKIE_MAX + 1], *d1, *d2, *ep, mac[MAC_HEX + 1];
	size_t		 len, nlen = strlen(COOKIE_NAME);
	long long	 exp;

	if ((h = cgi_env(c->ctx->req->envp, "HTTP_COOKIE")) == NULL)
		return;
	for (p = h; *p != '\0'; p = *end ? end + 1 : end) {
		while (*p == ' ')
			p++;
		end = p + strcspn(p, ";");
		if ((size_t)(end - p) <= nlen || strncmp(p, COOKIE_NAME,
		    nlen) != 0 || p[nlen] != '=')
			continue;
		p += nlen + 1;
		if ((len = (size_t)(end - p)) > COOKIE_MAX)
			return;
		memcpy(v, p, len);
		v[len] = '\0';
		if ((d2 = strrchr(v, '.')) == NULL)
			return;
		*d2 = '\0';
		if ((d1 = strrchr(v, '.')) == NULL || d1 == v)
			return;
		*d1 = '\0';
		errno = 0;
		exp = strtoll(d1 + 1, &ep, 10);
		if (errno != 0 || *ep != '\0' || ep == d1 + 1 ||
		    exp < (long long)time(NULL) ||
		    exp > (long long)time(NULL) + SESSION_TTL ||
		    strlen(v) > CLIENT_ID_MAX)
			return;
		*d1 = '.';
		mac_hex(c, "msgspool-console:", v, "", mac);
		if (!hex_equal(mac, d2 + 1))
			return;
		*d1 = '\0';
		if (!client_is_admin(c, v))
			return;
		/* At most CLIENT_ID_MAX, checked above. */
		memcpy(c->client, v, strlen(v) + 1);
		*d1 = '.';
		*d2 = '.';
		snprintf(c->cookie, sizeof(c->cookie), "%s", v);
		c->signed_in = 1;
		return;
	}
}

/*
 * Whether client still has an enabled key of the admin scope in the keys
 * file: a session ends when its client's key is disabled or loses admin
 * (msgspool key disable), not only when it expires.
 */
static int
client_is_admin(const struct console *c, const char *client)
{
	char		*keys, *line = NULL, *f[4], *p;
	size_t		 cap = 0, n;
	unsigned	 scopes;
	FILE		*fp;
	int		 ok = 0;

	if ((keys = config_path(c->ctx->cfg, NULL, "keys", "keys")) == NULL)
		return 0;
	fp = fopen(keys, "re");
	free(keys);
	if (fp == NULL)
		return 0;
	while (!ok && getline(&line, &cap, fp) != -1) {
		line[strcspn(line, "\r\n")] = '\0';
		if (*line == '#' || *line == '\0')
			continue;
		for (n = 0, p = line; n < 4 && p != NULL; n++) {
			f[n] = p;
			if ((p = strchr(p, ':')) != NULL)
				*p++ = '\0';
		}
		if (n < 3 || strcmp(f[0], client) != 0 ||
		    keys_scopes_parse(f[2], &scopes) == -1 ||
		    (scopes & SCOPE_ADMIN) == 0 ||
		    (n == 4 && strstr(f[3], "disabled") != NULL))
			continue;
		ok = 1;
	}
	free(line);
	fclose(fp);
	return ok;
}

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

static void
head(struct buf *b, const char *title)
{
	buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
	    "<meta charset=\"utf-8\">\n<meta name=\"viewport\" "
	    "content=\"width=device-width, initial-scale=1\">\n"
	    "<meta name=\"robots\" content=\"noindex, nofollow\">\n<title>");
	buf_puts(b, title);
	buf_puts(b, " - msgspool console</title>\n" STYLE "</head>\n<body>\n");
}

/* Append a short formatted line (numbers, names of ours: nothing to escape). */
static void buf_printf(struct buf *, const char *, ...)
    __attribute__((format(printf, 2, 3)));

static void
buf_printf(struct buf *b, const char *fmt, ...)
{
	char	line[512];
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	buf_puts(b, line);
}

static void
esc(struct buf *b, const char *s)
{
	html_escape(b, s, strlen(s));
}

/* b as a page of status; b is freed. */
static struct response *
finish(struct buf *b, int status)
{
	struct response	*r;

	buf_puts(b, "</body>\n</html>\n");
	if (b->failed) {
		buf_free(b);
		return response_error(500, "out of memory");
	}
	r = response_new(status, "text/html; charset=utf-8", b->p, b->len);
	buf_free(b);
	if (r != NULL && page_headers(r) == -1) {
		response_free(r);
		return response_error(500, "out of memory");
	}
	return r;
}

static struct response *
sign_in_page(int status, const char *error)
{
	struct buf	b = { 0 };

	head(&b, "Sign in");
	buf_puts(&b, "<h1>msgspool console</h1>\n");
	if (error != NULL) {
		buf_puts(&b, "<p class=\"err\">");
		esc(&b, error);
		buf_puts(&b, "</p>\n");
	}
	buf_puts(&b, "<form method=\"post\" action=\"/console/sign-in\">\n"
	    "<label>API key of the admin scope<br>\n<input type=\"password\" "
	    "name=\"key\" autocomplete=\"current-password\" required>"
	    "</label>\n<button type=\"submit\">Sign in</button>\n</form>\n");
	return finish(&b, status);
}

/* A POST form of the session: its action, its token, a button. */
static void
post_button(struct buf *b, const struct console *c, const char *action,
    const char *label)
{
	char	tok[MAC_HEX + 1];

	csrf_token(c, action, tok);
	buf_puts(b, "<form method=\"post\" action=\"/console/");
	esc(b, action);
	buf_puts(b, "\"><input type=\"hidden\" name=\"csrf\" value=\"");
	buf_puts(b, tok);
	buf_puts(b, "\"><button type=\"submit\">");
	esc(b, label);
	buf_puts(b, "</button></form>");
}

static void
nav(struct buf *b, const struct console *c)
{
	buf_puts(b, "<nav><a href=\"/console\">Overview</a> | <a href=\""
	    "/console/messages\">Messages</a> | <a href=\"/console/inbound\">"
	    "Inbound</a> | <a href=\"/console/suppressions\">Suppressions</a> "
	    "| signed in as "
	    "<strong>");
	esc(b, c->client);
	buf_puts(b, "</strong> ");
	post_button(b, c, "sign-out", "Sign out");
	buf_puts(b, "</nav>\n");
}

/* The entries of dir (no dot files); -1 when it cannot be read. */
static long
count_dir(const char *root, const char *area)
{
	char		 path[4096];
	DIR		*d;
	struct dirent	*e;
	long		 n = 0;

	snprintf(path, sizeof(path), "%s/%s", root, area);
	if ((d = opendir(path)) == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* The channels a queue table shows, and one for any other. */
static const char *const q_channels[] = { "sms", "ott", "email", "voice",
    "other" };
static const char *const q_states[] = { "new", "deferred", "cur" };
/* Documents read per state for the table, at most (a page stays fast). */
#define QUEUE_READ_MAX	5000

/*
 * Count the documents of area by channel into n[channel]; how many were
 * left unread past QUEUE_READ_MAX into *more.
 */
static void
count_channels(const char *root, const char *area, long n[5], long *more)
{
	char		 path[4096];
	DIR		*d;
	struct dirent	*e;
	json_t		*doc;
	const char	*ch;
	size_t		 i;
	long		 read = 0;

	snprintf(path, sizeof(path), "%s/%s", root, area);
	if ((d = opendir(path)) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (read++ >= QUEUE_READ_MAX) {
			(*more)++;
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s/%s", root, area,
		    e->d_name);
		if ((doc = json_load_file(path, 0, NULL)) == NULL)
			continue;	/* taken meanwhile, or not one */
		ch = json_string_value(json_object_get(doc, "channel"));
		for (i = 0; i < 4; i++)
			if (ch != NULL && (strcmp(ch, q_channels[i]) == 0 ||
			    (i == 1 && strncmp(ch, "ott.", 4) == 0)))
				break;
		n[i]++;
		json_decref(doc);
	}
	closedir(d);
}

static void
cell_str(struct buf *b, const json_t *v)
{
	buf_puts(b, "<td>");
	if (json_is_string(v))
		esc(b, json_string_value(v));
	else if (json_is_integer(v))
		buf_printf(b, "%lld", (long long)json_integer_value(v));
	buf_puts(b, "</td>");
}

/* The routes of the config and each one's status file. */
static void
routes_table(struct buf *b, const struct console *c)
{
	struct route_table	*t;
	const struct route_conf	*rc;
	json_t			*st;
	char			 err[512], name[160];
	size_t			 i;

	buf_puts(b, "<h2>Routes</h2>\n");
	if ((t = route_table_new(c->ctx->cfg, err, sizeof(err))) == NULL) {
		buf_puts(b, "<p class=\"err\">");
		esc(b, err);
		buf_puts(b, "</p>\n");
		return;
	}
	buf_puts(b, "<table>\n<tr><th>route</th><th>channel</th>"
	    "<th>state</th><th>since</th><th>failures</th>"
	    "<th>last error</th></tr>\n");
	for (i = 0; (rc = route_at(t, i)) != NULL; i++) {
		snprintf(name, sizeof(name), "route-%s", rc->name);
		st = spool_status_get(c->ctx->spool, name);
		buf_puts(b, "<tr><td>");
		esc(b, rc->name);
		buf_puts(b, "</td><td>");
		esc(b, rc->channel);
		buf_puts(b, "</td>");
		if (st == NULL)
			buf_puts(b, "<td>not reported</td><td></td><td></td>"
			    "<td></td>");
		else {
			cell_str(b, json_object_get(st, "state"));
			cell_str(b, json_object_get(st, "since"));
			cell_str(b, json_object_get(st, "failures"));
			cell_str(b, json_object_get(st, "lastError"));
		}
		buf_puts(b, "</tr>\n");
		json_decref(st);
	}
	buf_puts(b, "</table>\n");
	route_table_free(t);
}

/*
 * The last 24 hours of status/daemon.json "hours" as an SVG bar chart:
 * sent, delivered, failed of each hour side by side, drawn here.
 */
static void
hours_chart(struct buf *b, const json_t *hours)
{
	static const char *const keys[] = { "sent", "delivered", "failed" };
	static const char *const fills[] = { "#4a7ebb", "#3a9a4a",
	    "#c0392b" };
	long long	 v[24][3] = { { 0 } }, max = 0, start, h, now;
	const json_t	*e;
	size_t		 i, k;
	int		 x, hgt;

	now = (long long)time(NULL);
	start = now - now % 3600 - 23 * 3600;
	json_array_foreach(hours, i, e) {
		if (!json_is_integer(json_object_get(e, "hour")))
			continue;
		h = (json_integer_value(json_object_get(e, "hour")) - start) /
		    3600;
		if (h < 0 || h > 23)
			continue;
		for (k = 0; k < 3; k++) {
			json_t *n = json_object_get(e, keys[k]);

			if (json_is_integer(n) && json_integer_value(n) > 0)
				v[h][k] += json_integer_value(n);
			if (v[h][k] > max)
				max = v[h][k];
		}
	}
	buf_puts(b, "<h2>Last 24 hours</h2>\n<svg xmlns=\"http://www.w3.org/"
	    "2000/svg\" viewBox=\"0 0 480 120\" width=\"100%\" role=\"img\" "
	    "aria-label=\"messages sent, delivered and failed per hour\">\n"
	    "<line x1=\"0\" y1=\"100\" x2=\"480\" y2=\"100\" "
	    "stroke=\"#888\"/>\n");
	for (h = 0; h < 24; h++)
		for (k = 0; k < 3; k++) {
			if (v[h][k] == 0)
				continue;
			x = (int)(h * 20 + 2 + (long long)k * 5);
			hgt = (int)(v[h][k] * 100 / max);
			if (hgt < 1)
				hgt = 1;
			buf_printf(b, "<rect class=\"%s\" x=\"%d\" y=\"%d\" "
			    "width=\"5\" height=\"%d\" fill=\"%s\"><title>%s "
			    "%lld</title></rect>\n", keys[k], x, 100 - hgt,
			    hgt, fills[k], keys[k], v[h][k]);
		}
	buf_printf(b, "<text x=\"0\" y=\"115\" font-size=\"10\">-24 h"
	    "</text><text x=\"440\" y=\"115\" font-size=\"10\">now</text>"
	    "</svg>\n<p>Bars: sent (blue), delivered (green), failed (red); "
	    "the highest is %lld.</p>\n", max);
}

static struct response *
overview(struct console *c)
{
	static const char *const states[] = { "tmp", "new", "deferred",
	    "cur", "sent", "failed" };
	struct buf	 b = { 0 };
	struct statvfs	 sv;
	const char	*root = spool_root(c->ctx->spool);
	json_t		*st, *v;
	long		 n, per[3][5] = { { 0 } }, more = 0;
	size_t		 i, j;

	head(&b, "Overview");
	nav(&b, c);
	buf_puts(&b, "<h1>Overview</h1>\n<h2>Health</h2>\n<table>\n");
	st = spool_status_get(c->ctx->spool, "daemon");
	if (st != NULL && json_is_integer(v = json_object_get(st,
	    "heartbeat")))
		buf_printf(&b, "<tr><th>msgspoold</th><td>heartbeat %lld s "
		    "ago</td></tr>\n", (long long)time(NULL) -
		    (long long)json_integer_value(v));
	else
		buf_puts(&b, "<tr><th>msgspoold</th><td>no heartbeat"
		    "</td></tr>\n");
	if (st != NULL && json_is_string(v = json_object_get(st,
	    "version"))) {
		buf_puts(&b, "<tr><th>version</th><td>");
		esc(&b, json_string_value(v));
		buf_puts(&b, "</td></tr>\n");
	}
	if (statvfs(root, &sv) == 0)
		buf_printf(&b, "<tr><th>spool free</th><td>%llu MiB</td>"
		    "</tr>\n", (unsigned long long)sv.f_bavail * sv.f_frsize /
		    (1024 * 1024));
	buf_puts(&b, "</table>\n<h2>Queue</h2>\n<table>\n<tr><th>state</th>"
	    "<th>messages</th></tr>\n");
	for (i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		n = count_dir(root, states[i]);
		buf_printf(&b, "<tr><td>%s</td><td>%ld</td></tr>\n", states[i],
		    n < 0 ? 0 : n);
	}
	buf_puts(&b, "</table>\n<table>\n<tr><th>channel</th>");
	for (i = 0; i < 3; i++) {
		count_channels(root, q_states[i], per[i], &more);
		buf_printf(&b, "<th>%s</th>", q_states[i]);
	}
	buf_puts(&b, "</tr>\n");
	for (j = 0; j < 5; j++) {
		buf_printf(&b, "<tr class=\"ch-%s\"><td>%s</td>", q_channels[j],
		    q_channels[j]);
		for (i = 0; i < 3; i++)
			buf_printf(&b, "<td>%ld</td>", per[i][j]);
		buf_puts(&b, "</tr>\n");
	}
	buf_puts(&b, "</table>\n");
	if (more > 0)
		buf_printf(&b, "<p>%ld more messages not read by channel.</p>\n",
		    more);
	routes_table(&b, c);
	hours_chart(&b, st != NULL ? json_object_get(st, "hours") : NULL);
	json_decref(st);
	return finish(&b, 200);
}

/* A page saying what is wrong with a request (400, 404, 409, ...). */
static struct response *
error_page(const struct console *c, int status, const char *title,
    const char *msg)
{
	struct buf	b = { 0 };

	head(&b, title);
	if (c->signed_in)
		nav(&b, c);
	buf_puts(&b, "<h1>");
	esc(&b, title);
	buf_puts(&b, "</h1>\n<p class=\"err\">");
	esc(&b, msg);
	buf_puts(&b, "</p>\n");
	return finish(&b, status);
}

/* Messages a page of the console lists. */
#define PAGE_MESSAGES	50
#define REFERENCE_MAX	128

/* The clients with a list: SPOOL/lists/CLIENT/ (list.h), sorted. */
static json_t *
list_clients(const char *root)
{
	char		 path[4096];
	DIR		*d;
	struct dirent	*e;
	json_t		*a = json_array();

	snprintf(path, sizeof(path), "%s/" LIST_AREA, root);
	if (a == NULL || (d = opendir(path)) == NULL)
		return a;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.' && valid_client_id(e->d_name))
			json_array_append_new(a, json_string(e->d_name));
	closedir(d);
	return a;
}

/* Newest first: ULIDs sort by their time. */
static int
by_id_desc(const void *a, const void *b)
{
	const char *x = json_string_value(json_object_get(*(json_t *const *)a,
	    "id"));
	const char *y = json_string_value(json_object_get(*(json_t *const *)b,
	    "id"));

	return -strcmp(x ? x : "", y ? y : "");
}

static void
opt_cell(struct buf *b, const json_t *o, const char *key)
{
	buf_puts(b, "<td>");
	if (json_is_string(json_object_get(o, key)))
		esc(b, json_string_value(json_object_get(o, key)));
	buf_puts(b, "</td>");
}

/* A text input of the filter form, with its value kept. */
static void
filter_input(struct buf *b, const json_t *q, const char *name)
{
	const char	*v = json_string_value(json_object_get(q, name));

	buf_puts(b, "<label>");
	buf_puts(b, name);
	buf_puts(b, " <input name=\"");
	buf_puts(b, name);
	buf_puts(b, "\" value=\"");
	if (v != NULL)
		esc(b, v);
	buf_puts(b, "\" size=\"12\"></label>\n");
}

/*
 * GET /console/messages: every client's list (spool/list.h) by the
 * query's filter, newest first, PAGE_MESSAGES at a time.
 */
static struct response *
messages_page(struct console *c)
{
	static const char *const names[] = { "status", "channel",
	    "direction", "recipient", "reference", "since", "until",
	    "client", "after" };
	const char		*qs = cgi_env(c->ctx->req->envp,
				    "QUERY_STRING"), *key, *v, *cl;
	struct list_filter	 f;
	struct buf		 b = { 0 }, page = { 0 };
	char			 addr[LIST_ADDRESS_MAX], next[SPOOL_ID_LEN + 1];
	char			 msg[256];
	json_t			*q, *val, *clients = NULL, *all = NULL, *one;
	json_t			*o;
	size_t			 i, j, n, k;
	long			 retention = 0;
	int			 st, more = 0;
	time_t			 t;

	if ((q = receipt_form_parse(qs != NULL ? qs : "", qs != NULL ?
	    strlen(qs) : 0)) == NULL)
		return error_page(c, 400, "Bad query", "the query is not "
		    "valid percent-encoded UTF-8");
	memset(&f, 0, sizeof(f));
	f.channel = f.direction = -1;
	f.since = f.until = -1;
	f.limit = PAGE_MESSAGES + 1;
	cl = NULL;
	*msg = '\0';
	json_object_foreach(q, key, val) {
		v = json_string_value(val);
		if (*v == '\0')
			continue;	/* the form's empty fields */
		if (strcmp(key, "status") == 0) {
			if ((st = list_status_parse(v, strlen(v))) == -1)
				snprintf(msg, sizeof(msg), "status: not one "
				    "of the statuses");
			else
				f.statuses = 1u << st;
		} else if (strcmp(key, "channel") == 0) {
			if ((f.channel = channel_parse(v)) == -1)
				snprintf(msg, sizeof(msg), "channel: must be "
				    "sms, ott, email or voice");
		} else if (strcmp(key, "direction") == 0) {
			if (strcmp(v, "outbound") == 0)
				f.direction = LIST_OUTBOUND;
			else if (strcmp(v, "inbound") == 0)
				f.direction = LIST_INBOUND;
			else
				snprintf(msg, sizeof(msg), "direction: must "
				    "be outbound or inbound");
		} else if (strcmp(key, "recipient") == 0) {
			if (list_address_key(v, addr, sizeof(addr)) == -1)
				snprintf(msg, sizeof(msg), "recipient: must "
				    "be a phone number or an email address");
			else
				f.address = addr;
		} else if (strcmp(key, "reference") == 0) {
			if (strlen(v) > REFERENCE_MAX)
				snprintf(msg, sizeof(msg), "reference: at "
				    "most %d characters", REFERENCE_MAX);
			else
				f.reference = v;
		} else if (strcmp(key, "since") == 0 ||
		    strcmp(key, "until") == 0) {
			if (rfc3339_parse(v, &t) == -1)
				snprintf(msg, sizeof(msg), "%s: must be an "
				    "RFC 3339 time", key);
			else if (*key == 's')
				f.since = t;
			else
				f.until = t;
		} else if (strcmp(key, "client") == 0) {
			if (!valid_client_id(v))
				snprintf(msg, sizeof(msg), "client: not a "
				    "client id");
			else
				cl = v;
		} else if (strcmp(key, "after") == 0) {
			if (!ulid_valid(v))
				snprintf(msg, sizeof(msg), "after: not a "
				    "message id");
			else
				f.after = v;
		} else
			snprintf(msg, sizeof(msg), "not a parameter of the "
			    "list");
	}
	if (*msg != '\0') {
		json_decref(q);
		return error_page(c, 400, "Bad query", msg);
	}
	if (config_seconds(c->ctx->cfg, NULL, "retention", 7 * 86400,
	    &retention) == -1)
		retention = 7 * 86400;
	if (cl != NULL)
		clients = json_pack("[s]", cl);
	else
		clients = list_clients(spool_root(c->ctx->spool));
	if ((all = json_array()) == NULL || clients == NULL)
		goto oom;
	json_array_foreach(clients, i, val) {
		page.len = 0;
		if (page.p != NULL)
			page.p[0] = '\0';
		buf_puts(&page, "[");
		n = 0;
		if (list_page(c->ctx->spool, json_string_value(val), &f,
		    time(NULL), retention, &page, &n, next) == -1) {
			/* A client with no list has no messages. */
			if (errno != ENOENT)
				log_err("console: list of %s: %s",
				    json_string_value(val), strerror(errno));
			continue;
		}
		buf_puts(&page, "]");
		if (page.failed || (one = json_loadb(page.p, page.len, 0,
		    NULL)) == NULL)
			continue;
		json_array_foreach(one, j, o) {
			json_object_set(o, "client", val);
			json_array_append(all, o);
		}
		json_decref(one);
	}
	buf_free(&page);
	/* Newest first across clients; one more than shown says "next". */
	n = json_array_size(all);
	{
		json_t	**v2 = calloc(n + 1, sizeof(*v2));

		if (v2 == NULL)
			goto oom;
		for (k = 0; k < n; k++)
			v2[k] = json_array_get(all, k);
		qsort(v2, n, sizeof(*v2), by_id_desc);
		head(&b, "Messages");
		nav(&b, c);
		buf_puts(&b, "<h1>Messages</h1>\n<form method=\"get\" "
		    "action=\"/console/messages\">\n");
		for (k = 0; k < sizeof(names) / sizeof(names[0]) - 1; k++)
			filter_input(&b, q, names[k]);
		buf_puts(&b, "<button type=\"submit\">Find</button>\n</form>\n"
		    "<table>\n<tr><th>id</th><th>client</th><th>channel</th>"
		    "<th>direction</th><th>recipient</th><th>reference</th>"
		    "<th>status</th><th>created</th></tr>\n");
		for (k = 0; k < n && k < PAGE_MESSAGES; k++) {
			o = v2[k];
			buf_puts(&b, "<tr><td><a href=\"/console/messages/");
			esc(&b, json_string_value(json_object_get(o, "id")));
			buf_puts(&b, "\">");
			esc(&b, json_string_value(json_object_get(o, "id")));
			buf_puts(&b, "</a></td>");
			opt_cell(&b, o, "client");
			opt_cell(&b, o, "channel");
			opt_cell(&b, o, "direction");
			opt_cell(&b, o, "recipient");
			opt_cell(&b, o, "reference");
			opt_cell(&b, o, "status");
			opt_cell(&b, o, "createdAt");
			buf_puts(&b, "</tr>\n");
		}
		buf_puts(&b, "</table>\n");
		more = n > PAGE_MESSAGES;
		if (more) {
			/* The same query, after the last shown. */
			buf_puts(&b, "<form method=\"get\" "
			    "action=\"/console/messages\">\n");
			json_object_foreach(q, key, val) {
				if (strcmp(key, "after") == 0)
					continue;
				buf_puts(&b, "<input type=\"hidden\" name=\"");
				esc(&b, key);
				buf_puts(&b, "\" value=\"");
				esc(&b, json_string_value(val));
				buf_puts(&b, "\">");
			}
			buf_puts(&b, "<input type=\"hidden\" name=\"after\" "
			    "value=\"");
			esc(&b, json_string_value(json_object_get(
			    v2[PAGE_MESSAGES - 1], "id")));
			buf_puts(&b, "\"><button type=\"submit\">Older"
			    "</button></form>\n");
		}
		free(v2);
	}
	json_decref(all);
	json_decref(clients);
	json_decref(q);
	return finish(&b, 200);
oom:
	buf_free(&page);
	json_decref(all);
	json_decref(clients);
	json_decref(q);
	return response_error(500, "out of memory");
}

/* The message id, in any state but tmp/: its document, or NULL. */
static json_t *
find_message(const struct console *c, const char *id, enum spool_dir *dir,
    char *name)
{
	char	err[512];
	json_t	*doc;
	int	tries;

	for (tries = 0; tries < 3; tries++) {
		if (spool_find(c->ctx->spool, id, dir, name) == -1)
			return NULL;
		if ((doc = spool_load(c->ctx->spool, *dir, name, err,
		    sizeof(err))) != NULL)
			return doc;
		if (errno != ENOENT) {
			log_err("console: %s", err);
			return NULL;
		}
	}
	return NULL;
}

/* GET /console/messages/ID: status, events, document, what may be done. */
static struct response *
message_page(struct console *c, const char *id)
{
	struct buf	 b = { 0 };
	enum spool_dir	 dir;
	char		 name[SPOOL_NAME_MAX], action[320], *text;
	json_t		*doc, *so;

	if (!ulid_valid(id) || (doc = find_message(c, id, &dir, name)) ==
	    NULL)
		return error_page(c, 404, "Not found", "no such message");
	head(&b, "Message");
	nav(&b, c);
	buf_puts(&b, "<h1>Message ");
	esc(&b, id);
	buf_puts(&b, "</h1>\n<table>\n<tr><th>client</th><td>");
	esc(&b, msgdoc_client(doc) ? msgdoc_client(doc) : "");
	buf_puts(&b, "</td></tr>\n<tr><th>state</th><td>");
	buf_puts(&b, spool_dirname(dir));
	buf_puts(&b, "</td></tr>\n<tr><th>status</th><td>");
	esc(&b, msgdoc_status(doc, spool_dirname(dir)));
	buf_puts(&b, "</td></tr>\n</table>\n<p>");
	if (dir == SPOOL_NEW || dir == SPOOL_DEFERRED) {
		snprintf(action, sizeof(action), "messages/%s/cancel", id);
		post_button(&b, c, action, "Cancel");
	}
	if (dir == SPOOL_DEFERRED || dir == SPOOL_FAILED) {
		snprintf(action, sizeof(action), "messages/%s/retry", id);
		post_button(&b, c, action, "Retry now");
	}
	buf_puts(&b, "</p>\n<h2>Status and events</h2>\n<pre>");
	so = msgdoc_status_object(doc, spool_dirname(dir), 1);
	if (so != NULL && (text = json_dumps(so, JSON_INDENT(2) |
	    JSON_PRESERVE_ORDER)) != NULL) {
		esc(&b, text);
		free(text);
	}
	json_decref(so);
	buf_puts(&b, "</pre>\n<h2>Document</h2>\n<pre>");
	if ((text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER)) !=
	    NULL) {
		esc(&b, text);
		free(text);
	}
	buf_puts(&b, "</pre>\n");
	json_decref(doc);
	return finish(&b, 200);
}

/*
 * Cancel as DELETE /messages/{id} does (cgi-bin/messages.c): take it
 * from new/ or deferred/ into cur/, record it canceled (its client's
 * webhook event first) in failed/.  NULL when done, else the page.
 */
static struct response *
cancel_message(struct console *c, const char *id)
{
	struct spool	*sp = c->ctx->spool;
	enum spool_dir	 dir;
	enum msg_status	 st;
	json_t		*doc, *taken;
	char		 name[SPOOL_NAME_MAX], err[512];
	char		 evname[SPOOL_NAME_MAX];
	int		 fd;

	if ((doc = find_message(c, id, &dir, name)) == NULL)
		return error_page(c, 404, "Not found", "no such message");
	json_decref(doc);
	if (dir != SPOOL_NEW && dir != SPOOL_DEFERRED)
		return error_page(c, 409, "Not canceled", "only a scheduled, "
		    "queued or retrying message can be canceled");
	if ((fd = spool_take(sp, dir, name, &taken, err, sizeof(err))) ==
	    -1)
		return error_page(c, 409, "Not canceled", "msgspoold is on "
		    "it now: look again");
	if (taken == NULL) {
		spool_move(sp, SPOOL_CUR, SPOOL_FAILED, name);
		close(fd);
		return error_page(c, 404, "Not found", "no such message");
	}
	msgdoc_cancel(taken, time(NULL));
	st = event_record(sp, c->ctx->cfg, taken, "failed", time(NULL),
	    evname);
	if (st == MSG_OK && (st = spool_store(sp, SPOOL_FAILED, name, taken,
	    SPOOL_CUR)) != MSG_OK && evname[0] != '\0')
		spool_area_remove(sp, EVENT_AREA, evname);
	json_decref(taken);
	if (st != MSG_OK) {
		spool_move(sp, SPOOL_CUR, dir, name);
		close(fd);
		return error_page(c, 503, "Not canceled", "the cancel cannot "
		    "be recorded now");
	}
	close(fd);
	log_info("console: %s canceled %s", c->client, id);
	return NULL;
}

/* Retry now (msgspool(8) retry): from deferred/ or failed/. */
static struct response *
retry_message(struct console *c, const char *id)
{
	enum spool_dir	 dir;
	json_t		*doc;
	char		 name[SPOOL_NAME_MAX], err[512];

	if ((doc = find_message(c, id, &dir, name)) == NULL)
		return error_page(c, 404, "Not found", "no such message");
	json_decref(doc);
	if (dir != SPOOL_DEFERRED && dir != SPOOL_FAILED)
		return error_page(c, 409, "Not retried", "only a retrying or "
		    "failed message can be retried");
	switch (spool_retry(c->ctx->spool, dir, name,
	    SPOOL_RETRY_NOT_CANCELED, time(NULL), err, sizeof(err))) {
	case 0:
		log_info("console: %s retried %s", c->client, id);
		return NULL;
	case 1:
		return error_page(c, 409, "Not retried", "its client "
		    "canceled it");
	default:
		return error_page(c, errno == EBUSY || errno == ENOENT ||
		    errno == EAGAIN ? 409 : 500, "Not retried", "it cannot be "
		    "retried now: look again");
	}
}

/* POST /console/messages/ID/ACTION, its token checked. */
static struct response *
message_post(struct console *c, const char *sub, const json_t *f)
{
	char		 id[SPOOL_ID_LEN + 1], action[320], loc[64];
	const char	*slash;
	struct response	*r;

	if (strlen(sub) < SPOOL_ID_LEN + 2 || sub[SPOOL_ID_LEN] != '/')
		return error_page(c, 404, "Not found", "no such form");
	memcpy(id, sub, SPOOL_ID_LEN);
	id[SPOOL_ID_LEN] = '\0';
	slash = sub + SPOOL_ID_LEN + 1;
	if (!ulid_valid(id) || (strcmp(slash, "cancel") != 0 &&
	    strcmp(slash, "retry") != 0))
		return error_page(c, 404, "Not found", "no such form");
	snprintf(action, sizeof(action), "messages/%s", sub);
	if (!csrf_ok(c, f, action))
		return refused();
	r = *slash == 'c' ? cancel_message(c, id) : retry_message(c, id);
	if (r != NULL)
		return r;
	snprintf(loc, sizeof(loc), "/console/messages/%s", id);
	return see_other(loc, NULL);
}

/* Inbound messages a page shows: the newest. */
#define PAGE_INBOUND	100

static int
by_name_desc(const void *a, const void *b)
{
	return -strcmp(*(char *const *)a, *(char *const *)b);
}

/* GET /console/inbound: the newest inbound messages of inbox/. */
static struct response *
inbound_page(struct console *c)
{
	static const char *const cols[] = { "client", "channel", "from",
	    "to", "text", "receivedAt" };
	struct buf	 b = { 0 };
	char		 path[4096], err[512], **names = NULL, **nn;
	size_t		 n = 0, cap = 0, i, k, len;
	DIR		*d;
	struct dirent	*e;
	json_t		*doc, *o;

	snprintf(path, sizeof(path), "%s/" INBOX_AREA,
	    spool_root(c->ctx->spool));
	if ((d = opendir(path)) != NULL) {
		while ((e = readdir(d)) != NULL) {
			len = strlen(e->d_name);
			if (len != SPOOL_ID_LEN + 5 || strcmp(e->d_name +
			    SPOOL_ID_LEN, ".json") != 0)
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				if ((nn = realloc(names, cap *
				    sizeof(*names))) == NULL)
					break;
				names = nn;
			}
			if ((names[n] = strndup(e->d_name, SPOOL_ID_LEN)) !=
			    NULL)
				n++;
		}
		closedir(d);
	}
	if (n > 0)
		qsort(names, n, sizeof(*names), by_name_desc);
	head(&b, "Inbound");
	nav(&b, c);
	buf_puts(&b, "<h1>Inbound messages</h1>\n<table>\n<tr><th>id</th>");
	for (k = 0; k < sizeof(cols) / sizeof(cols[0]); k++)
		buf_printf(&b, "<th>%s</th>", cols[k]);
	buf_puts(&b, "</tr>\n");
	for (i = 0; i < n && i < PAGE_INBOUND; i++) {
		if ((doc = inbox_load(c->ctx->spool, names[i], err,
		    sizeof(err))) == NULL)
			continue;
		o = inbox_object(doc);
		buf_puts(&b, "<tr><td>");
		esc(&b, names[i]);
		buf_puts(&b, "</td>");
		for (k = 0; k < sizeof(cols) / sizeof(cols[0]); k++)
			opt_cell(&b, o != NULL ? o : doc, cols[k]);
		buf_puts(&b, "</tr>\n");
		json_decref(o);
		json_decref(doc);
	}
	buf_puts(&b, "</table>\n");
	if (n > PAGE_INBOUND)
		buf_printf(&b, "<p>%zu older not shown.</p>\n",
		    n - PAGE_INBOUND);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return finish(&b, 200);
}

/* Suppressions a page shows: the newest. */
#define PAGE_SUPPRESSIONS	200

/* A hidden input. */
static void
hidden(struct buf *b, const char *name, const char *value)
{
	buf_puts(b, "<input type=\"hidden\" name=\"");
	buf_puts(b, name);
	buf_puts(b, "\" value=\"");
	esc(b, value != NULL ? value : "");
	buf_puts(b, "\">");
}

/* GET /console/suppressions: every client's, newest first; add, remove. */
static struct response *
suppressions_page(struct console *c)
{
	static const char *const cols[] = { "client", "channel", "address",
	    "source", "reason", "createdAt" };
	struct buf	 b = { 0 };
	char		 tok[MAC_HEX + 1];
	json_t		*list, *o;
	size_t		 i, k;

	list = suppress_list(c->ctx->spool, NULL, CHANNEL__MAX, NULL,
	    PAGE_SUPPRESSIONS, NULL);
	head(&b, "Suppressions");
	nav(&b, c);
	buf_puts(&b, "<h1>Suppressions</h1>\n");
	csrf_token(c, "suppressions/add", tok);
	buf_puts(&b, "<form method=\"post\" action=\"/console/suppressions/"
	    "add\">");
	hidden(&b, "csrf", tok);
	buf_puts(&b, "\n<label>client <input name=\"client\" required "
	    "size=\"10\"></label>\n<label>channel <select name=\"channel\">"
	    "<option>sms</option><option>ott</option><option>email</option>"
	    "<option>voice</option></select></label>\n<label>address "
	    "<input name=\"address\" required size=\"20\"></label>\n<label>"
	    "reason <input name=\"reason\" size=\"20\"></label>\n<button "
	    "type=\"submit\">Suppress</button>\n</form>\n");
	if (list == NULL) {
		buf_puts(&b, "<p class=\"err\">The suppressions cannot be "
		    "read now.</p>\n");
		return finish(&b, 200);
	}
	buf_puts(&b, "<table>\n<tr>");
	for (k = 0; k < sizeof(cols) / sizeof(cols[0]); k++)
		buf_printf(&b, "<th>%s</th>", cols[k]);
	buf_puts(&b, "<th></th></tr>\n");
	csrf_token(c, "suppressions/remove", tok);
	json_array_foreach(list, i, o) {
		buf_puts(&b, "<tr>");
		for (k = 0; k < sizeof(cols) / sizeof(cols[0]); k++)
			opt_cell(&b, o, cols[k]);
		buf_puts(&b, "<td><form method=\"post\" action=\"/console/"
		    "suppressions/remove\">");
		hidden(&b, "csrf", tok);
		hidden(&b, "client", json_string_value(json_object_get(o,
		    "client")));
		hidden(&b, "channel", json_string_value(json_object_get(o,
		    "channel")));
		hidden(&b, "address", json_string_value(json_object_get(o,
		    "address")));
		buf_puts(&b, "<button type=\"submit\">Remove</button></form>"
		    "</td></tr>\n");
	}
	buf_puts(&b, "</table>\n");
	json_decref(list);
	return finish(&b, 200);
}

/* POST /console/suppressions/add and .../remove, the token checked. */
static struct response *
suppressions_post(struct console *c, const char *what, const json_t *f)
{
	const char	*client = json_string_value(json_object_get(f,
			    "client"));
	const char	*chan = json_string_value(json_object_get(f,
			    "channel"));
	const char	*addr = json_string_value(json_object_get(f,
			    "address"));
	const char	*reason = json_string_value(json_object_get(f,
			    "reason"));
	char		 action[320];
	int		 ch, rc;

	if (strcmp(what, "add") != 0 && strcmp(what, "remove") != 0)
		return error_page(c, 404, "Not found", "no such form");
	snprintf(action, sizeof(action), "suppressions/%s", *what == 'a' ?
	    "add" : "remove");
	if (!csrf_ok(c, f, action))
		return refused();
	if (client == NULL || !valid_client_id(client))
		return error_page(c, 400, "Not done", "client: not a client "
		    "id");
	if (chan == NULL || (ch = channel_parse(chan)) == -1)
		return error_page(c, 400, "Not done", "channel: must be sms, "
		    "ott, email or voice");
	if (addr == NULL || *addr == '\0')
		return error_page(c, 400, "Not done", "address: required");
	if (*what == 'a')
		rc = suppress_add(c->ctx->spool, client, ch, addr, "manual",
		    reason != NULL && *reason != '\0' ? reason : NULL, NULL);
	else
		rc = suppress_remove(c->ctx->spool, client, ch, addr, NULL);
	if (rc == -1) {
		if (errno == EINVAL)
			return error_page(c, 400, "Not done", "address: not "
			    "valid for the channel");
		log_err("console: suppression of %s: %s", client,
		    strerror(errno));
		return error_page(c, spool_errno_status(errno) ==
		    MSG_TEMPFAIL ? 503 : 500, "Not done", "the suppressions "
		    "cannot be changed now");
	}
	log_info("console: %s %s %s %s for %s", c->client, *what == 'a' ?
	    "suppressed" : "removed the suppression of", chan, addr, client);
	return see_other("/console/suppressions", NULL);
}

static struct response *
see_other(const char *location, const char *cookie_header)
{
	struct response	*r;

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

static int
https(const struct console *c)
{
	const char	*h = cgi_env(c->ctx->req->envp, "HTTPS");

	return h != NULL && strcasecmp(h, "on") == 0;
}

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
	char		*keys, exp[32], mac[MAC_HEX + 1], *val = NULL;
	struct client	 cl;
	enum keys_result kr;
	struct response	*r;

	if ((key = json_string_value(json_object_get(f, "key"))) == NULL ||
	    *key == '\0')
		return sign_in_page(403, "An API key of the admin scope "
		    "signs in.");
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
		return sign_in_page(403, "That key does not sign in here: "
		    "it takes an enabled key of the admin scope.");
	snprintf(exp, sizeof(exp), ".%lld", (long long)time(NULL) +
	    SESSION_TTL);
	snprintf(c->cookie, sizeof(c->cookie), "%s%s", cl.id, exp);
	mac_hex(c, "msgspool-console:", c->cookie, "", mac);
	if (asprintf(&val, COOKIE_NAME "=%s.%s; Max-Age=%d; Path=/console; "
	    "HttpOnly; SameSite=Strict%s", c->cookie, mac, SESSION_TTL,
	    https(c) ? "; Secure" : "") == -1)
		return response_error(500, "out of memory");
	log_info("console: client '%s' signed in", cl.id);
	r = see_other("/console", val);
	free(val);
	return r;
}

/* Whether form f carries the session's token of action. */
static int
csrf_ok(const struct console *c, const json_t *f, const char *action)
{
	const char	*t = json_string_value(json_object_get(f, "csrf"));
	char		 want[MAC_HEX + 1];

	if (!c->signed_in || t == NULL)
		return 0;
	csrf_token(c, action, want);
	return hex_equal(want, t);
}

static struct response *
refused(void)
{
	struct buf	b = { 0 };

	head(&b, "Refused");
	buf_puts(&b, "<h1>Refused</h1>\n<p class=\"err\">This form has "
	    "expired or did not come from this console: nothing was "
	    "changed.</p>\n<p><a href=\"/console\">Back to the console</a>"
	    "</p>\n");
	return finish(&b, 403);
}

/*
 * The path below /console of the request: "" for the console itself,
 * "/sign-in" and so on; NULL when it is not one of ours.
 */
static const char *
sub_path(const struct request *req, char *buf, size_t len)
{
	const char	*p;
	char		*path, *q;

	if ((p = cgi_env(req->envp, "PATH_INFO")) != NULL && *p == '/') {
		snprintf(buf, len, "%s", p);
		return buf;
	}
	*buf = '\0';
	if ((path = cgi_path(cgi_env(req->envp, "REQUEST_URI"))) == NULL)
		return buf;
	if ((q = strstr(path, "/console")) != NULL &&
	    (q[8] == '\0' || q[8] == '/'))
		snprintf(buf, len, "%s", q + 8);
	free(path);
	return buf;
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
	session(&c);
	sub_path(ctx->req, sub, sizeof(sub));
	if (!post) {
		if (!c.signed_in && (*sub == '\0' || strcmp(sub, "/") == 0 ||
		    strncmp(sub, "/messages", 9) == 0 ||
		    strcmp(sub, "/inbound") == 0 ||
		    strcmp(sub, "/suppressions") == 0))
			r = sign_in_page(200, NULL);
		else if (*sub == '\0' || strcmp(sub, "/") == 0)
			r = overview(&c);
		else if (strcmp(sub, "/messages") == 0)
			r = messages_page(&c);
		else if (strncmp(sub, "/messages/", 10) == 0)
			r = message_page(&c, sub + 10);
		else if (strcmp(sub, "/inbound") == 0)
			r = inbound_page(&c);
		else if (strcmp(sub, "/suppressions") == 0)
			r = suppressions_page(&c);
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
		r = !csrf_ok(&c, f, "sign-out") ? refused() :
		    see_other("/console", COOKIE_NAME "=; Max-Age=0; Path=/console; "
		    "HttpOnly; SameSite=Strict");
	else if (strncmp(sub, "/messages/", 10) == 0)
		r = message_post(&c, sub + 10, f);
	else if (strncmp(sub, "/suppressions/", 14) == 0)
		r = suppressions_post(&c, sub + 14, f);
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
	.needs_key = 0,
	.scope = 0,
	/* A form (application/x-www-form-urlencoded), parsed here. */
	.limit = LIMIT_RAW,
	.needs_spool = 1,
	.handler = console,
};

CGI_MAIN(ep_console)
