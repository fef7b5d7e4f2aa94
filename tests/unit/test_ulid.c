/*
 * test_ulid.c: message ids.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/ulid.h"

#define SPOOL_ID_LEN	ULID_LEN
#define NIDS		10000
#define CROCKFORD	"0123456789ABCDEFGHJKMNPQRSTVWXYZ"

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
test_id_format(void **state)
{
	char	id[SPOOL_ID_LEN + 1];
	size_t	i;
	int	k;

	(void)state;
	for (k = 0; k < 100; k++) {
		memset(id, 'x', sizeof(id));
		assert_int_equal(ulid_new(id), 0);
		assert_int_equal(strlen(id), SPOOL_ID_LEN);
		for (i = 0; i < SPOOL_ID_LEN; i++)
			assert_non_null(strchr(CROCKFORD, id[i]));
		assert_true(ulid_valid(id));
	}
}

static void
test_id_unique(void **state)
{
	char	**ids;
	size_t	  i;

	(void)state;
	ids = calloc(NIDS, sizeof(*ids));
	assert_non_null(ids);
	for (i = 0; i < NIDS; i++) {
		ids[i] = malloc(SPOOL_ID_LEN + 1);
		assert_non_null(ids[i]);
		assert_int_equal(ulid_new(ids[i]), 0);
	}
	qsort(ids, NIDS, sizeof(*ids), cmp_str);
	for (i = 1; i < NIDS; i++)
		if (strcmp(ids[i - 1], ids[i]) == 0)
			fail_msg("duplicate id %s", ids[i]);
	for (i = 0; i < NIDS; i++)
		free(ids[i]);
	free(ids);
}

static void
test_id_sorted_by_creation(void **state)
{
	char		 a[100][SPOOL_ID_LEN + 1], b[100][SPOOL_ID_LEN + 1];
	const char	*amax, *bmin;
	struct timespec	 ts = { 0, 2 * 1000 * 1000 };
	size_t		 i;

	(void)state;
	for (i = 0; i < 100; i++)
		assert_int_equal(ulid_new(a[i]), 0);
	nanosleep(&ts, NULL);
	for (i = 0; i < 100; i++)
		assert_int_equal(ulid_new(b[i]), 0);
	amax = a[0];
	bmin = b[0];
	for (i = 1; i < 100; i++) {
		if (strcmp(a[i], amax) > 0)
			amax = a[i];
		if (strcmp(b[i], bmin) < 0)
			bmin = b[i];
	}
	if (strcmp(amax, bmin) >= 0)
		fail_msg("id %s made later sorts before %s", bmin, amax);
	assert_true(ulid_time(bmin) >= ulid_time(amax));
}

static void
test_id_valid(void **state)
{
	(void)state;
	assert_true(ulid_valid("01ARZ3NDEKTSV4RRFFQ69G5FAV"));
	assert_true(ulid_valid("00000000000000000000000000"));
	assert_true(ulid_valid("7ZZZZZZZZZZZZZZZZZZZZZZZZZ"));
	assert_false(ulid_valid(""));
	assert_false(ulid_valid("01ARZ3NDEKTSV4RRFFQ69G5FA"));
	assert_false(ulid_valid("01ARZ3NDEKTSV4RRFFQ69G5FA-"));
	assert_false(ulid_valid("01ARZ3NDEKTSV4RRFFQ69G5FAU"));
	assert_false(ulid_valid("01ARZ3NDEKTSV4RRFFQ69G5FA/"));
	assert_false(ulid_valid("../../../../etc/passwd1234"));
}

static void
test_id_valid_exact_length(void **state)
{
	(void)state;
	/* spool.h: an id is 26 characters; longer strings are not ids. */
	assert_false(ulid_valid("01ARZ3NDEKTSV4RRFFQ69G5FAVX"));
	assert_false(ulid_valid("01ARZ3NDEKTSV4RRFFQ69G5FAV.json"));
	assert_false(ulid_valid("01ARZ3NDEKTSV4RRFFQ69G5FAV/../../x"));
}

static void
test_id_time(void **state)
{
	char		id[SPOOL_ID_LEN + 1];
	long long	before, after, t;
	struct timespec	ts;

	(void)state;
	assert_int_equal(ulid_time("00000000000000000000000000"), 0);
	assert_int_equal(ulid_time("01ARZ3NDEKTSV4RRFFQ69G5FAV"),
	    1469922850259LL);
	assert_int_equal(ulid_time("7ZZZZZZZZZZZZZZZZZZZZZZZZZ"),
	    281474976710655LL);

	clock_gettime(CLOCK_REALTIME, &ts);
	before = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	assert_int_equal(ulid_new(id), 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	after = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	t = ulid_time(id);
	/* Milliseconds, close to now (generous: no timing assertion). */
	assert_true(t >= before - 60000 && t <= after + 60000);
}

static void
test_prefix(void **state)
{
	(void)state;
	assert_true(ulid_prefix("01ARZ3NDEKTSV4RRFFQ69G5FAV.json"));
	assert_true(ulid_prefix("01ARZ3NDEKTSV4RRFFQ69G5FAV"));
	assert_false(ulid_prefix("01ARZ3NDEKTSV4RRFFQ69G5FA"));
	assert_false(ulid_prefix(".01ARZ3NDEKTSV4RRFFQ69G5FAV"));
	assert_false(ulid_prefix("81ARZ3NDEKTSV4RRFFQ69G5FAV"));
}

/* Every byte at every place: only Crockford's 32 upper-case ones. */
static void
test_every_byte(void **state)
{
	const char	*set = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
	char		 id[ULID_LEN + 1];
	int		 c, i;

	(void)state;
	for (i = 1; i < ULID_LEN; i++)
		for (c = 1; c < 256; c++) {
			memcpy(id, "01ARZ3NDEKTSV4RRFFQ69G5FAV", sizeof(id));
			id[i] = (char)c;
			assert_int_equal(ulid_valid(id),
			    strchr(set, c) != NULL);
		}
}

static void
test_after(void **state)
{
	char	a[ULID_LEN + 1], b[ULID_LEN + 1], far[ULID_LEN + 1];
	int	i;

	(void)state;
	/* None before: a fresh id. */
	assert_int_equal(ulid_after(a, ""), 0);
	assert_true(ulid_valid(a));
	/* A thousand in a row sort in the order they were made. */
	for (i = 0; i < 1000; i++) {
		assert_int_equal(ulid_after(b, a), 0);
		assert_true(ulid_valid(b));
		assert_true(strcmp(b, a) > 0);
		memcpy(a, b, sizeof(a));
	}
	/* After one of the future (a clock gone back): prev plus one. */
	memcpy(far, "7ZZZZZZZZZ0000000000000ZZZ", sizeof(far));
	assert_int_equal(ulid_after(b, far), 0);
	assert_string_equal(b, "7ZZZZZZZZZ0000000000001000");
	assert_int_equal(ulid_time(b), ulid_time(far));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_after),
		cmocka_unit_test(test_id_format),
		cmocka_unit_test(test_id_unique),
		cmocka_unit_test(test_id_sorted_by_creation),
		cmocka_unit_test(test_id_valid),
		cmocka_unit_test(test_id_valid_exact_length),
		cmocka_unit_test(test_id_time),
		cmocka_unit_test(test_prefix),
		cmocka_unit_test(test_every_byte),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
