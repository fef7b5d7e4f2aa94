/*
 * test_erase_files.c: what an erasure removes (lib/spool/erase_files.c;
 * msgspool-spool(5), Erasure): every file naming the address or an
 * erased message, in every state and area and the file provider's
 * outbox, under the locks the daemon takes; another's files, another
 * client's with --client and the suppressions left as they were; a
 * message a daemon holds reported busy, left whole.
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
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/config.h"
#include "base/msgspool.h"
#include "spool/erase.h"
#include "spool/inbox.h"
#include "spool/spool.h"
#include "spool/suppress.h"
#include "testutil.h"

#define X_PHONE	"+4915112345678"
#define Y_PHONE	"+4915112345679"

struct seen {
	char	removed[64][128];
	size_t	nremoved;
	char	busy[8][128];
	size_t	nbusy;
};

static void
record(void *arg, enum erase_report what, const char *where, const char *why)
{
	struct seen	*s = arg;

	assert_true(what == ERASE_REMOVED || why != NULL);
	if (what == ERASE_REMOVED && s->nremoved < 64)
		snprintf(s->removed[s->nremoved++], 128, "%s", where);
	else if (what == ERASE_BUSY && s->nbusy < 8)
		snprintf(s->busy[s->nbusy++], 128, "%s", where);
	else
		fail_msg("%s: %s", where, why);
}

static int
reported(const struct seen *s, const char *where)
{
	size_t	i;

	for (i = 0; i < s->nremoved; i++)
		if (strcmp(s->removed[i], where) == 0)
			return 1;
	return 0;
}

static int
exists(const struct tu_spool *f, const char *rel)
{
	char		path[512];
	struct stat	st;

	snprintf(path, sizeof(path), "%s/%s", f->dir, rel);
	return lstat(path, &st) == 0;
}

static void
put(const struct tu_spool *f, const char *rel, const char *text)
{
	char	path[512], dir[512], *slash;

	snprintf(path, sizeof(path), "%s/%s", f->dir, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	if ((slash = strrchr(dir, '/')) != NULL) {
		*slash = '\0';
		mkdir(dir, 0700);
	}
	tu_write_text(path, text);
}

/* A message of client to to, written into d; its id into id. */
static void
message(const struct tu_spool *f, enum spool_dir d, const char *client,
    const char *to, char *id)
{
	json_t	*doc;

	assert_int_equal(ulid_new(id), 0);
	doc = msgdoc_new(id, "sms", client, 0, json_pack("{s:s,s:s}", "to",
	    to, "body", "Hello"));
	assert_non_null(doc);
	if (d == SPOOL_NEW || d == SPOOL_DEFERRED)
		assert_int_equal(spool_enqueue(f->sp, doc, d), MSG_OK);
	else {
		char	name[64];

		snprintf(name, sizeof(name), "%s.json", id);
		assert_int_equal(spool_store(f->sp, d, name, doc, SPOOL__MAX),
		    MSG_OK);
	}
	json_decref(doc);
}

static char *
rel(char *buf, const char *dir, const char *id, const char *ext)
{
	snprintf(buf, 128, "%s/%s%s", dir, id, ext);
	return buf;
}

/* Make a file look a day old (tmp/ leftovers). */
static void
age(const struct tu_spool *f, const char *r)
{
	struct timespec	t[2];
	char		path[512];

	snprintf(path, sizeof(path), "%s/%s", f->dir, r);
	t[0].tv_sec = t[1].tv_sec = time(NULL) - 86400;
	t[0].tv_nsec = t[1].tv_nsec = 0;
	assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

/*
 * The whole spool: X's messages in every state, its inbound message and
 * note, and everything naming them or X, go; Y's stay, as do the
 * suppressions of X.
 */
static void
test_run_everywhere(void **state)
{
	struct tu_spool		*f = *state;
	struct erase_addr	 a;
	struct erase_opts	 o;
	struct erase_counts	 c;
	struct seen		 s;
	char			 xn[27], xd[27], xs[27], xf[27], y[27], r[128];
	char			 outbox[512], text[512], in[27];
	const char		*boxes[2] = { outbox, NULL };
	json_t			*doc, *sup;
	int			 dup;

	memset(&s, 0, sizeof(s));
	message(f, SPOOL_NEW, "acme", X_PHONE, xn);
	message(f, SPOOL_DEFERRED, "acme", X_PHONE, xd);
	message(f, SPOOL_SENT, "acme", X_PHONE, xs);
	message(f, SPOOL_FAILED, "acme", X_PHONE, xf);
	message(f, SPOOL_SENT, "acme", Y_PHONE, y);
	doc = inbox_new("ott", "whatsapp", "wamid.1", "4915112345678",
	    "+4930901820", "Yes", "text", NULL, time(NULL));
	json_object_set_new(doc, "client", json_string("acme"));
	assert_int_equal(inbox_keep(f->sp, doc, NULL, &dup), MSG_OK);
	snprintf(in, sizeof(in), "%s", json_string_value(json_object_get(doc,
	    "id")));
	json_decref(doc);
	/* What names them: by id only, or by the address. */
	snprintf(text, sizeof(text), "{\"version\":1,\"id\":\"%s\","
	    "\"provider\":\"twilio\",\"message\":\"%s\"}", xs, xs);
	put(f, rel(r, "receipts", "01M8RECEIPT0000000000000000", ".json"),
	    text);
	snprintf(text, sizeof(text), "{\"client\":\"acme\",\"data\":{\"id\":"
	    "\"%s\",\"to\":\"" X_PHONE "\"}}", xs);
	put(f, rel(r, "events", "01M8EVENT000000000000000000", ".json"),
	    text);
	put(f, rel(r, "events-failed", "01M8EVENTY00000000000000000", ".json"),
	    "{\"client\":\"acme\",\"data\":{\"to\":\"" Y_PHONE "\"}}");
	snprintf(text, sizeof(text), "%s\n", xs);
	put(f, "index/0123456789abcdef0123456789abcdef01234567", text);
	snprintf(text, sizeof(text), "%s\n", y);
	put(f, "index/fedcba9876543210fedcba9876543210fedcba98", text);
	put(f, rel(r, "claims", xf, ".json"), "{\"host\":\"h\",\"pid\":1}");
	snprintf(text, sizeof(text), "{\"version\":1,\"client\":\"acme\","
	    "\"reply\":{\"body\":\"{\\\"smsId\\\":\\\"%s\\\"}\"}}", xn);
	put(f, "idempotency/aaaa.json", text);
	put(f, "idempotency/aaaa.lock", "");
	put(f, rel(r, "blobs", xs, ".0"), "attachment");
	put(f, rel(r, "blobs", y, ".0"), "attachment");
	put(f, "tmp/old.json.01M8.host.1", "{\"to\":\"" X_PHONE "\"}");
	age(f, "tmp/old.json.01M8.host.1");
	put(f, "tmp/young.json.01M8.host.1", "{\"to\":\"" X_PHONE "\"}");
	put(f, "inbox-parts/01M8PART0000000000000000000.json",
	    "{\"from\":\"" X_PHONE "\",\"to\":\"+4930901820\"}");
	snprintf(outbox, sizeof(outbox), "%s/outbox", f->dir);
	put(f, rel(r, "outbox", xs, ".json"), "{\"message\":{}}");
	put(f, rel(r, "outbox", y, ".json"), "{\"message\":{}}");
	put(f, "outbox/01M8OLD00000000000000000000.json",
	    "{\"client\":\"acme\",\"message\":{\"to\":\"" X_PHONE "\"}}");
	assert_int_equal(suppress_add(f->sp, "acme", CHANNEL_SMS, X_PHONE,
	    "manual", NULL, NULL), 1);

	assert_int_equal(erase_addr_parse("4915112345678", &a), 0);
	memset(&o, 0, sizeof(o));
	o.outboxes = boxes;
	o.busy_ms = 100;
	o.report = record;
	o.arg = &s;
	assert_int_equal(erase_run(f->sp, &a, &o, &c), 0);

	assert_true(reported(&s, rel(r, "new", xn, ".json")) ||
	    reported(&s, rel(r, "cur", xn, ".json")));
	assert_true(reported(&s, rel(r, "deferred", xd, ".json")));
	assert_true(reported(&s, rel(r, "sent", xs, ".json")));
	assert_true(reported(&s, rel(r, "failed", xf, ".json")));
	assert_true(reported(&s, rel(r, "inbox", in, ".json")));
	assert_true(reported(&s, rel(r, "inbox-new", in, ".json")));
	assert_true(reported(&s, "idempotency/aaaa.lock"));
	assert_true(reported(&s, "outbox/01M8OLD00000000000000000000.json"));
	assert_int_equal(c.messages, 4);
	assert_int_equal(c.inbound, 1);
	assert_int_equal(c.busy, 1);
	assert_string_equal(s.busy[0], "tmp/young.json.01M8.host.1");
	assert_int_equal(c.failed, 0);
	assert_int_equal(c.removed, s.nremoved);
	/* Gone. */
	assert_false(exists(f, rel(r, "new", xn, ".json")));
	assert_false(exists(f, rel(r, "cur", xn, ".json")));
	assert_false(exists(f, rel(r, "cur", xd, ".json")));
	assert_false(exists(f, rel(r, "deferred", xd, ".json")));
	assert_false(exists(f, rel(r, "sent", xs, ".json")));
	assert_false(exists(f, rel(r, "failed", xf, ".json")));
	assert_false(exists(f, rel(r, "inbox", in, ".json")));
	assert_false(exists(f, rel(r, "inbox-new", in, ".json")));
	assert_false(exists(f, "receipts/01M8RECEIPT0000000000000000.json"));
	assert_false(exists(f, "events/01M8EVENT000000000000000000.json"));
	assert_false(exists(f,
	    "index/0123456789abcdef0123456789abcdef01234567"));
	assert_false(exists(f, rel(r, "claims", xf, ".json")));
	assert_false(exists(f, "idempotency/aaaa.json"));
	assert_false(exists(f, "idempotency/aaaa.lock"));
	assert_false(exists(f, rel(r, "blobs", xs, ".0")));
	assert_false(exists(f, "tmp/old.json.01M8.host.1"));
	assert_false(exists(f, "inbox-parts/01M8PART0000000000000000000.json"));
	assert_false(exists(f, rel(r, "outbox", xs, ".json")));
	assert_false(exists(f, "outbox/01M8OLD00000000000000000000.json"));
	/* Left. */
	assert_true(exists(f, rel(r, "sent", y, ".json")));
	assert_true(exists(f,
	    "events-failed/01M8EVENTY00000000000000000.json"));
	assert_true(exists(f,
	    "index/fedcba9876543210fedcba9876543210fedcba98"));
	assert_true(exists(f, rel(r, "blobs", y, ".0")));
	assert_true(exists(f, rel(r, "outbox", y, ".json")));
	assert_true(exists(f, "tmp/young.json.01M8.host.1"));
	assert_non_null(sup = suppress_get(f->sp, "acme", CHANNEL_SMS,
	    X_PHONE));
	json_decref(sup);

	/* Again: nothing more, the young tmp/ file busy still. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(erase_run(f->sp, &a, &o, &c), 0);
	assert_int_equal(c.removed, 0);
	assert_int_equal(c.busy, 1);
}

/* With a client, another client's messages to the address stay. */
static void
test_run_client(void **state)
{
	struct tu_spool		*f = *state;
	struct erase_addr	 a;
	struct erase_opts	 o;
	struct erase_counts	 c;
	struct seen		 s;
	char			 mine[27], theirs[27], r[128], text[256];

	memset(&s, 0, sizeof(s));
	message(f, SPOOL_SENT, "acme", X_PHONE, mine);
	message(f, SPOOL_SENT, "other", X_PHONE, theirs);
	snprintf(text, sizeof(text), "{\"client\":\"other\",\"data\":{"
	    "\"id\":\"%s\",\"to\":\"" X_PHONE "\"}}", theirs);
	put(f, "events/01M8EVENT000000000000000000.json", text);
	put(f, "receipts/01M8RECEIPT0000000000000000.json",
	    "{\"error\":{\"message\":\"" X_PHONE " unsubscribed\"}}");
	assert_int_equal(erase_addr_parse(X_PHONE, &a), 0);
	memset(&o, 0, sizeof(o));
	o.client = "acme";
	o.busy_ms = 100;
	o.report = record;
	o.arg = &s;
	assert_int_equal(erase_run(f->sp, &a, &o, &c), 0);
	assert_int_equal(c.messages, 1);
	assert_false(exists(f, rel(r, "sent", mine, ".json")));
	assert_true(exists(f, rel(r, "sent", theirs, ".json")));
	assert_true(exists(f, "events/01M8EVENT000000000000000000.json"));
	/* A receipt says nothing of its client: by an erased id only. */
	assert_true(exists(f, "receipts/01M8RECEIPT0000000000000000.json"));
	/* An unknown client: nothing. */
	o.client = "nobody";
	assert_int_equal(erase_run(f->sp, &a, &o, &c), 0);
	assert_int_equal(c.removed + c.busy + c.failed, 0);
}

/*
 * A message a daemon holds in cur/ (its claim's lock) is looked at
 * again, then reported busy and left whole; once let go, it goes.
 */
static void
test_run_held(void **state)
{
	struct tu_spool		*f = *state;
	struct erase_addr	 a;
	struct erase_opts	 o;
	struct erase_counts	 c;
	struct seen		 s;
	char			 id[27], r[128], path[512];
	int			 fd;

	memset(&s, 0, sizeof(s));
	message(f, SPOOL_CUR, "acme", X_PHONE, id);
	snprintf(path, sizeof(path), "%s/%s", f->dir, rel(r, "cur", id,
	    ".json"));
	assert_true((fd = open(path, O_RDWR)) != -1);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	assert_int_equal(erase_addr_parse(X_PHONE, &a), 0);
	memset(&o, 0, sizeof(o));
	o.busy_ms = 300;
	o.report = record;
	o.arg = &s;
	assert_int_equal(erase_run(f->sp, &a, &o, &c), 0);
	assert_int_equal(c.busy, 1);
	assert_int_equal(c.messages, 0);
	assert_string_equal(s.busy[0], rel(r, "cur", id, ".json"));
	assert_true(exists(f, rel(r, "cur", id, ".json")));
	close(fd);
	memset(&s, 0, sizeof(s));
	assert_int_equal(erase_run(f->sp, &a, &o, &c), 0);
	assert_int_equal(c.busy, 0);
	assert_int_equal(c.messages, 1);
	assert_false(exists(f, rel(r, "cur", id, ".json")));
}

/* An inbound part of a client's number is the client's to erase. */
static void
test_run_part_owner(void **state)
{
	struct tu_spool		*f = *state;
	struct erase_addr	 a;
	struct erase_opts	 o;
	struct erase_counts	 c;
	struct seen		 s;
	struct config		*cfg;
	static const char	 conf[] = "[client.acme]\n"
	    "inbound = +4930901820\n";
	char			 err[256];

	memset(&s, 0, sizeof(s));
	assert_non_null(cfg = config_parse("t.conf", conf, sizeof(conf) - 1,
	    err, sizeof(err)));
	put(f, "inbox-parts/01M8PART0000000000000000000.json",
	    "{\"from\":\"" X_PHONE "\",\"to\":\"+4930901820\"}");
	put(f, "inbox-parts/01M8PART0000000000000000001.json",
	    "{\"from\":\"" X_PHONE "\",\"to\":\"+4930901821\"}");
	assert_int_equal(erase_addr_parse(X_PHONE, &a), 0);
	memset(&o, 0, sizeof(o));
	o.client = "acme";
	o.cfg = cfg;
	o.report = record;
	o.arg = &s;
	assert_int_equal(erase_run(f->sp, &a, &o, &c), 0);
	assert_false(exists(f, "inbox-parts/01M8PART0000000000000000000.json"));
	assert_true(exists(f, "inbox-parts/01M8PART0000000000000000001.json"));
	config_free(cfg);
}

/*
 * Many messages, their ids coming in no order (state by state), one of
 * them in two states (a dead claim left beside its outcome): each goes,
 * and each is counted once; what names them goes with them.
 */
static void
test_run_many(void **state)
{
	struct tu_spool		*f = *state;
	static const enum spool_dir dirs[] = { SPOOL_SENT, SPOOL_NEW,
	    SPOOL_FAILED, SPOOL_DEFERRED };
	struct erase_addr	 a;
	struct erase_opts	 o;
	struct erase_counts	 c;
	char			 ids[100][27], r[128], text[256], path[512];
	int			 i;

	for (i = 0; i < 100; i++)
		message(f, dirs[i % 4], "acme", X_PHONE, ids[i]);
	snprintf(path, sizeof(path), "%s/%s", f->dir, rel(r, "cur", ids[0],
	    ".json"));
	snprintf(text, sizeof(text), "{\"to\":\"" Y_PHONE "\",\"id\":"
	    "\"%.26s\"}", ids[0]);
	tu_write_text(path, text);
	for (i = 0; i < 100; i += 7) {
		snprintf(text, sizeof(text), "{\"message\":\"%.26s\"}",
		    ids[i]);
		snprintf(r, sizeof(r), "receipts/01M8RECEIPT%016d.json", i);
		put(f, r, text);
	}
	assert_int_equal(erase_addr_parse(X_PHONE, &a), 0);
	memset(&o, 0, sizeof(o));
	assert_int_equal(erase_run(f->sp, &a, &o, &c), 0);
	assert_int_equal(c.messages, 101);
	assert_int_equal(c.removed, 101 + 15);
	assert_false(exists(f, rel(r, "cur", ids[0], ".json")));
	assert_false(exists(f, "receipts/01M8RECEIPT0000000000000098.json"));
}

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, tu_spool_setup, \
	    tu_spool_teardown)
	const struct CMUnitTest tests[] = {
		T(test_run_everywhere),
		T(test_run_client),
		T(test_run_held),
		T(test_run_part_owner),
		T(test_run_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
