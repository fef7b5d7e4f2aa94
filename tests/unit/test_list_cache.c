/*
 * test_list_cache.c: the segment names a handle keeps between appends
 * (list_keep, lib/spool/list_cache.c): a late line lands in the segment
 * list_seg_find names, whether the names are kept or not, after other
 * handles began newer segments, and after a kept segment was removed
 * (never made again below the newest).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spool/list.h"
#include "spool/list_impl.h"
#include "spool/spool.h"
#include "testutil.h"

#define NIDS	400

/* ids in order, each appended with a line long enough for several
 * segments (SEG_BYTES). */
static char	ids[NIDS][SPOOL_ID_LEN + 1];

static void
append(struct spool *sp, const char *id, const char *tag)
{
	char	line[600];
	int	n;

	n = snprintf(line, sizeof(line), "%s\t%s\t%0*d\n", id, tag, 400, 0);
	assert_int_equal(list_append(sp, "acme", id, line, (size_t)n), 0);
}

static void
fill(struct spool *sp, size_t from, size_t to)
{
	size_t	i;

	for (i = from; i < to; i++)
		append(sp, ids[i], "queued");
}

/* Which segment holds tag's line for id: its name into seg. */
static void
holder(struct tu_spool *f, const char *id, const char *tag, char *seg)
{
	char	**v, *text, want[64];
	ssize_t	  n, i;
	size_t	  len;
	int	  cfd, found = 0;

	snprintf(want, sizeof(want), "%s\t%s\t", id, tag);
	assert_true((cfd = list_client_dir(f->sp, "acme", 0)) != -1);
	assert_true((n = list_seg_list(cfd, 1, &v)) > 2);
	for (i = 0; i < n; i++) {
		assert_int_equal(list_seg_read(cfd, 1, v[i], &text, &len), 0);
		if (memmem(text, len, want, strlen(want)) != NULL) {
			found++;
			memcpy(seg, v[i], SPOOL_ID_LEN + 1);
		}
		free(text);
	}
	spool_names_free(v, (size_t)n);
	close(cfd);
	assert_int_equal(found, 1);
}

/* The segment list_seg_find names for id. */
static void
truth(struct tu_spool *f, const char *id, char *seg)
{
	int	cfd;

	assert_true((cfd = list_client_dir(f->sp, "acme", 0)) != -1);
	assert_int_equal(list_seg_find(cfd, 1, id, seg), 0);
	close(cfd);
}

static void
check_late(struct tu_spool *f, struct spool *sp, size_t i, const char *tag)
{
	char	got[SPOOL_ID_LEN + 1], want[SPOOL_ID_LEN + 1];

	truth(f, ids[i], want);
	append(sp, ids[i], tag);
	holder(f, ids[i], tag, got);
	assert_string_equal(got, want);
}

static int
idcmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Ids of one millisecond come in any order: sorted, as if they came in
 * turn. */
static void
make_ids(void)
{
	size_t	i;

	for (i = 0; i < NIDS; i++)
		assert_int_equal(ulid_new(ids[i]), 0);
	qsort(ids, NIDS, sizeof(ids[0]), idcmp);
}

static void
test_late_lines(void **state)
{
	struct tu_spool	*f = *state;
	static const size_t late[] = { 0, 5, 77, 150, 151, 260, 2, 399 };
	char		 tag[16];
	size_t		 i;

	make_ids();
	list_keep(f->sp, 1);
	fill(f->sp, 0, NIDS);
	for (i = 0; i < sizeof(late) / sizeof(late[0]); i++) {
		snprintf(tag, sizeof(tag), "sent%zu", i);
		check_late(f, f->sp, late[i], tag);
	}
	list_keep(f->sp, 0);
	check_late(f, f->sp, 33, "off");
}

/* Newer segments begun by another handle: the kept names listed again. */
static void
test_newer_elsewhere(void **state)
{
	struct tu_spool	*f = *state;
	struct spool	*other;
	char		 err[256];

	make_ids();
	list_keep(f->sp, 1);
	fill(f->sp, 0, NIDS / 2);
	check_late(f, f->sp, 10, "a");		/* names kept */
	other = spool_open(spool_root(f->sp), 0, err, sizeof(err));
	assert_non_null(other);
	fill(other, NIDS / 2, NIDS);
	spool_free(other);
	check_late(f, f->sp, NIDS / 2 + 20, "b");
	check_late(f, f->sp, NIDS / 2 + 100, "c");
}

/* A kept segment removed (the compaction's): not made again. */
static void
test_removed(void **state)
{
	struct tu_spool	*f = *state;
	char		 seg[SPOOL_ID_LEN + 1], name[64], got[SPOOL_ID_LEN + 1];
	struct stat	 st;
	int		 cfd;

	make_ids();
	list_keep(f->sp, 1);
	fill(f->sp, 0, NIDS);
	check_late(f, f->sp, 120, "a");		/* names kept */
	holder(f, ids[120], "a", seg);
	assert_true((cfd = list_client_dir(f->sp, "acme", 0)) != -1);
	list_seg_name(name, sizeof(name), 1, seg);
	assert_int_equal(unlinkat(cfd, name, 0), 0);
	check_late(f, f->sp, 120, "b");
	holder(f, ids[120], "b", got);
	assert_string_not_equal(got, seg);
	assert_int_equal(fstatat(cfd, name, &st, 0), -1);
	assert_int_equal(errno, ENOENT);
	close(cfd);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_late_lines,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_newer_elsewhere,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_removed,
		    tu_spool_setup, tu_spool_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
