/*
 * console_supp.c: the console's suppressions (console.h; README.md,
 * Operator console): GET /console/suppressions, every client's, newest
 * first, each with its Remove form; POST /console/suppressions/add and
 * .../remove, as PUT and DELETE /suppressions/{channel}/{address} do
 * (source manual).
 */
#include <errno.h>
#include <string.h>

#include "console.h"
#include "base/channel.h"
#include "base/log.h"
#include "base/valid.h"
#include "http/problem.h"
#include "spool/spool.h"
#include "spool/suppress.h"

/* Suppressions a page shows: the newest. */
#define PAGE_SUPPRESSIONS	200

/* A hidden input. */
static void
hidden(struct buf *b, const char *name, const char *value)
{
	buf_puts(b, "<input type=\"hidden\" name=\"");
	buf_puts(b, name);
	buf_puts(b, "\" value=\"");
	console_esc(b, value != NULL ? value : "");
	buf_puts(b, "\">");
}

/* GET /console/suppressions: every client's, newest first; add, remove. */
struct response *
console_suppressions_page(struct console *c)
{
	static const char *const cols[] = { "client", "channel", "address",
	    "source", "reason", "createdAt" };
	struct buf	 b = { 0 };
	char		 tok[MAC_HEX + 1];
	json_t		*list, *o;
	size_t		 i, k;

	list = suppress_list(c->ctx->spool, NULL, CHANNEL__MAX, NULL,
	    PAGE_SUPPRESSIONS, NULL);
	console_head(&b, "Suppressions");
	console_nav(&b, c);
	buf_puts(&b, "<h1>Suppressions</h1>\n");
	console_csrf_token(c, "suppressions/add", tok);
	buf_puts(&b, "<form method=\"post\" action=\"");
	buf_puts(&b, c->base);
	buf_puts(&b, "/suppressions/add\">");
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
		return console_finish(&b, 200);
	}
	buf_puts(&b, "<table>\n<tr>");
	for (k = 0; k < sizeof(cols) / sizeof(cols[0]); k++)
		console_printf(&b, "<th>%s</th>", cols[k]);
	buf_puts(&b, "<th></th></tr>\n");
	console_csrf_token(c, "suppressions/remove", tok);
	json_array_foreach(list, i, o) {
		buf_puts(&b, "<tr>");
		for (k = 0; k < sizeof(cols) / sizeof(cols[0]); k++)
			console_cell(&b, o, cols[k]);
		buf_puts(&b, "<td><form method=\"post\" action=\"");
		buf_puts(&b, c->base);
		buf_puts(&b, "/suppressions/remove\">");
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
	return console_finish(&b, 200);
}

/* POST /console/suppressions/add and .../remove, the token checked. */
struct response *
console_suppressions_post(struct console *c, const char *what,
    const json_t *f)
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
		return console_error(c, 404, "Not found", "no such form");
	snprintf(action, sizeof(action), "suppressions/%s", *what == 'a' ?
	    "add" : "remove");
	if (!console_csrf_ok(c, f, action))
		return console_refused(c);
	if (client == NULL || !valid_client_id(client))
		return console_error(c, 400, "Not done", "client: not a client "
		    "id");
	if (chan == NULL || (ch = channel_parse(chan)) == -1)
		return console_error(c, 400, "Not done", "channel: must be "
		    "sms, ott, email or voice");
	if (addr == NULL || *addr == '\0')
		return console_error(c, 400, "Not done", "address: required");
	if (*what == 'a')
		rc = suppress_add(c->ctx->spool, client, ch, addr, "manual",
		    reason != NULL && *reason != '\0' ? reason : NULL, NULL);
	else
		rc = suppress_remove(c->ctx->spool, client, ch, addr, NULL);
	if (rc == -1) {
		if (errno == EINVAL)
			return console_error(c, 400, "Not done", "address: not "
			    "valid for the channel");
		log_err("console: suppression of %s: %s", client,
		    strerror(errno));
		return console_error(c, spool_errno_status(errno) ==
		    MSG_TEMPFAIL ? 503 : 500, "Not done", "the suppressions "
		    "cannot be changed now");
	}
	log_info("console: %s %s %s %s for %s", c->client, *what == 'a' ?
	    "suppressed" : "removed the suppression of", chan, addr, client);
	return console_see_other(c, "/suppressions", NULL);
}
