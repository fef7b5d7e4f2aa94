/*
 * list.c: each client's list of its messages (list.h; msgspool-spool(5),
 * Lists): the lines its writers append, the pages GET /messages reads,
 * and the rebuilding, compacting and erasing of the segments.
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

/* A segment takes no new message once it is this big. */
#define SEG_BYTES	16384
/* The most a segment is read into memory at once. */
#define SEG_MAX		(256 * 1024 * 1024)
/* The head: "GEN SEG MAX\n", each id 26 characters. */
#define HEAD_LEN	(20 + 1 + SPOOL_ID_LEN + 1 + SPOOL_ID_LEN + 1)
#define HEAD_NAME	"head"
/* Marks lists/ built: every message of the spool is in it. */
#define BUILT_NAME	".built"
/* Taken by the rewriters: reindex, compact, erase. */
#define REWRITE_LOCK	".rewrite"
/* The first line of a segment names the one before it. */
#define PREV_TAG	"#prev "
/* How often a page starts again when a segment went under it. */
#define PAGE_TRIES	5
/* A sent or inbound message is looked for once this near its pruning. */
#define PRUNE_SLACK	120
/* A line of a message never accepted is dropped after this (tmp/'s). */
#define STALE_AGE	(36 * 3600)
/* Creation times and ids may differ by this much (seconds). */
#define CREATED_SLACK	60

struct head {
	long long	gen;
	char		seg[SPOOL_ID_LEN + 1];	/* "" when none */
	char		max[SPOOL_ID_LEN + 1];
};

/* One line of a segment, split. */
struct line {
	const char	*id;		/* SPOOL_ID_LEN bytes */
	const char	*start;		/* the whole line */
	size_t		 len;		/* without its newline */
	size_t		 seq;		/* its place in the file */
	int		 gone;
	const char	*status, *dir, *channel, *addr, *ref, *hash, *json;
	size_t		 status_len, dir_len, channel_len, addr_len, ref_len,
			 json_len;
	long long	 created, at;
};

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

/* ---- the client's directory and its head ---- */

/* The fd of lists/CLIENT, made when create is set; -1 with errno. */
static int
client_dir(struct spool *s, const char *client, int create)
{
	int	afd, fd, e;

	if (!valid_client_id(client)) {
		errno = EINVAL;
		return -1;
	}
	if ((afd = spool_area(s, LIST_AREA, create)) == -1)
		return -1;
	fd = spool_subdir(afd, client, create);
	e = errno;
	close(afd);
	errno = e;
	return fd;
}

/* Parse a head's text; 0, or -1 when it is none. */
static int
head_parse(const char *p, size_t len, struct head *h)
{
	char	 text[HEAD_LEN + 1], *end, *sp;

	memset(h, 0, sizeof(*h));
	if (len == 0) {
		h->gen = 1;
		return 0;
	}
	if (len > HEAD_LEN || p[len - 1] != '\n')
		return -1;
	memcpy(text, p, len);
	text[len - 1] = '\0';
	h->gen = strtoll(text, &end, 10);
	if (end == text || *end != ' ' || h->gen < 1)
		return -1;
	sp = end + 1;
	if (strlen(sp) != 2 * SPOOL_ID_LEN + 1 || sp[SPOOL_ID_LEN] != ' ')
		return -1;
	memcpy(h->seg, sp, SPOOL_ID_LEN);
	memcpy(h->max, sp + SPOOL_ID_LEN + 1, SPOOL_ID_LEN);
	if (!ulid_valid(h->seg) || !ulid_valid(h->max))
		return -1;
	return 0;
}

/* Read the head open on fd; 0, or -1 (errno EINVAL when garbled). */
static int
head_read(int fd, struct head *h)
{
	char	buf[HEAD_LEN + 2];
	ssize_t	n;

	if ((n = pread(fd, buf, sizeof(buf), 0)) == -1)
		return -1;
	if (head_parse(buf, (size_t)n, h) == -1) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

static int
head_write(int fd, const struct head *h)
{
	char	buf[HEAD_LEN + 1];
	int	n;

	n = snprintf(buf, sizeof(buf), "%lld %s %s\n", h->gen, h->seg,
	    h->max);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return -1;
	if (pwrite(fd, buf, (size_t)n, 0) != n)
		return -1;
	return ftruncate(fd, n);
}

/* Lock fd's whole file (exclusive, waiting): 0, or -1 with errno. */
static int
lock_fd(int fd)
{
	struct flock	fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	while (fcntl(fd, F_SETLKW, &fl) == -1)
		if (errno != EINTR)
			return -1;
	return 0;
}

/*
 * Open and lock (exclusive, waiting) the head of the client whose
 * directory is cfd.  The fd; closing it lets go.  -1 with errno.
 */
static int
head_lock(int cfd, int create)
{
	int	fd, e;

	fd = openat(cfd, HEAD_NAME, O_RDWR | O_NOFOLLOW | O_CLOEXEC |
	    (create ? O_CREAT : 0), SPOOL_FILE_MODE | 0020);
	if (fd == -1)
		return -1;
	if (lock_fd(fd) == -1) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* "GEN.SEG" into buf. */
static void
seg_name(char *buf, size_t len, long long gen, const char *seg)
{
	snprintf(buf, len, "%lld.%s", gen, seg);
}

/* Whether name is a segment of gen; its id then at *seg. */
static int
seg_of(const char *name, long long gen, const char **seg)
{
	char		*end;
	long long	 g;

	if (name[0] < '1' || name[0] > '9')
		return 0;
	g = strtoll(name, &end, 10);
	if (g != gen || *end != '.' || !ulid_valid(end + 1))
		return 0;
	*seg = end + 1;
	return 1;
}

/* For spool_dir_names: a segment of the generation *arg. */
static int
want_seg(const char *name, void *arg)
{
	const char	*seg;

	return seg_of(name, *(const long long *)arg, &seg);
}

/*
 * The segments of gen in cfd, newest first: their ids (malloc'd
 * strings).  The count, or -1 with errno.
 */
static ssize_t
seg_list(int cfd, long long gen, char ***out)
{
	DIR	*dir;
	char	**v, *t;
	ssize_t	 n, i;
	int	 fd;

	*out = NULL;
	if ((fd = dup(cfd)) == -1)
		return -1;
	if ((dir = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	rewinddir(dir);
	if ((n = spool_dir_names(dir, want_seg, &gen, &v)) == -1)
		return -1;
	/* "GEN.ID" to "ID", the newest first. */
	for (i = 0; i < n; i++) {
		t = strchr(v[i], '.') + 1;
		memmove(v[i], t, strlen(t) + 1);
	}
	for (i = 0; i < n / 2; i++) {
		t = v[i];
		v[i] = v[n - 1 - i];
		v[n - 1 - i] = t;
	}
	*out = v;
	return n;
}

/*
 * The segment of gen in cfd that holds id: the greatest not above it, or
 * the least when every one is above it (the least holds every id below
 * it too), into seg; 0, or -1 when there is none (errno ENOENT).
 */
static int
seg_find(int cfd, long long gen, const char *id, char *seg)
{
	char	**v;
	ssize_t	  n, i;

	if ((n = seg_list(cfd, gen, &v)) == -1)
		return -1;
	for (i = 0; i < n; i++)
		if (strcmp(v[i], id) <= 0)
			break;
	if (i == n && n > 0)
		i = n - 1;
	if (i < n)
		memcpy(seg, v[i], SPOOL_ID_LEN + 1);
	spool_names_free(v, (size_t)n);
	if (i >= n) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

/* Open a segment for appending (made with its #prev line when new). */
static int
seg_open_append(int cfd, long long gen, const char *seg, const char *prev)
{
	char	name[32 + SPOOL_ID_LEN], line[64 + SPOOL_ID_LEN];
	int	fd, n;

	seg_name(name, sizeof(name), gen, seg);
	if ((fd = openat(cfd, name, O_WRONLY | O_APPEND | O_NOFOLLOW |
	    O_CLOEXEC)) != -1 || errno != ENOENT)
		return fd;
	if ((fd = openat(cfd, name, O_WRONLY | O_APPEND | O_CREAT |
	    O_NOFOLLOW | O_CLOEXEC, SPOOL_FILE_MODE | 0020)) == -1)
		return -1;
	if (prev != NULL && *prev != '\0') {
		n = snprintf(line, sizeof(line), PREV_TAG "%lld.%s\n", gen,
		    prev);
		if (util_write_all(fd, line, (size_t)n) == -1) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

/*
 * Append text (whole lines) about message id to client's list: under the
 * head's lock, into the segment that holds id, a new segment begun when
 * id is past every id so far and the newest is full.
 */
static int
append(struct spool *s, const char *client, const char *id,
    const char *text, size_t len)
{
	struct head	 h;
	struct stat	 st;
	char		 seg[SPOOL_ID_LEN + 1], prev[SPOOL_ID_LEN + 1];
	int		 cfd, hfd = -1, fd = -1, e, dirty = 0, rc = -1;

	if ((cfd = client_dir(s, client, 1)) == -1)
		return -1;
	if ((hfd = head_lock(cfd, 1)) == -1 || head_read(hfd, &h) == -1)
		goto out;
	prev[0] = '\0';
	if (h.seg[0] == '\0') {
		/* The first: a segment from this id on. */
		memcpy(h.seg, id, SPOOL_ID_LEN + 1);
		memcpy(h.max, id, SPOOL_ID_LEN + 1);
		memcpy(seg, id, SPOOL_ID_LEN + 1);
		dirty = 1;
	} else if (strcmp(id, h.seg) >= 0) {
		memcpy(seg, h.seg, SPOOL_ID_LEN + 1);
		if (strcmp(id, h.max) > 0) {
			/* Past every id so far: a new segment when full. */
			if ((fd = seg_open_append(cfd, h.gen, seg, NULL)) ==
			    -1 || fstat(fd, &st) == -1)
				goto out;
			if (st.st_size >= SEG_BYTES) {
				close(fd);
				fd = -1;
				memcpy(prev, h.seg, SPOOL_ID_LEN + 1);
				memcpy(h.seg, id, SPOOL_ID_LEN + 1);
				memcpy(seg, id, SPOOL_ID_LEN + 1);
			}
			memcpy(h.max, id, SPOOL_ID_LEN + 1);
			dirty = 1;
		}
	} else if (seg_find(cfd, h.gen, id, seg) == -1)
		goto out;
	if (fd == -1 && (fd = seg_open_append(cfd, h.gen, seg, prev)) == -1)
		goto out;
	/*
	 * The segment locked too, while it is written: on NFS a lock the
	 * server gave away (a partition longer than the lease) fails the
	 * write (EIO) rather than letting it land, late, over the lines
	 * other hosts appended meanwhile at the same offset.
	 */
	if (lock_fd(fd) == -1 || util_write_all(fd, text, len) == -1)
		goto out;
	/* On NFS the data reaches the server here, before the lock goes. */
	if (close(fd) == -1) {
		fd = -1;
		goto out;
	}
	fd = -1;
	if (dirty && head_write(hfd, &h) == -1)
		goto out;
	rc = 0;
out:
	e = errno;
	if (fd != -1)
		close(fd);
	if (hfd != -1)
		close(hfd);
	close(cfd);
	errno = e;
	return rc;
}

/* ---- lines ---- */

/*
 * The hash of a line's object, 16 hexadecimal digits: FNV-1a over its
 * 8-byte words (little-endian; its last bytes one at a time), so that a
 * page checks the 20 KiB it shows in a few microseconds.
 */
#define HASH_LEN	16

static void
obj_hash(const char *p, size_t len, char *out)
{
	static const char	hex[] = "0123456789abcdef";
	const unsigned char	*u = (const unsigned char *)p;
	uint64_t		h = 0xcbf29ce484222325ULL, w;
	size_t			i;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&w, u + i, 8);
		h = (h ^ le64toh(w)) * 0x100000001b3ULL;
	}
	for (; i < len; i++)
		h = (h ^ u[i]) * 0x100000001b3ULL;
	h ^= h >> 32;
	for (i = HASH_LEN; i-- > 0; h >>= 4)
		out[i] = hex[h & 15];
	out[HASH_LEN] = '\0';
}

/* Whether a line's object is as it was written (no bit of it lost). */
static int
line_intact(const struct line *l)
{
	char	h[HASH_LEN + 1];

	obj_hash(l->json, l->json_len, h);
	return memcmp(h, l->hash, HASH_LEN) == 0;
}

/* Append s to b with its tabs and newlines made spaces. */
static void
put_field(struct buf *b, const char *s)
{
	const char	*p;

	for (p = s ? s : ""; *p != '\0'; p++)
		buf_putc(b, *p == '\t' || *p == '\n' || *p == '\r' ? ' ' :
		    *p);
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
	if ((text = json_dumps(obj, JSON_COMPACT)) == NULL)
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
	obj_hash(text, strlen(text), hash);
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
		rc = append(s, client, id, b.p, b.len);
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
	return append(s, client, id, line, strlen(line));
}

/*
 * Split the line at p (len bytes, no newline) into l; 0, or -1 when it is
 * not one of ours (the #prev line, a line cut short).
 */
static int
line_parse(const char *p, size_t len, struct line *l)
{
	const char	*f[10], *q, *end = p + len;
	size_t		 fl[10];
	int		 i;
	char		 num[24], id[SPOOL_ID_LEN + 1];

	memset(l, 0, sizeof(*l));
	if (len < SPOOL_ID_LEN + 2 || p[SPOOL_ID_LEN] != '\t')
		return -1;
	memcpy(id, p, SPOOL_ID_LEN);
	id[SPOOL_ID_LEN] = '\0';
	if (!ulid_valid(id))
		return -1;
	l->id = p;
	l->start = p;
	l->len = len;
	if (len == SPOOL_ID_LEN + 2 && p[SPOOL_ID_LEN + 1] == '-') {
		l->gone = 1;
		return 0;
	}
	for (i = 0, q = p; i < 10; i++) {
		const char *t = i < 9 ? memchr(q, '\t', (size_t)(end - q)) :
		    end;

		if (t == NULL)
			return -1;
		f[i] = q;
		fl[i] = (size_t)(t - q);
		q = t + 1;
	}
	l->status = f[1];
	l->status_len = fl[1];
	l->dir = f[2];
	l->dir_len = fl[2];
	l->channel = f[3];
	l->channel_len = fl[3];
	for (i = 4; i <= 5; i++) {
		if (fl[i] == 0 || fl[i] >= sizeof(num))
			return -1;
		memcpy(num, f[i], fl[i]);
		num[fl[i]] = '\0';
		if (i == 4)
			l->created = strtoll(num, NULL, 10);
		else
			l->at = strtoll(num, NULL, 10);
	}
	l->addr = f[6];
	l->addr_len = fl[6];
	l->ref = f[7];
	l->ref_len = fl[7];
	if (fl[8] != HASH_LEN)
		return -1;
	l->hash = f[8];
	l->json = f[9];
	l->json_len = fl[9];
	if (l->json_len == 0 || l->json[0] != '{')
		return -1;
	return 0;
}

/* Newest id first; of one id, its last line first. */
static int
line_cmp(const void *a, const void *b)
{
	const struct line	*x = a, *y = b;
	int			 c;

	if ((c = memcmp(y->id, x->id, SPOOL_ID_LEN)) != 0)
		return c;
	return x->seq < y->seq ? 1 : x->seq > y->seq ? -1 : 0;
}

/*
 * The lines of text (len bytes), each message's last only, newest
 * first, into *out (malloc'd); the count, or -1 out of memory.  A line
 * without its newline (being written) is left out.
 */
static ssize_t
fold(const char *text, size_t len, struct line **out)
{
	struct line	*v = NULL, *nv;
	const char	*p = text, *end = text + len, *nl;
	size_t		 n = 0, cap = 0, i, k;

	while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			if ((nv = reallocarray(v, cap, sizeof(*v))) == NULL) {
				free(v);
				return -1;
			}
			v = nv;
		}
		if (line_parse(p, (size_t)(nl - p), &v[n]) == 0) {
			v[n].seq = n;
			n++;
		}
		p = nl + 1;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), line_cmp);
	for (i = k = 0; i < n; i++)
		if (k == 0 || memcmp(v[k - 1].id, v[i].id, SPOOL_ID_LEN) != 0)
			v[k++] = v[i];
	*out = v;
	return (ssize_t)k;
}

/* ---- reading a page ---- */

struct page {
	struct spool		*s;
	const char		*client;
	const struct list_filter *f;
	time_t			 now;
	long			 retention;
	struct buf		*out;
	size_t			 n;
	char			 last[SPOOL_ID_LEN + 1];
	int			 more;		/* one past the page found */
	int			 inboxfd;	/* inbox/, opened when first needed */
};

static int
field_is(const char *p, size_t len, const char *s)
{
	return strlen(s) == len && memcmp(p, s, len) == 0;
}

/* Whether the status is one a message keeps until something acts. */
static int
status_final(int st)
{
	return st >= LIST_SENT;
}

/*
 * The current object of outbound message l from its file, when the line
 * may be behind it: a new JSON text (malloc'd) and its status; NULL when
 * there is no such message of this client (*gone set) or on error.
 */
static char *
from_file(struct page *pg, const struct line *l, int *st, int *gone)
{
	enum spool_dir	 dir;
	json_t		*doc = NULL, *obj;
	char		 id[SPOOL_ID_LEN + 1], name[SPOOL_NAME_MAX];
	char		 err[256], *text = NULL;
	const char	*status;
	int		 tries;

	*gone = 0;
	memcpy(id, l->id, SPOOL_ID_LEN);
	id[SPOOL_ID_LEN] = '\0';
	for (tries = 0; tries < 3; tries++) {
		if (spool_find(pg->s, id, &dir, name) == -1) {
			*gone = 1;
			return NULL;
		}
		if ((doc = spool_load(pg->s, dir, name, err,
		    sizeof(err))) != NULL)
			break;
		if (errno != ENOENT) {
			log_warn("lists: %s", err);
			*gone = 1;
			return NULL;
		}
	}
	if (doc == NULL) {
		*gone = 1;
		return NULL;
	}
	if (msgdoc_client(doc) == NULL ||
	    strcmp(msgdoc_client(doc), pg->client) != 0) {
		json_decref(doc);
		*gone = 1;
		return NULL;
	}
	status = msgdoc_status(doc, spool_dirname(dir));
	*st = list_status_parse(status, strlen(status));
	if ((obj = msgdoc_status_object(doc, spool_dirname(dir), 0)) != NULL) {
		text = json_dumps(obj, JSON_COMPACT);
		json_decref(obj);
	}
	json_decref(doc);
	return text;
}

/* The inbound object of client's inbound message id from its file, a
 * new JSON text; NULL when there is none of this client's. */
static char *
inbound_from_file(struct page *pg, const char *id)
{
	json_t	*doc, *obj;
	char	 err[256], *text = NULL;

	if ((doc = inbox_load(pg->s, id, err, sizeof(err))) == NULL)
		return NULL;
	if (inbox_client(doc) != NULL && strcmp(inbox_client(doc),
	    pg->client) == 0 && (obj = inbox_object(doc)) != NULL) {
		text = json_dumps(obj, JSON_COMPACT);
		json_decref(obj);
	}
	json_decref(doc);
	return text;
}

/* Whether state dir agrees with a line's status st (not final). */
static int
dir_agrees(enum spool_dir dir, int st)
{
	switch (st) {
	case LIST_QUEUED:
		return dir == SPOOL_NEW;
	case LIST_SCHEDULED:
	case LIST_RETRYING:
		return dir == SPOOL_DEFERRED;
	default:
		return 0;
	}
}

/* Whether a file of an area or state exists. */
static int
exists(struct spool *s, int dfd, const char *id)
{
	struct stat	st;
	char		name[SPOOL_NAME_MAX];

	(void)s;
	snprintf(name, sizeof(name), "%.*s.json", SPOOL_ID_LEN, id);
	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode);
}

/*
 * Consider line l (a message's current line) for the page: append its
 * object when it passes the filter.  1 when the page is full and one
 * more matched (stop), 0 to go on, -1 on error.
 */
static int
consider(struct page *pg, const struct line *l)
{
	const struct list_filter *f = pg->f;
	enum spool_dir	 dir;
	char		 name[SPOOL_NAME_MAX], id[SPOOL_ID_LEN + 1];
	char		*text = NULL;
	const char	*json = l->json;
	size_t		 json_len = l->json_len;
	int		 st, gone, inbound;

	if (l->gone)
		return 0;
	if (f->after != NULL && memcmp(l->id, f->after, SPOOL_ID_LEN) >= 0)
		return 0;
	inbound = field_is(l->dir, l->dir_len, "inbound");
	if (f->direction != -1 && inbound != (f->direction == LIST_INBOUND))
		return 0;
	if (f->channel != -1 && !field_is(l->channel, l->channel_len,
	    channel_info((enum channel)f->channel)->name))
		return 0;
	if (f->address != NULL && !field_is(l->addr, l->addr_len, f->address))
		return 0;
	if (f->reference != NULL && !field_is(l->ref, l->ref_len,
	    f->reference))
		return 0;
	if (f->since != -1 && l->created < (long long)f->since)
		return 0;
	if (f->until != -1 && l->created >= (long long)f->until)
		return 0;
	memcpy(id, l->id, SPOOL_ID_LEN);
	id[SPOOL_ID_LEN] = '\0';
	if (inbound) {
		if (f->statuses != 0)
			return 0;
		/* Its line comes before its file: the file decides (and
		 * it goes with inbox/'s pruning). */
		if (pg->inboxfd == -1 && (pg->inboxfd = spool_area(pg->s,
		    INBOX_AREA, 0)) == -1)
			return 0;
		if (!exists(pg->s, pg->inboxfd, l->id))
			return 0;
	} else {
		st = list_status_parse(l->status, l->status_len);
		if (st == -1)
			return 0;
		if (!status_final(st)) {
			/* Its file decides: it may have moved on. */
			if (spool_find(pg->s, id, &dir, name) == -1)
				return 0;
			if (!dir_agrees(dir, st)) {
				if ((text = from_file(pg, l, &st, &gone)) ==
				    NULL)
					return gone ? 0 : -1;
				json = text;
				json_len = strlen(text);
			}
		} else if (st <= LIST_UNDELIVERED && pg->retention > 0 &&
		    l->at < (long long)(pg->now - pg->retention +
		    PRUNE_SLACK) && !exists(pg->s,
		    spool_statefd(pg->s, SPOOL_SENT), l->id))
			return 0;
		if (st == -1 || (f->statuses != 0 &&
		    !(f->statuses & (1u << st)))) {
			free(text);
			return 0;
		}
	}
	/* A line damaged since it was written: its file tells instead. */
	if (text == NULL && !line_intact(l)) {
		if (inbound)
			text = inbound_from_file(pg, id);
		else if ((text = from_file(pg, l, &st, &gone)) != NULL &&
		    (st == -1 || (f->statuses != 0 &&
		    !(f->statuses & (1u << st))))) {
			free(text);
			return 0;
		}
		if (text == NULL)
			return 0;
		json = text;
		json_len = strlen(text);
	}
	if (pg->n == f->limit) {
		free(text);
		pg->more = 1;
		return 1;
	}
	if (pg->n > 0)
		buf_putc(pg->out, ',');
	buf_add(pg->out, json, json_len);
	free(text);
	memcpy(pg->last, id, SPOOL_ID_LEN + 1);
	pg->n++;
	return pg->out->failed ? -1 : 0;
}

/*
 * Read a segment's text, open by name in cfd: *text (malloc'd).  0, or
 * -1 with errno (ENOENT: it went, a rewriter's doing).
 */
static int
seg_read(int cfd, long long gen, const char *seg, char **text, size_t *len)
{
	char	name[32 + SPOOL_ID_LEN];
	int	fd, rc, e;

	seg_name(name, sizeof(name), gen, seg);
	if ((fd = openat(cfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return -1;
	rc = util_read_all(fd, SEG_MAX, text, len);
	e = errno;
	close(fd);
	errno = e;
	return rc;
}

/* The segment before this one, from its #prev line; "" when none. */
static void
seg_prev(const char *text, size_t len, long long gen, char *prev)
{
	const char	*seg;
	char		 name[64];
	size_t		 n;

	prev[0] = '\0';
	if (len < sizeof(PREV_TAG) || memcmp(text, PREV_TAG,
	    sizeof(PREV_TAG) - 1) != 0)
		return;
	text += sizeof(PREV_TAG) - 1;
	len -= sizeof(PREV_TAG) - 1;
	for (n = 0; n < len && n < sizeof(name) - 1 && text[n] != '\n'; n++)
		name[n] = text[n];
	name[n] = '\0';
	if (seg_of(name, gen, &seg))
		memcpy(prev, seg, SPOOL_ID_LEN + 1);
}

/*
 * The lines of text, folded, offered to the page in order.  1 when the
 * page is done, 0 to go on, -1 on error.
 */
static int
offer(struct page *pg, const char *text, size_t len)
{
	struct line	*v;
	ssize_t		 n, i;
	int		 rc = 0;

	if ((n = fold(text, len, &v)) == -1)
		return -1;
	for (i = 0; i < n && rc == 0; i++)
		rc = consider(pg, &v[i]);
	free(v);
	return rc;
}

/* Every message of client in the spool's files, as lines, into b. */
static int scan_client(struct spool *, const char *client, struct buf *b);

static int
page_from_index(struct page *pg, int cfd, int *restart)
{
	const struct list_filter *f = pg->f;
	struct head	 h;
	char		*text, seg[SPOOL_ID_LEN + 1], prev[SPOOL_ID_LEN + 1];
	size_t		 len;
	int		 hfd, rc = 0;
	long long	 stop_ms;

	*restart = 0;
	if ((hfd = openat(cfd, HEAD_NAME, O_RDONLY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return errno == ENOENT ? 0 : -1;
	rc = head_read(hfd, &h);
	close(hfd);
	if (rc == -1) {
		*restart = 1;
		return 0;
	}
	if (h.seg[0] == '\0')
		return 0;
	memcpy(seg, h.seg, SPOOL_ID_LEN + 1);
	/* A cursor: the segments from the one that holds it, not newer. */
	if (f->after != NULL && strcmp(f->after, h.seg) <= 0 &&
	    seg_find(cfd, h.gen, f->after, seg) == -1)
		return errno == ENOENT ? 0 : -1;
	stop_ms = f->since != -1 ? ((long long)f->since - CREATED_SLACK) *
	    1000 : -1;
	for (;;) {
		if (seg_read(cfd, h.gen, seg, &text, &len) == -1) {
			if (errno == ENOENT) {
				*restart = 1;
				return 0;
			}
			return -1;
		}
		seg_prev(text, len, h.gen, prev);
		rc = offer(pg, text, len);
		free(text);
		if (rc != 0)
			return rc == 1 ? 0 : -1;
		/* Everything before this segment is older than since. */
		if (prev[0] == '\0' || (stop_ms != -1 && ulid_time(seg) <
		    stop_ms))
			return 0;
		memcpy(seg, prev, SPOOL_ID_LEN + 1);
	}
}

int
list_page(struct spool *s, const char *client, const struct list_filter *f,
    time_t now, long retention, struct buf *out, size_t *n, char *next)
{
	struct list_filter fc = *f;
	struct page	 pg;
	struct buf	 b = { 0 };
	char		 after[SPOOL_ID_LEN + 1];
	struct stat	 st;
	size_t		 mark = out->len;
	int		 afd, cfd, tries, restart, e, rc = -1;

	/* The cursor may be where the next one goes. */
	if (f->after != NULL) {
		snprintf(after, sizeof(after), "%s", f->after);
		fc.after = after;
	}
	memset(&pg, 0, sizeof(pg));
	pg.s = s;
	pg.client = client;
	pg.f = &fc;
	pg.now = now;
	pg.retention = retention;
	pg.out = out;
	pg.inboxfd = -1;
	next[0] = '\0';
	*n = 0;
	/* lists/ opened once: whether it was built, then the client's. */
	afd = spool_area(s, LIST_AREA, 0);
	if (afd == -1 || fstatat(afd, BUILT_NAME, &st,
	    AT_SYMLINK_NOFOLLOW) == -1) {
		if (afd != -1)
			close(afd);
		/* Never built: every file is read, nothing left out. */
		if (scan_client(s, client, &b) == 0)
			rc = offer(&pg, b.p ? b.p : "", b.len) == -1 ? -1 : 0;
		buf_free(&b);
		goto done;
	}
	if (!valid_client_id(client)) {
		close(afd);
		errno = EINVAL;
		goto done;
	}
	cfd = spool_subdir(afd, client, 0);
	e = errno;
	close(afd);
	if (cfd == -1) {
		rc = e == ENOENT ? 0 : -1;
		errno = e;
		goto done;
	}
	for (tries = 0; tries < PAGE_TRIES; tries++) {
		out->len = mark;
		if (out->p != NULL)
			out->p[mark] = '\0';
		pg.n = 0;
		pg.more = 0;
		if ((rc = page_from_index(&pg, cfd, &restart)) == -1 ||
		    !restart)
			break;
	}
	close(cfd);
done:
	if (pg.inboxfd != -1)
		close(pg.inboxfd);
	if (rc == 0) {
		*n = pg.n;
		if (pg.more)
			memcpy(next, pg.last, SPOOL_ID_LEN + 1);
	}
	return rc;
}

/* ---- the spool's files as lines: reindex, recover, unbuilt lists ---- */

struct scan {
	struct spool	*s;
	const char	*client;	/* only its; NULL: every client's */
	long long	 since_ms;	/* sent/, failed/, inbox/: ids since */
	int		 only_queue;	/* recover: new/, deferred/, cur/ */
	int		 (*fn)(struct scan *, const char *client,
			    const char *id, const char *line, size_t len);
	void		*arg;
	list_progress_fn *progress;
	void		*parg;
	size_t		 done, total;
	int		 inboxfd;	/* inbox/, -1 when there is none */
};

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

static int
scan_spool(struct scan *sc)
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

static int
scan_client(struct spool *s, const char *client, struct buf *b)
{
	struct scan	sc;

	memset(&sc, 0, sizeof(sc));
	sc.s = s;
	sc.client = client;
	sc.fn = to_buf;
	sc.arg = b;
	return scan_spool(&sc);
}

static int
to_note(struct scan *sc, const char *client, const char *id,
    const char *line, size_t len)
{
	size_t	*n = sc->arg;

	if (append(sc->s, client, id, line, len) == 0)
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
	scan_spool(&sc);
	return n;
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

/* ---- rewriting segments ---- */

/*
 * Take the rewriters' lock of lists/ (afd): one rewriter at a time, so
 * that a reindex's count of what was appended meanwhile stays true.
 */
static int
rewrite_lock(int afd)
{
	int	fd, e;

	if ((fd = openat(afd, REWRITE_LOCK, O_RDWR | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, SPOOL_FILE_MODE | 0020)) == -1)
		return -1;
	while (flock(fd, LOCK_EX) == -1)
		if (errno != EINTR) {
			e = errno;
			close(fd);
			errno = e;
			return -1;
		}
	return fd;
}

/*
 * Write text as segment gen.seg of cfd, replacing it: a temporary file
 * renamed over it.  0, or -1 with errno.
 */
static int
seg_replace(int cfd, long long gen, const char *seg, const char *text,
    size_t len)
{
	char	name[32 + SPOOL_ID_LEN], tmp[64 + SPOOL_ID_LEN +
		    NETFS_HOST_MAX], host[NETFS_HOST_MAX + 1];
	int	fd, e;

	seg_name(name, sizeof(name), gen, seg);
	snprintf(tmp, sizeof(tmp), ".%s.%s.%ld", name,
	    netfs_hostname(host, sizeof(host)), (long)getpid());
	if ((fd = openat(cfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, SPOOL_FILE_MODE | 0020)) == -1)
		return -1;
	if (util_write_all(fd, text, len) == -1 || close(fd) == -1 ||
	    renameat(cfd, tmp, cfd, name) == -1) {
		e = errno;
		unlinkat(cfd, tmp, 0);
		errno = e;
		return -1;
	}
	return 0;
}

/* The #prev line of a segment of gen into b ("" when prev is ""). */
static void
put_prev(struct buf *b, long long gen, const char *prev)
{
	char	line[64 + SPOOL_ID_LEN];

	if (prev == NULL || *prev == '\0')
		return;
	snprintf(line, sizeof(line), PREV_TAG "%lld.%s\n", gen, prev);
	buf_puts(b, line);
}

static int	 relink(int, const struct head *);

/*
 * What a rewrite does with a message's last line: keep it, or drop the
 * message (every line of it).
 */
typedef int	 keep_fn(void *arg, const char *text, size_t len,
		    const struct line *last);

/*
 * Rewrite each segment of the client whose directory is cfd (its head
 * locked by the caller), keeping the messages keep says to keep: each
 * folded to its last line when fold_kept is set, else every line of it
 * as it was.  Returns how many messages were dropped, or -1.
 */
static ssize_t
rewrite_client(int cfd, const struct head *h, keep_fn *keep, void *arg,
    int fold_kept)
{
	struct buf	 b = { 0 };
	struct line	*v, pl;
	char		**segs, *text, prev[SPOOL_ID_LEN + 1];
	const char	*p, *end, *nl;
	ssize_t		 nseg, k, nv, i, dropped = 0;
	size_t		 len, nlines;
	int		 changed;

	if ((nseg = seg_list(cfd, h->gen, &segs)) == -1)
		return -1;
	for (k = 0; k < nseg; k++) {
		if (seg_read(cfd, h->gen, segs[k], &text, &len) == -1) {
			if (errno == ENOENT)
				continue;
			dropped = -1;
			break;
		}
		if ((nv = fold(text, len, &v)) == -1) {
			free(text);
			dropped = -1;
			break;
		}
		changed = 0;
		/* Mark the dropped: their id's first byte zeroed in v. */
		for (i = 0; i < nv; i++)
			if (!keep(arg, text, len, &v[i])) {
				v[i].len = 0;
				changed = 1;
				dropped++;
			}
		nlines = 0;
		for (p = text, end = text + len; p < end && (nl = memchr(p,
		    '\n', (size_t)(end - p))) != NULL; p = nl + 1)
			if (line_parse(p, (size_t)(nl - p), &pl) == 0)
				nlines++;
		if (fold_kept && (size_t)nv < nlines)
			changed = 1;
		if (changed) {
			b.len = 0;
			b.failed = 0;
			seg_prev(text, len, h->gen, prev);
			put_prev(&b, h->gen, prev);
			if (fold_kept) {
				/* Oldest first, as appended. */
				for (i = nv; i-- > 0;)
					if (v[i].len > 0) {
						buf_add(&b, v[i].start,
						    v[i].len);
						buf_putc(&b, '\n');
					}
			} else
				for (p = text; p < end && (nl = memchr(p,
				    '\n', (size_t)(end - p))) != NULL;
				    p = nl + 1) {
					if (line_parse(p, (size_t)(nl - p),
					    &pl) == 0) {
						/* Dropped: its last line
						 * has len 0. */
						for (i = 0; i < nv; i++)
							if (memcmp(v[i].id,
							    pl.id,
							    SPOOL_ID_LEN) == 0)
								break;
						if (i < nv && v[i].len == 0)
							continue;
					}
					if (p == text && memcmp(p, PREV_TAG,
					    sizeof(PREV_TAG) - 1) == 0)
						continue;
					buf_add(&b, p, (size_t)(nl - p) + 1);
				}
			if (b.failed || seg_replace(cfd, h->gen, segs[k],
			    b.p ? b.p : "", b.len) == -1) {
				free(v);
				free(text);
				dropped = -1;
				break;
			}
		}
		free(v);
		free(text);
	}
	buf_free(&b);
	spool_names_free(segs, (size_t)nseg);
	if (dropped > 0 && relink(cfd, h) == -1)
		log_warn("lists: the segments left empty stay: %s",
		    strerror(errno));
	return dropped;
}

/* Whether a segment's text holds a line of a message. */
static int
seg_has_lines(const char *text, size_t len)
{
	const char	*p, *end = text + len, *nl;
	struct line	 l;

	for (p = text; p < end && (nl = memchr(p, '\n', (size_t)(end - p))) !=
	    NULL; p = nl + 1)
		if (line_parse(p, (size_t)(nl - p), &l) == 0)
			return 1;
	return 0;
}

/*
 * Remove the segments a rewrite left empty (but the newest, where the
 * next message goes): each one's successor names the segment before it
 * first, then it goes; a reader on the old chain finds it gone and
 * starts again.  Its ids belong to the segment before it from then on.
 */
static int
relink(int cfd, const struct head *h)
{
	struct buf	 b = { 0 };
	char		**segs, *text, prev[SPOOL_ID_LEN + 1];
	char		 name[32 + SPOOL_ID_LEN];
	const char	*nl;
	size_t		 len;
	ssize_t		 n, i, k;
	int		*keep, rc = 0;

	if ((n = seg_list(cfd, h->gen, &segs)) <= 0)
		return n == -1 ? -1 : 0;
	if ((keep = calloc((size_t)n, sizeof(*keep))) == NULL) {
		spool_names_free(segs, (size_t)n);
		return -1;
	}
	for (i = 0; i < n; i++) {
		keep[i] = 1;
		if (strcmp(segs[i], h->seg) == 0)
			continue;
		if (seg_read(cfd, h->gen, segs[i], &text, &len) == 0) {
			keep[i] = seg_has_lines(text, len);
			free(text);
		}
	}
	/* Newest first: each kept one names the next kept one down. */
	for (i = 0; i < n && rc == 0; i++) {
		if (!keep[i])
			continue;
		for (k = i + 1; k < n && !keep[k]; k++)
			;
		if (k == i + 1)
			continue;	/* its #prev stands */
		if (seg_read(cfd, h->gen, segs[i], &text, &len) == -1) {
			rc = -1;
			break;
		}
		seg_prev(text, len, h->gen, prev);
		b.len = 0;
		b.failed = 0;
		put_prev(&b, h->gen, k < n ? segs[k] : "");
		if (prev[0] != '\0' && (nl = memchr(text, '\n', len)) != NULL)
			buf_add(&b, nl + 1, len - (size_t)(nl + 1 - text));
		else
			buf_add(&b, text, len);
		free(text);
		if (b.failed || seg_replace(cfd, h->gen, segs[i], b.p ? b.p :
		    "", b.len) == -1)
			rc = -1;
	}
	for (i = 0; i < n && rc == 0; i++)
		if (!keep[i]) {
			seg_name(name, sizeof(name), h->gen, segs[i]);
			unlinkat(cfd, name, 0);
		}
	buf_free(&b);
	free(keep);
	spool_names_free(segs, (size_t)n);
	return rc;
}

/*
 * Run fn on each client of lists/ under its head's lock, with the
 * rewriters' lock held; only client's when it is not NULL.
 */
static ssize_t
each_client(struct spool *s, const char *client,
    ssize_t (*fn)(void *, const char *, int, struct head *), void *arg)
{
	DIR		*dir;
	struct dirent	*de;
	struct head	 h;
	char		**v = NULL, **nv;
	size_t		 n = 0, cap = 0, i;
	ssize_t		 total = 0, r;
	int		 afd, lfd, cfd, hfd, fd;

	if ((afd = spool_area(s, LIST_AREA, 0)) == -1)
		return errno == ENOENT ? 0 : -1;
	if ((lfd = rewrite_lock(afd)) == -1) {
		close(afd);
		return -1;
	}
	if ((fd = dup(afd)) != -1 && (dir = fdopendir(fd)) != NULL) {
		while ((de = readdir(dir)) != NULL) {
			if (!valid_client_id(de->d_name) || (client != NULL &&
			    strcmp(client, de->d_name) != 0))
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				if ((nv = reallocarray(v, cap,
				    sizeof(*v))) == NULL)
					break;
				v = nv;
			}
			if ((v[n] = strdup(de->d_name)) == NULL)
				break;
			n++;
		}
		closedir(dir);
	} else if (fd != -1)
		close(fd);
	for (i = 0; i < n; i++) {
		if ((cfd = spool_subdir(afd, v[i], 0)) == -1)
			continue;
		if ((hfd = head_lock(cfd, 0)) != -1) {
			if (head_read(hfd, &h) == 0 && h.seg[0] != '\0' &&
			    (r = fn(arg, v[i], cfd, &h)) > 0)
				total += r;
			close(hfd);
		}
		close(cfd);
	}
	spool_names_free(v, n);
	close(lfd);
	close(afd);
	return total;
}

/* ---- compacting ---- */

struct compact {
	struct spool	*s;
	time_t		 now;
	long		 retention;
	int		 inboxfd;
};

static int
compact_keep(void *arg, const char *text, size_t len, const struct line *l)
{
	struct compact	*c = arg;
	enum spool_dir	 dir;
	char		 id[SPOOL_ID_LEN + 1], name[SPOOL_NAME_MAX];
	int		 st;

	(void)text;
	(void)len;
	if (l->gone)
		return 0;
	memcpy(id, l->id, SPOOL_ID_LEN);
	id[SPOOL_ID_LEN] = '\0';
	if (field_is(l->dir, l->dir_len, "inbound"))
		return c->retention <= 0 || l->at >= (long long)(c->now -
		    c->retention) || c->inboxfd == -1 ||
		    exists(c->s, c->inboxfd, id);
	st = list_status_parse(l->status, l->status_len);
	if (st >= LIST_SENT && st <= LIST_UNDELIVERED)
		return c->retention <= 0 || l->at >= (long long)(c->now -
		    c->retention) || exists(c->s, spool_statefd(c->s,
		    SPOOL_SENT), id);
	if (status_final(st))
		return 1;
	/* Not final: never accepted (a writer killed), or moved on. */
	return l->at >= (long long)(c->now - STALE_AGE) ||
	    spool_find(c->s, id, &dir, name) == 0;
}

static ssize_t
compact_client(void *arg, const char *client, int cfd, struct head *h)
{
	(void)client;
	return rewrite_client(cfd, h, compact_keep, arg, 1);
}

size_t
list_compact(struct spool *s, time_t now, long retention)
{
	struct compact	c = { s, now, retention, -1 };
	ssize_t		n;

	c.inboxfd = spool_area(s, INBOX_AREA, 0);
	n = each_client(s, NULL, compact_client, &c);
	if (c.inboxfd != -1)
		close(c.inboxfd);
	return n > 0 ? (size_t)n : 0;
}

/* ---- erasing ---- */

struct erase {
	const char *const *needles;
	json_t		*ids;
};

static int
erase_keep(void *arg, const char *text, size_t len, const struct line *l)
{
	struct erase	*e = arg;
	const char	*p, *end = text + len, *nl;
	struct line	 pl;
	size_t		 k;
	char		 id[SPOOL_ID_LEN + 1];

	/* Any line of the message that names a needle. */
	for (p = text; p < end && (nl = memchr(p, '\n', (size_t)(end - p))) !=
	    NULL; p = nl + 1) {
		if (line_parse(p, (size_t)(nl - p), &pl) == -1 ||
		    memcmp(pl.id, l->id, SPOOL_ID_LEN) != 0)
			continue;
		for (k = 0; e->needles[k] != NULL; k++)
			if (*e->needles[k] != '\0' && memmem(p,
			    (size_t)(nl - p), e->needles[k],
			    strlen(e->needles[k])) != NULL) {
				if (e->ids != NULL) {
					memcpy(id, l->id, SPOOL_ID_LEN);
					id[SPOOL_ID_LEN] = '\0';
					json_array_append_new(e->ids,
					    json_string(id));
				}
				return 0;
			}
	}
	return 1;
}

static ssize_t
erase_client(void *arg, const char *client, int cfd, struct head *h)
{
	(void)client;
	return rewrite_client(cfd, h, erase_keep, arg, 0);
}

ssize_t
list_erase(struct spool *s, const char *client, const char *const *needles,
    json_t *ids)
{
	struct erase	e = { needles, ids };

	return each_client(s, client, erase_client, &e);
}

/* ---- rebuilding ---- */

/* A client's lines gathered by a reindex. */
struct gathered {
	char		 client[256];
	struct buf	 b;
	/* The segments of its current generation and their sizes when the
	 * reading began: what lies past them was appended since. */
	char		**segs;
	off_t		*sizes;
	size_t		 nsegs;
	long long	 gen;
	int		 had_head;
};

struct reindex {
	struct gathered	*v;
	size_t		 n, cap;
	size_t		 listed;
};

static struct gathered *
gathered_of(struct reindex *r, const char *client)
{
	struct gathered	*nv;
	size_t		 i;

	for (i = 0; i < r->n; i++)
		if (strcmp(r->v[i].client, client) == 0)
			return &r->v[i];
	if (strlen(client) >= sizeof(r->v[0].client))
		return NULL;
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 16;
		if ((nv = reallocarray(r->v, r->cap, sizeof(*nv))) == NULL)
			return NULL;
		r->v = nv;
	}
	memset(&r->v[r->n], 0, sizeof(r->v[r->n]));
	snprintf(r->v[r->n].client, sizeof(r->v[r->n].client), "%s", client);
	return &r->v[r->n++];
}

static int
to_gathered(struct scan *sc, const char *client, const char *id,
    const char *line, size_t len)
{
	struct reindex	*r = sc->arg;
	struct gathered	*g;

	(void)id;
	if ((g = gathered_of(r, client)) == NULL)
		return -1;
	r->listed++;
	return buf_add(&g->b, line, len);
}

/* Note the sizes of client's segments now (head locked meanwhile). */
static int
note_sizes(struct spool *s, struct gathered *g)
{
	struct head	 h;
	struct stat	 st;
	char		 name[32 + SPOOL_ID_LEN];
	ssize_t		 n, i;
	int		 cfd, hfd;

	if ((cfd = client_dir(s, g->client, 0)) == -1)
		return errno == ENOENT ? 0 : -1;
	if ((hfd = head_lock(cfd, 0)) == -1) {
		close(cfd);
		return errno == ENOENT ? 0 : -1;
	}
	if (head_read(hfd, &h) == 0) {
		g->had_head = 1;
		g->gen = h.gen;
		if ((n = seg_list(cfd, h.gen, &g->segs)) > 0) {
			g->nsegs = (size_t)n;
			g->sizes = calloc((size_t)n, sizeof(*g->sizes));
			for (i = 0; i < n && g->sizes != NULL; i++) {
				seg_name(name, sizeof(name), h.gen,
				    g->segs[i]);
				if (fstatat(cfd, name, &st,
				    AT_SYMLINK_NOFOLLOW) == 0)
					g->sizes[i] = st.st_size;
			}
		}
	}
	close(hfd);
	close(cfd);
	return 0;
}

/* Which recorded size a segment of the old generation had; 0: none. */
static off_t
size_then(const struct gathered *g, const char *seg)
{
	size_t	i;

	for (i = 0; i < g->nsegs; i++)
		if (strcmp(g->segs[i], seg) == 0)
			return g->sizes ? g->sizes[i] : 0;
	return 0;
}

/*
 * Swap in client g's new generation: what was read, then what was
 * appended to the old one since; under its head's lock.
 */
static int
swap_in(struct spool *s, struct gathered *g, list_progress_fn *progress,
    void *parg, size_t *written, size_t total)
{
	struct head	 h, nh;
	struct line	*v = NULL;
	struct buf	 tail = { 0 }, seg = { 0 };
	char		**old = NULL, *text, name[32 + SPOOL_ID_LEN];
	char		 first[SPOOL_ID_LEN + 1], prev[SPOOL_ID_LEN + 1];
	const char	*p, *end, *nl;
	struct line	 pl;
	ssize_t		 nv = 0, nold = 0, i, k;
	size_t		 len;
	off_t		 from;
	int		 cfd, hfd = -1, rc = -1;

	if ((cfd = client_dir(s, g->client, 1)) == -1)
		return -1;
	if ((hfd = head_lock(cfd, 1)) == -1 || head_read(hfd, &h) == -1)
		goto out;
	/* What the old generation got since the reading began. */
	if (h.seg[0] != '\0' && (nold = seg_list(cfd, h.gen, &old)) == -1)
		goto out;
	for (k = nold; k-- > 0;) {
		if (seg_read(cfd, h.gen, old[k], &text, &len) == -1)
			continue;
		from = g->had_head && g->gen == h.gen ? size_then(g, old[k]) :
		    0;
		for (p = text + (from < (off_t)len ? from : (off_t)len),
		    end = text + len; p < end && (nl = memchr(p, '\n',
		    (size_t)(end - p))) != NULL; p = nl + 1)
			if (line_parse(p, (size_t)(nl - p), &pl) == 0)
				buf_add(&tail, p, (size_t)(nl - p) + 1);
		free(text);
	}
	/* What was read, newest first: one line a message. */
	if (g->b.len > 0 && (nv = fold(g->b.p, g->b.len, &v)) == -1)
		goto out;
	memset(&nh, 0, sizeof(nh));
	nh.gen = h.gen + 1;
	prev[0] = '\0';
	/* Segments from the oldest: each up to SEG_BYTES. */
	for (i = nv; i-- > 0;) {
		if (seg.len == 0) {
			memcpy(first, v[i].id, SPOOL_ID_LEN);
			first[SPOOL_ID_LEN] = '\0';
			put_prev(&seg, nh.gen, prev);
		}
		buf_add(&seg, v[i].start, v[i].len);
		buf_putc(&seg, '\n');
		if (seg.len >= SEG_BYTES || i == 0) {
			if (seg.failed || seg_replace(cfd, nh.gen, first,
			    seg.p, seg.len) == -1)
				goto out;
			memcpy(prev, first, SPOOL_ID_LEN + 1);
			memcpy(nh.seg, first, SPOOL_ID_LEN + 1);
			memcpy(nh.max, v[0].id, SPOOL_ID_LEN);
			nh.max[SPOOL_ID_LEN] = '\0';
			seg.len = 0;
			(*written)++;
			if (progress != NULL)
				progress(parg, "writing", *written, total);
		}
	}
	if (nh.seg[0] == '\0' && tail.len > 0) {
		/* Nothing read, only appended: from the tail's least id. */
		if ((nv = fold(tail.p, tail.len, &v)) <= 0)
			goto out;
		memcpy(nh.seg, v[nv - 1].id, SPOOL_ID_LEN);
		memcpy(nh.max, v[0].id, SPOOL_ID_LEN);
		free(v);
		v = NULL;
		if (seg_replace(cfd, nh.gen, nh.seg, "", 0) == -1)
			goto out;
	}
	if (nh.seg[0] != '\0') {
		/* The lines appended meanwhile, after, in their order. */
		for (p = tail.p, end = tail.p + tail.len; p != NULL && p < end &&
		    (nl = memchr(p, '\n', (size_t)(end - p))) != NULL;
		    p = nl + 1) {
			char	 at[SPOOL_ID_LEN + 1];
			int	 fd;

			memcpy(at, p, SPOOL_ID_LEN);
			at[SPOOL_ID_LEN] = '\0';
			if (strcmp(at, nh.max) > 0)
				memcpy(nh.max, at, SPOOL_ID_LEN + 1);
			if (strcmp(at, nh.seg) >= 0)
				memcpy(first, nh.seg, SPOOL_ID_LEN + 1);
			else if (seg_find(cfd, nh.gen, at, first) == -1)
				goto out;
			if ((fd = seg_open_append(cfd, nh.gen, first, NULL)) ==
			    -1)
				goto out;
			if (util_write_all(fd, p, (size_t)(nl - p) + 1) ==
			    -1) {
				close(fd);
				goto out;
			}
			close(fd);
		}
		if (head_write(hfd, &nh) == -1)
			goto out;
	} else if (h.seg[0] != '\0') {
		/* Nothing at all now: an empty list. */
		memset(&nh, 0, sizeof(nh));
		if (pwrite(hfd, "", 0, 0) == -1 || ftruncate(hfd, 0) == -1)
			goto out;
	}
	/* The old generation goes. */
	for (k = 0; k < nold; k++) {
		seg_name(name, sizeof(name), h.gen, old[k]);
		unlinkat(cfd, name, 0);
	}
	rc = 0;
out:
	free(v);
	buf_free(&tail);
	buf_free(&seg);
	spool_names_free(old, nold > 0 ? (size_t)nold : 0);
	if (hfd != -1)
		close(hfd);
	close(cfd);
	return rc;
}

ssize_t
list_reindex(struct spool *s, list_progress_fn *progress, void *parg,
    char *err, size_t errlen)
{
	struct reindex	 r;
	struct scan	 sc;
	struct gathered	*g;
	DIR		*dir;
	struct dirent	*de;
	size_t		 i, written = 0;
	ssize_t		 rc = -1;
	int		 afd, lfd = -1, fd;

	memset(&r, 0, sizeof(r));
	if ((afd = spool_area(s, LIST_AREA, 1)) == -1) {
		util_seterr(err, errlen, "%s/%s: %s", spool_root(s),
		    LIST_AREA, strerror(errno));
		return -1;
	}
	if ((lfd = rewrite_lock(afd)) == -1) {
		util_seterr(err, errlen, "%s/%s/%s: %s", spool_root(s),
		    LIST_AREA, REWRITE_LOCK, strerror(errno));
		goto out;
	}
	/* Every client listed now, and how far each segment went. */
	if ((fd = dup(afd)) != -1 && (dir = fdopendir(fd)) != NULL) {
		while ((de = readdir(dir)) != NULL)
			if (valid_client_id(de->d_name) &&
			    gathered_of(&r, de->d_name) == NULL)
				break;
		closedir(dir);
	} else if (fd != -1)
		close(fd);
	for (i = 0; i < r.n; i++)
		if (note_sizes(s, &r.v[i]) == -1) {
			util_seterr(err, errlen, "%s/%s/%s: %s",
			    spool_root(s), LIST_AREA, r.v[i].client,
			    strerror(errno));
			goto out;
		}
	memset(&sc, 0, sizeof(sc));
	sc.s = s;
	sc.fn = to_gathered;
	sc.arg = &r;
	sc.progress = progress;
	sc.parg = parg;
	if (scan_spool(&sc) == -1) {
		util_seterr(err, errlen, "reading the spool: %s",
		    strerror(errno ? errno : ENOMEM));
		goto out;
	}
	for (i = 0; i < r.n; i++) {
		g = &r.v[i];
		if (swap_in(s, g, progress, parg, &written,
		    r.listed / 64 + r.n) == -1) {
			util_seterr(err, errlen, "%s/%s/%s: %s",
			    spool_root(s), LIST_AREA, g->client,
			    strerror(errno));
			goto out;
		}
	}
	if ((fd = openat(afd, BUILT_NAME, O_WRONLY | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, SPOOL_FILE_MODE)) == -1) {
		util_seterr(err, errlen, "%s/%s/%s: %s", spool_root(s),
		    LIST_AREA, BUILT_NAME, strerror(errno));
		goto out;
	}
	close(fd);
	rc = (ssize_t)r.listed;
out:
	for (i = 0; i < r.n; i++) {
		buf_free(&r.v[i].b);
		spool_names_free(r.v[i].segs, r.v[i].nsegs);
		free(r.v[i].sizes);
	}
	free(r.v);
	if (lfd != -1)
		close(lfd);
	close(afd);
	return rc;
}
