/*
 * test_cancel.c: unit tests for lib/spool/cancel.c (cancel.h): a
 * message looked up by its id, for its client or any; its cancel from
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
