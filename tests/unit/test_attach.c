/*
 * test_attach.c: email attachments as a request gives them: base64
 * decoded within its limit and typed, an upload named by attachmentId,
 * the errors a request gets, the total limit, and the JSON a message
 * carries.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http/attach.h"
#include "http/problem.h"
#include "spool/msgdoc.h"
#include "spool/spool.h"
#include "testutil.h"

static struct attach_ctx
ctx_of(struct tu_spool *f)
{
	struct attach_ctx	c = { f->sp, "acme", 16, 24, NULL, 0 };

	return c;
}

static void
test_decode(void **state)
{
	struct tu_spool		*f = *state;
	struct attach_ctx	 c = ctx_of(f);
	unsigned char		*data;
	json_t			*s;
	char			 type[128];
	size_t			 len;

	s = json_string("JVBERi0xLjQKJcfs");	/* "%PDF-1.4\n%..." */
	assert_int_equal(attach_decode(&c, s, 16, &data, &len, type,
	    sizeof(type)), 0);
	assert_int_equal(len, 12);
	assert_memory_equal(data, "%PDF-1.4\n", 9);
	assert_string_equal(type, "application/pdf");
	free(data);
	/* Over the limit, and not base64. */
	assert_int_equal(attach_decode(&c, s, 8, &data, &len, type,
	    sizeof(type)), -2);
	json_decref(s);
	s = json_string("not base64!");
	assert_int_equal(attach_decode(&c, s, 16, &data, &len, type,
	    sizeof(type)), -1);
	json_decref(s);
	attach_ctx_free(&c);
}

static void
test_load(void **state)
{
	struct tu_spool		*f = *state;
	struct attach_ctx	 c = ctx_of(f);
	struct attachments	 a = { NULL, 0 };
	struct problem		*p;
	json_t			*list, *up, *j;
	char			 id[ULID_LEN + 1];

	/* An upload of the client, named by its id. */
	assert_int_equal(ulid_new(id), 0);
	up = msgdoc_upload_new(id, "acme", "up.txt", "text/plain", 3,
	    time(NULL), "YWJj");
	assert_non_null(up);
	assert_int_equal(spool_upload_store(f->sp, "acme", up), MSG_OK);
	json_decref(up);
	list = json_pack("[{s:s, s:s}, {s:s}]", "attachmentName", "a.txt",
	    "content", "aGVsbG8=", "attachmentId", id);
	p = problem_new(400, "invalid-field", "x");
	assert_int_equal(attach_load(&c, list, "attachments", &a, p, 0), 0);
	assert_int_equal(problem_count(p), 0);
	assert_int_equal(a.n, 2);
	assert_string_equal(a.v[0].name, "a.txt");
	assert_string_equal(a.v[0].type, "text/plain");
	assert_int_equal(a.v[0].size, 5);
	assert_string_equal(json_string_value(a.v[0].base64), "aGVsbG8=");
	assert_string_equal(a.v[1].name, "up.txt");
	assert_int_equal(a.v[1].size, 3);
	j = attach_json(&a, 0);
	assert_int_equal(json_array_size(j), 2);
	assert_string_equal(json_string_value(json_object_get(
	    json_array_get(j, 1), "content")), "YWJj");
	json_decref(j);
	/* Stored once: the blob's index instead of the content. */
	j = attach_json(&a, 1);
	assert_int_equal(json_integer_value(json_object_get(
	    json_array_get(j, 1), "blob")), 1);
	assert_null(json_object_get(json_array_get(j, 1), "content"));
	json_decref(j);
	attach_free(&a);
	problem_free(p);
	json_decref(list);
	attach_ctx_free(&c);
}

static void
test_load_errors(void **state)
{
	struct tu_spool		*f = *state;
	struct attach_ctx	 c = ctx_of(f);
	struct attachments	 a = { NULL, 0 };
	struct problem		*p;
	json_t			*list;

	/* Each entry's problem, named by its path; none is a failure of ours. */
	list = json_pack("[{s:s}, {s:s, s:s, s:s}, {s:s}, {s:s, s:s}]",
	    "content", "YQ==", "attachmentName", "b", "content", "YQ==",
	    "attachmentId", "x", "attachmentId", "01J0000000000000000000FVZZ",
	    "attachmentName", "c", "content", "@@@");
	p = problem_new(400, "invalid-field", "x");
	assert_int_equal(attach_load(&c, list, "attachments", &a, p, 0), -1);
	assert_int_equal(c.failed, 0);
	assert_int_equal(p->status, 400);
	assert_non_null(json_object_get(p->errors,
	    "attachments[0].attachmentName"));
	assert_non_null(json_object_get(p->errors, "attachments[1]"));
	assert_non_null(json_object_get(p->errors, "attachments[2]"));
	assert_non_null(json_object_get(p->errors, "attachments[3].content"));
	attach_free(&a);
	problem_free(p);
	json_decref(list);
	/* Too large: one over max_one, or all over max_total: 413. */
	list = json_pack("[{s:s, s:s}]", "attachmentName", "big",
	    "content", "MDEyMzQ1Njc4OWFiY2RlZmdo");	/* 20 bytes */
	p = problem_new(400, "invalid-field", "x");
	assert_int_equal(attach_load(&c, list, "attachments", &a, p, 0), -1);
	assert_int_equal(p->status, 413);
	attach_free(&a);
	problem_free(p);
	json_decref(list);
	list = json_pack("[{s:s, s:s}, {s:s, s:s}]", "attachmentName", "a",
	    "content", "MDEyMzQ1Njc4OWFi", "attachmentName", "b",
	    "content", "MDEyMzQ1Njc4OWFi");	/* 12 + 12 > 24? no: 24 */
	p = problem_new(400, "invalid-field", "x");
	assert_int_equal(attach_load(&c, list, "attachments", &a, p, 0), 0);
	attach_free(&a);
	c.max_total = 23;
	assert_int_equal(attach_load(&c, list, "attachments", &a, p, 0), -1);
	assert_int_equal(p->status, 413);
	assert_non_null(json_object_get(p->errors, "attachments"));
	attach_free(&a);
	problem_free(p);
	json_decref(list);
	attach_ctx_free(&c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_decode, tu_spool_setup,
		    tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_load, tu_spool_setup,
		    tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_load_errors,
		    tu_spool_setup, tu_spool_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
