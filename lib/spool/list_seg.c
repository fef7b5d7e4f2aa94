/*
 * list_seg.c: the files of a client's list (msgspool-spool(5), Lists):
 * its directory and head, its segments, and their lines parsed and
 * folded to each message's last.
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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/openat2.h>

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

/* ---- the client's directory and its head ---- */

/* The fd of lists/CLIENT, made when create is set; -1 with errno. */
int
list_client_dir(struct spool *s, const char *client, int create)
{
	struct open_how	 how;
	char		 path[sizeof(LIST_AREA) + CLIENT_ID_MAX + 2];
	int		 afd, fd, e;

	if (!valid_client_id(client)) {
		errno = EINVAL;
		return -1;
	}
	/*
	 * One look-up under the root, through no symbolic link (as
	 * O_NOFOLLOW refuses one of each name below); the way below when
	 * the kernel has no openat2 or the list is to be made.
	 */
	memset(&how, 0, sizeof(how));
	how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
	how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
	snprintf(path, sizeof(path), LIST_AREA "/%s", client);
	if ((fd = (int)syscall(SYS_openat2, s->rootfd, path, &how,
	    sizeof(how))) != -1 || (errno != ENOSYS && errno != EPERM &&
	    (errno != ENOENT || !create)))
		return fd;
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
int
list_head_read(int fd, struct head *h)
{
	char	buf[HEAD_LEN + 2];
	ssize_t	n;

	if ((n = pread(fd, buf, sizeof(buf), 0)) == -1)
		return -1;
	if (head_parse(buf, (size_t)n, h) == -1) {
		errno = EINVAL;
		return -1;
	}
	h->len = (size_t)n;
	return 0;
}

int
list_head_write(int fd, const struct head *h)
{
	char	buf[HEAD_LEN + 1];
	int	n;

	n = snprintf(buf, sizeof(buf), "%lld %s %s\n", h->gen, h->seg,
	    h->max);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return -1;
	if (pwrite(fd, buf, (size_t)n, 0) != n)
		return -1;
	/* Written over a head no longer than this one: nothing to cut. */
	if (h->len > 0 && h->len <= (size_t)n)
		return 0;
	return ftruncate(fd, n);
}

/* Lock fd's whole file (exclusive, waiting): 0, or -1 with errno. */
int
list_lock_fd(int fd)
{
	return util_lock_range(fd, F_WRLCK, 0, 0);
}

/*
 * Open and lock (exclusive, waiting) the head of the client whose
 * directory is cfd.  The fd; closing it lets go.  -1 with errno.
 */
int
list_head_lock(int cfd, int create)
{
	int	fd, e;

	fd = openat(cfd, HEAD_NAME, O_RDWR | O_NOFOLLOW | O_CLOEXEC |
	    (create ? O_CREAT : 0), SPOOL_FILE_MODE | 0020);
	if (fd == -1)
		return -1;
	if (list_lock_fd(fd) == -1) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* "GEN.SEG" into buf. */
void
list_seg_name(char *buf, size_t len, long long gen, const char *seg)
{
	snprintf(buf, len, "%lld.%s", gen, seg);
}

/* Whether name is a segment of gen; its id then at *seg. */
int
list_seg_of(const char *name, long long gen, const char **seg)
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

	return list_seg_of(name, *(const long long *)arg, &seg);
}

/*
 * The segments of gen in cfd, newest first: their ids (malloc'd
 * strings).  The count, or -1 with errno.
 */
ssize_t
list_seg_list(int cfd, long long gen, char ***out)
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
int
list_seg_find(int cfd, long long gen, const char *id, char *seg)
{
	char	**v;
	ssize_t	  n, i;

	if ((n = list_seg_list(cfd, gen, &v)) == -1)
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

/*
 * A late id is in one of the last few segments, and a list of a million
 * messages has tens of thousands of them: the #prev lines are followed
 * back (SEG_WALK_MAX at most) before list_seg_find lists them all.
 */
int
list_seg_find_back(int cfd, long long gen, const char *from, const char *id,
    char *seg, char *next, struct seg_walk *walk)
{
	struct seg_walk	 mine;
	char		 name[32 + SPOOL_ID_LEN], line[64 + SPOOL_ID_LEN];
	ssize_t		 n;
	size_t		 i;
	int		 fd;

	if (walk == NULL) {
		walk = &mine;
		walk->n = 0;
	}
	if (walk->n == 0 || strcmp(walk->seg[0], from) != 0) {
		memcpy(walk->seg[0], from, SPOOL_ID_LEN + 1);
		walk->n = 1;
	}
	next[0] = '\0';
	for (i = 0;;) {
		/* The newest walked not above id; the one after it bounds. */
		for (; i < walk->n; i++)
			if (strcmp(walk->seg[i], id) <= 0) {
				memcpy(seg, walk->seg[i], SPOOL_ID_LEN + 1);
				if (i > 0)
					memcpy(next, walk->seg[i - 1],
					    SPOOL_ID_LEN + 1);
				return 0;
			}
		if (walk->n == SEG_WALK_MAX)
			break;
		list_seg_name(name, sizeof(name), gen, walk->seg[walk->n - 1]);
		if ((fd = openat(cfd, name, O_RDONLY | O_NOFOLLOW |
		    O_CLOEXEC)) == -1)
			break;
		n = pread(fd, line, sizeof(line), 0);
		close(fd);
		if (n <= 0)
			break;
		list_seg_prev(line, (size_t)n, gen, walk->seg[walk->n]);
		if (walk->seg[walk->n][0] == '\0')
			break;
		walk->n++;
	}
	return list_seg_find(cfd, gen, id, seg);
}

/* Open a segment for appending (made with its #prev line when new). */
int
list_seg_open_append(int cfd, long long gen, const char *seg, const char *prev)
{
	char	name[32 + SPOOL_ID_LEN], line[64 + SPOOL_ID_LEN];
	int	fd, n;

	list_seg_name(name, sizeof(name), gen, seg);
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

/* ---- lines ---- */

/*
 * The hash of a line's object, 16 hexadecimal digits: FNV-1a over its
 * 8-byte words (little-endian; its last bytes one at a time), so that a
 * page checks the 20 KiB it shows in a few microseconds.
 */

void
list_obj_hash(const char *p, size_t len, char *out)
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
int
list_line_intact(const struct line *l)
{
	char	h[HASH_LEN + 1];

	list_obj_hash(l->json, l->json_len, h);
	return memcmp(h, l->hash, HASH_LEN) == 0;
}

/*
 * Split the line at p (len bytes, no newline) into l; 0, or -1 when it is
 * not one of ours (the #prev line, a line cut short).
 */
/*
 * The number field p[0..n) (n < 24) as strtoll reads it: digits alone,
 * as list.c writes it, at once; anything else through strtoll.
 */
static long long
field_ll(const char *p, size_t n)
{
	char		num[24];
	long long	v = 0;
	size_t		i;

	if (n <= 18) {
		for (i = 0; i < n && p[i] >= '0' && p[i] <= '9'; i++)
			v = v * 10 + (p[i] - '0');
		if (i == n)
			return v;
	}
	memcpy(num, p, n);
	num[n] = '\0';
	return strtoll(num, NULL, 10);
}

int
list_line_parse(const char *p, size_t len, struct line *l)
{
	const char	*f[10], *q, *end = p + len;
	size_t		 fl[10];
	int		 i;
	char		 id[SPOOL_ID_LEN + 1];

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
		if (fl[i] == 0 || fl[i] >= 24)
			return -1;
		if (i == 4)
			l->created = field_ll(f[i], fl[i]);
		else
			l->at = field_ll(f[i], fl[i]);
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
ssize_t
list_fold(const char *text, size_t len, struct line **out)
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
		if (list_line_parse(p, (size_t)(nl - p), &v[n]) == 0) {
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

/*
 * Read a segment's text, open by name in cfd: *text (malloc'd).  0, or
 * -1 with errno (ENOENT: it went, a rewriter's doing).
 */
int
list_seg_read(int cfd, long long gen, const char *seg, char **text, size_t *len)
{
	char	name[32 + SPOOL_ID_LEN];
	int	fd, rc, e;

	list_seg_name(name, sizeof(name), gen, seg);
	if ((fd = openat(cfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return -1;
	rc = util_read_all(fd, SEG_MAX, text, len);
	e = errno;
	close(fd);
	errno = e;
	return rc;
}

/* The segment before this one, from its #prev line; "" when none. */
void
list_seg_prev(const char *text, size_t len, long long gen, char *prev)
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
	if (list_seg_of(name, gen, &seg))
		memcpy(prev, seg, SPOOL_ID_LEN + 1);
}

/*
 * Write text as segment gen.seg of cfd, replacing it: a temporary file
 * renamed over it.  0, or -1 with errno.
 */
int
list_seg_replace(int cfd, long long gen, const char *seg, const char *text,
    size_t len)
{
	char	name[32 + SPOOL_ID_LEN], tmp[64 + SPOOL_ID_LEN +
		    NETFS_HOST_MAX], host[NETFS_HOST_MAX + 1];
	int	fd, e;

	list_seg_name(name, sizeof(name), gen, seg);
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
void
list_put_prev(struct buf *b, long long gen, const char *prev)
{
	char	line[64 + SPOOL_ID_LEN];

	if (prev == NULL || *prev == '\0')
		return;
	snprintf(line, sizeof(line), PREV_TAG "%lld.%s\n", gen, prev);
	buf_puts(b, line);
}

int
list_field_is(const char *p, size_t len, const char *s)
{
	return strlen(s) == len && memcmp(p, s, len) == 0;
}

/* Whether the status is one a message keeps until something acts. */
int
list_status_final(int st)
{
	return st >= LIST_SENT;
}

/* Whether a file of an area or state exists. */
int
list_exists(struct spool *s, int dfd, const char *id)
{
	struct stat	st;
	char		name[SPOOL_NAME_MAX];

	(void)s;
	/* ID.json: no snprintf for each line of a page. */
	memcpy(name, id, SPOOL_ID_LEN);
	memcpy(name + SPOOL_ID_LEN, ".json", sizeof(".json"));
	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode);
}
