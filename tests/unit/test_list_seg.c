/*
 * test_list_seg.c: the files of a client's list (lib/spool/list_seg.c):
 * a message's last line wins, a line cut short or not ours is left out,
 * and the segment that holds an id.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/channel.h"
#include "spool/list.h"
#include "spool/list_impl.h"
#include "spool/spool.h"
#include "listutil.h"
#include "testutil.h"

static void
test_fold(void **state)
{
	struct buf	 b = { 0 };
	struct line	*v;
	json_t		*o;
	char		 id1[SPOOL_ID_LEN + 1], id2[SPOOL_ID_LEN + 1], h[17];
	char		 line[512];
	ssize_t		 n;
	const char	*obj = "{\"id\":\"x\"}";

	(void)state;
	assert_int_equal(ulid_new(id1), 0);
	assert_int_equal(ulid_new(id2), 0);
	list_obj_hash(obj, strlen(obj), h);
	buf_puts(&b, "#prev 1.01J0000000000000000000AAAA\n");
	snprintf(line, sizeof(line), "%s\tqueued\toutbound\tsms\t1\t1\t+49\t"
	    "\t%s\t%s\n", id1, h, obj);
	buf_puts(&b, line);
	snprintf(line, sizeof(line), "%s\tsent\toutbound\tsms\t1\t2\t+49\t"
	    "\t%s\t%s\n", id1, h, obj);
	buf_puts(&b, line);
	buf_puts(&b, "not-an-id\tsent\n");
	/* Being written: no newline yet. */
	snprintf(line, sizeof(line), "%s\tqueued\toutbound\tsms\t1\t1\t+49",
	    id2);
	buf_puts(&b, line);
	n = list_fold(b.p, b.len, &v);
	assert_int_equal(n, 1);
	assert_true(list_field_is(v[0].status, v[0].status_len, "sent"));
	assert_true(list_line_intact(&v[0]));
	assert_int_equal(v[0].at, 2);
	o = json_loadb(v[0].json, v[0].json_len, 0, NULL);
	assert_non_null(o);
	json_decref(o);
	free(v);
	buf_free(&b);
}

/* A line's times as strtoll reads them, digits alone or not. */
static void
test_line_numbers(void **state)
{
	static const char *const nums[] = { "0", "1", "1764147600",
	    "999999999999999999", "9999999999999999999", "-5", "+7", " 8",
	    "12x", "x", "00012" };
	struct line	 l;
	char		 id[SPOOL_ID_LEN + 1], h[17], line[512];
	size_t		 i;
	const char	*obj = "{}";

	(void)state;
	assert_int_equal(ulid_new(id), 0);
	list_obj_hash(obj, strlen(obj), h);
	for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		snprintf(line, sizeof(line), "%s\tsent\toutbound\tsms\t%s\t"
		    "%s\t+49\t\t%s\t%s", id, nums[i], nums[i], h, obj);
		assert_int_equal(list_line_parse(line, strlen(line), &l), 0);
		assert_true(l.created == strtoll(nums[i], NULL, 10));
		assert_true(l.at == strtoll(nums[i], NULL, 10));
	}
	/* Empty, or 24 characters and more: not a line of ours. */
	snprintf(line, sizeof(line), "%s\tsent\toutbound\tsms\t\t1\t+49\t"
	    "\t%s\t%s", id, h, obj);
	assert_int_equal(list_line_parse(line, strlen(line), &l), -1);
	snprintf(line, sizeof(line), "%s\tsent\toutbound\tsms\t1\t"
	    "123456789012345678901234\t+49\t\t%s\t%s", id, h, obj);
	assert_int_equal(list_line_parse(line, strlen(line), &l), -1);
}

static void
test_seg_find(void **state)
{
	struct tu_spool	*f = *state;
	char		 seg[SPOOL_ID_LEN + 1];
	int		 cfd;

	assert_non_null(f);
	assert_true((cfd = list_client_dir(f->sp, "acme", 1)) != -1);
	assert_int_equal(list_seg_find(cfd, 1, "01J0000000000000000000AAAA",
	    seg), -1);
	assert_int_equal(errno, ENOENT);
	close(list_seg_open_append(cfd, 1, "01J0000000000000000000BBBB", NULL));
	close(list_seg_open_append(cfd, 1, "01J0000000000000000000DDDD", NULL));
	assert_int_equal(list_seg_find(cfd, 1, "01J0000000000000000000CCCC",
	    seg), 0);
	assert_string_equal(seg, "01J0000000000000000000BBBB");
	/* Below every segment: the least holds it. */
	assert_int_equal(list_seg_find(cfd, 1, "01J0000000000000000000AAAA",
	    seg), 0);
	assert_string_equal(seg, "01J0000000000000000000BBBB");
	assert_int_equal(list_seg_find(cfd, 1, "01J0000000000000000000ZZZZ",
	    seg), 0);
	assert_string_equal(seg, "01J0000000000000000000DDDD");
	/* Another generation's are not these. */
	assert_int_equal(list_seg_find(cfd, 2, "01J0000000000000000000ZZZZ",
	    seg), -1);
	close(cfd);
}

/* Back along the #prev lines: the same segment list_seg_find gives. */
static void
test_seg_find_back(void **state)
{
	static const char *const segs[] = { "01J0000000000000000000BBBB",
	    "01J0000000000000000000DDDD", "01J0000000000000000000FFFF",
	    "01J0000000000000000000HHHH" };
	static const char *const ids[] = { "01J0000000000000000000AAAA",
	    "01J0000000000000000000CCCC", "01J0000000000000000000DDDD",
	    "01J0000000000000000000EEEE", "01J0000000000000000000GGGG" };
	/* The segment after each id's: none known for the least's ids. */
	static const char *const nexts[] = { "",
	    "01J0000000000000000000DDDD", "01J0000000000000000000FFFF",
	    "01J0000000000000000000FFFF", "01J0000000000000000000HHHH" };
	struct tu_spool	*f = *state;
	char		 a[SPOOL_ID_LEN + 1], b[SPOOL_ID_LEN + 1];
	char		 next[SPOOL_ID_LEN + 1];
	size_t		 i;
	int		 cfd;

	assert_true((cfd = list_client_dir(f->sp, "acme", 1)) != -1);
	for (i = 0; i < sizeof(segs) / sizeof(segs[0]); i++)
		close(list_seg_open_append(cfd, 1, segs[i], i > 0 ?
		    segs[i - 1] : NULL));
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		assert_int_equal(list_seg_find(cfd, 1, ids[i], a), 0);
		assert_int_equal(list_seg_find_back(cfd, 1, segs[3], ids[i],
		    b, next, NULL), 0);
		assert_string_equal(a, b);
		assert_string_equal(next, nexts[i]);
	}
	/* A chain broken (a segment gone): the listing finds it still. */
	assert_int_equal(unlinkat(cfd, "1.01J0000000000000000000FFFF", 0), 0);
	assert_int_equal(list_seg_find_back(cfd, 1, segs[3], ids[1], b, next,
	    NULL), 0);
	assert_string_equal(b, "01J0000000000000000000BBBB");
	assert_string_equal(next, "");
	close(cfd);
}

#define CHAIN	50	/* segments: more than one walk follows back */

/*
 * One walk kept across look-ups: each id finds the segment the listing
 * gives, those within SEG_WALK_MAX of the newest from what the walk read
 * once (a segment removed behind it does not change their answers), the
 * older ones by the listing; a walk from another newest starts again.
 */
static void
test_seg_walk_kept(void **state)
{
	static const char	 crock[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
	struct tu_spool		*f = *state;
	static char		 segs[CHAIN][SPOOL_ID_LEN + 1];
	struct seg_walk		 walk = { .n = 0 };
	char			 id[SPOOL_ID_LEN + 1], a[SPOOL_ID_LEN + 1];
	char			 b[SPOOL_ID_LEN + 1], next[SPOOL_ID_LEN + 1];
	char			 name[64];
	int			 cfd, i;

	assert_true((cfd = list_client_dir(f->sp, "acme", 1)) != -1);
	for (i = 0; i < CHAIN; i++) {
		snprintf(segs[i], sizeof(segs[i]), "01J0000000%c%c0000000000000B",
		    crock[i / 32], crock[i % 32]);
		close(list_seg_open_append(cfd, 1, segs[i], i > 0 ?
		    segs[i - 1] : NULL));
	}
	/* Newest first, as a late batch's ids come (in any order). */
	for (i = CHAIN - 2; i >= 0; i--) {
		memcpy(id, segs[i], SPOOL_ID_LEN + 1);
		id[SPOOL_ID_LEN - 1] = 'C';
		assert_int_equal(list_seg_find(cfd, 1, id, a), 0);
		assert_int_equal(list_seg_find_back(cfd, 1, segs[CHAIN - 1],
		    id, b, next, &walk), 0);
		assert_string_equal(a, b);
		assert_string_equal(b, segs[i]);
		if (i >= CHAIN - SEG_WALK_MAX)
			assert_string_equal(next, segs[i + 1]);
		else
			assert_string_equal(next, "");
	}
	assert_int_equal(walk.n, SEG_WALK_MAX);
	/* What the walk read is not read again. */
	list_seg_name(name, sizeof(name), 1, segs[CHAIN - 3]);
	assert_int_equal(unlinkat(cfd, name, 0), 0);
	memcpy(id, segs[CHAIN - 5], SPOOL_ID_LEN + 1);
	id[SPOOL_ID_LEN - 1] = 'C';
	assert_int_equal(list_seg_find_back(cfd, 1, segs[CHAIN - 1], id, b,
	    next, &walk), 0);
	assert_string_equal(b, segs[CHAIN - 5]);
	assert_string_equal(next, segs[CHAIN - 4]);
	/* From another newest: walked again, to the segment now gone, and
	 * the listing then. */
	assert_int_equal(list_seg_find_back(cfd, 1, segs[CHAIN - 2], id, b,
	    next, &walk), 0);
	assert_string_equal(b, segs[CHAIN - 5]);
	assert_string_equal(next, "");
	assert_int_equal(walk.n, 2);
	close(cfd);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fold),
		cmocka_unit_test(test_line_numbers),
		cmocka_unit_test_setup_teardown(test_seg_find_back,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_seg_walk_kept,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_seg_find,
		    tu_spool_setup_installed, tu_spool_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
