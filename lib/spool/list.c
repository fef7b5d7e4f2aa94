/*
 * list.c: each client's list of its messages (list.h; msgspool-spool(5),
 * Lists): the lines its writers append, and the spool's files read as
 * lines (for a reindex, a recovery, a list never built).  The segments'
 * files are list_seg.c's, pages list_page.c's, rewrites list_rewrite.c's,
 * rebuilding list_build.c's.
 */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/channel.h"
#include "base/log.h"
#include "base/netfs.h"
#include "base/util.h"
#include "base/valid.h"
#include "spool/inbox.h"
#include "spool/list.h"
#include "spool/spool.h"
#include "spool/spool_impl.h"
#include "spool/list_impl.h"

static const char *const status_names[LIST__NSTATUS] = {
	"scheduled", "queued", "sending", "retrying", "sent", "delivered",
	"read", "undelivered", "failed", "canceled"
};

int
list_status_parse(const char *name, size_t len)
{
	int	i;

	for (i = 0; i < LIST__NSTATUS; i++)
		if (strlen(status_names[i]) == len &&
		    memcmp(status_names[i], name, len) == 0)
			return i;
	return -1;
}

int
list_address_key(const char *addr, char *out, size_t len)
{
	const char	*at, *p;
	size_t		 n = 0, i;

	if (addr == NULL || *addr == '\0' || len < 2)
		return -1;
	if ((at = strrchr(addr, '@')) != NULL) {
		if (at == addr || at[1] == '\0' || strlen(addr) >= len)
			return -1;
		for (p = addr; *p != '\0'; p++)
			if ((unsigned char)*p <= ' ' || *p == 0x7f)
				return -1;
		for (i = 0, p = addr; *p != '\0'; p++, i++)
			out[i] = p > at && *p >= 'A' && *p <= 'Z' ?
			    (char)(*p - 'A' + 'a') : *p;
		out[i] = '\0';
		return 0;
	}
	p = addr;
	while (*p == ' ')
		p++;
	if (*p == '+')
		p++;
	else if (p[0] == '0' && p[1] == '0')
		p += 2;
	out[n++] = '+';
	for (; *p != '\0'; p++) {
		if (*p >= '0' && *p <= '9') {
			if (n + 1 >= len || n > 20)
				return -1;
			out[n++] = *p;
		} else if (*p != ' ' && *p != '-' && *p != '.' && *p != '(' &&
		    *p != ')')
			return -1;
	}
	if (n < 4)
		return -1;
	out[n] = '\0';
	return 0;
}

/* Append s to b with its tabs and newlines made spaces, run by run. */
static void
put_field(struct buf *b, const char *s)
{
	size_t	n;

	for (s = s ? s : ""; *s != '\0'; s += n + 1) {
		n = strcspn(s, "\t\n\r");
		buf_add(b, s, n);
		if (s[n] == '\0')
			break;
		buf_putc(b, ' ');
	}
	buf_putc(b, '\t');
}

/* Append a full line to b; 0, or -1 out of memory. */
static int
make_line(struct buf *b, const char *id, const char *status,
    const char *direction, const char *channel, const char *created,
    const char *addr, const char *ref, const json_t *obj, time_t at)
{
	char	 key[LIST_ADDRESS_MAX], num[64], hash[HASH_LEN + 1];
	char	*text;
	time_t	 t = 0;

	if (created == NULL || rfc3339_parse(created, &t) == -1)
		t = (time_t)(ulid_time(id) / 1000);
	if (addr == NULL || list_address_key(addr, key, sizeof(key)) == -1)
		snprintf(key, sizeof(key), "%s", addr ? addr : "");
	if ((text = buf_json_text(obj, JSON_COMPACT, NULL)) == NULL)
		return -1;
	put_field(b, id);
	put_field(b, status);
	put_field(b, direction);
	put_field(b, channel);
	snprintf(num, sizeof(num), "%lld", (long long)t);
	put_field(b, num);
	/* When the file was written: what pruning goes by. */
	snprintf(num, sizeof(num), "%lld", (long long)(at > 0 ? at :
	    time(NULL)));
	put_field(b, num);
	put_field(b, key);
	put_field(b, ref);
	list_obj_hash(text, strlen(text), hash);
	put_field(b, hash);
	/* Compact JSON has no raw newline or tab. */
	buf_puts(b, text);
	buf_putc(b, '\n');
	free(text);
	return b->failed ? -1 : 0;
}

/*
 * The line of an outbound message doc in state into b; at is when its
 * file was written (0: now).
 */
static int
outbound_line(struct buf *b, const json_t *doc, const char *state,
    time_t at)
{
	json_t	*obj;
	int	 rc;

	if ((obj = msgdoc_status_object(doc, state, 0)) == NULL)
		return -1;
	rc = make_line(b, msgdoc_id(doc), msgdoc_status(doc, state),
	    "outbound", msgdoc_channel(doc), json_string_value(
	    json_object_get(doc, "created")), msgdoc_recipient(doc),
	    msgdoc_reference(doc), obj, at);
	json_decref(obj);
	return rc;
}

/* The line of an inbound message doc into b (at as outbound_line's). */
static int
inbound_line(struct buf *b, const json_t *doc, time_t at)
{
	json_t	*obj;
	int	 rc;

	if ((obj = inbox_object(doc)) == NULL)
		return -1;
	rc = make_line(b, json_string_value(json_object_get(doc, "id")),
	    "received", "inbound", json_string_value(json_object_get(doc,
	    "channel")), json_string_value(json_object_get(doc,
	    "receivedAt")), inbox_from(doc), NULL, obj, at);
	json_decref(obj);
	return rc;
}

/*
 * Note doc, an outbound message in state (or, state NULL, an inbound
 * one), of client with id: its line appended.  A document of no client
 * (made by hand) is on no list: 0.
 */
static int
note(struct spool *s, const json_t *doc, const char *state,
    const char *client, const char *id)
{
	struct buf	 b = { 0 };
	int		 rc = -1;

	if (id == NULL || !ulid_valid(id)) {
		errno = EINVAL;
		return -1;
	}
	if (client == NULL || !valid_client_id(client))
		return 0;
	if ((state != NULL ? outbound_line(&b, doc, state, 0) :
	    inbound_line(&b, doc, 0)) == 0)
		rc = list_append(s, client, id, b.p, b.len);
	else
		errno = ENOMEM;
	buf_free(&b);
	return rc;
}

int
list_note(struct spool *s, const json_t *doc, enum spool_dir dir)
{
	return note(s, doc, spool_dirname(dir), msgdoc_client(doc),
	    msgdoc_id(doc));
}

/* One note of list_note_items: the item's line and its client. */
struct item_note {
	struct list_add	 add;
	const char	*client;
	size_t		 off;		/* of its line in the buffer */
	size_t		 item;
};

static int
by_client(const void *a, const void *b)
{
	return strcmp(((const struct item_note *)a)->client,
	    ((const struct item_note *)b)->client);
}

/* A failed note of item it: logged, its status the failure's. */
static void
item_failed(struct spool_item *it, int e)
{
	log_err("spool: %s: the list of its client: %s", msgdoc_id(it->doc) ?
	    msgdoc_id(it->doc) : "?", strerror(e));
	it->status = spool_errno_status(e);
}

void
list_note_items(struct spool *s, struct spool_item *items, size_t n)
{
	struct item_note	*v;
	struct list_add		*adds;
	struct buf		 b = { 0 };
	const char		*client, *id;
	size_t			 i, j, k, nv = 0;

	v = calloc(n ? n : 1, sizeof(*v));
	adds = calloc(n ? n : 1, sizeof(*adds));
	if (v == NULL || adds == NULL) {
		for (i = 0; i < n; i++)
			if (items[i].status == MSG_OK)
				item_failed(&items[i], ENOMEM);
		free(v);
		free(adds);
		return;
	}
	for (i = 0; i < n; i++) {
		if (items[i].status != MSG_OK)
			continue;
		id = msgdoc_id(items[i].doc);
		client = msgdoc_client(items[i].doc);
		if (id == NULL || !ulid_valid(id)) {
			item_failed(&items[i], EINVAL);
			continue;
		}
		/* A document of no client (made by hand) is on no list. */
		if (client == NULL || !valid_client_id(client))
			continue;
		v[nv].off = b.len;
		if (outbound_line(&b, items[i].doc, spool_dirname(items[i].dir),
		    0) == -1) {
			item_failed(&items[i], ENOMEM);
			b.len = v[nv].off;
			continue;
		}
		v[nv].add.id = id;
		v[nv].add.len = b.len - v[nv].off;
		v[nv].client = client;
		v[nv++].item = i;
	}
	/* Each client's lines together, under one lock of its head. */
	qsort(v, nv, sizeof(*v), by_client);
	for (j = 0; j < nv; j++) {
		adds[j] = v[j].add;
		/* The buffer moved as it grew: the lines' places only now. */
		adds[j].text = b.p + v[j].off;
	}
	for (j = 0; j < nv; j = k) {
		for (k = j; k < nv && strcmp(v[k].client, v[j].client) == 0;
		    k++)
			continue;
		if (list_append_lines(s, v[j].client, adds + j, k - j) == 0)
			continue;
		for (i = j; i < k; i++)
			if (adds[i].err != 0)
				item_failed(&items[v[i].item], adds[i].err);
	}
	buf_free(&b);
	free(adds);
	free(v);
}

int
list_note_inbound(struct spool *s, const json_t *doc)
{
	return note(s, doc, NULL, inbox_client(doc), json_string_value(
	    json_object_get(doc, "id")));
}

int
list_note_gone(struct spool *s, const char *client, const char *id)
{
	char	line[SPOOL_ID_LEN + 4];

	if (!ulid_valid(id)) {
		errno = EINVAL;
		return -1;
	}
	snprintf(line, sizeof(line), "%s\t-\n", id);
	return list_append(s, client, id, line, strlen(line));
}

static int
scan_one(struct scan *sc, int inbound, enum spool_dir d, const char *name)
{
	struct buf	 b = { 0 };
	json_t		*doc;
	struct stat	 st;
	const char	*client, *id;
	char		 err[256];
	time_t		 at = 0;
	int		 rc = 0;

	if (inbound)
		doc = spool_area_load(sc->s, INBOX_AREA, name, err,
		    sizeof(err));
	else
		doc = spool_load(sc->s, d, name, err, sizeof(err));
	if (doc == NULL)
		return 0;	/* gone meanwhile, or not a message */
	client = inbound ? inbox_client(doc) : msgdoc_client(doc);
	id = json_string_value(json_object_get(doc, "id"));
	if (client == NULL || id == NULL || !ulid_valid(id) ||
	    !valid_client_id(client) ||
	    (sc->client != NULL && strcmp(client, sc->client) != 0)) {
		json_decref(doc);
		return 0;
	}
	/* Its line dated as its file, for pruning (not as now). */
	if (fstatat(inbound ? sc->inboxfd : spool_statefd(sc->s, d), name,
	    &st, AT_SYMLINK_NOFOLLOW) == 0)
		at = st.st_mtime;
	if ((inbound ? inbound_line(&b, doc, at) :
	    outbound_line(&b, doc, spool_dirname(d), at)) == 0)
		rc = sc->fn(sc, client, id, b.p, b.len);
	else
		rc = -1;
	buf_free(&b);
	json_decref(doc);
	return rc;
}

static void
scan_tick(struct scan *sc)
{
	sc->done++;
	if (sc->progress != NULL && (sc->done % 256) == 0)
		sc->progress(sc->parg, "reading", sc->done, sc->total);
}

/* The names of a state or area, sorted; count or -1. */
static ssize_t
scan_names(struct scan *sc, int inbound, enum spool_dir d, char ***names)
{
	ssize_t	n;

	*names = NULL;
	if (!inbound)
		return spool_list(sc->s, d, names);
	n = spool_area_names(sc->s, INBOX_AREA, names);
	return n == -1 && errno == ENOENT ? 0 : n;
}

int
list_scan_spool(struct scan *sc)
{
	static const enum spool_dir states[] = { SPOOL_NEW, SPOOL_DEFERRED,
	    SPOOL_CUR, SPOOL_SENT, SPOOL_FAILED };
	char		**names[6];
	ssize_t		  n[6];
	size_t		  k, i;
	int		  rc = 0, queue;

	sc->total = 0;
	sc->inboxfd = spool_area(sc->s, INBOX_AREA, 0);
	for (k = 0; k < 6; k++) {
		n[k] = scan_names(sc, k == 5, k < 5 ? states[k] : SPOOL_NEW,
		    &names[k]);
		if (n[k] == -1) {
			while (k-- > 0)
				spool_names_free(names[k], (size_t)n[k]);
			if (sc->inboxfd != -1)
				close(sc->inboxfd);
			return -1;
		}
		sc->total += (size_t)n[k];
	}
	for (k = 0; k < 6 && rc == 0; k++) {
		queue = k < 3;
		for (i = 0; i < (size_t)n[k] && rc == 0; i++) {
			scan_tick(sc);
			if (sc->only_queue && !queue && (strlen(names[k][i]) <
			    SPOOL_ID_LEN || ulid_time(names[k][i]) <
			    sc->since_ms))
				continue;
			rc = scan_one(sc, k == 5, k < 5 ? states[k] :
			    SPOOL_NEW, names[k][i]);
		}
	}
	for (k = 0; k < 6; k++)
		spool_names_free(names[k], (size_t)n[k]);
	if (sc->inboxfd != -1)
		close(sc->inboxfd);
	if (sc->progress != NULL)
		sc->progress(sc->parg, "reading", sc->done, sc->total);
	return rc;
}

static int
to_buf(struct scan *sc, const char *client, const char *id,
    const char *line, size_t len)
{
	(void)client;
	(void)id;
	return buf_add(sc->arg, line, len);
}

int
list_scan_client(struct spool *s, const char *client, struct buf *b)
{
	struct scan	sc;

	memset(&sc, 0, sizeof(sc));
	sc.s = s;
	sc.client = client;
	sc.fn = to_buf;
	sc.arg = b;
	return list_scan_spool(&sc);
}

static int
to_note(struct scan *sc, const char *client, const char *id,
    const char *line, size_t len)
{
	size_t	*n = sc->arg;

	if (list_append(sc->s, client, id, line, len) == 0)
		(*n)++;
	else
		log_warn("lists: %s of %s: %s", id, client, strerror(errno));
	return 0;
}

size_t
list_recover(struct spool *s, time_t since)
{
	struct scan	sc;
	size_t		n = 0;

	memset(&sc, 0, sizeof(sc));
	sc.s = s;
	sc.only_queue = 1;
	sc.since_ms = (long long)since * 1000;
	sc.fn = to_note;
	sc.arg = &n;
	list_scan_spool(&sc);
	return n;
}

json_t *
list_clients(struct spool *s)
{
	json_t		*a;
	struct dirent	*e;
	DIR		*d;
	int		 afd;

	if ((a = json_array()) == NULL ||
	    (afd = spool_area(s, LIST_AREA, 0)) == -1)
		return a;
	if ((d = fdopendir(afd)) == NULL) {
		close(afd);
		return a;
	}
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.' && valid_client_id(e->d_name) &&
		    json_array_append_new(a, json_string(e->d_name)) == -1) {
			json_decref(a);
			a = NULL;
			break;
		}
	closedir(d);
	return a;
}

int
list_built(struct spool *s)
{
	struct stat	st;
	int		afd, rc;

	if ((afd = spool_area(s, LIST_AREA, 0)) == -1)
		return 0;
	rc = fstatat(afd, BUILT_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0;
	close(afd);
	return rc;
}
