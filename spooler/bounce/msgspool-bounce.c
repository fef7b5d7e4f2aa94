/*
 * msgspool-bounce: what a bounce says of an email msgspool sent.
 *
 *	msgspool-bounce [-c FILE] [-r RECIPIENT] < bounce
 *
 * An MTA runs it with a bounce on stdin (a Postfix pipe transport, see
 * conf/postfix-bounce.cf, or an alias).  It reads the RFC 3464 delivery
 * status notification with GMime, finds the message by its VERP return
 * path (bounces+ID@..., the envelope recipient given with -r, else the
 * X-Original-To, Delivered-To or To header) or, failing that, by the
 * Message-ID msgspool set (<ID@domain>) in the returned message or
 * headers, and stores a receipt that msgspoold applies
 * (msgspool-spool(5)): Action failed -> undelivered with the Status code
 * and Diagnostic-Code, delayed -> an event, delivered -> delivered.
 *
 * Exit status (sysexits): 0 when recorded or not ours, 64 on a usage
 * error, 75 when the spool cannot take it now (the MTA tries again), 74
 * when it cannot take it at all, 78 when the config is bad.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <gmime/gmime.h>

#include "base/config.h"
#include "base/log.h"
#include "spool/spool.h"

#define EX_OK		0
#define EX_USAGE	64
#define EX_IOERR	74
#define EX_TEMPFAIL	75
#define EX_CONFIG	78

/* What the report says of its (first failed, else first) recipient. */
struct dsn {
	char	action[32];
	char	status[32];
	char	diagnostic[512];
	char	id[SPOOL_ID_LEN + 1];	/* from the returned message */
	int	seen;
};

/*
 * The message id in an address whose local part is ours: "x+ID@..."
 * (VERP) or "ID@..." (our Message-ID), with or without <>.  Into id;
 * 0, or -1 when there is none.
 */
static int
id_of_address(const char *addr, char *id)
{
	const char	*p, *at, *plus;

	if (addr == NULL)
		return -1;
	if ((p = strchr(addr, '<')) != NULL)
		addr = p + 1;
	while (isspace((unsigned char)*addr))
		addr++;
	if ((at = strchr(addr, '@')) == NULL)
		return -1;
	for (plus = at; plus > addr && plus[-1] != '+'; plus--)
		;
	p = plus > addr ? plus : addr;
	if ((size_t)(at - p) != SPOOL_ID_LEN)
		return -1;
	memcpy(id, p, SPOOL_ID_LEN);
	id[SPOOL_ID_LEN] = '\0';
	if (ulid_valid(id))
		return 0;
	id[0] = '\0';		/* not an id: nothing found */
	return -1;
}

/* The decoded content of a leaf part, NUL-terminated; g_free it. */
static char *
part_text(GMimeObject *part)
{
	GMimeDataWrapper	*w;
	GMimeStream		*mem;
	GByteArray		*bytes;
	char			*text;

	if (!GMIME_IS_PART(part) ||
	    (w = g_mime_part_get_content(GMIME_PART(part))) == NULL)
		return NULL;
	mem = g_mime_stream_mem_new();
	g_mime_data_wrapper_write_to_stream(w, mem);
	bytes = g_mime_stream_mem_get_byte_array(GMIME_STREAM_MEM(mem));
	text = g_strndup((const char *)bytes->data, bytes->len);
	g_object_unref(mem);
	return text;
}

/* Copy the value of "name:" at the start of line into out, trimmed. */
static int
field(const char *line, const char *name, char *out, size_t len)
{
	size_t	n = strlen(name), v;

	if (strncasecmp(line, name, n) != 0 || line[n] != ':')
		return 0;
	line += n + 1;
	while (*line == ' ' || *line == '\t')
		line++;
	v = strlen(line);
	while (v > 0 && isspace((unsigned char)line[v - 1]))
		v--;
	snprintf(out, len, "%.*s", (int)v, line);
	return 1;
}

/*
 * Read a message/delivery-status body: a per-message block, then a
 * block per recipient.  The first recipient whose Action is failed
 * wins, else the first one.  Folded lines are unfolded.
 */
static void
read_status(char *text, struct dsn *d)
{
	struct dsn	 cur;
	char		*line, *next, *p;
	int		 block = 0, have = 0;

	memset(&cur, 0, sizeof(cur));
	/* Unfold: CRLF or LF before a space or tab joins the lines. */
	for (p = text; *p != '\0'; p++)
		if ((*p == '\r' || *p == '\n') && (p[1] == ' ' ||
		    p[1] == '\t' || (p[0] == '\r' && p[1] == '\n' &&
		    (p[2] == ' ' || p[2] == '\t'))))
			*p = ' ';
	for (line = text; line != NULL; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if ((p = strchr(line, '\r')) != NULL)
			*p = '\0';
		if (*line == '\0') {
			/* The end of a block. */
			if (block > 0 && cur.action[0] != '\0' && (!have ||
			    (strcasecmp(d->action, "failed") != 0 &&
			    strcasecmp(cur.action, "failed") == 0))) {
				memcpy(d->action, cur.action, sizeof(d->action));
				memcpy(d->status, cur.status, sizeof(d->status));
				memcpy(d->diagnostic, cur.diagnostic,
				    sizeof(d->diagnostic));
				have = 1;
			}
			memset(&cur, 0, sizeof(cur));
			block++;
			continue;
		}
		field(line, "Action", cur.action, sizeof(cur.action));
		field(line, "Status", cur.status, sizeof(cur.status));
		field(line, "Diagnostic-Code", cur.diagnostic,
		    sizeof(cur.diagnostic));
	}
	if (cur.action[0] != '\0' && (!have || (strcasecmp(d->action,
	    "failed") != 0 && strcasecmp(cur.action, "failed") == 0))) {
		memcpy(d->action, cur.action, sizeof(d->action));
		memcpy(d->status, cur.status, sizeof(d->status));
		memcpy(d->diagnostic, cur.diagnostic, sizeof(d->diagnostic));
		have = 1;
	}
	d->seen |= have;
}

/* The Message-ID line of a block of headers, as our id. */
static void
id_of_headers(const char *text, char *id)
{
	const char	*p;

	for (p = text; p != NULL && *p != '\0'; p = strchr(p, '\n') ?
	    strchr(p, '\n') + 1 : NULL)
		if (strncasecmp(p, "Message-ID:", 11) == 0 &&
		    id_of_address(p + 11, id) == 0)
			return;
}

static void
visit(GMimeObject *parent, GMimeObject *part, gpointer arg)
{
	struct dsn		*d = arg;
	GMimeContentType	*ct = g_mime_object_get_content_type(part);
	GMimeMessage		*inner;
	char			*text;

	(void)parent;
	if (g_mime_content_type_is_type(ct, "message", "delivery-status") ||
	    g_mime_content_type_is_type(ct, "message",
	    "global-delivery-status")) {
		if ((text = part_text(part)) != NULL) {
			read_status(text, d);
			g_free(text);
		}
	} else if (GMIME_IS_MESSAGE_PART(part) && d->id[0] == '\0') {
		inner = g_mime_message_part_get_message(
		    GMIME_MESSAGE_PART(part));
		if (inner != NULL && g_mime_message_get_message_id(inner))
			id_of_address(g_mime_message_get_message_id(inner),
			    d->id);
	} else if (g_mime_content_type_is_type(ct, "text",
	    "rfc822-headers") && d->id[0] == '\0') {
		if ((text = part_text(part)) != NULL) {
			id_of_headers(text, d->id);
			g_free(text);
		}
	}
}

/* All of fd, at most BOUNCE_MAX bytes (the rest is not read). */
#define BOUNCE_MAX	(16 * 1024 * 1024)

static char *
read_all(int fd, size_t *len)
{
	char	*buf = NULL, *v;
	size_t	 cap = 0;
	ssize_t	 n;

	*len = 0;
	for (;;) {
		if (*len == cap) {
			if (cap >= BOUNCE_MAX)
				break;
			cap = cap ? cap * 2 : 65536;
			if ((v = realloc(buf, cap)) == NULL) {
				free(buf);
				return NULL;
			}
			buf = v;
		}
		if ((n = read(fd, buf + *len, cap - *len)) == -1 &&
		    errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == -1) {
				free(buf);
				return NULL;
			}
			break;
		}
		*len += (size_t)n;
	}
	if (buf == NULL)
		buf = malloc(1);
	return buf;
}

static void
usage(void)
{
	fprintf(stderr, "usage: msgspool-bounce [-c FILE] [-r RECIPIENT] "
	    "< bounce\n");
}

/* Keep printable ASCII; anything else becomes '?'. */
static void
printable(char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			*s = '?';
}

/*
 * What the report's action means for the message: undelivered,
 * delivered, delayed (an event only), or NULL for nothing to record.
 */
static const char *
dsn_status(const struct dsn *d)
{
	if (strcasecmp(d->action, "failed") == 0)
		return "undelivered";
	if (strcasecmp(d->action, "delivered") == 0)
		return "delivered";
	if (strcasecmp(d->action, "delayed") == 0)
		return "delayed";
	return NULL;
}

/*
 * Whether the message id, found in dir/name, is one a bounce may change:
 * an email (msgdoc_receipt_applies).  One moved meanwhile counts as
 * ours: msgspoold applies the same rule to what is stored.
 */
static int
ours(struct spool *spool, enum spool_dir dir, const char *name,
    const char *id, const struct dsn *d)
{
	json_t	*doc;
	char	 why[512];
	int	 ok;

	if ((doc = spool_load(spool, dir, name, why, sizeof(why))) == NULL)
		return 1;
	ok = msgdoc_receipt_applies(doc, spool_dirname(dir), "email",
	    dsn_status(d), why, sizeof(why));
	json_decref(doc);
	if (!ok)
		log_warn("bounce: not ours (%s): %s; ignored", id, why);
	return ok;
}

/* Store the receipt for message id: its status, error and event. */
static int
store(struct spool *spool, const char *id, struct dsn *d)
{
	const char	*status, *diag;
	char		 rid[SPOOL_ID_LEN + 1], now[RFC3339_LEN];
	json_t		*doc, *error = NULL;
	enum msg_status	 st;

	if ((status = dsn_status(d)) == NULL) {
		log_info("bounce: %s: action '%s' says nothing to record", id,
		    d->action);
		return EX_OK;
	}
	/* A report need not be UTF-8; what is stored must be. */
	printable(d->status);
	printable(d->diagnostic);
	if (strcmp(status, "undelivered") == 0) {
		/* "smtp; 550 5.1.1 ...": the text after the type. */
		diag = strchr(d->diagnostic, ';') ? strchr(d->diagnostic, ';') +
		    1 : d->diagnostic;
		while (*diag == ' ')
			diag++;
		error = json_pack("{s:s?, s:s}", "code", d->status[0] ?
		    d->status : NULL, "message", *diag ? diag : "bounced");
	}
	rfc3339_format(time(NULL), now, sizeof(now));
	if (ulid_new(rid) == -1 || (doc = json_pack("{s:i, s:s, s:s, s:s, "
	    "s:n, s:s, s:s, s:s, s:s, s:o}", "version", MSGDOC_VERSION, "id",
	    rid, "provider", "email", "message", id, "providerMessageId",
	    "status", status, "providerStatus", d->action, "at", now,
	    "received", now, "error", error ? error : json_null())) == NULL) {
		log_err("bounce: %s: out of memory", id);
		return EX_TEMPFAIL;
	}
	st = spool_area_store(spool, "receipts", (const json_t **)&doc, 1);
	json_decref(doc);
	if (st != MSG_OK) {
		log_err("bounce: %s: the spool cannot take it %s", id,
		    st == MSG_TEMPFAIL ? "now" : "at all");
		return st == MSG_TEMPFAIL ? EX_TEMPFAIL : EX_IOERR;
	}
	log_info("bounce: %s: %s %s", id, status, d->status);
	return EX_OK;
}

int
main(int argc, char *argv[], char *envp[])
{
	struct dsn	 d;
	struct config	*cfg;
	struct spool	*spool;
	GMimeStream	*in;
	GMimeParser	*parser;
	GMimeMessage	*msg;
	enum spool_dir	 dir;
	const char	*path, *rcpt = NULL;
	char		 id[SPOOL_ID_LEN + 1], name[SPOOL_NAME_MAX];
	char		 err[512], *root, *raw;
	size_t		 rawlen;
	int		 ch, rc;

	path = config_default_path(envp);
	while ((ch = getopt(argc, argv, "c:r:h")) != -1) {
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 'r':
			rcpt = optarg;
			break;
		case 'h':
			usage();
			return EX_OK;
		default:
			usage();
			return EX_USAGE;
		}
	}
	if (optind != argc) {
		usage();
		return EX_USAGE;
	}
	if ((cfg = config_load(path, err, sizeof(err))) == NULL) {
		log_err("config: %s", err);
		return EX_CONFIG;
	}
	root = config_path(cfg, NULL, "spool", "spool");
	if (root == NULL || (spool = spool_open(root, 0, err,
	    sizeof(err))) == NULL) {
		log_err("spool: %s", root ? err : "out of memory");
		free(root);
		config_free(cfg);
		return EX_TEMPFAIL;
	}
	free(root);
	/* A spool we cannot look into would lose the bounce: try later. */
	if (spool_writable(spool, err, sizeof(err)) == -1) {
		log_err("spool: %s", err);
		spool_free(spool);
		config_free(cfg);
		return EX_TEMPFAIL;
	}
	memset(&d, 0, sizeof(d));
	g_mime_init();
	/* Read whole first: stdin is a pipe, and a bounce is small. */
	if ((raw = read_all(STDIN_FILENO, &rawlen)) == NULL) {
		log_err("bounce: stdin: %s", strerror(errno));
		g_mime_shutdown();
		spool_free(spool);
		config_free(cfg);
		return EX_TEMPFAIL;
	}
	in = g_mime_stream_mem_new_with_buffer(raw, rawlen);
	free(raw);
	parser = g_mime_parser_new_with_stream(in);
	msg = g_mime_parser_construct_message(parser, NULL);
	g_object_unref(parser);
	g_object_unref(in);
	rc = EX_OK;
	id[0] = '\0';
	if (msg == NULL)
		log_warn("bounce: not a message; ignored");
	else {
		g_mime_message_foreach(msg, visit, &d);
		/* The return path first: VERP is ours alone. */
		if (id_of_address(rcpt, id) == -1 &&
		    id_of_address(g_mime_object_get_header(GMIME_OBJECT(msg),
		    "X-Original-To"), id) == -1 &&
		    id_of_address(g_mime_object_get_header(GMIME_OBJECT(msg),
		    "Delivered-To"), id) == -1 &&
		    id_of_address(g_mime_object_get_header(GMIME_OBJECT(msg),
		    "To"), id) == -1 && d.id[0] != '\0')
			memcpy(id, d.id, sizeof(id));
		if (!d.seen)
			log_warn("bounce: no delivery status report; ignored");
		else if (id[0] == '\0' || spool_find(spool, id, &dir,
		    name) == -1)
			log_warn("bounce: not for a message of ours (%s); "
			    "ignored", id[0] ? id : "no id");
		else if (ours(spool, dir, name, id, &d))
			rc = store(spool, id, &d);
		g_object_unref(msg);
	}
	g_mime_shutdown();
	spool_free(spool);
	config_free(cfg);
	return rc;
}
