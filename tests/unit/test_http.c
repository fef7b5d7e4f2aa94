/*
 * test_http.c: responses as values and their CGI form.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "http/http.h"

/* What response_write puts on a pipe, NUL-terminated; *len its size. */
static char *
written(const struct response *r, size_t *len)
{
	char	*out;
	ssize_t	 n;
	size_t	 have = 0;
	int	 p[2];

	assert_int_equal(pipe(p), 0);
	assert_int_equal(response_write(r, p[1]), 0);
	close(p[1]);
	out = malloc(65536);
	assert_non_null(out);
	while ((n = read(p[0], out + have, 65535 - have)) > 0)
		have += (size_t)n;
	close(p[0]);
	out[have] = '\0';
	*len = have;
	return out;
}

static void
test_http_reason(void **state)
{
	const char	*s;

	(void)state;
	assert_string_equal(http_reason(200), "OK");
	assert_string_equal(http_reason(201), "Created");
	assert_string_equal(http_reason(202), "Accepted");
	assert_string_equal(http_reason(400), "Bad Request");
	assert_string_equal(http_reason(401), "Unauthorized");
	assert_string_equal(http_reason(403), "Forbidden");
	assert_string_equal(http_reason(405), "Method Not Allowed");
	assert_string_equal(http_reason(411), "Length Required");
	/* RFC 9110 renamed it; either name is fine. */
	s = http_reason(413);
	assert_true(strcmp(s, "Content Too Large") == 0 ||
	    strcmp(s, "Payload Too Large") == 0);
	assert_string_equal(http_reason(415), "Unsupported Media Type");
	assert_string_equal(http_reason(500), "Internal Server Error");
	assert_string_equal(http_reason(503), "Service Unavailable");
	assert_string_equal(http_reason(799), "");
	assert_string_equal(http_reason(0), "");
	assert_string_equal(http_reason(-1), "");
}

static void
test_json_response_bytes(void **state)
{
	struct response	*r;
	char		*out;
	size_t		 len;
	static const char want[] = "Status: 202 Accepted\r\n"
	    "Content-Type: application/json\r\n"
	    "Content-Length: 19\r\n"
	    "Retry-After: 120\r\n"
	    "\r\n"
	    "{\"status\":\"Queued\"}";

	(void)state;
	r = response_json(202, json_pack("{s:s}", "status", "Queued"));
	assert_non_null(r);
	assert_int_equal(response_header(r, "Retry-After", "120"), 0);
	out = written(r, &len);
	assert_int_equal(len, strlen(want));
	assert_string_equal(out, want);
	free(out);
	response_free(r);
}

static void
test_binary_body(void **state)
{
	struct response	*r;
	char		*out, *body;
	size_t		 len;

	(void)state;
	r = response_new(200, "application/octet-stream", "a\0b", 3);
	assert_non_null(r);
	assert_int_equal(r->body_len, 3);
	out = written(r, &len);
	assert_non_null(strstr(out, "Content-Length: 3\r\n"));
	body = strstr(out, "\r\n\r\n");
	assert_non_null(body);
	assert_int_equal(len - (size_t)(body + 4 - out), 3);
	assert_memory_equal(body + 4, "a\0b", 3);
	free(out);
	response_free(r);
}

/* A buffer's bytes taken over as the body, the buffer left empty. */
static void
test_response_buf(void **state)
{
	struct response	*r;
	struct buf	 b = { 0 };
	char		*out;
	size_t		 len;

	(void)state;
	buf_add(&b, "{\"a\":\0}", 7);
	r = response_buf(200, "application/json", &b);
	assert_non_null(r);
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	assert_int_equal(r->body_len, 7);
	assert_memory_equal(r->body, "{\"a\":\0}", 8);
	out = written(r, &len);
	assert_string_equal(out, "Status: 200 OK\r\nContent-Type: "
	    "application/json\r\nContent-Length: 7\r\n\r\n{\"a\":");
	free(out);
	response_free(r);
	/* Empty: an empty body. */
	r = response_buf(204, NULL, &b);
	assert_non_null(r);
	assert_int_equal(r->body_len, 0);
	assert_string_equal(r->body, "");
	response_free(r);
}

static void
test_header_injection_refused(void **state)
{
	struct response	*r;

	(void)state;
	r = response_new(200, "text/plain", "ok", 2);
	assert_non_null(r);
	assert_int_equal(response_header(r, "X-Evil", "a\r\nSet-Cookie: x=1"),
	    -1);
	assert_int_equal(response_header(r, "X-Evil\n", "a"), -1);
	assert_int_equal(response_header(r, "X:Evil", "a"), -1);
	assert_int_equal(r->nheaders, 0);
	assert_int_equal(response_header(NULL, "X", "a"), -1);
	response_free(r);
	response_free(NULL);
}

static void
test_json_null_value(void **state)
{
	(void)state;
	assert_null(response_json(200, NULL));
}

/* response_render: the bytes response_write writes, in one buffer. */
static void
test_response_render(void **state)
{
	struct response	*r;
	char		*w, *out;
	size_t		 wlen, len;

	(void)state;
	r = response_new(201, "application/json", "{\"a\":\"\0\"}", 10);
	assert_non_null(r);
	assert_int_equal(response_header(r, "Location", "/messages/X"), 0);
	w = written(r, &wlen);
	assert_int_equal(response_render(r, &out, &len), 0);
	assert_int_equal(len, wlen);
	assert_memory_equal(out, w, len);
	assert_int_equal(out[len], '\0');
	assert_non_null(strstr(out, "Status: 201 Created\r\n"));
	assert_non_null(strstr(out, "Location: /messages/X\r\n\r\n"));
	/* The body's NUL byte is kept: the length is the body's. */
	assert_memory_equal(out + len - 10, "{\"a\":\"\0\"}", 10);
	free(out);
	free(w);
	response_free(r);
}

/* A 204: no content, so no Content-Type and no Content-Length. */
static void
test_no_content(void **state)
{
	struct response	*r;
	char		*out;
	size_t		 len;

	(void)state;
	r = response_new(204, NULL, NULL, 0);
	assert_non_null(r);
	assert_int_equal(response_render(r, &out, &len), 0);
	assert_string_equal(out, "Status: 204 No Content\r\n\r\n");
	free(out);
	response_free(r);
	/* Another status without a type keeps its length. */
	r = response_new(200, NULL, "x", 1);
	assert_int_equal(response_render(r, &out, &len), 0);
	assert_string_equal(out, "Status: 200 OK\r\nContent-Length: 1\r\n"
	    "\r\nx");
	free(out);
	response_free(r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_response_render),
		cmocka_unit_test(test_no_content),
		cmocka_unit_test(test_http_reason),
		cmocka_unit_test(test_json_response_bytes),
		cmocka_unit_test(test_binary_body),
		cmocka_unit_test(test_response_buf),
		cmocka_unit_test(test_header_injection_refused),
		cmocka_unit_test(test_json_null_value),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
