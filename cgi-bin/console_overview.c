/*
 * console_overview.c: GET /console, the console's overview (console.h;
 * README.md, Operator console): msgspoold's health from its status file
 * (status/daemon.json), the queue by state and by channel (as GET
 * /metrics counts it: metrics_queue), the routes
 * and their status files, and the last 24 hours as an SVG bar chart
 * drawn here from the daemon's hourly counts.
 */
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include "console.h"
#include "base/channel.h"
#include "content/route.h"
#include "spool/metrics.h"
#include "spool/spool.h"

static int
count_one(void *arg, const char *name)
{
	(void)name;
	(*(long *)arg)++;
	return 0;
}

/*
 * The queue: messages by state (tmp/ too, its files being written), and
 * by channel in the states that wait (new/, deferred/, cur/); counted as
 * GET /metrics counts them (metrics_queue), a state at rest without
 * listing it again.
 */
static void
queue_tables(struct buf *b, const struct console *c)
{
	struct metrics_state	 q[METRICS_NSTATES];
	long			 tmp = 0, n;
	size_t			 i, k;
	int			 ch;

	buf_puts(b, "<h2>Queue</h2>\n");
	if (metrics_queue(c->ctx->spool, q) == -1) {
		buf_puts(b, "<p class=\"err\">The spool's states cannot be "
		    "read now.</p>\n");
		return;
	}
	(void)spool_scan(c->ctx->spool, SPOOL_TMP, count_one, &tmp);
	buf_puts(b, "<table>\n<tr><th>state</th><th>messages</th></tr>\n");
	console_printf(b, "<tr><td>tmp</td><td>%ld</td></tr>\n", tmp);
	for (i = 0; i < METRICS_NSTATES; i++) {
		for (n = 0, ch = 0; ch < CHANNEL__MAX; ch++)
			n += (long)q[i].count[ch];
		console_printf(b, "<tr><td>%s</td><td>%ld</td></tr>\n",
		    spool_dirname(q[i].dir), n);
	}
	/* new/, deferred/, cur/: the first three (metrics_states). */
	buf_puts(b, "</table>\n<table>\n<tr><th>channel</th>");
	for (k = 0; k < 3; k++)
		console_printf(b, "<th>%s</th>", spool_dirname(q[k].dir));
	buf_puts(b, "</tr>\n");
	for (ch = 0; ch < CHANNEL__MAX; ch++) {
		console_printf(b, "<tr class=\"ch-%s\"><td>%s</td>",
		    channel_info((enum channel)ch)->name,
		    channel_info((enum channel)ch)->name);
		for (k = 0; k < 3; k++)
			console_printf(b, "<td>%lu</td>", q[k].count[ch]);
		buf_puts(b, "</tr>\n");
	}
	buf_puts(b, "</table>\n");
}

static void
cell_str(struct buf *b, const json_t *v)
{
	buf_puts(b, "<td>");
	if (json_is_string(v))
		console_esc(b, json_string_value(v));
	else if (json_is_integer(v))
		console_printf(b, "%lld", (long long)json_integer_value(v));
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
		console_esc(b, err);
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
		console_esc(b, rc->name);
		buf_puts(b, "</td><td>");
		console_esc(b, rc->channel);
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
			console_printf(b, "<rect class=\"%s\" x=\"%d\" "
			    "y=\"%d\" width=\"5\" height=\"%d\" "
			    "fill=\"%s\"><title>%s %lld</title></rect>\n",
			    keys[k], x, 100 - hgt,
			    hgt, fills[k], keys[k], v[h][k]);
		}
	console_printf(b, "<text x=\"0\" y=\"115\" font-size=\"10\">-24 h"
	    "</text><text x=\"440\" y=\"115\" font-size=\"10\">now</text>"
	    "</svg>\n<p>Bars: sent (blue), delivered (green), failed (red); "
	    "the highest is %lld.</p>\n", max);
}

struct response *
console_overview(struct console *c)
{
	struct buf	 b = { 0 };
	struct statvfs	 sv;
	json_t		*st, *v;

	console_head(&b, "Overview");
	console_nav(&b, c);
	buf_puts(&b, "<h1>Overview</h1>\n<h2>Health</h2>\n<table>\n");
	st = spool_status_get(c->ctx->spool, "daemon");
	if (st != NULL && json_is_integer(v = json_object_get(st,
	    "heartbeat")))
		console_printf(&b, "<tr><th>msgspoold</th><td>heartbeat %lld s "
		    "ago</td></tr>\n", (long long)time(NULL) -
		    (long long)json_integer_value(v));
	else
		buf_puts(&b, "<tr><th>msgspoold</th><td>no heartbeat"
		    "</td></tr>\n");
	if (st != NULL && json_is_string(v = json_object_get(st,
	    "version"))) {
		buf_puts(&b, "<tr><th>version</th><td>");
		console_esc(&b, json_string_value(v));
		buf_puts(&b, "</td></tr>\n");
	}
	if (fstatvfs(spool_dirfd(c->ctx->spool, SPOOL_NEW), &sv) == 0)
		console_printf(&b, "<tr><th>spool free</th><td>%llu MiB</td>"
		    "</tr>\n", (unsigned long long)sv.f_bavail * sv.f_frsize /
		    (1024 * 1024));
	buf_puts(&b, "</table>\n");
	queue_tables(&b, c);
	routes_table(&b, c);
	hours_chart(&b, st != NULL ? json_object_get(st, "hours") : NULL);
	json_decref(st);
	return console_finish(&b, 200);
}
