/*
 * test_metrics.c: the Prometheus text of GET /metrics (metrics.h): the
 * queue by state and channel, the counters of msgspoold's state, the
 * canceled messages the CGI programs count, label values escaped.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "base/ulid.h"
#include "spool/counts.h"
#include "spool/metrics.h"
#include "spooldir.h"

static void
put(const struct fixture *f, const char *channel, enum spool_dir dest)
{
	char	 id[ULID_LEN + 1], name[SPOOL_NAME_MAX];
	json_t	*doc;

	assert_int_equal(ulid_new(id), 0);
	doc = json_pack("{s:i, s:s, s:s, s:s, s:s}", "version", 1, "id", id,
	    "channel", channel, "client", "c1", "created",
	    "2026-11-26T12:00:00Z");
	snprintf(name, sizeof(name), "%s.json", id);
	if (dest == SPOOL_NEW || dest == SPOOL_DEFERRED)
		assert_int_equal(spool_enqueue(f->sp, doc, dest), MSG_OK);
	else
		assert_int_equal(spool_store(f->sp, dest, name, doc,
		    SPOOL__MAX), MSG_OK);
	json_decref(doc);
}

static char *
render(const struct fixture *f, const json_t *daemon)
{
	struct buf	 b = { 0 };

	assert_int_equal(metrics_render(f->sp, daemon, time(NULL), &b), 0);
	return buf_take(&b, NULL);
}

static void
test_queue(void **state)
{
	const struct fixture *f = *state;
	char	*t;

	put(f, "sms", SPOOL_NEW);
	put(f, "sms", SPOOL_NEW);
	put(f, "email", SPOOL_NEW);
	put(f, "ott", SPOOL_DEFERRED);
	t = render(f, NULL);
	assert_non_null(strstr(t, "# TYPE msgspool_queue_messages gauge\n"));
	assert_non_null(strstr(t,
	    "msgspool_queue_messages{state=\"new\",channel=\"sms\"} 2\n"));
	assert_non_null(strstr(t,
	    "msgspool_queue_messages{state=\"new\",channel=\"email\"} 1\n"));
	assert_non_null(strstr(t,
	    "msgspool_queue_messages{state=\"deferred\",channel=\"ott\"} 1\n"));
	assert_non_null(strstr(t,
	    "msgspool_queue_messages{state=\"sent\",channel=\"voice\"} 0\n"));
	assert_non_null(strstr(t,
	    "msgspool_daemon_heartbeat_timestamp_seconds 0\n"));
	assert_non_null(strstr(t, "msgspool_build_info{version=\""));
	assert_non_null(strstr(t, "# TYPE msgspool_spool_free_bytes gauge\n"));
	free(t);
}

static void
test_counters(void **state)
{
	const struct fixture *f = *state;
	json_t	*d;
	char	*t;

	d = json_loads("{\"heartbeat\": 1764158400,"
	    " \"attempts\": [{\"channel\": \"sms\", \"route\": \"r\\\"1\","
	    " \"provider\": \"a\\\\b\\n\", \"result\": \"sent\", \"count\": 3}],"
	    " \"webhooks\": [{\"result\": \"ok\", \"count\": 2}],"
	    " \"routes\": [{\"route\": \"sms\", \"up\": 1}],"
	    " \"durations\": [{\"provider\": \"http\","
	    " \"le\": [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],"
	    " \"buckets\": [1, 2, 2, 2, 2, 2, 2, 2, 2],"
	    " \"count\": 3, \"sum\": 40.5}]}", 0, NULL);
	assert_non_null(d);
	t = render(f, d);
	assert_non_null(strstr(t, "msgspool_attempts_total{channel=\"sms\","
	    "route=\"r\\\"1\",provider=\"a\\\\b\\n\",result=\"sent\"} 3\n"));
	assert_non_null(strstr(t,
	    "msgspool_webhook_deliveries_total{result=\"ok\"} 2\n"));
	assert_non_null(strstr(t, "msgspool_route_up{route=\"sms\"} 1\n"));
	assert_non_null(strstr(t, "# TYPE "
	    "msgspool_provider_request_duration_seconds histogram\n"));
	assert_non_null(strstr(t, "msgspool_provider_request_duration_seconds"
	    "_bucket{provider=\"http\",le=\"0.05\"} 1\n"));
	assert_non_null(strstr(t, "msgspool_provider_request_duration_seconds"
	    "_bucket{provider=\"http\",le=\"+Inf\"} 3\n"));
	assert_non_null(strstr(t, "msgspool_provider_request_duration_seconds"
	    "_sum{provider=\"http\"} 40.5\n"));
	assert_non_null(strstr(t,
	    "msgspool_daemon_heartbeat_timestamp_seconds 1764158400\n"));
	free(t);
	json_decref(d);
}

/* The cache of channels: new files read, gone ones dropped, a bad one
 * costs only time. */
static void
test_cache(void **state)
{
	const struct fixture *f = *state;
	char	 path[512], *t;
	FILE	*fp;

	put(f, "sms", SPOOL_SENT);
	put(f, "voice", SPOOL_SENT);
	t = render(f, NULL);
	free(t);
	snprintf(path, sizeof(path), "%s/metrics/queue-sent", f->root);
	assert_non_null(fp = fopen(path, "r"));
	fclose(fp);
	put(f, "voice", SPOOL_SENT);
	t = render(f, NULL);
	assert_non_null(strstr(t,
	    "msgspool_queue_messages{state=\"sent\",channel=\"voice\"} 2\n"));
	free(t);
	/* A cache that lies about a file's channel is no cache of it. */
	assert_non_null(fp = fopen(path, "w"));
	fputs("garbage\n", fp);
	fclose(fp);
	t = render(f, NULL);
	assert_non_null(strstr(t,
	    "msgspool_queue_messages{state=\"sent\",channel=\"sms\"} 1\n"));
	assert_non_null(strstr(t,
	    "msgspool_queue_messages{state=\"sent\",channel=\"voice\"} 2\n"));
	free(t);
	t = render(f, NULL);
	assert_non_null(strstr(t,
	    "msgspool_queue_messages{state=\"sent\",channel=\"voice\"} 2\n"));
	free(t);
}

/* The canceled messages, counted by the CGI programs (counts.h). */
static void
test_canceled(void **state)
{
	const struct fixture *f = *state;
	char	*t;

	t = render(f, NULL);
	assert_null(strstr(t, "status=\"canceled\""));
	free(t);
	assert_int_equal(counts_add(f->sp, COUNTS_CANCELED, CHANNEL_OTT), 0);
	t = render(f, NULL);
	assert_non_null(strstr(t, "msgspool_messages_completed_total{"
	    "channel=\"ott\",status=\"canceled\"} 1\n"));
	assert_null(strstr(t, "channel=\"sms\",status=\"canceled\""));
	free(t);
}

static void
test_escape(void **state)
{
	struct buf	 b = { 0 };

	(void)state;
	metrics_escape(&b, "a\"b\\c\nd");
	assert_string_equal(b.p, "a\\\"b\\\\c\\nd");
	buf_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_queue, setup_spool,
		    teardown),
		cmocka_unit_test_setup_teardown(test_counters, setup_spool,
		    teardown),
		cmocka_unit_test_setup_teardown(test_cache, setup_spool,
		    teardown),
		cmocka_unit_test_setup_teardown(test_canceled, setup_spool,
		    teardown),
		cmocka_unit_test(test_escape),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
