/*
 * test_memo.c: unit tests for lib/http/memo.c (memo.h): a reply is
 * given back only for the very bytes and place it was made from; the
 * memo stays within its bounds, entries and bytes, and forgets on
 * demand.
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

static void
test_same_bytes_only(void **state)
{
	struct memo		 m;
	const struct memo_entry	*e;
	char			 other[sizeof(doc)];

	(void)state;
	memset(&m, 0, sizeof(m));
	assert_null(memo_get(&m, NAME, 4, doc, strlen(doc)));
	memo_put(&m, NAME, 4, doc, strlen(doc), "acme", reply, strlen(reply));
	e = memo_get(&m, NAME, 4, doc, strlen(doc));
	assert_non_null(e);
	assert_string_equal(e->owner, "acme");
	assert_int_equal(e->replylen, strlen(reply));
	assert_memory_equal(e->reply, reply, strlen(reply));
	/* One byte other, one byte fewer, another place, another name. */
	memcpy(other, doc, sizeof(doc));
	other[10] = 'X';
	assert_null(memo_get(&m, NAME, 4, other, strlen(other)));
	assert_null(memo_get(&m, NAME, 4, doc, strlen(doc) - 1));
	assert_null(memo_get(&m, NAME, 5, doc, strlen(doc)));
	assert_null(memo_get(&m, "01ARZ3NDEKTSV4RRFFQ69G5FAW.json", 4, doc,
	    strlen(doc)));
	assert_int_equal(m.hits, 1);
	assert_int_equal(m.misses, 5);
	/* Made again from other bytes: the new reply, in the same room. */
	memo_put(&m, NAME, 4, other, strlen(other), "acme", "{}", 2);
	assert_null(memo_get(&m, NAME, 4, doc, strlen(doc)));
	e = memo_get(&m, NAME, 4, other, strlen(other));
	assert_non_null(e);
	assert_int_equal(e->replylen, 2);
	assert_int_equal(m.bytes, strlen(NAME) + strlen(other) + 4 + 2 + 4);
	memo_free(&m);
	assert_int_equal(m.bytes, 0);
	assert_null(memo_get(&m, NAME, 4, other, strlen(other)));
	/* Usable again after. */
	memo_put(&m, NAME, 4, doc, strlen(doc), "acme", reply, strlen(reply));
	assert_non_null(memo_get(&m, NAME, 4, doc, strlen(doc)));
	memo_free(&m);
}

/* An entry over MEMO_ENTRY_MAX is not kept, nor does it clear its slot. */
static void
test_too_large(void **state)
{
	struct memo	 m;
	char		*big;

	(void)state;
	memset(&m, 0, sizeof(m));
	assert_non_null(big = malloc(MEMO_ENTRY_MAX + 1));
	memset(big, 'a', MEMO_ENTRY_MAX + 1);
	memo_put(&m, NAME, 1, doc, strlen(doc), "acme", reply, strlen(reply));
	memo_put(&m, NAME, 1, big, MEMO_ENTRY_MAX + 1, "acme", reply,
	    strlen(reply));
	assert_null(memo_get(&m, NAME, 1, big, MEMO_ENTRY_MAX + 1));
	assert_non_null(memo_get(&m, NAME, 1, doc, strlen(doc)));
	/* The sum over it, each part under it. */
	memo_put(&m, NAME, 1, big, MEMO_ENTRY_MAX / 2, "acme", big,
	    MEMO_ENTRY_MAX / 2);
	assert_null(memo_get(&m, NAME, 1, big, MEMO_ENTRY_MAX / 2));
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
	char		 name[64], first[64], *in;
	size_t		 i, len = MEMO_ENTRY_MAX - 200, kept = 0;

	(void)state;
	memset(&m, 0, sizeof(m));
	assert_non_null(in = malloc(len));
	memset(in, 'x', len);
	for (i = 0; i < MEMO_SLOTS; i++) {
		snprintf(name, sizeof(name), "name-%zu", i);
		memo_put(&m, name, 0, in, len, "acme", "{}", 2);
		assert_true(m.bytes <= MEMO_BYTES);
	}
	for (i = 0; i < MEMO_SLOTS; i++) {
		snprintf(name, sizeof(name), "name-%zu", i);
		if (memo_get(&m, name, 0, in, len) != NULL && kept++ == 0)
			snprintf(first, sizeof(first), "%s", name);
	}
	assert_true(kept > MEMO_BYTES / MEMO_ENTRY_MAX / 2);
	assert_true(kept * len <= MEMO_BYTES);
	/* Full: one kept, made again smaller, fits in its own room. */
	memo_put(&m, first, 0, in, 10, "acme", "{}", 2);
	assert_non_null(memo_get(&m, first, 0, in, 10));
	assert_true(m.bytes <= MEMO_BYTES);
	memo_free(&m);
	free(in);
}

int
main(void)
{
	const struct CMUnitTest	tests[] = {
		cmocka_unit_test(test_same_bytes_only),
		cmocka_unit_test(test_too_large),
		cmocka_unit_test(test_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
