/*
 * cli_inbox.c: the inbound messages in the CLI (msgspool(8), list
 * --inbound, show): every one kept in inbox/, its client's or no
 * client's (inbox.h), for the operator.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "spool/inbox.h"
#include "spool/spool.h"

/* Bytes of a text shown in a list, at most. */
#define TEXT_SHOWN	40

/* The text on one line: its first TEXT_SHOWN bytes (whole characters),
 * blanks for line breaks and tabs, "…" when it goes on. */
static void
one_line(const char *text, char *out, size_t len)
{
	size_t	n = 0, i;

	if (text == NULL) {
		snprintf(out, len, "-");
		return;
	}
	for (i = 0; text[i] != '\0' && n + 4 < len; i++) {
		/* Not in the middle of a character. */
		if (i >= TEXT_SHOWN && ((unsigned char)text[i] & 0xc0) != 0x80)
			break;
		out[n++] = (unsigned char)text[i] < 0x20 ? ' ' : text[i];
	}
	if (text[i] != '\0')
		n += (size_t)snprintf(out + n, len - n, "\xe2\x80\xa6");
	out[n] = '\0';
}

struct listing {
	struct cli	*c;
	size_t		 n;
};

static int
list_one(void *arg, const char *name)
{
	struct listing	*l = arg;
	char		 id[SPOOL_ID_LEN + 1], err[512], text[TEXT_SHOWN + 8];
	json_t		*doc;

	snprintf(id, sizeof(id), "%s", name);
	if ((doc = inbox_load(l->c->spool, id, err, sizeof(err))) == NULL) {
		if (errno != ENOENT)
			printf("%-26.26s (unreadable: %s)\n", name, err);
		return 0;
	}
	one_line(inbox_text(doc), text, sizeof(text));
	printf("%-26s %-7s %-16s %-16s %-12s %-20s %s\n", id,
	    cli_str(doc, "channel"), cli_str(doc, "from"), cli_str(doc, "to"),
	    inbox_client(doc) ? inbox_client(doc) : "(none)",
	    cli_str(doc, "receivedAt"), text);
	json_decref(doc);
	l->n++;
	return 0;
}

int
cli_list_inbound(struct cli *c)
{
	struct listing	l = { c, 0 };

	printf("%-26s %-7s %-16s %-16s %-12s %-20s %s\n", "ID", "CHANNEL",
	    "FROM", "TO", "CLIENT", "RECEIVED", "TEXT");
	if (spool_area_scan(c->spool, INBOX_AREA, list_one, &l) == -1) {
		fprintf(stderr, "msgspool: %s/: %s\n", INBOX_AREA,
		    strerror(errno));
		return 1;
	}
	printf("%zu inbound message%s\n", l.n, l.n == 1 ? "" : "s");
	return 0;
}

int
cli_show_inbound(struct cli *c, const char *id)
{
	char	 err[512], *text;
	json_t	*doc;

	if ((doc = inbox_load(c->spool, id, err, sizeof(err))) == NULL) {
		if (errno == ENOENT)
			return -1;
		fprintf(stderr, "msgspool: show: %s\n", err);
		return 1;
	}
	/* As msgspool show puts a message's: where it is, what it is. */
	json_object_set_new(doc, "state", json_string(INBOX_AREA));
	json_object_set_new(doc, "status", json_string("received"));
	text = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(doc);
	if (text == NULL)
		return 1;
	puts(text);
	free(text);
	return 0;
}
