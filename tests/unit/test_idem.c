/*
 * test_idem.c: Idempotency-Key records: parsing keys, holding a
 * request's messages until its record is durable, replays, another
 * body, a key in use, a request that died before or after its record,
 * expiry and pruning.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http/http.h"
#include "http/idem.h"
#include "http/problem.h"
#include "spool/spool.h"
#include "testutil.h"

static const time_t	T0 = 1795428000;

static void
test_key_parse(void **state)
{
	char	key[IDEM_KEY_MAX + 1], long_key[IDEM_KEY_MAX + 3];

	(void)state;
	assert_int_equal(idem_key_parse("order-42", key), 0);
	assert_string_equal(key, "order-42");
	assert_int_equal(idem_key_parse("a b", key), 0);
	assert_int_equal(idem_key_parse("\"quoted \\\"x\\\" \\\\\"", key), 0);
	assert_string_equal(key, "quoted \"x\" \\");
	assert_int_equal(idem_key_parse("", key), -1);
	assert_int_equal(idem_key_parse("\"\"", key), -1);
	assert_int_equal(idem_key_parse("\"open", key), -1);
	assert_int_equal(idem_key_parse("\"a\"b", key), -1);
	assert_int_equal(idem_key_parse("\"a\\n\"", key), -1);
	assert_int_equal(idem_key_parse("tab\there", key), -1);
	assert_int_equal(idem_key_parse("caf\xc3\xa9", key), -1);
	assert_int_equal(idem_key_parse(NULL, key), -1);
	memset(long_key, 'k', IDEM_KEY_MAX);
	long_key[IDEM_KEY_MAX] = '\0';
	assert_int_equal(idem_key_parse(long_key, key), 0);
	long_key[IDEM_KEY_MAX] = 'k';
	long_key[IDEM_KEY_MAX + 1] = '\0';
	assert_int_equal(idem_key_parse(long_key, key), -1);
}

/* How many files of dir (under the spool) end with suffix. */
static int
count(const struct tu_spool *f, const char *dir, const char *suffix)
{
	char		 path[256];
	DIR		*d;
	struct dirent	*de;
	size_t		 len, sl = strlen(suffix);
	int		 n = 0;

	snprintf(path, sizeof(path), "%s/%s", spool_root(f->sp), dir);
	if ((d = opendir(path)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		len = strlen(de->d_name);
		if (de->d_name[0] != '.' && len >= sl &&
		    strcmp(de->d_name + len - sl, suffix) == 0)
			n++;
	}
	closedir(d);
	return n;
}

/* Enqueue one message as a handler would; its id into id. */
static void
enqueue(struct tu_spool *f, char *id)
{
	json_t	*doc;

	assert_int_equal(ulid_new(id), 0);
	doc = json_pack("{s:i, s:s}", "version", 1, "id", id);
	assert_non_null(doc);
	assert_int_equal(spool_enqueue(f->sp, doc, SPOOL_NEW), MSG_OK);
	json_decref(doc);
}

static struct response *
accepted(const char *id)
{
	struct response	*r;
	char		 body[128];

	snprintf(body, sizeof(body), "{\"smsId\":\"%s\"}", id);
	r = response_new(202, "application/json", body, strlen(body));
	assert_non_null(r);
	response_header(r, "Location", "/messages/x");
	response_header(r, "RateLimit", "\"msgs\";r=1;t=1");
	return r;
}

static const char *
header(const struct response *r, const char *name)
{
	size_t	i;

	for (i = 0; i < r->nheaders; i++)
		if (strcmp(r->headers[i].name, name) == 0)
			return r->headers[i].value;
	return NULL;
}

static void
test_first_then_replay(void **state)
{
	struct tu_spool	*f = *state;
	struct idem	*id, *other;
	struct response	*r;
	char		 msg[ULID_LEN + 1];

	r = idem_begin(f->sp, "acme", "k1", "/sms/v1/deliver", "{}", 2, 3600,
	    T0, &id);
	assert_null(r);
	assert_non_null(id);
	enqueue(f, msg);
	/* Held in tmp/, not yet in new/, while the request runs. */
	assert_int_equal(count(f, "tmp", ".held"), 1);
	assert_int_equal(count(f, "new", ".json"), 0);
	/* Another request with the key meanwhile: 409, Retry-After 1. */
	r = idem_begin(f->sp, "acme", "k1", "/sms/v1/deliver", "{}", 2, 3600,
	    T0, &other);
	assert_non_null(r);
	assert_null(other);
	assert_int_equal(r->status, 409);
	assert_string_equal(header(r, "Retry-After"), "1");
	response_free(r);
	r = idem_finish(id, accepted(msg));
	assert_int_equal(r->status, 202);
	response_free(r);
	idem_free(id);
	assert_int_equal(count(f, "tmp", ".held"), 0);
	assert_int_equal(count(f, "new", ".json"), 1);

	/* The same body: the kept reply, nothing queued again. */
	r = idem_begin(f->sp, "acme", "k1", "/sms/v1/deliver", "{}", 2, 3600,
	    T0 + 10, &id);
	assert_non_null(r);
	assert_null(id);
	assert_int_equal(r->status, 202);
	assert_string_equal(r->content_type, "application/json");
	assert_non_null(strstr(r->body, msg));
	assert_string_equal(header(r, "Idempotent-Replay"), "true");
	assert_string_equal(header(r, "Location"), "/messages/x");
	assert_null(header(r, "RateLimit"));
	response_free(r);
	assert_int_equal(count(f, "new", ".json"), 1);

	/* Another body, or another route: 422. */
	r = idem_begin(f->sp, "acme", "k1", "/sms/v1/deliver", "{ }", 3, 3600,
	    T0 + 10, &id);
	assert_int_equal(r->status, 422);
	response_free(r);
	r = idem_begin(f->sp, "acme", "k1", "/voice/v1/deliver", "{}", 2,
	    3600, T0 + 10, &id);
	assert_int_equal(r->status, 422);
	response_free(r);

	/* The key of another client is another key. */
	r = idem_begin(f->sp, "other", "k1", "/sms/v1/deliver", "{ }", 3,
	    3600, T0 + 10, &id);
	assert_null(r);
	assert_non_null(id);
	idem_free(id);

	/* Expired: the key is free again. */
	r = idem_begin(f->sp, "acme", "k1", "/sms/v1/deliver", "{ }", 3, 3600,
	    T0 + 3600, &id);
	assert_null(r);
	assert_non_null(id);
	idem_free(id);
}

static void
test_not_kept(void **state)
{
	struct tu_spool	*f = *state;
	struct idem	*id;
	struct response	*r;
	char		 msg[ULID_LEN + 1];

	assert_null(idem_begin(f->sp, "acme", "k2", "/r", "a", 1, 3600, T0,
	    &id));
	enqueue(f, msg);
	r = idem_finish(id, response_error(503, "full"));
	assert_int_equal(r->status, 503);
	response_free(r);
	idem_free(id);
	/* Nothing queued, nothing kept: a retry runs anew. */
	assert_int_equal(count(f, "tmp", ".held"), 0);
	assert_int_equal(count(f, "new", ".json"), 0);
	assert_null(idem_begin(f->sp, "acme", "k2", "/r", "a", 1, 3600, T0,
	    &id));
	assert_non_null(id);
	idem_free(id);
	/* Without a key nothing is held. */
	enqueue(f, msg);
	assert_int_equal(count(f, "new", ".json"), 1);
}

static void
test_died(void **state)
{
	struct tu_spool	*f = *state;
	struct idem	*id;
	struct response	*r;
	char		 msg[ULID_LEN + 1], path[512], held[512];

	/* Died before its record: its held file is never published. */
	assert_null(idem_begin(f->sp, "acme", "k3", "/r", "a", 1, 3600, T0,
	    &id));
	enqueue(f, msg);
	idem_free(id);
	assert_int_equal(count(f, "tmp", ".held"), 1);
	assert_null(idem_begin(f->sp, "acme", "k3", "/r", "a", 1, 3600, T0,
	    &id));
	enqueue(f, msg);
	r = idem_finish(id, accepted(msg));
	response_free(r);
	idem_free(id);
	assert_int_equal(count(f, "new", ".json"), 1);

	/*
	 * Died after its record, before publishing: put the published file
	 * back into tmp/ as it was held; the retry publishes it once.
	 */
	snprintf(path, sizeof(path), "%s/new/%s.json", spool_root(f->sp),
	    msg);
	snprintf(held, sizeof(held), "%s/tmp/%s.json.held",
	    spool_root(f->sp), msg);
	assert_int_equal(rename(path, held), 0);
	assert_int_equal(count(f, "new", ".json"), 0);
	r = idem_begin(f->sp, "acme", "k3", "/r", "a", 1, 3600, T0, &id);
	assert_non_null(r);
	assert_int_equal(r->status, 202);
	response_free(r);
	assert_int_equal(count(f, "new", ".json"), 1);
	assert_int_equal(access(held, F_OK), -1);
	/* And again: published already, nothing more. */
	r = idem_begin(f->sp, "acme", "k3", "/r", "a", 1, 3600, T0, &id);
	assert_int_equal(r->status, 202);
	response_free(r);
	assert_int_equal(count(f, "new", ".json"), 1);
}

static void
test_prune(void **state)
{
	struct tu_spool	*f = *state;
	struct idem	*id, *busy;
	struct response	*r;
	char		 msg[ULID_LEN + 1];

	assert_null(idem_begin(f->sp, "acme", "old", "/r", "a", 1, 3600, T0,
	    &id));
	enqueue(f, msg);
	response_free(idem_finish(id, accepted(msg)));
	idem_free(id);
	assert_null(idem_begin(f->sp, "acme", "busy", "/r", "a", 1, 3600, T0,
	    &busy));
	assert_int_equal(count(f, IDEM_AREA, ".json"), 1);
	assert_int_equal(count(f, IDEM_AREA, ".lock"), 2);
	/* Nothing older than a minute ago. */
	assert_int_equal(idem_prune(f->sp, time(NULL) - 60), 0);
	/* Everything: but the key in use keeps its lock. */
	assert_int_equal(idem_prune(f->sp, time(NULL) + 60), 1);
	assert_int_equal(count(f, IDEM_AREA, ".json"), 0);
	assert_int_equal(count(f, IDEM_AREA, ".lock"), 1);
	r = idem_begin(f->sp, "acme", "busy", "/r", "a", 1, 3600, T0, &id);
	assert_int_equal(r->status, 409);
	response_free(r);
	idem_free(busy);
	/* A pruned key is new. */
	assert_null(idem_begin(f->sp, "acme", "old", "/r", "a", 1, 3600, T0,
	    &id));
	idem_free(id);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_parse),
		cmocka_unit_test_setup_teardown(test_first_then_replay,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_not_kept,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_died,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_prune,
		    tu_spool_setup, tu_spool_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
