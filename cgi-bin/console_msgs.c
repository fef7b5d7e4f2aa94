/*
 * console_msgs.c: the console's messages (console.h; README.md, Operator
 * console): GET /console/messages, every client's list filtered as GET
 * /messages filters (conf/openapi.yaml, MessageList), newest first;
 * GET /console/messages/ID, one message's status, events and document;
 * POST /console/messages/ID/cancel and .../retry; GET /console/inbound,
 * the newest inbound messages of every client.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "console.h"
#include "base/channel.h"
#include "base/log.h"
#include "base/rfc3339.h"
#include "base/ulid.h"
#include "base/valid.h"
#include "http/problem.h"
#include "spool/cancel.h"
#include "spool/inbox.h"
#include "spool/list.h"
#include "spool/msgdoc.h"
#include "spool/receipt.h"
#include "spool/spool.h"

/* Messages a page of the console lists. */
#define PAGE_MESSAGES	50
#define REFERENCE_MAX	128

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
		console_esc(b, v);
	buf_puts(b, "\" size=\"12\"></label>\n");
}

/*
 * GET /console/messages: every client's list (spool/list.h) by the
 * query's filter, newest first, PAGE_MESSAGES at a time.
 */
struct response *
console_messages_page(struct console *c)
{
	static const char *const names[] = { "status", "channel",
	    "direction", "recipient", "reference", "since", "until",
	    "client", "after" };
	const char		*qs = cgi_env(c->ctx->req->envp,
				    "QUERY_STRING"), *key, *v, *cl, *id;
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
		return console_error(c, 400, "Bad query", "the query is not "
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
		return console_error(c, 400, "Bad query", msg);
	}
	if (config_seconds(c->ctx->cfg, NULL, "retention", 7 * 86400,
	    &retention) == -1)
		retention = 7 * 86400;
	if (cl != NULL)
		clients = json_pack("[s]", cl);
	else
		clients = list_clients(c->ctx->spool);
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
		console_head(&b, "Messages");
		console_nav(&b, c);
		buf_puts(&b, "<h1>Messages</h1>\n<form method=\"get\" "
		    "action=\"");
		buf_puts(&b, c->base);
		buf_puts(&b, "/messages\">\n");
		for (k = 0; k < sizeof(names) / sizeof(names[0]) - 1; k++)
			filter_input(&b, q, names[k]);
		buf_puts(&b, "<button type=\"submit\">Find</button>\n</form>\n"
		    "<table>\n<tr><th>id</th><th>client</th><th>channel</th>"
		    "<th>direction</th><th>recipient</th><th>reference</th>"
		    "<th>status</th><th>created</th></tr>\n");
		for (k = 0; k < n && k < PAGE_MESSAGES; k++) {
			o = v2[k];
			id = json_string_value(json_object_get(o, "id"));
			buf_puts(&b, "<tr><td><a href=\"");
			buf_puts(&b, c->base);
			buf_puts(&b, "/messages/");
			console_esc(&b, id != NULL ? id : "");
			buf_puts(&b, "\">");
			console_esc(&b, id != NULL ? id : "");
			buf_puts(&b, "</a></td>");
			console_cell(&b, o, "client");
			console_cell(&b, o, "channel");
			console_cell(&b, o, "direction");
			console_cell(&b, o, "recipient");
			console_cell(&b, o, "reference");
			console_cell(&b, o, "status");
			console_cell(&b, o, "createdAt");
			buf_puts(&b, "</tr>\n");
		}
		buf_puts(&b, "</table>\n");
		more = n > PAGE_MESSAGES;
		if (more) {
			/* The same query, after the last shown. */
			buf_puts(&b, "<form method=\"get\" action=\"");
			buf_puts(&b, c->base);
			buf_puts(&b, "/messages\">\n");
			json_object_foreach(q, key, val) {
				if (strcmp(key, "after") == 0)
					continue;
				buf_puts(&b, "<input type=\"hidden\" name=\"");
				console_esc(&b, key);
				buf_puts(&b, "\" value=\"");
				console_esc(&b, json_string_value(val));
				buf_puts(&b, "\">");
			}
			buf_puts(&b, "<input type=\"hidden\" name=\"after\" "
			    "value=\"");
			console_esc(&b, json_string_value(json_object_get(
			    v2[PAGE_MESSAGES - 1], "id")));
			buf_puts(&b, "\"><button type=\"submit\">Older"
			    "</button></form>\n");
		}
		free(v2);
	}
	json_decref(all);
	json_decref(clients);
	json_decref(q);
	return console_finish(&b, 200);
oom:
	buf_free(&page);
	json_decref(all);
	json_decref(clients);
	json_decref(q);
	return response_error(500, "out of memory");
}

/* The message id of any client: its document, or NULL (logged). */
static json_t *
find_message(const struct console *c, const char *id,
    enum spool_dir *dir, char *name)
{
	char	err[512];
	json_t	*doc;

	if ((doc = spool_lookup(c->ctx->spool, id, NULL, dir, name, err,
	    sizeof(err))) == NULL && errno != ENOENT)
		log_err("console: %s", err);
	return doc;
}

/* GET /console/messages/ID: status, events, document, what may be done. */
struct response *
console_message_page(struct console *c, const char *id)
{
	struct buf	 b = { 0 };
	enum spool_dir	 dir;
	char		 name[SPOOL_NAME_MAX], action[320], *text;
	json_t		*doc, *so;

	if (!ulid_valid(id) || (doc = find_message(c, id, &dir, name)) ==
	    NULL)
		return console_error(c, 404, "Not found", "no such message");
	console_head(&b, "Message");
	console_nav(&b, c);
	buf_puts(&b, "<h1>Message ");
	console_esc(&b, id);
	buf_puts(&b, "</h1>\n<table>\n<tr><th>client</th><td>");
	console_esc(&b, msgdoc_client(doc) ? msgdoc_client(doc) : "");
	buf_puts(&b, "</td></tr>\n<tr><th>state</th><td>");
	buf_puts(&b, spool_dirname(dir));
	buf_puts(&b, "</td></tr>\n<tr><th>status</th><td>");
	console_esc(&b, msgdoc_status(doc, spool_dirname(dir)));
	buf_puts(&b, "</td></tr>\n</table>\n<p>");
	if (dir == SPOOL_NEW || dir == SPOOL_DEFERRED) {
		snprintf(action, sizeof(action), "messages/%s/cancel", id);
		console_post_button(&b, c, action, "Cancel");
	}
	if (dir == SPOOL_DEFERRED || dir == SPOOL_FAILED) {
		snprintf(action, sizeof(action), "messages/%s/retry", id);
		console_post_button(&b, c, action, "Retry now");
	}
	buf_puts(&b, "</p>\n<h2>Status and events</h2>\n<pre>");
	so = msgdoc_status_object(doc, spool_dirname(dir), 1);
	if (so != NULL && (text = buf_json_text(so, JSON_INDENT(2) |
	    JSON_PRESERVE_ORDER, NULL)) != NULL) {
		console_esc(&b, text);
		free(text);
	}
	json_decref(so);
	buf_puts(&b, "</pre>\n<h2>Document</h2>\n<pre>");
	if ((text = buf_json_text(doc, JSON_INDENT(2) |
	    JSON_PRESERVE_ORDER, NULL)) != NULL) {
		console_esc(&b, text);
		free(text);
	}
	buf_puts(&b, "</pre>\n");
	json_decref(doc);
	return console_finish(&b, 200);
}

/*
 * Cancel as DELETE /messages/{id} does (spool_cancel, cancel.h), for
 * any client.  NULL when done, else the page.
 */
static struct response *
cancel_message(struct console *c, const char *id)
{
	struct response	*r = NULL;
	struct cancel	 cc;

	switch (spool_cancel(c->ctx->spool, c->ctx->cfg, id, NULL,
	    time(NULL), &cc)) {
	case CANCEL_DONE:
		log_info("console: %s canceled %s", c->client, id);
		break;
	case CANCEL_ALREADY:
		break;
	case CANCEL_NOT_FOUND:
		return console_error(c, 404, "Not found", "no such message");
	case CANCEL_TOO_LATE:
		r = console_error(c, 409, "Not canceled", "only a "
		    "scheduled, queued or retrying message can be canceled");
		break;
	case CANCEL_BUSY:
		r = console_error(c, 409, "Not canceled", "msgspoold is on "
		    "it now: look again");
		break;
	case CANCEL_ERROR:
		log_err("console: cancel %s: %s", id, cc.err);
		return console_error(c, cc.status == MSG_TEMPFAIL ? 503 : 500,
		    "Not canceled", "the cancel cannot be recorded now");
	}
	json_decref(cc.doc);
	return r;
}

/* Retry now (msgspool(8) retry): from deferred/ or failed/. */
static struct response *
retry_message(struct console *c, const char *id)
{
	enum spool_dir	 dir;
	json_t		*doc;
	char		 name[SPOOL_NAME_MAX], err[512];

	if ((doc = find_message(c, id, &dir, name)) == NULL)
		return console_error(c, 404, "Not found", "no such message");
	json_decref(doc);
	if (dir != SPOOL_DEFERRED && dir != SPOOL_FAILED)
		return console_error(c, 409, "Not retried", "only a retrying "
		    "or failed message can be retried");
	switch (spool_retry(c->ctx->spool, dir, name,
	    SPOOL_RETRY_NOT_CANCELED, time(NULL), err, sizeof(err))) {
	case 0:
		log_info("console: %s retried %s", c->client, id);
		return NULL;
	case 1:
		return console_error(c, 409, "Not retried", "its client "
		    "canceled it");
	default:
		return console_error(c, errno == EBUSY || errno == ENOENT ||
		    errno == EAGAIN ? 409 : 500, "Not retried", "it cannot be "
		    "retried now: look again");
	}
}

/* POST /console/messages/ID/ACTION, its token checked. */
struct response *
console_message_post(struct console *c, const char *sub,
    const json_t *f)
{
	char		 id[SPOOL_ID_LEN + 1], action[320], loc[64];
	const char	*slash;
	struct response	*r;

	if (strlen(sub) < SPOOL_ID_LEN + 2 || sub[SPOOL_ID_LEN] != '/')
		return console_error(c, 404, "Not found", "no such form");
	memcpy(id, sub, SPOOL_ID_LEN);
	id[SPOOL_ID_LEN] = '\0';
	slash = sub + SPOOL_ID_LEN + 1;
	if (!ulid_valid(id) || (strcmp(slash, "cancel") != 0 &&
	    strcmp(slash, "retry") != 0))
		return console_error(c, 404, "Not found", "no such form");
	snprintf(action, sizeof(action), "messages/%s", sub);
	if (!console_csrf_ok(c, f, action))
		return console_refused(c);
	r = *slash == 'c' ? cancel_message(c, id) : retry_message(c, id);
	if (r != NULL)
		return r;
	snprintf(loc, sizeof(loc), "/messages/%s", id);
	return console_see_other(c, loc, NULL);
}

/* Inbound messages a page shows: the newest. */
#define PAGE_INBOUND	100

static int
by_name_desc(const void *a, const void *b)
{
	return -strcmp(*(char *const *)a, *(char *const *)b);
}

/* The ids of inbox/'s files, "ID.json", gathered by add_id. */
struct ids {
	char	**v;
	size_t	  n, cap;
};

static int
add_id(void *arg, const char *name)
{
	struct ids	*ids = arg;
	char		**nv;

	if (strlen(name) != SPOOL_ID_LEN + 5 || strcmp(name + SPOOL_ID_LEN,
	    ".json") != 0)
		return 0;
	if (ids->n == ids->cap) {
		ids->cap = ids->cap ? ids->cap * 2 : 64;
		if ((nv = realloc(ids->v, ids->cap * sizeof(*nv))) == NULL)
			return -1;	/* as many as there is room for */
		ids->v = nv;
	}
	if ((ids->v[ids->n] = strndup(name, SPOOL_ID_LEN)) != NULL)
		ids->n++;
	return 0;
}

/* GET /console/inbound: the newest inbound messages of inbox/. */
struct response *
console_inbound_page(struct console *c)
{
	static const char *const cols[] = { "client", "channel", "from",
	    "to", "text", "receivedAt" };
	struct buf	 b = { 0 };
	struct ids	 ids = { 0 };
	char		 err[512], **names;
	size_t		 n, i, k;
	json_t		*doc, *o;

	/* Its files by their names (inbox.h): a state at rest, no lock. */
	(void)spool_area_scan(c->ctx->spool, INBOX_AREA, add_id, &ids);
	names = ids.v;
	n = ids.n;
	if (n > 0)
		qsort(names, n, sizeof(*names), by_name_desc);
	console_head(&b, "Inbound");
	console_nav(&b, c);
	buf_puts(&b, "<h1>Inbound messages</h1>\n<table>\n<tr><th>id</th>");
	for (k = 0; k < sizeof(cols) / sizeof(cols[0]); k++)
		console_printf(&b, "<th>%s</th>", cols[k]);
	buf_puts(&b, "</tr>\n");
	for (i = 0; i < n && i < PAGE_INBOUND; i++) {
		if ((doc = inbox_load(c->ctx->spool, names[i], err,
		    sizeof(err))) == NULL)
			continue;
		o = inbox_object(doc);
		buf_puts(&b, "<tr><td>");
		console_esc(&b, names[i]);
		buf_puts(&b, "</td>");
		for (k = 0; k < sizeof(cols) / sizeof(cols[0]); k++)
			console_cell(&b, o != NULL ? o : doc, cols[k]);
		buf_puts(&b, "</tr>\n");
		json_decref(o);
		json_decref(doc);
	}
	buf_puts(&b, "</table>\n");
	if (n > PAGE_INBOUND)
		console_printf(&b, "<p>%zu older not shown.</p>\n",
		    n - PAGE_INBOUND);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return console_finish(&b, 200);
}
