/*
 * fuzz_list: the reader of a client's list (lib/spool/list.c;
 * msgspool-spool(5), Lists).  The input is written as the newest segment
 * of acme's list, behind a head that names it, then read by a page with
 * the filter the input's first byte picks, compacted and erased as
 * msgspoold and msgspool do.  Besides memory errors: a page is a valid
 * JSON array of at most limit objects, newest first, each with an id, and
 * no more than the page holds; a compaction or an erase keeps a list
 * a page can still read.  A line's object is shown only when it hashes to
 * the hash beside it (a damaged line is read from its message's file); a
 * line the fuzzer forged with a matching hash but an object that is not
 * JSON is, by the hash, one msgspool wrote, so an input holding one is
 * checked for memory errors only.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "fuzzutil.h"
#include "spool/list.h"
#include "spool/spool.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* The segment's name: the least id a line may have. */
#define SEG	"00000000000000000000000000"
#define MAXID	"7ZZZZZZZZZZZZZZZZZZZZZZZZZ"

static struct spool	*spool;
static char		 seg_path[FUZZ_PATH_MAX], head_path[FUZZ_PATH_MAX];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char	dir[FUZZ_PATH_MAX], root[FUZZ_PATH_MAX], err[256];

	(void)argc;
	(void)argv;
	fuzz_scratch(dir, sizeof(dir), "list");
	fuzz_path(root, "%s/spool", dir);
	if ((spool = spool_open(root, 1, err, sizeof(err))) == NULL)
		fuzz_fail("spool_open: %s", err);
	/* Built: the list is read, not the files. */
	if (list_reindex(spool, NULL, NULL, err, sizeof(err)) == -1)
		fuzz_fail("list_reindex: %s", err);
	fuzz_path(dir, "%s/lists/acme", root);
	if (mkdir(dir, 0700) == -1 && errno != EEXIST)
		fuzz_fail("mkdir %s: %s", dir, strerror(errno));
	fuzz_path(seg_path, "%s/1.%s", dir, SEG);
	fuzz_path(head_path, "%s/head", dir);
	return 0;
}

/* The hash of p as the list's lines hash their objects (list.c). */
static void
hash16(const char *p, size_t len, char *out)
{
	static const char	hex[] = "0123456789abcdef";
	const unsigned char	*u = (const unsigned char *)p;
	uint64_t		h = 0xcbf29ce484222325ULL, w;
	size_t			i, k;

	for (i = 0; i + 8 <= len; i += 8) {
		for (w = 0, k = 8; k-- > 0;)
			w = w << 8 | u[i + k];
		h = (h ^ w) * 0x100000001b3ULL;
	}
	for (; i < len; i++)
		h = (h ^ u[i]) * 0x100000001b3ULL;
	h ^= h >> 32;
	for (i = 16; i-- > 0; h >>= 4)
		out[i] = hex[h & 15];
}

/* Whether data holds a line whose hash fits an object that is not one. */
static int
forged(const char *data, size_t size)
{
	const char	*p = data, *end = data + size, *nl, *tab, *h;
	char		 want[16];
	json_t		*o;
	int		 bad, n;

	for (; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		/* The object: after the ninth tab (it may hold more);
		 * the hash: the field before it. */
		for (tab = p, n = 0; n < 9 && tab < nl; n++) {
			if ((tab = memchr(tab, '\t', (size_t)(nl - tab))) ==
			    NULL)
				break;
			tab++;
		}
		if (tab == NULL || n < 9 || tab - p < 18)
			continue;
		h = tab - 17;
		hash16(tab, (size_t)(nl - tab), want);
		if (memcmp(h, want, 16) != 0)
			continue;
		o = json_loadb(tab, (size_t)(nl - tab), 0, NULL);
		bad = !json_is_object(o);
		json_decref(o);
		if (bad)
			return 1;
	}
	return 0;
}

static int	 lax;	/* the input forged a line: memory errors only */

/* A page of acme's list by f: checked, its count. */
static size_t
page(const struct list_filter *f)
{
	struct buf	 b = { 0 };
	json_t		*a, *m;
	const char	*id, *prev = NULL;
	char		 next[SPOOL_ID_LEN + 1];
	size_t		 n, i;

	buf_puts(&b, "[");
	if (list_page(spool, "acme", f, time(NULL), 7 * 86400, &b, &n,
	    next) == -1) {
		buf_free(&b);
		return 0;
	}
	buf_puts(&b, "]");
	if (b.failed)
		fuzz_fail("page: out of memory");
	if ((a = json_loads(b.p, 0, NULL)) == NULL || !json_is_array(a)) {
		if (lax) {
			buf_free(&b);
			return n;
		}
		fuzz_fail("page: not a JSON array: %.200s", b.p);
	}
	if (json_array_size(a) != n || n > f->limit)
		fuzz_fail("page: %zu entries, said %zu, limit %zu",
		    json_array_size(a), n, f->limit);
	json_array_foreach(a, i, m) {
		if (!json_is_object(m) || (id = json_string_value(
		    json_object_get(m, "id"))) == NULL)
			fuzz_fail("page: entry %zu has no id", i);
		if (prev != NULL && strcmp(prev, id) < 0)
			fuzz_fail("page: %s before %s", prev, id);
		prev = id;
	}
	if (next[0] != '\0' && (n != f->limit || !ulid_valid(next)))
		fuzz_fail("page: next %s after %zu of %zu", next, n, f->limit);
	json_decref(a);
	buf_free(&b);
	return n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct list_filter	 f;
	const char		*needles[] = { "+4915100000001", NULL };
	unsigned		 pick = size > 0 ? data[0] : 0;

	fuzz_write_file(head_path, "1 " SEG " " MAXID "\n",
	    strlen("1 " SEG " " MAXID "\n"));
	fuzz_write_file(seg_path, data, size);
	lax = forged((const char *)data, size);
	memset(&f, 0, sizeof(f));
	f.channel = f.direction = -1;
	f.since = f.until = -1;
	f.limit = 1 + (pick & 7);
	if (pick & 0x08)
		f.statuses = 1u << LIST_SENT | 1u << LIST_FAILED;
	if (pick & 0x10)
		f.address = "+4915100000001";
	if (pick & 0x20)
		f.reference = "r";
	if (pick & 0x40)
		f.after = "01J0000000000000000000FVZZ";
	if (pick & 0x80)
		f.since = 1700000000;
	page(&f);
	list_compact(spool, time(NULL), 7 * 86400);
	page(&f);
	list_erase(spool, "acme", needles, NULL);
	page(&f);
	unlink(seg_path);
	return 0;
}
