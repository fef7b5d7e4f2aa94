/*
 * test_tmpfile.c: the spool's unnamed files (lib/spool/tmpfile.c): one
 * linked into place by its descriptor, or by /proc when that is not
 * allowed, a taken name refused (EEXIST) either way, and what was learnt
 * kept for the next spool of the same keep.
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

#include "spool/spool.h"
#include "spool/spool_impl.h"
#include "testutil.h"

/* An unnamed file in tmp/ holding text; its descriptor. */
static int
unnamed(struct spool *sp, const char *text)
{
	int	fd;

	assert_true(spool_unnamed_ok(sp));
	fd = openat(spool_statefd(sp, SPOOL_TMP), ".", O_TMPFILE | O_WRONLY,
	    0640);
	assert_true(fd != -1);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	return fd;
}

static void
linked(struct tu_spool *f, const char *name, const char *text)
{
	char	 path[256], *got;

	snprintf(path, sizeof(path), "%s/new/%s", f->dir, name);
	assert_non_null(got = tu_read_text(path));
	assert_string_equal(got, text);
	free(got);
}

/* Linked by descriptor where allowed, else by /proc: either way there. */
static void
test_link(void **state)
{
	struct tu_spool		*f = *state;
	struct spool_keep	 keep = { 0 };
	struct spool		*sp;
	char			 err[256];
	int			 fd, nfd, learnt;

	assert_non_null(sp = spool_open(f->dir, 0, err, sizeof(err)));
	spool_lend(sp, &keep);
	fd = unnamed(sp, "one");
	nfd = spool_statefd(sp, SPOOL_NEW);
	assert_int_equal(spool_link_unnamed(sp, fd, nfd, "a.json"), 0);
	linked(f, "a.json", "one");
	learnt = keep.flink;
	assert_true(learnt == 1 || learnt == -1);
	/* A taken name: EEXIST, the file there untouched. */
	assert_int_equal(spool_link_unnamed(sp, fd, nfd, "a.json"), -1);
	assert_int_equal(errno, EEXIST);
	close(fd);
	spool_free(sp);
	/* The next spool knows: by descriptor, no look at /proc. */
	assert_non_null(sp = spool_open(f->dir, 0, err, sizeof(err)));
	spool_lend(sp, &keep);
	fd = unnamed(sp, "two");
	assert_int_equal(sp->flink, learnt);
	assert_int_equal(spool_link_unnamed(sp, fd,
	    spool_statefd(sp, SPOOL_NEW), "b.json"), 0);
	linked(f, "b.json", "two");
	close(fd);
	spool_free(sp);
	spool_keep_free(&keep);
	assert_int_equal(keep.flink, 0);
}

/* Not allowed by descriptor: by /proc, and EEXIST still said. */
static void
test_by_proc(void **state)
{
	struct tu_spool	*f = *state;
	int		 fd, nfd;

	f->sp->flink = -1;
	fd = unnamed(f->sp, "three");
	nfd = spool_statefd(f->sp, SPOOL_NEW);
	assert_int_equal(spool_link_unnamed(f->sp, fd, nfd, "c.json"), 0);
	linked(f, "c.json", "three");
	assert_int_equal(spool_link_unnamed(f->sp, fd, nfd, "c.json"), -1);
	assert_int_equal(errno, EEXIST);
	close(fd);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_link, tu_spool_setup,
		    tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_by_proc, tu_spool_setup,
		    tu_spool_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
