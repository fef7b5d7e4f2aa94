/*
 * test_list_append.c: lines appended to a client's list together
 * (lib/spool/list_append.c): the segments and head they leave are those
 * that appending them one by one leaves; a late id goes where it
 * belongs; a segment that cannot be written fails its lines and the head
 * does not name what was not written; a commit's items noted by client.
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

#include <jansson.h>

#include "base/ulid.h"
#include "spool/list.h"
#include "spool/list_impl.h"
#include "spool/msgdoc.h"
#include "spool/spool.h"
#include "testutil.h"

#define N	120	/* lines of about 300 bytes: several segments */

/* N ids in increasing order, and a line of about 300 bytes for each. */
static void
lines(char ids[N][SPOOL_ID_LEN + 1], char text[N][320])
{
	static const char crock[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
	size_t		  i;

	for (i = 0; i < N; i++) {
		snprintf(ids[i], SPOOL_ID_LEN + 1,
		    "01J0000000%c%c00000000000000", crock[i / 32],
		    crock[i % 32]);
		snprintf(text[i], 320, "%s\tqueued\toutbound\tsms\t1\t1\t+49"
		    "\t\t0000000000000000\t{\"pad\":\"%0260d\"}\n", ids[i], 0);
	}
}

/* The head and every segment of client: "head\n" then each file. */
static char *
files_of(struct spool *sp, const char *client)
{
	struct buf	 b = { 0 };
	char		**segs, *text, name[64];
	size_t		 len;
	ssize_t		 n, i;
	int		 cfd, fd;

	assert_true((cfd = list_client_dir(sp, client, 0)) != -1);
	assert_true((fd = openat(cfd, HEAD_NAME, O_RDONLY)) != -1);
	text = tu_read_fd(fd, &len);
	close(fd);
	/* The head names its newest segment and greatest id, not its
	 * client: the same for both. */
	buf_add(&b, text, len);
	free(text);
	n = list_seg_list(cfd, 1, &segs);
	assert_true(n > 2);
	for (i = 0; i < n; i++) {
		assert_int_equal(list_seg_read(cfd, 1, segs[i], &text, &len),
		    0);
		list_seg_name(name, sizeof(name), 1, segs[i]);
		buf_puts(&b, name);
		buf_putc(&b, '\n');
		buf_add(&b, text, len);
		free(text);
		free(segs[i]);
	}
	free(segs);
	close(cfd);
	return buf_take(&b, &len);
}

/*
 * v's n lines appended together to client "all": each noted, and the
 * files of "all" those of "one", which had them one by one.
 */
static void
same_as_one(struct tu_spool *f, struct list_add *v, size_t n)
{
	char	*one, *all;
	size_t	 i;

	assert_int_equal(list_append_lines(f->sp, "all", v, n), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(v[i].err, 0);
	one = files_of(f->sp, "one");
	all = files_of(f->sp, "all");
	assert_string_equal(one, all);
	free(one);
	free(all);
}

/* Together, in any order, as one by one in order. */
static void
test_same_as_one_by_one(void **state)
{
	struct tu_spool	*f = *state;
	static char	 ids[N][SPOOL_ID_LEN + 1], text[N][320];
	struct list_add	 v[N];
	size_t		 i;

	lines(ids, text);
	for (i = 0; i < N; i++)
		assert_int_equal(list_append(f->sp, "one", ids[i], text[i],
		    strlen(text[i])), 0);
	/* Reversed: the order of their ids is what counts. */
	for (i = 0; i < N; i++) {
		v[i].id = ids[N - 1 - i];
		v[i].text = text[N - 1 - i];
		v[i].len = strlen(text[N - 1 - i]);
		v[i].err = -1;
	}
	same_as_one(f, v, N);
}

/* An id older than the newest segment's first: into the one before. */
static void
test_late_id(void **state)
{
	struct tu_spool	*f = *state;
	static char	 ids[N][SPOOL_ID_LEN + 1], text[N][320];
	struct list_add	 v[2];
	char		 seg[SPOOL_ID_LEN + 1], *t;
	size_t		 i, len;
	int		 cfd;

	lines(ids, text);
	for (i = 0; i < N; i++)
		if (i != 3)
			assert_int_equal(list_append(f->sp, "acme", ids[i],
			    text[i], strlen(text[i])), 0);
	v[0].id = ids[N - 1];
	v[0].text = text[N - 1];
	v[0].len = strlen(text[N - 1]);
	v[1].id = ids[3];
	v[1].text = text[3];
	v[1].len = strlen(text[3]);
	assert_int_equal(list_append_lines(f->sp, "acme", v, 2), 0);
	assert_true((cfd = list_client_dir(f->sp, "acme", 0)) != -1);
	assert_int_equal(list_seg_find(cfd, 1, ids[3], seg), 0);
	assert_int_equal(list_seg_read(cfd, 1, seg, &t, &len), 0);
	assert_non_null(strstr(t, text[3]));
	free(t);
	close(cfd);
}

#define LATE	60	/* segments of one line each, more than a walk */

/*
 * A batch of late ids, one behind each of LATE segments (the oldest
 * further back than one walk of the #prev lines goes): the same files
 * as the same ids appended late one by one.
 */
static void
test_late_batch(void **state)
{
	static const char crock[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
	struct tu_spool	*f = *state;
	static char	 ids[2 * LATE][SPOOL_ID_LEN + 1];
	static char	 text[2 * LATE][SEG_BYTES + 256];
	struct list_add	 v[LATE];
	size_t		 i, n;

	for (i = 0; i < 2 * LATE; i++) {
		snprintf(ids[i], SPOOL_ID_LEN + 1,
		    "01J0000000%c%c00000000000000", crock[i / 32],
		    crock[i % 32]);
		/* A line that fills a segment: the next id begins one. */
		n = (size_t)snprintf(text[i], sizeof(text[i]), "%s\tqueued\t"
		    "outbound\tsms\t1\t1\t+49\t\t0000000000000000\t"
		    "{\"pad\":\"", ids[i]);
		memset(text[i] + n, '0', SEG_BYTES);
		memcpy(text[i] + n + SEG_BYTES, "\"}\n", 4);
	}
	for (i = 0; i < 2 * LATE; i += 2) {
		assert_int_equal(list_append(f->sp, "one", ids[i], text[i],
		    strlen(text[i])), 0);
		assert_int_equal(list_append(f->sp, "all", ids[i], text[i],
		    strlen(text[i])), 0);
	}
	for (i = 1; i < 2 * LATE; i += 2)
		assert_int_equal(list_append(f->sp, "one", ids[i], text[i],
		    strlen(text[i])), 0);
	for (i = 0; i < LATE; i++) {
		v[i].id = ids[2 * LATE - 1 - 2 * i];
		v[i].text = text[2 * LATE - 1 - 2 * i];
		v[i].len = strlen(v[i].text);
		v[i].err = -1;
	}
	same_as_one(f, v, LATE);
}

/* A segment that cannot be written: its lines fail, the head stays. */
static void
test_segment_fails(void **state)
{
	struct tu_spool	*f = *state;
	static char	 ids[N][SPOOL_ID_LEN + 1], text[N][320];
	struct list_add	 v[3];
	char		 name[64], *before, *after;
	size_t		 i, len;
	int		 cfd, fd;

	lines(ids, text);
	assert_int_equal(list_append(f->sp, "acme", ids[0], text[0],
	    strlen(text[0])), 0);
	assert_true((cfd = list_client_dir(f->sp, "acme", 0)) != -1);
	assert_true((fd = openat(cfd, HEAD_NAME, O_RDONLY)) != -1);
	before = tu_read_fd(fd, &len);
	close(fd);
	/* Its only segment made a directory: no line can go in. */
	list_seg_name(name, sizeof(name), 1, ids[0]);
	assert_int_equal(unlinkat(cfd, name, 0), 0);
	assert_int_equal(mkdirat(cfd, name, 0700), 0);
	for (i = 0; i < 3; i++) {
		v[i].id = ids[i + 1];
		v[i].text = text[i + 1];
		v[i].len = strlen(text[i + 1]);
	}
	assert_int_equal(list_append_lines(f->sp, "acme", v, 3), -1);
	for (i = 0; i < 3; i++)
		assert_int_equal(v[i].err, EISDIR);
	assert_true((fd = openat(cfd, HEAD_NAME, O_RDONLY)) != -1);
	after = tu_read_fd(fd, &len);
	close(fd);
	assert_string_equal(before, after);
	free(before);
	free(after);
	close(cfd);
}

/* A commit's items: each client's noted; a bad id fails its item only. */
static void
test_note_items(void **state)
{
	struct tu_spool		*f = *state;
	struct spool_item	 it[4];
	json_t			*doc[4];
	char			 id[4][SPOOL_ID_LEN + 1], seg[SPOOL_ID_LEN + 1];
	const char		*clients[4] = { "acme", "beta", "acme", "acme" };
	size_t			 i;
	int			 cfd;

	for (i = 0; i < 4; i++) {
		assert_int_equal(ulid_new(id[i]), 0);
		doc[i] = msgdoc_new(i == 2 ? "not-an-id" : id[i], "sms",
		    clients[i], 0, json_pack("{s:s, s:s}", "to",
		    "+4915100000001", "body", "hi"));
		assert_non_null(doc[i]);
		it[i].doc = doc[i];
		it[i].dir = SPOOL_NEW;
		it[i].name = NULL;
		it[i].from = SPOOL__MAX;
		/* The last is not to be noted. */
		it[i].status = i == 3 ? MSG_PERMFAIL : MSG_OK;
	}
	list_note_items(f->sp, it, 4);
	assert_int_equal(it[0].status, MSG_OK);
	assert_int_equal(it[1].status, MSG_OK);
	assert_int_equal(it[2].status, MSG_PERMFAIL);
	assert_int_equal(it[3].status, MSG_PERMFAIL);
	assert_true((cfd = list_client_dir(f->sp, "beta", 0)) != -1);
	assert_int_equal(list_seg_find(cfd, 1, id[1], seg), 0);
	close(cfd);
	assert_true((cfd = list_client_dir(f->sp, "acme", 0)) != -1);
	assert_int_equal(list_seg_find(cfd, 1, id[0], seg), 0);
	assert_string_equal(seg, id[0]);
	close(cfd);
	for (i = 0; i < 4; i++)
		json_decref(doc[i]);
}

/* A field's tabs and line ends made spaces: one line, its fields kept. */
static void
test_field_spaces(void **state)
{
	struct tu_spool		*f = *state;
	struct spool_item	 it;
	json_t			*doc;
	char			 id[SPOOL_ID_LEN + 1], seg[SPOOL_ID_LEN + 1];
	char			*text;
	size_t			 len;
	int			 cfd;

	assert_int_equal(ulid_new(id), 0);
	doc = msgdoc_new(id, "sms", "acme", 0, json_pack("{s:s, s:s}", "to",
	    "+4915100000001", "body", "hi"));
	json_object_set_new(doc, "reference", json_string("\ta\tb\nc\r"));
	it.doc = doc;
	it.dir = SPOOL_NEW;
	it.name = NULL;
	it.from = SPOOL__MAX;
	it.status = MSG_OK;
	list_note_items(f->sp, &it, 1);
	assert_int_equal(it.status, MSG_OK);
	assert_true((cfd = list_client_dir(f->sp, "acme", 0)) != -1);
	assert_int_equal(list_seg_find(cfd, 1, id, seg), 0);
	assert_int_equal(list_seg_read(cfd, 1, seg, &text, &len), 0);
	assert_non_null(strstr(text, "\t a b c \t"));
	assert_non_null(memchr(text, '\n', len));
	assert_ptr_equal(memchr(text, '\n', len), text + len - 1);
	free(text);
	close(cfd);
	json_decref(doc);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_same_as_one_by_one,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_late_batch,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_late_id,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_segment_fails,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_note_items,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_field_spaces,
		    tu_spool_setup, tu_spool_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
