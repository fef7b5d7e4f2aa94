/*
 * test_tmpl.c: unit tests for lib/content/tmpl.c (msgspool.conf(5), templates):
 * ids, parsing a template's text and tmpl_merge.  Loading, the cache and
 * lists, on template files: test_tmpl_load.c.
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
#include <sys/time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/msgspool.h"
#include "content/tmpl.h"
#include "testutil.h"
#include "tmplsample.h"

static struct tmpl *
parse_ok(const char *id, const char *text, long long mtime)
{
	struct tmpl	*t;
	char		 err[256] = "";

	t = tmpl_parse(id, text, strlen(text), mtime, err, sizeof(err));
	if (t == NULL)
		fail_msg("tmpl_parse: %s", err);
	return t;
}

static void
test_id_valid(void **state)
{
	char	id[200];

	(void)state;
	assert_true(tmpl_id_valid("welcome"));
	assert_true(tmpl_id_valid("a.b-c_1"));
	assert_true(tmpl_id_valid("A"));
	assert_true(tmpl_id_valid("x.."));
	assert_false(tmpl_id_valid(""));
	assert_false(tmpl_id_valid(".hidden"));
	assert_false(tmpl_id_valid("."));
	assert_false(tmpl_id_valid(".."));
	assert_false(tmpl_id_valid("../x"));
	assert_false(tmpl_id_valid("a/b"));
	assert_false(tmpl_id_valid("a\\b"));
	assert_false(tmpl_id_valid("a b"));
	assert_false(tmpl_id_valid("a\nb"));
	assert_false(tmpl_id_valid("caf\xc3\xa9"));
	memset(id, 'x', 128);
	id[128] = '\0';
	assert_true(tmpl_id_valid(id));
	memset(id, 'x', 129);
	id[129] = '\0';
	assert_false(tmpl_id_valid(id));
}

static void
test_parse_email(void **state)
{
	struct tmpl	*t;

	(void)state;
	t = parse_ok("welcome", email_text, 0);
	assert_string_equal(t->id, "welcome");
	assert_string_equal(t->name, "Welcome mail");
	assert_string_equal(t->subject, "Hello {{name}}");
	assert_string_equal(t->from, "news@example.com");
	assert_string_equal(t->tags, "onboarding,welcome");
	assert_string_equal(t->created, "2026-01-02T03:04:05Z");
	assert_int_equal(t->parameters, -1);
	assert_int_equal(t->body_len, strlen(email_body));
	assert_memory_equal(t->body, email_body, strlen(email_body));
	tmpl_free(t);
}

static void
test_parse_ott(void **state)
{
	struct tmpl	*t;
	const char	*body = "Your order {{1}} ships on {{2}}.\n";

	(void)state;
	t = parse_ok("shipped", ott_text, 0);
	assert_string_equal(t->id, "shipped");
	assert_string_equal(t->name, "Order shipped");
	assert_int_equal(t->parameters, 2);
	assert_string_equal(t->language, "en_US");
	assert_string_equal(t->provider_template, "order_shipped");
	assert_null(t->subject);
	assert_null(t->from);
	assert_int_equal(t->body_len, strlen(body));
	assert_memory_equal(t->body, body, strlen(body));
	tmpl_free(t);
}

static void
test_parse_created_from_mtime(void **state)
{
	struct tmpl	*t;
	const char	*text = "Name: No date\nSubject: s\nFrom: a@b.example\n"
	    "\nbody\n";

	(void)state;
	t = parse_ok("nodate", text, 1700000000LL);
	assert_non_null(t->created);
	assert_string_equal(t->created, "2023-11-14T22:13:20Z");
	tmpl_free(t);
	/* A Created header wins over the mtime. */
	t = parse_ok("welcome", email_text, 1700000000LL);
	assert_string_equal(t->created, "2026-01-02T03:04:05Z");
	tmpl_free(t);
}

static void
test_parse_created_is_utc(void **state)
{
	struct tmpl	*t;

	(void)state;
	/* Another offset, a fraction: the listing's createdDate is UTC. */
	t = parse_ok("offset", "Name: n\nCreated: 2026-01-02T05:04:05.250+02:00"
	    "\n\nbody\n", 1700000000LL);
	assert_string_equal(t->created, "2026-01-02T03:04:05Z");
	tmpl_free(t);
}

static void
test_parse_empty_body(void **state)
{
	struct tmpl	*t;

	(void)state;
	t = parse_ok("empty", "Name: Empty\n\n", 0);
	assert_string_equal(t->name, "Empty");
	assert_int_equal(t->body_len, 0);
	tmpl_free(t);
}

static void
test_parse_body_keeps_colons_and_blank_lines(void **state)
{
	struct tmpl	*t;
	const char	*text = "Name: X\n\nKey: not a header\n\nsecond para\n";
	const char	*body = "Key: not a header\n\nsecond para\n";

	(void)state;
	t = parse_ok("x", text, 0);
	assert_int_equal(t->body_len, strlen(body));
	assert_memory_equal(t->body, body, strlen(body));
	tmpl_free(t);
}

static void
test_parse_bad_header_line(void **state)
{
	char		 err[256] = "";
	const char	*text = "Name: X\nthis is not a header\n\nbody\n";

	(void)state;
	assert_null(tmpl_parse("x", text, strlen(text), 0, err, sizeof(err)));
	assert_true(err[0] != '\0');
}

static void
test_free_null(void **state)
{
	(void)state;
	tmpl_free(NULL);
	assert_true(1);	/* reached: tmpl_free(NULL) is a no-op */
}

/* tmpl_merge */

static char *
merge_ok(const char *text, const json_t *values, int html)
{
	char	*out, missing[256];
	size_t	 len = 12345;

	out = tmpl_merge(text, strlen(text), values, html, &len, missing,
	    sizeof(missing));
	if (out == NULL)
		fail_msg("tmpl_merge failed; missing: %s", missing);
	assert_int_equal(len, strlen(out));
	return out;
}

static void
test_merge_object(void **state)
{
	json_t	*v;
	char	*out;

	(void)state;
	v = json_pack("{s:s,s:s}", "name", "Ann", "code", "42");
	out = merge_ok("Hello {{name}}, your code is {{ code }}.", v, 0);
	assert_string_equal(out, "Hello Ann, your code is 42.");
	free(out);
	/* The same marker twice. */
	out = merge_ok("{{name}}{{name}}", v, 0);
	assert_string_equal(out, "AnnAnn");
	free(out);
	/* No markers: unchanged. */
	out = merge_ok("plain text", v, 0);
	assert_string_equal(out, "plain text");
	free(out);
	json_decref(v);
}

static void
test_merge_array(void **state)
{
	json_t	*v;
	char	*out, missing[256];
	size_t	 len;

	(void)state;
	v = json_pack("[s,s]", "A1", "Monday");
	out = merge_ok("Order {{1}} ships on {{2}}.", v, 0);
	assert_string_equal(out, "Order A1 ships on Monday.");
	free(out);
	/* 1-based: {{0}} and {{3}} have no value. */
	assert_null(tmpl_merge("{{3}}", 5, v, 0, &len, missing,
	    sizeof(missing)));
	assert_string_equal(missing, "3");
	assert_null(tmpl_merge("{{0}}", 5, v, 0, &len, missing,
	    sizeof(missing)));
	assert_string_equal(missing, "0");
	json_decref(v);
}

static void
test_merge_html_escapes(void **state)
{
	json_t		*v;
	char		*out;
	const char	*q;

	(void)state;
	v = json_pack("{s:s}", "name", "<b>Tom & \"Jerry\" O'Neil</b>");
	out = merge_ok("<p>{{name}}</p>", v, 1);
	/* The template's own markup stays; the value's is escaped. */
	assert_true(strncmp(out, "<p>", 3) == 0);
	assert_true(strcmp(out + strlen(out) - 4, "</p>") == 0);
	assert_null(strstr(out, "<b>"));
	assert_null(strstr(out, "</b>"));
	assert_null(strchr(out, '"'));
	assert_non_null(strstr(out, "&lt;b&gt;Tom &amp; "));
	assert_non_null(strstr(out, "&quot;Jerry&quot;"));
	q = strstr(out, "O&");
	assert_non_null(q);
	assert_true(strncmp(q, "O&#39;Neil", 10) == 0 ||
	    strncmp(q, "O&#x27;Neil", 11) == 0 ||
	    strncmp(q, "O&apos;Neil", 11) == 0);
	free(out);
	/* Without html, values go in as they are. */
	out = merge_ok("{{name}}", v, 0);
	assert_string_equal(out, "<b>Tom & \"Jerry\" O'Neil</b>");
	free(out);
	json_decref(v);
}

static void
test_merge_missing_named_once(void **state)
{
	json_t	*v;
	char	 missing[256];
	size_t	 len;

	(void)state;
	v = json_pack("{s:s,s:i}", "b", "x", "n", 5);
	memset(missing, 'z', sizeof(missing));
	assert_null(tmpl_merge("{{a}} {{b}} {{a}} {{c}}", 23, v, 0, &len,
	    missing, sizeof(missing)));
	assert_string_equal(missing, "a, c");
	/* A value that is not a string is no value. */
	assert_null(tmpl_merge("{{n}}", 5, v, 0, &len, missing,
	    sizeof(missing)));
	assert_string_equal(missing, "n");
	json_decref(v);
}

static void
test_merge_not_markers(void **state)
{
	json_t	*v;
	char	*out;

	(void)state;
	v = json_pack("{s:s}", "a", "X");
	out = merge_ok("{{ }} and {{a b}} and {a} and {{a", v, 0);
	assert_string_equal(out, "{{ }} and {{a b}} and {a} and {{a");
	free(out);
	json_decref(v);
}

static void
test_merge_single_pass(void **state)
{
	json_t	*v;
	char	*out;

	(void)state;
	/* A value that looks like a marker is not expanded again. */
	v = json_pack("{s:s,s:s}", "a", "{{b}}", "b", "secret");
	out = merge_ok("[{{a}}]", v, 0);
	assert_string_equal(out, "[{{b}}]");
	free(out);
	json_decref(v);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_id_valid),
		cmocka_unit_test(test_parse_email),
		cmocka_unit_test(test_parse_ott),
		cmocka_unit_test(test_parse_created_from_mtime),
		cmocka_unit_test(test_parse_created_is_utc),
		cmocka_unit_test(test_parse_empty_body),
		cmocka_unit_test(test_parse_body_keeps_colons_and_blank_lines),
		cmocka_unit_test(test_parse_bad_header_line),
		cmocka_unit_test(test_free_null),
		cmocka_unit_test(test_merge_object),
		cmocka_unit_test(test_merge_array),
		cmocka_unit_test(test_merge_html_escapes),
		cmocka_unit_test(test_merge_missing_named_once),
		cmocka_unit_test(test_merge_not_markers),
		cmocka_unit_test(test_merge_single_pass),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
