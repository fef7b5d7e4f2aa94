/*
 * test_memo.c: unit tests for lib/http/memo.c (memo.h): a reply is
 * given back only for the very bytes (their SHA-256) and place it was
 * made from; the memo stays within its bounds, entries and bytes, and
 * forgets on demand.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/memo.h"

static const char doc[] = "{\"id\": \"01ARZ3NDEKTSV4RRFFQ69G5FAV\", "
    "\"client\": \"acme\"}";
static const char reply[] = "{\"status\":\"sent\"}";
#define NAME	"01ARZ3NDEKTSV4RRFFQ69G5FAV.json"

/* The entry of name made from text where tag says, or NULL. */
static const struct memo_entry *
get(struct memo *m, const char *name, int tag, const char *text, size_t len)
{
	unsigned char	d[MEMO_DIGEST];

	memo_digest(text, len, d);
	return memo_get(m, name, tag, d);
}

static void
put(struct memo *m, const char *name, int tag, const char *text, size_t len,
    const char *r, size_t rlen)
{
	unsigned char	d[MEMO_DIGEST];

	memo_digest(text, len, d);
	memo_put(m, name, tag, d, "acme", r, rlen);
}

/* SHA-256 of "abc" (FIPS 180-2, B.1). */
static void
test_digest(void **state)
{
	static const unsigned char want[MEMO_DIGEST] = {
		0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea,
		0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
		0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c,
		0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad,
	};
	unsigned char	d[MEMO_DIGEST];

	(void)state;
	memo_digest("abc", 3, d);
	assert_memory_equal(d, want, MEMO_DIGEST);
}

static void
test_same_bytes_only(void **state)
{
	struct memo		 m;
	const struct memo_entry	*e;
	char			 other[sizeof(doc)];

	(void)state;
	memset(&m, 0, sizeof(m));
	assert_null(get(&m, NAME, 4, doc, strlen(doc)));
	put(&m, NAME, 4, doc, strlen(doc), reply, strlen(reply));
	e = get(&m, NAME, 4, doc, strlen(doc));
	assert_non_null(e);
	assert_string_equal(e->owner, "acme");
	assert_int_equal(e->replylen, strlen(reply));
	assert_memory_equal(e->reply, reply, strlen(reply));
	/* One byte other, one byte fewer, another place, another name. */
	memcpy(other, doc, sizeof(doc));
	other[10] = 'X';
	assert_null(get(&m, NAME, 4, other, strlen(other)));
	assert_null(get(&m, NAME, 4, doc, strlen(doc) - 1));
	assert_null(get(&m, NAME, 5, doc, strlen(doc)));
	assert_null(get(&m, "01ARZ3NDEKTSV4RRFFQ69G5FAW.json", 4, doc,
	    strlen(doc)));
	assert_int_equal(m.hits, 1);
	assert_int_equal(m.misses, 5);
	/* Made again from other bytes: the new reply, in the same room. */
	put(&m, NAME, 4, other, strlen(other), "{}", 2);
	assert_null(get(&m, NAME, 4, doc, strlen(doc)));
	e = get(&m, NAME, 4, other, strlen(other));
	assert_non_null(e);
	assert_int_equal(e->replylen, 2);
	assert_string_equal(e->reply, "{}");
	assert_int_equal(m.bytes, sizeof(*e) + strlen(NAME) + 4 + 2 + 3);
	memo_free(&m);
	assert_int_equal(m.bytes, 0);
	assert_null(get(&m, NAME, 4, other, strlen(other)));
	/* Usable again after. */
	put(&m, NAME, 4, doc, strlen(doc), reply, strlen(reply));
	assert_non_null(get(&m, NAME, 4, doc, strlen(doc)));
	memo_free(&m);
}

/*
 * A reply over MEMO_ENTRY_MAX is not kept, nor does it clear its slot;
 * a file of any size is (only its digest is kept).
 */
static void
test_too_large(void **state)
{
	struct memo	 m;
	char		*big;
	size_t		 n = 4 * MEMO_ENTRY_MAX;

	(void)state;
	memset(&m, 0, sizeof(m));
	assert_non_null(big = malloc(n));
	memset(big, 'a', n);
	put(&m, NAME, 1, doc, strlen(doc), reply, strlen(reply));
	put(&m, NAME, 1, big, n, big, MEMO_ENTRY_MAX + 1);
	assert_null(get(&m, NAME, 1, big, n));
	assert_non_null(get(&m, NAME, 1, doc, strlen(doc)));
	/* The entry over it, its reply under it. */
	put(&m, NAME, 1, big, n, big, MEMO_ENTRY_MAX - 10);
	assert_null(get(&m, NAME, 1, big, n));
	/* A large file, a small reply: kept. */
	put(&m, NAME, 1, big, n, reply, strlen(reply));
	assert_non_null(get(&m, NAME, 1, big, n));
	memo_free(&m);
	free(big);
}

/*
 * Entries of about 8 KiB under as many names as there are slots: the
 * memo's bytes never pass MEMO_BYTES, most names find no room, and a
 * slot taken again gives back its room.
 */
static void
test_bounded(void **state)
{
	struct memo	 m;
	char		 name[64], first[64], *r;
	size_t		 i, len = MEMO_ENTRY_MAX - 200, kept = 0;

	(void)state;
	memset(&m, 0, sizeof(m));
	assert_non_null(r = malloc(len));
	memset(r, 'x', len);
	for (i = 0; i < MEMO_SLOTS; i++) {
		snprintf(name, sizeof(name), "name-%zu", i);
		put(&m, name, 0, name, strlen(name), r, len);
		assert_true(m.bytes <= MEMO_BYTES);
	}
	for (i = 0; i < MEMO_SLOTS; i++) {
		snprintf(name, sizeof(name), "name-%zu", i);
		if (get(&m, name, 0, name, strlen(name)) != NULL &&
		    kept++ == 0)
			snprintf(first, sizeof(first), "%s", name);
	}
	assert_true(kept > MEMO_BYTES / MEMO_ENTRY_MAX / 2);
	assert_true(kept * len <= MEMO_BYTES);
	/* Full: one kept, made again smaller, fits in its own room. */
	put(&m, first, 0, "y", 1, "{}", 2);
	assert_non_null(get(&m, first, 0, "y", 1));
	assert_true(m.bytes <= MEMO_BYTES);
	memo_free(&m);
	free(r);
}

int
main(void)
{
	const struct CMUnitTest	tests[] = {
		cmocka_unit_test(test_digest),
		cmocka_unit_test(test_same_bytes_only),
		cmocka_unit_test(test_too_large),
		cmocka_unit_test(test_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
