/*
 * test_fcgi.c: msgspool-fcgi's routes (conf/openapi.yaml), the CGI
 * environment it gives each route, and its config cache
 * (msgspool-fcgi(8)).
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

#include "endpoints.h"
#include "fcgi.h"
#include "http/cgi.h"
#include "testutil.h"

static void
test_route_exact(void **state)
{
	const char	*pi;

	(void)state;
	assert_ptr_equal(fcgi_route("/ping", &pi), &ep_ping);
	assert_null(pi);
	assert_ptr_equal(fcgi_route("/templates", &pi), &ep_templates);
	assert_ptr_equal(fcgi_route("/ott/v1/deliver", &pi), &ep_ott_deliver);
	assert_ptr_equal(fcgi_route("/sms/v1/deliver", &pi), &ep_sms_deliver);
	assert_ptr_equal(fcgi_route("/sms/v1/deliver/batch", &pi),
	    &ep_sms_batch);
	assert_ptr_equal(fcgi_route("/voice/v1/deliver", &pi),
	    &ep_voice_deliver);
	assert_ptr_equal(fcgi_route("/deliver", &pi), &ep_email_deliver);
	assert_ptr_equal(fcgi_route("/email/v1/deliver", &pi),
	    &ep_email_deliver);
	assert_ptr_equal(fcgi_route("/email/v1/attachments", &pi),
	    &ep_attachments);
	assert_null(pi);
	assert_ptr_equal(fcgi_route("/suppressions", &pi), &ep_suppressions);
	assert_ptr_equal(fcgi_route("/messages", &pi), &ep_messages);
	assert_null(pi);
	assert_null(pi);
}

static void
test_route_param(void **state)
{
	const char	*path, *pi;

	(void)state;
	path = "/messages/01HZX3Q5K6W8R9T0V1B2C3D4E5";
	assert_ptr_equal(fcgi_route(path, &pi), &ep_messages);
	assert_string_equal(pi, "/01HZX3Q5K6W8R9T0V1B2C3D4E5");
	assert_ptr_equal(fcgi_route("/receipts/twilio", &pi), &ep_receipts);
	assert_string_equal(pi, "/twilio");
	/* The segment as it is: PATH_INFO decodes it (fcgi_env). */
	assert_ptr_equal(fcgi_route("/receipts/tw%3Fx", &pi), &ep_receipts);
	assert_string_equal(pi, "/tw%3Fx");
	/* A channel, and an address that is the rest, '/' and all. */
	assert_ptr_equal(fcgi_route("/suppressions/sms/%2B4915112345678",
	    &pi), &ep_suppressions);
	assert_string_equal(pi, "/sms/%2B4915112345678");
	assert_ptr_equal(fcgi_route("/suppressions/email/a/b@example.com",
	    &pi), &ep_suppressions);
	assert_string_equal(pi, "/email/a/b@example.com");
	assert_ptr_equal(fcgi_route("/unsubscribe/YWJj.ZGVm", &pi),
	    &ep_unsubscribe);
	assert_string_equal(pi, "/YWJj.ZGVm");
	/* The console, and one page below it. */
	assert_ptr_equal(fcgi_route("/console", &pi), &ep_console);
	assert_null(pi);
	assert_ptr_equal(fcgi_route("/console/sign-in", &pi), &ep_console);
	assert_string_equal(pi, "/sign-in");
	assert_ptr_equal(fcgi_route("/console/messages/X/cancel", &pi),
	    &ep_console);
	assert_string_equal(pi, "/messages/X/cancel");
}

/* cgi_path of uri is want, and routes to ep. */
static void
assert_path(const char *uri, const char *want, const struct endpoint *ep)
{
	const char	*pi;
	char		*path;

	path = cgi_path(uri);
	assert_non_null(path);
	assert_string_equal(path, want);
	assert_ptr_equal(fcgi_route(path, &pi), ep);
	free(path);
}

static void
test_path(void **state)
{
	(void)state;
	/* Unreserved characters decoded, in either case of hex. */
	assert_path("/sms/v1/%64eliver?x=%41", "/sms/v1/deliver",
	    &ep_sms_deliver);
	assert_path("/messages/01HZX3Q5K6W8R9T0V1B2C3D4%45" "5",
	    "/messages/01HZX3Q5K6W8R9T0V1B2C3D4E5", &ep_messages);
	assert_path("/%70ing%2d%2E%5f%7e", "/ping-._~", NULL);
	/* "/" decoded too, as lighttpd and nginx decode it. */
	assert_path("/sms/v1%2fdeliver", "/sms/v1/deliver", &ep_sms_deliver);
	assert_path("/ping%2F", "/ping/", NULL);
	/* Any other escape kept: a query mark, a NUL, above ASCII. */
	assert_path("/messages/x%3F%00%C3%A9", "/messages/x%3F%00%C3%A9",
	    &ep_messages);
	assert_path("/ping%3F", "/ping%3F", NULL);
	/* Malformed escapes: kept as they came. */
	assert_path("/ping%zz", "/ping%zz", NULL);
	assert_path("/ping%4", "/ping%4", NULL);
	assert_path("/ping%", "/ping%", NULL);
	assert_path("/ping%?a", "/ping%", NULL);
	assert_path("/ping?%zz", "/ping", &ep_ping);
	assert_path("/ping#x", "/ping", &ep_ping);
	/* Dot segments and repeated slashes (RFC 3986 5.2.4). */
	assert_path("/./ping", "/ping", &ep_ping);
	assert_path("//ping", "/ping", &ep_ping);
	assert_path("/x/../ping", "/ping", &ep_ping);
	assert_path("/../../ping", "/ping", &ep_ping);
	assert_path("/%2e%2E/ping", "/ping", &ep_ping);
	assert_path("/x%2F..%2Fping", "/ping", &ep_ping);
	assert_path("/sms/v1//deliver/./batch", "/sms/v1/deliver/batch",
	    &ep_sms_batch);
	assert_path("/messages//01HZX3Q5K6W8R9T0V1B2C3D4E5",
	    "/messages/01HZX3Q5K6W8R9T0V1B2C3D4E5", &ep_messages);
	assert_path("/ping/", "/ping/", NULL);
	assert_path("/ping//", "/ping/", NULL);
	assert_path("/ping/.", "/ping/", NULL);
	assert_path("/ping/..", "/", NULL);
	assert_path("/ping/x/..", "/ping/", NULL);
	assert_path("/ping.", "/ping.", NULL);
	assert_path("/.ping/..x", "/.ping/..x", NULL);
	assert_path("/", "/", NULL);
	assert_path("/.", "/", NULL);
	assert_path("/..", "/", NULL);
	assert_path("", "", NULL);
	assert_path("?/ping", "", NULL);
	assert_path("*", "*", NULL);
	assert_path("ping", "ping", NULL);
	assert_null(cgi_path(NULL));
}

static void
test_route_none(void **state)
{
	const char	*pi = "x";

	(void)state;
	assert_null(fcgi_route(NULL, &pi));
	assert_null(pi);
	assert_null(fcgi_route("/", &pi));
	assert_null(fcgi_route("/pingx", &pi));
	assert_null(fcgi_route("/PING", &pi));
	assert_null(fcgi_route("/ping/", &pi));
	assert_null(fcgi_route("/sms/v1", &pi));
	assert_null(fcgi_route("/messages/", &pi));
	assert_null(fcgi_route("/messages/a/", &pi));
	assert_null(fcgi_route("/messages/a/b", &pi));
	assert_null(fcgi_route("/receipts/", &pi));
	assert_null(fcgi_route("/suppressions/", &pi));
	assert_null(fcgi_route("/suppressions/sms", &pi));
	assert_null(fcgi_route("/suppressions/sms/", &pi));
	assert_null(fcgi_route("/suppressions//x", &pi));
	assert_null(fcgi_route("/unsubscribe/", &pi));
	assert_null(fcgi_route("/unsubscribe/a/b", &pi));
	assert_null(fcgi_route("/console/", &pi));
	assert_null(fcgi_route("/consoles", &pi));
	assert_null(fcgi_route("/cgi-bin/ping", &pi));
}

static void
test_env(void **state)
{
	char *const	 params[] = { "REQUEST_METHOD=GET",
	    "PATH_INFO=/messages/X", "MSGSPOOL_CONFIG=/theirs",
	    "REQUEST_URI=/messages/ABC?x", NULL };
	char		**env, *extra[2];

	(void)state;
	env = fcgi_env(params, "/AB%43", "/ours", extra);
	assert_non_null(env);
	assert_string_equal(cgi_env(env, "REQUEST_METHOD"), "GET");
	assert_string_equal(cgi_env(env, "PATH_INFO"), "/ABC");
	assert_string_equal(cgi_env(env, "MSGSPOOL_CONFIG"), "/ours");
	assert_string_equal(cgi_env(env, "REQUEST_URI"), "/messages/ABC?x");
	free(extra[0]);
	free(extra[1]);
	free(env);

	/* PATH_INFO decoded as a web server gives it, but for a NUL. */
	env = fcgi_env(params, "/A%3fB%2F%c3%A9%00%zz%", NULL, extra);
	assert_non_null(env);
	assert_string_equal(cgi_env(env, "PATH_INFO"),
	    "/A?B/\xc3\xa9%00%zz%");
	free(extra[0]);
	free(env);

	/* No path parameter, no config of the process: the request's. */
	env = fcgi_env(params, NULL, NULL, extra);
	assert_non_null(env);
	assert_null(cgi_env(env, "PATH_INFO"));
	assert_string_equal(cgi_env(env, "MSGSPOOL_CONFIG"), "/theirs");
	assert_null(extra[0]);
	assert_null(extra[1]);
	free(env);

	env = fcgi_env(NULL, NULL, NULL, extra);
	assert_non_null(env);
	assert_null(env[0]);
	free(env);
}

static void
test_cache(void **state)
{
	struct fcgi_cache	 c;
	const struct config	*a, *b;
	struct timespec		 ts[2];
	char			 dir[TU_DIR_SIZE], path[128], err[256];

	(void)state;
	assert_int_equal(tu_mkdtemp(dir, sizeof(dir), "fcgi"), 0);
	snprintf(path, sizeof(path), "%s/msgspool.conf", dir);
	tu_write_text(path, "spool = /one\n");
	memset(&c, 0, sizeof(c));

	a = fcgi_cache_config(&c, path, err, sizeof(err));
	assert_non_null(a);
	assert_string_equal(config_get(a, NULL, "spool"), "/one");
	/* Unchanged: the same config, not read again. */
	b = fcgi_cache_config(&c, path, err, sizeof(err));
	assert_ptr_equal(a, b);

	/* Changed, even within the same second and at the same size. */
	tu_write_text(path, "spool = /two\n");
	b = fcgi_cache_config(&c, path, err, sizeof(err));
	assert_non_null(b);
	assert_string_equal(config_get(b, NULL, "spool"), "/two");

	/* Changed with the old mtime put back: the ctime tells. */
	assert_int_equal(clock_gettime(CLOCK_REALTIME, &ts[0]), 0);
	ts[1] = c.st.st_mtim;
	tu_write_text(path, "spool = /333\n");
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
	b = fcgi_cache_config(&c, path, err, sizeof(err));
	assert_non_null(b);
	assert_string_equal(config_get(b, NULL, "spool"), "/333");

	/* Broken: an error as config_load gives, nothing kept. */
	tu_write_text(path, "no equals sign\n");
	assert_null(fcgi_cache_config(&c, path, err, sizeof(err)));
	assert_non_null(strstr(err, "msgspool.conf"));
	assert_null(c.cfg);
	/* Gone. */
	assert_int_equal(unlink(path), 0);
	assert_null(fcgi_cache_config(&c, path, err, sizeof(err)));
	assert_non_null(strstr(err, "msgspool.conf"));
	/* Back. */
	tu_write_text(path, "spool = /four\n");
	b = fcgi_cache_config(&c, path, err, sizeof(err));
	assert_non_null(b);
	assert_string_equal(config_get(b, NULL, "spool"), "/four");
	fcgi_cache_free(&c);
	fcgi_cache_free(&c);
	tu_rmtree(dir);
}

static void
test_cache_keys(void **state)
{
	struct fcgi_cache	 c;
	struct client		 cl;
	char			 dir[TU_DIR_SIZE], path[128], line[256];
	char			 text[512];
	const char		*k = "key-acme";

	(void)state;
	assert_int_equal(tu_mkdtemp(dir, sizeof(dir), "fcgi"), 0);
	snprintf(path, sizeof(path), "%s/keys", dir);
	memset(&c, 0, sizeof(c));

	/* Missing: an error, as keys_lookup says. */
	assert_int_equal(fcgi_cache_keys(&c, path, k, strlen(k), &cl),
	    KEYS_ERROR);
	tu_key_line(line, sizeof(line), "acme", k, "sms", "");
	tu_write_text(path, line);
	memset(&cl, 0, sizeof(cl));
	assert_int_equal(fcgi_cache_keys(&c, path, k, strlen(k), &cl),
	    KEYS_OK);
	assert_string_equal(cl.id, "acme");
	assert_int_equal(fcgi_cache_keys(&c, path, "nope", 4, &cl),
	    KEYS_UNKNOWN);
	assert_int_equal(fcgi_cache_keys(&c, path, "", 0, &cl),
	    KEYS_UNKNOWN);
	/* The same key again, and again after another: the same answers. */
	memset(&cl, 0, sizeof(cl));
	assert_int_equal(fcgi_cache_keys(&c, path, k, strlen(k), &cl),
	    KEYS_OK);
	assert_string_equal(cl.id, "acme");
	assert_int_equal(cl.scopes, SCOPE_SMS);
	memset(&cl, 0, sizeof(cl));
	assert_int_equal(fcgi_cache_keys(&c, path, k, strlen(k), &cl),
	    KEYS_OK);
	assert_string_equal(cl.id, "acme");
	assert_int_equal(cl.scopes, SCOPE_SMS);
	assert_int_equal(fcgi_cache_keys(&c, path, "nope", 4, &cl),
	    KEYS_UNKNOWN);
	assert_int_equal(fcgi_cache_keys(&c, path, "nope", 4, &cl),
	    KEYS_UNKNOWN);
	/* A key added to the file: known at the next lookup. */
	tu_key_line(line, sizeof(line), "acme", k, "sms", "");
	tu_key_line(text, sizeof(text), "other", "nope", "*", "");
	strncat(line, text, sizeof(line) - strlen(line) - 1);
	tu_write_text(path, line);
	assert_int_equal(fcgi_cache_keys(&c, path, "nope", 4, &cl),
	    KEYS_OK);
	assert_string_equal(cl.id, "other");

	/* Disabled by the CLI (a new file renamed over): the next lookup. */
	tu_key_line(line, sizeof(line), "acme", k, "sms", ":disabled");
	snprintf(text, sizeof(text), "%s.new", path);
	tu_write_text(text, line);
	assert_int_equal(rename(text, path), 0);
	assert_int_equal(fcgi_cache_keys(&c, path, k, strlen(k), &cl),
	    KEYS_DISABLED);

	/* Edited in place, at the same size: the ctime or mtime tells. */
	tu_key_line(line, sizeof(line), "acmf", k, "sms", ":disabled");
	tu_write_text(path, line);
	assert_int_equal(fcgi_cache_keys(&c, path, k, strlen(k), &cl),
	    KEYS_DISABLED);
	assert_string_equal(cl.id, "acmf");

	/* Not a regular file: an error. */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(fcgi_cache_keys(&c, path, k, strlen(k), &cl),
	    KEYS_ERROR);
	assert_null(c.keys.text);
	fcgi_cache_free(&c);
	tu_rmtree(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_route_exact),
		cmocka_unit_test(test_route_param),
		cmocka_unit_test(test_route_none),
		cmocka_unit_test(test_path),
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_cache_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
