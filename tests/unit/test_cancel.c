/*
 * test_cancel.c: unit tests for lib/spool/cancel.c (cancel.h): a
 * message looked up by its id, for its client or any, past what is not
 * a file, an error of the look told as such; its cancel from
 * new/ or deferred/ into failed/ with its webhook event, its line in
 * its client's list and its count, the claim let go; the same answer
 * again; a message
 * past canceling, another client's, or held by a daemon.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/config.h"
#include "base/msgspool.h"
#include "spool/cancel.h"
#include "spool/counts.h"
#include "spool/list.h"
#include "spool/msgdoc.h"
#include "spool/spool.h"
#include "spooldir.h"
#include "testutil.h"

/* A config whose client acme wants its canceled messages' events. */
static struct config *
webhook_conf(void)
{
	static const char text[] = "[client.acme]\n"
	    "webhook-url = https://hooks.example/acme\n"
	    "webhook-events = failed, canceled\n";
	struct config	*cfg;
	char		 err[256];

	if ((cfg = config_parse("/etc/msgspool/msgspool.conf", text,
	    strlen(text), err, sizeof(err))) == NULL)
		fail_msg("config_parse: %s", err);
	return cfg;
}

/* Entries of root/area (not dot files); 0 when it does not exist. */
static size_t
area_entries(const struct fixture *f, const char *area)
{
	char		 path[256];
	DIR		*d;
	struct dirent	*e;
	size_t		 n = 0;

	snprintf(path, sizeof(path), "%s/%s", f->root, area);
	if ((d = opendir(path)) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static void
test_lookup(void **state)
{
	struct fixture	*f = *state;
	char		 id[SPOOL_ID_LEN + 1], name[SPOOL_NAME_MAX], err[256];
	char		 found[SPOOL_NAME_MAX];
	enum spool_dir	 dir;
	json_t		*doc;

	json_decref(enqueue(f, SPOOL_DEFERRED, "x", id, name, sizeof(name)));
	doc = spool_lookup(f->sp, id, "acme", &dir, found, err, sizeof(err));
	assert_non_null(doc);
	assert_int_equal(dir, SPOOL_DEFERRED);
	assert_string_equal(found, name);
	json_decref(doc);
	/* Any client's, for the operator. */
	doc = spool_lookup(f->sp, id, NULL, &dir, found, err, sizeof(err));
	assert_non_null(doc);
	json_decref(doc);
	/* Another client's does not exist for this one. */
	errno = 0;
	assert_null(spool_lookup(f->sp, id, "other", &dir, found, err,
	    sizeof(err)));
	assert_int_equal(errno, ENOENT);
	errno = 0;
	assert_null(spool_lookup(f->sp, "01ARZ3NDEKTSV4RRFFQ69G5FAV", NULL,
	    &dir, found, err, sizeof(err)));
	assert_int_equal(errno, ENOENT);
}

/*
 * The look is the open (spool_find_open): in spool_find's order, what
 * is not a regular file passed over, as spool_find passes it: a link in
 * sent/, a FIFO in new/ (opened without blocking), a directory in
 * deferred/; the message found in failed/, whole.
 */
static void
test_lookup_passes_over(void **state)
{
	struct fixture	*f = *state;
	char		 id[SPOOL_ID_LEN + 1], name[SPOOL_NAME_MAX], err[256];
	char		 found[SPOOL_NAME_MAX], path[256], from[256];
	enum spool_dir	 dir;
	json_t		*doc, *want;

	want = enqueue(f, SPOOL_NEW, "x", id, name, sizeof(name));
	state_path(f, SPOOL_NEW, name, from, sizeof(from));
	state_path(f, SPOOL_FAILED, name, path, sizeof(path));
	assert_int_equal(rename(from, path), 0);
	state_path(f, SPOOL_SENT, name, from, sizeof(from));
	assert_int_equal(symlink(path, from), 0);
	state_path(f, SPOOL_NEW, name, from, sizeof(from));
	assert_int_equal(mkfifo(from, 0600), 0);
	state_path(f, SPOOL_DEFERRED, name, from, sizeof(from));
	assert_int_equal(mkdir(from, 0700), 0);
	doc = spool_lookup(f->sp, id, "acme", &dir, found, err, sizeof(err));
	assert_non_null(doc);
	assert_int_equal(dir, SPOOL_FAILED);
	assert_string_equal(found, name);
	assert_true(json_equal(doc, want));
	json_decref(doc);
	json_decref(want);
}

/*
 * A look that cannot be made (no descriptor left) is that error, not
 * "no such message": the caller answers 500, never 404.
 */
static void
test_lookup_error(void **state)
{
	struct fixture	*f = *state;
	char		 id[SPOOL_ID_LEN + 1], name[SPOOL_NAME_MAX], err[256];
	char		 found[SPOOL_NAME_MAX];
	enum spool_dir	 dir;
	struct rlimit	 was, low;
	int		 fds[64], n = 0, fd, e;

	json_decref(enqueue(f, SPOOL_NEW, "x", id, name, sizeof(name)));
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &was), 0);
	low = was;
	low.rlim_cur = 64;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (n < 64 && (fd = dup(0)) != -1)
		fds[n++] = fd;
	errno = 0;
	assert_null(spool_lookup(f->sp, id, NULL, &dir, found, err,
	    sizeof(err)));
	e = errno;
	while (n > 0)
		close(fds[--n]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &was), 0);
	assert_int_equal(e, EMFILE);
	assert_non_null(strstr(err, name));
}

/*
 * A queued message: canceled into failed/, its event written, its list
 * line canceled, nothing left in new/, cur/ or claims/; again, the same.
 */
static void
test_cancel_queued(void **state)
{
	struct fixture		*f = *state;
	struct config		*cfg = webhook_conf();
	struct list_filter	 lf = { .statuses = 1u << LIST_CANCELED,
				    .channel = -1, .direction = -1,
				    .since = -1, .until = -1, .limit = 10 };
	struct buf		 page = { 0 };
	struct cancel		 c;
	char			 id[SPOOL_ID_LEN + 1], name[SPOOL_NAME_MAX];
	char			 next[SPOOL_ID_LEN + 1];
	unsigned long long	 v[CHANNEL__MAX];
	size_t			 n = 0;

	json_decref(enqueue(f, SPOOL_NEW, "x", id, name, sizeof(name)));
	assert_int_equal(spool_cancel(f->sp, cfg, id, "acme", time(NULL),
	    &c), CANCEL_DONE);
	assert_int_equal(c.dir, SPOOL_FAILED);
	assert_string_equal(msgdoc_status(c.doc, "failed"), "canceled");
	json_decref(c.doc);
	assert_false(exists(f, SPOOL_NEW, name));
	assert_false(exists(f, SPOOL_CUR, name));
	assert_true(exists(f, SPOOL_FAILED, name));
	assert_int_equal(area_entries(f, "claims"), 0);
	assert_int_equal(area_entries(f, "events"), 1);
	assert_int_equal(list_page(f->sp, "acme", &lf, time(NULL), 0, &page,
	    &n, next), 0);
	assert_int_equal(n, 1);
	assert_non_null(strstr(page.p, id));
	buf_free(&page);

	assert_int_equal(counts_read(f->sp, COUNTS_CANCELED, v), 0);
	assert_int_equal(v[CHANNEL_SMS], 1);

	assert_int_equal(spool_cancel(f->sp, cfg, id, "acme", time(NULL),
	    &c), CANCEL_ALREADY);
	assert_int_equal(c.dir, SPOOL_FAILED);
	json_decref(c.doc);
	assert_int_equal(area_entries(f, "events"), 1);
	/* Counted once. */
	assert_int_equal(counts_read(f->sp, COUNTS_CANCELED, v), 0);
	assert_int_equal(v[CHANNEL_SMS], 1);
	config_free(cfg);
}

/* Scheduled, for any client (the operator's): canceled, no event. */
static void
test_cancel_scheduled_any_client(void **state)
{
	struct fixture	*f = *state;
	struct cancel	 c;
	char		 id[SPOOL_ID_LEN + 1], name[SPOOL_NAME_MAX];

	json_decref(enqueue(f, SPOOL_DEFERRED, "x", id, name, sizeof(name)));
	assert_int_equal(spool_cancel(f->sp, NULL, id, NULL, time(NULL), &c),
	    CANCEL_DONE);
	json_decref(c.doc);
	assert_false(exists(f, SPOOL_DEFERRED, name));
	assert_true(exists(f, SPOOL_FAILED, name));
	assert_int_equal(area_entries(f, "events"), 0);
}

/* Sent, or another client's, or none: nothing changes. */
static void
test_not_cancelable(void **state)
{
	struct fixture	*f = *state;
	struct cancel	 c;
	char		 id[SPOOL_ID_LEN + 1], name[SPOOL_NAME_MAX];
	json_t		*doc;

	doc = enqueue(f, SPOOL_NEW, "x", id, name, sizeof(name));
	assert_int_equal(spool_cancel(f->sp, NULL, id, "other", time(NULL),
	    &c), CANCEL_NOT_FOUND);
	assert_null(c.doc);
	assert_true(exists(f, SPOOL_NEW, name));
	assert_int_equal(spool_store(f->sp, SPOOL_SENT, name, doc, SPOOL_NEW),
	    MSG_OK);
	json_decref(doc);
	assert_int_equal(spool_cancel(f->sp, NULL, id, "acme", time(NULL),
	    &c), CANCEL_TOO_LATE);
	assert_int_equal(c.dir, SPOOL_SENT);
	json_decref(c.doc);
	assert_true(exists(f, SPOOL_SENT, name));
	assert_int_equal(spool_cancel(f->sp, NULL,
	    "01ARZ3NDEKTSV4RRFFQ69G5FAV", NULL, time(NULL), &c),
	    CANCEL_NOT_FOUND);
}

/* Held by a daemon (its lock on new/NAME) at every try: busy, left. */
static void
test_busy(void **state)
{
	struct fixture	*f = *state;
	struct cancel	 c;
	char		 id[SPOOL_ID_LEN + 1], name[SPOOL_NAME_MAX];
	char		 path[256];
	int		 fd;

	json_decref(enqueue(f, SPOOL_NEW, "x", id, name, sizeof(name)));
	state_path(f, SPOOL_NEW, name, path, sizeof(path));
	assert_true((fd = open(path, O_RDONLY)) != -1);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	assert_int_equal(spool_cancel(f->sp, NULL, id, NULL, time(NULL), &c),
	    CANCEL_BUSY);
	assert_int_equal(c.dir, SPOOL_NEW);
	json_decref(c.doc);
	assert_true(exists(f, SPOOL_NEW, name));
	close(fd);
	assert_int_equal(spool_cancel(f->sp, NULL, id, NULL, time(NULL), &c),
	    CANCEL_DONE);
	json_decref(c.doc);
}

/* A file of new/ that is no spool document: an error, left there. */
static void
test_not_a_document(void **state)
{
	struct fixture	*f = *state;
	struct cancel	 c;
	char		 id[SPOOL_ID_LEN + 1], name[SPOOL_NAME_MAX];
	char		 path[256];

	json_decref(enqueue(f, SPOOL_NEW, "x", id, name, sizeof(name)));
	state_path(f, SPOOL_NEW, name, path, sizeof(path));
	tu_write_text(path, "{\"version\": 999}");
	assert_int_equal(spool_cancel(f->sp, NULL, id, NULL, time(NULL), &c),
	    CANCEL_ERROR);
	assert_null(c.doc);
	assert_int_not_equal(c.err[0], '\0');
	assert_true(exists(f, SPOOL_NEW, name));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lookup, setup_spool,
		    teardown),
		cmocka_unit_test_setup_teardown(test_lookup_passes_over,
		    setup_spool, teardown),
		cmocka_unit_test_setup_teardown(test_lookup_error,
		    setup_spool, teardown),
		cmocka_unit_test_setup_teardown(test_cancel_queued,
		    setup_spool, teardown),
		cmocka_unit_test_setup_teardown(
		    test_cancel_scheduled_any_client, setup_spool, teardown),
		cmocka_unit_test_setup_teardown(test_not_cancelable,
		    setup_spool, teardown),
		cmocka_unit_test_setup_teardown(test_busy, setup_spool,
		    teardown),
		cmocka_unit_test_setup_teardown(test_not_a_document,
		    setup_spool, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
