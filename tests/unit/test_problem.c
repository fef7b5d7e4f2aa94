/*
 * test_problem.c: unit tests for lib/http/problem.c (conf/openapi.yaml, Problem).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "http/cgi.h"
#include "http/problem.h"

#define PROBLEM_TYPE	"application/problem+json"

/* The body of a response as JSON; the test fails if it is not. */
static json_t *
body_json(const struct response *r)
{
	json_error_t	 e;
	json_t		*v;

	assert_non_null(r->body);
	v = json_loadb(r->body, r->body_len, 0, &e);
	if (v == NULL)
		fail_msg("body is not JSON: %s", e.text);
	return v;
}

static void
test_new_fields(void **state)
{
	struct problem	*p;

	(void)state;
	p = problem_new(400, "invalid-json", "bad %s at %d", "thing", 7);
	assert_non_null(p);
	assert_int_equal(p->status, 400);
	assert_string_equal(p->type, "urn:msgspool:problem:invalid-json");
	assert_string_equal(p->detail, "bad thing at 7");
	assert_int_equal(problem_count(p), 0);
	assert_true(p->errors == NULL || json_object_size(p->errors) == 0);
	problem_free(p);
}

static void
test_free_null(void **state)
{
	(void)state;
	problem_free(NULL);
	response_free(NULL);
	assert_true(1);	/* reached: both accept NULL */
}

static void
test_add_accumulates(void **state)
{
	struct problem	*p;
	json_t		*a;

	(void)state;
	p = problem_new(400, "invalid-field", "the request has invalid fields");
	assert_non_null(p);
	problem_add(p, "recipient", "must be %d to %d digits", 8, 15);
	assert_int_equal(problem_count(p), 1);
	problem_add(p, "recipient", "second message");
	/* Same path: still one path, two messages. */
	assert_int_equal(problem_count(p), 1);
	problem_add(p, "payload[2].messageBody", "must not be empty");
	problem_add(p, "", "body-level message");
	assert_int_equal(problem_count(p), 3);

	assert_true(json_is_object(p->errors));
	a = json_object_get(p->errors, "recipient");
	assert_true(json_is_array(a));
	assert_int_equal(json_array_size(a), 2);
	assert_string_equal(json_string_value(json_array_get(a, 0)),
	    "must be 8 to 15 digits");
	assert_string_equal(json_string_value(json_array_get(a, 1)),
	    "second message");
	a = json_object_get(p->errors, "payload[2].messageBody");
	assert_int_equal(json_array_size(a), 1);
	assert_string_equal(json_string_value(json_array_get(a, 0)),
	    "must not be empty");
	a = json_object_get(p->errors, "");
	assert_int_equal(json_array_size(a), 1);
	assert_string_equal(json_string_value(json_array_get(a, 0)),
	    "body-level message");
	problem_free(p);
}

static void
test_response_with_errors(void **state)
{
	struct problem	*p;
	struct response	*r;
	json_t		*v, *errs, *a;

	(void)state;
	p = problem_new(400, "invalid-field", "the request has invalid fields");
	assert_non_null(p);
	problem_add(p, "payload[2].recipient", "must be 8 to 15 digits");
	problem_add(p, "payload[2].recipient", "again");
	problem_add(p, "subject", "must not contain CR or LF");
	r = problem_response(p);
	assert_non_null(r);
	assert_int_equal(r->status, 400);
	assert_string_equal(r->content_type, PROBLEM_TYPE);

	v = body_json(r);
	assert_true(json_is_object(v));
	assert_string_equal(json_string_value(json_object_get(v, "type")),
	    "urn:msgspool:problem:invalid-field");
	assert_string_equal(json_string_value(json_object_get(v, "title")),
	    "Bad Request");
	assert_true(json_is_integer(json_object_get(v, "status")));
	assert_int_equal(json_integer_value(json_object_get(v, "status")),
	    400);
	assert_string_equal(json_string_value(json_object_get(v, "detail")),
	    "the request has invalid fields");
	errs = json_object_get(v, "errors");
	assert_true(json_is_object(errs));
	assert_int_equal(json_object_size(errs), 2);
	a = json_object_get(errs, "payload[2].recipient");
	assert_int_equal(json_array_size(a), 2);
	assert_string_equal(json_string_value(json_array_get(a, 0)),
	    "must be 8 to 15 digits");
	assert_string_equal(json_string_value(json_array_get(a, 1)), "again");
	a = json_object_get(errs, "subject");
	assert_int_equal(json_array_size(a), 1);
	json_decref(v);
	response_free(r);
}

static void
test_response_without_errors(void **state)
{
	struct problem	*p;
	struct response	*r;
	json_t		*v;

	(void)state;
	p = problem_new(503, "spool-unavailable", "try later");
	assert_non_null(p);
	r = problem_response(p);
	assert_non_null(r);
	assert_int_equal(r->status, 503);
	assert_string_equal(r->content_type, PROBLEM_TYPE);
	v = body_json(r);
	assert_string_equal(json_string_value(json_object_get(v, "title")),
	    "Service Unavailable");
	assert_int_equal(json_integer_value(json_object_get(v, "status")),
	    503);
	assert_string_equal(json_string_value(json_object_get(v, "type")),
	    "urn:msgspool:problem:spool-unavailable");
	assert_string_equal(json_string_value(json_object_get(v, "detail")),
	    "try later");
	/* No messages: no "errors" member at all. */
	assert_null(json_object_get(v, "errors"));
	json_decref(v);
	response_free(r);
}

static void
test_response_titles(void **state)
{
	static const int codes[] = { 401, 403, 405, 411, 413, 415, 500 };
	struct problem	*p;
	struct response	*r;
	json_t		*v;
	size_t		 i;

	(void)state;
	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		p = problem_new(codes[i], "x", "d");
		assert_non_null(p);
		r = problem_response(p);
		assert_non_null(r);
		assert_int_equal(r->status, codes[i]);
		v = body_json(r);
		assert_string_equal(
		    json_string_value(json_object_get(v, "title")),
		    http_reason(codes[i]));
		assert_true(http_reason(codes[i])[0] != '\0');
		json_decref(v);
		response_free(r);
	}
}

static void
test_detail_is_json_escaped(void **state)
{
	struct problem	*p;
	struct response	*r;
	json_t		*v;

	(void)state;
	p = problem_new(400, "invalid-json", "quote \" backslash \\ nl \n end");
	assert_non_null(p);
	r = problem_response(p);
	assert_non_null(r);
	v = body_json(r);
	assert_string_equal(json_string_value(json_object_get(v, "detail")),
	    "quote \" backslash \\ nl \n end");
	json_decref(v);
	response_free(r);
}

static void
test_errors_line_single(void **state)
{
	json_t	*e;
	char	*s;

	(void)state;
	e = json_pack("{s:[s]}", "recipient", "must be 8 to 15 digits");
	assert_non_null(e);
	s = problem_errors_line(e);
	assert_non_null(s);
	assert_string_equal(s, "recipient: must be 8 to 15 digits");
	free(s);
	json_decref(e);
}

static void
test_errors_line_joined(void **state)
{
	json_t	*e;
	char	*s, *a, *b;

	(void)state;
	e = json_object();
	assert_non_null(e);
	json_object_set_new(e, "recipient", json_pack("[s]", "bad number"));
	json_object_set_new(e, "x", json_pack("[s]", "bad x"));
	s = problem_errors_line(e);
	assert_non_null(s);
	a = strstr(s, "recipient: bad number");
	b = strstr(s, "x: bad x");
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(strstr(s, "; "));
	assert_null(strchr(s, '\n'));
	/* "recipient: ...; x: ..." (jansson keeps insertion order). */
	assert_string_equal(s, "recipient: bad number; x: bad x");
	free(s);
	json_decref(e);
}

static void
test_errors_line_several_messages(void **state)
{
	json_t	*e;
	char	*s;

	(void)state;
	e = json_pack("{s:[s,s]}", "subject", "too long", "has CR");
	assert_non_null(e);
	s = problem_errors_line(e);
	assert_non_null(s);
	assert_non_null(strstr(s, "subject"));
	assert_non_null(strstr(s, "too long"));
	assert_non_null(strstr(s, "has CR"));
	assert_null(strchr(s, '\n'));
	free(s);
	json_decref(e);
}

static void
test_errors_line_from_problem(void **state)
{
	struct problem	*p;
	char		*s;

	(void)state;
	p = problem_new(400, "invalid-field", "x");
	assert_non_null(p);
	problem_add(p, "messageBody", "must not be empty");
	s = problem_errors_line(p->errors);
	assert_non_null(s);
	assert_string_equal(s, "messageBody: must not be empty");
	free(s);
	problem_free(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_fields),
		cmocka_unit_test(test_free_null),
		cmocka_unit_test(test_add_accumulates),
		cmocka_unit_test(test_response_with_errors),
		cmocka_unit_test(test_response_without_errors),
		cmocka_unit_test(test_response_titles),
		cmocka_unit_test(test_detail_is_json_escaped),
		cmocka_unit_test(test_errors_line_single),
		cmocka_unit_test(test_errors_line_joined),
		cmocka_unit_test(test_errors_line_several_messages),
		cmocka_unit_test(test_errors_line_from_problem),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
