/*
 * test_metrics_queue.c: unit tests for lib/spool/metrics_queue.c
 * (metrics.h, metrics_queue): the queue by state and channel; a state
 * at rest counted from SPOOL/metrics/count-STATE without being listed,
 * listed again once its directory changes; counts of a directory that
 * changed within the last second not kept.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/ulid.h"
#include "spool/metrics.h"
#include "spooldir.h"
#include "testutil.h"

/* A message of channel into dest; its id into id (may be NULL). */
static void
put(const struct fixture *f, const char *channel, enum spool_dir dest,
    char *id)
{
	char	 mine[ULID_LEN + 1], name[SPOOL_NAME_MAX];
	json_t	*doc;

	assert_int_equal(ulid_new(mine), 0);
	doc = json_pack("{s:i, s:s, s:s, s:s, s:s}", "version", 1, "id", mine,
	    "channel", channel, "client", "c1", "created",
	    "2026-11-26T12:00:00Z");
	snprintf(name, sizeof(name), "%s.json", mine);
	if (dest == SPOOL_NEW || dest == SPOOL_DEFERRED)
		assert_int_equal(spool_enqueue(f->sp, doc, dest), MSG_OK);
	else
		assert_int_equal(spool_store(f->sp, dest, name, doc,
		    SPOOL__MAX), MSG_OK);
	json_decref(doc);
	if (id != NULL)
		memcpy(id, mine, sizeof(mine));
}

/* The index of d in metrics_states. */
static size_t
at(enum spool_dir d)
{
	size_t	i;

	for (i = 0; i < METRICS_NSTATES; i++)
		if (metrics_states[i] == d)
			return i;
	fail();
	return 0;
}

/* State d's directory last changed 10 s ago: at rest. */
static void
rest(const struct fixture *f, enum spool_dir d)
{
	struct timespec	 ts[2];
	char		 path[512];

	state_path(f, d, NULL, path, sizeof(path));
	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= 10;
	ts[1] = ts[0];
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static void
count_path(const struct fixture *f, enum spool_dir d, char *path,
    size_t len)
{
	snprintf(path, len, "%s/metrics/count-%s", f->root, spool_dirname(d));
}

static void
test_counts(void **state)
{
	const struct fixture	*f = *state;
	struct metrics_state	 q[METRICS_NSTATES];
	char			 first[ULID_LEN + 1], second[ULID_LEN + 1];

	put(f, "sms", SPOOL_NEW, first);
	put(f, "sms", SPOOL_NEW, second);
	put(f, "voice", SPOOL_NEW, NULL);
	put(f, "email", SPOOL_SENT, NULL);
	assert_int_equal(metrics_queue(f->sp, q), 0);
	assert_int_equal(q[at(SPOOL_NEW)].count[CHANNEL_SMS], 2);
	assert_int_equal(q[at(SPOOL_NEW)].count[CHANNEL_VOICE], 1);
	assert_int_equal(q[at(SPOOL_SENT)].count[CHANNEL_EMAIL], 1);
	assert_int_equal(q[at(SPOOL_FAILED)].count[CHANNEL_SMS], 0);
	/* The least id: made in one millisecond, the second may be it. */
	assert_string_equal(q[at(SPOOL_NEW)].oldest, strcmp(first, second) <
	    0 ? first : second);
	assert_string_equal(q[at(SPOOL_DEFERRED)].oldest, "");
}

/*
 * At rest: count-STATE kept, and what it says is what is counted (it is
 * not listed: a count changed by hand in the file shows); a directory
 * that changes is listed again.
 */
static void
test_at_rest(void **state)
{
	const struct fixture	*f = *state;
	struct metrics_state	 q[METRICS_NSTATES];
	char			 path[512], text[512];
	FILE			*fp;
	size_t			 n;
	char			*p;

	put(f, "sms", SPOOL_SENT, NULL);
	put(f, "ott", SPOOL_SENT, NULL);
	rest(f, SPOOL_SENT);
	assert_int_equal(metrics_queue(f->sp, q), 0);
	assert_int_equal(q[at(SPOOL_SENT)].count[CHANNEL_SMS], 1);
	count_path(f, SPOOL_SENT, path, sizeof(path));
	assert_non_null(fp = fopen(path, "r"));
	n = fread(text, 1, sizeof(text) - 1, fp);
	fclose(fp);
	text[n] = '\0';
	/* "1 INO MS MNS CS CNS sms ott email voice OLDEST": sms 1 -> 7. */
	assert_non_null(p = strstr(text, " 1 1 0 0 "));
	p[1] = '7';
	assert_non_null(fp = fopen(path, "w"));
	fputs(text, fp);
	fclose(fp);
	assert_int_equal(metrics_queue(f->sp, q), 0);
	assert_int_equal(q[at(SPOOL_SENT)].count[CHANNEL_SMS], 7);
	/* A new file: the directory changed, listed again. */
	put(f, "sms", SPOOL_SENT, NULL);
	assert_int_equal(metrics_queue(f->sp, q), 0);
	assert_int_equal(q[at(SPOOL_SENT)].count[CHANNEL_SMS], 2);
	assert_int_equal(q[at(SPOOL_SENT)].count[CHANNEL_OTT], 1);
}

/* Changed within the last second: counted, not kept. */
static void
test_racy_not_kept(void **state)
{
	const struct fixture	*f = *state;
	struct metrics_state	 q[METRICS_NSTATES];
	char			 path[512];

	put(f, "sms", SPOOL_FAILED, NULL);
	assert_int_equal(metrics_queue(f->sp, q), 0);
	assert_int_equal(q[at(SPOOL_FAILED)].count[CHANNEL_SMS], 1);
	count_path(f, SPOOL_FAILED, path, sizeof(path));
	assert_int_equal(access(path, F_OK), -1);
	rest(f, SPOOL_FAILED);
	assert_int_equal(metrics_queue(f->sp, q), 0);
	assert_int_equal(access(path, F_OK), 0);
}

/* A count file that does not parse, or of another directory: listed. */
static void
test_bad_count_file(void **state)
{
	const struct fixture	*f = *state;
	struct metrics_state	 q[METRICS_NSTATES];
	char			 path[512];

	put(f, "voice", SPOOL_DEFERRED, NULL);
	rest(f, SPOOL_DEFERRED);
	assert_int_equal(metrics_queue(f->sp, q), 0);
	count_path(f, SPOOL_DEFERRED, path, sizeof(path));
	tu_write_text(path, "garbage\n");
	assert_int_equal(metrics_queue(f->sp, q), 0);
	assert_int_equal(q[at(SPOOL_DEFERRED)].count[CHANNEL_VOICE], 1);
	tu_write_text(path, "1 2 3 4 5 6 9 9 9 9 -\n");
	assert_int_equal(metrics_queue(f->sp, q), 0);
	assert_int_equal(q[at(SPOOL_DEFERRED)].count[CHANNEL_VOICE], 1);
	assert_int_equal(q[at(SPOOL_DEFERRED)].count[CHANNEL_SMS], 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_counts, setup_spool,
		    teardown),
		cmocka_unit_test_setup_teardown(test_at_rest, setup_spool,
		    teardown),
		cmocka_unit_test_setup_teardown(test_racy_not_kept,
		    setup_spool, teardown),
		cmocka_unit_test_setup_teardown(test_bad_count_file,
		    setup_spool, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
