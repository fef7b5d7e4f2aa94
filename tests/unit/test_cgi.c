/*
 * test_cgi.c: unit tests for lib/http/cgi.c (RFC 3875; conf/openapi.yaml): the
 * request (cgi_env, cgi_request_init, cgi_request_read, cgi_request_drain),
 * cgi_is_json, cgi_acting_client (client=ID of an admin key), and the
 * problems of response_error and cgi_server_error (lib/http/serve.c).
 * The pipeline (lib/http/serve.c: cgi_run, cgi_serve) is tested in test_serve.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "http/cgi.h"
#include "http/problem.h"
#include "testutil.h"

#define PROBLEM_TYPE	"application/problem+json"

/* cgi_env, cgi_request_init */

static void
test_env(void **state)
{
	char *const	env[] = {
		"A=1", "AB=2", "REQUEST_METHOD=POST", "EMPTY=", "EQ=a=b", NULL
	};
	char *const	empty[] = { NULL };

	(void)state;
	assert_string_equal(cgi_env(env, "A"), "1");
	assert_string_equal(cgi_env(env, "AB"), "2");
	assert_string_equal(cgi_env(env, "REQUEST_METHOD"), "POST");
	assert_string_equal(cgi_env(env, "EMPTY"), "");
	assert_string_equal(cgi_env(env, "EQ"), "a=b");
	assert_null(cgi_env(env, "B"));
	assert_null(cgi_env(env, "REQUEST"));
	assert_null(cgi_env(env, "REQUEST_METHOD="));
	assert_null(cgi_env(env, "ABC"));
	assert_null(cgi_env(empty, "A"));
}

static void
test_request_init(void **state)
{
	char *const	env[] = {
		"REQUEST_METHOD=POST",
		"CONTENT_TYPE=application/json",
		"HTTP_X_API_KEY=secret-key",
		"CONTENT_LENGTH=123",
		NULL
	};
	struct request	req;

	(void)state;
	memset(&req, 0x5a, sizeof(req));
	cgi_request_init(&req, env);
	assert_string_equal(req.method, "POST");
	assert_string_equal(req.content_type, "application/json");
	assert_string_equal(req.api_key, "secret-key");
	assert_true(req.has_length);
	assert_int_equal(req.content_length, 123);
	assert_true(req.envp == env);
	assert_null(req.body);
	assert_int_equal(req.body_len, 0);
	cgi_request_free(&req);
}

static void
test_request_init_absent(void **state)
{
	char *const	env[] = { "PATH=/bin", NULL };
	struct request	req;

	(void)state;
	memset(&req, 0x5a, sizeof(req));
	cgi_request_init(&req, env);
	assert_string_equal(req.method, "GET");
	assert_null(req.content_type);
	assert_null(req.api_key);
	assert_false(req.has_length);
	assert_null(req.body);
	cgi_request_free(&req);
}

static void
test_request_init_bad_length(void **state)
{
	static const char *const bad[] = {
		"abc", "12abc", "-1", "+12", " 12", "1.5", "0x10",
		"99999999999999999999999999",
	};
	char		 var[64];
	char		*env[3];
	struct request	 req;
	size_t		 i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(var, sizeof(var), "CONTENT_LENGTH=%s", bad[i]);
		env[0] = "REQUEST_METHOD=POST";
		env[1] = var;
		env[2] = NULL;
		cgi_request_init(&req, env);
		assert_true(req.has_length);
		if (req.content_length != SIZE_MAX)
			fail_msg("CONTENT_LENGTH=%s gave %zu, not SIZE_MAX",
			    bad[i], req.content_length);
		cgi_request_free(&req);
	}
}

static void
test_request_init_zero_length(void **state)
{
	char *const	env[] = { "REQUEST_METHOD=POST", "CONTENT_LENGTH=0",
	    NULL };
	struct request	req;

	(void)state;
	cgi_request_init(&req, env);
	assert_true(req.has_length);
	assert_int_equal(req.content_length, 0);
	cgi_request_free(&req);
}

/* cgi_request_read */

static void
test_request_read_exact(void **state)
{
	struct request	 req;
	char *const	 env[] = { "REQUEST_METHOD=POST", "CONTENT_LENGTH=11",
	    NULL };
	const char	*data = "hello worldEXTRA BYTES";
	int		 p[2];
	char		*rest;
	size_t		 restlen;

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], data, strlen(data)),
	    (ssize_t)strlen(data));
	cgi_request_init(&req, env);
	assert_int_equal(cgi_request_read(&req, p[0]), 0);
	assert_int_equal(req.body_len, 11);
	assert_memory_equal(req.body, "hello world", 11);
	assert_int_equal(req.body[11], '\0');
	/* Never more: the rest is still in the pipe. */
	close(p[1]);
	rest = tu_read_fd(p[0], &restlen);
	close(p[0]);
	assert_int_equal(restlen, strlen("EXTRA BYTES"));
	assert_string_equal(rest, "EXTRA BYTES");
	free(rest);
	cgi_request_free(&req);
}

static void
test_request_read_short(void **state)
{
	struct request	 req;
	char *const	 env[] = { "REQUEST_METHOD=POST", "CONTENT_LENGTH=10",
	    NULL };
	int		 p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "abc", 3), 3);
	close(p[1]);
	cgi_request_init(&req, env);
	assert_int_equal(cgi_request_read(&req, p[0]), -1);
	close(p[0]);
	cgi_request_free(&req);
}

static void
test_request_read_empty(void **state)
{
	struct request	 req;
	char *const	 env[] = { "REQUEST_METHOD=POST", "CONTENT_LENGTH=0",
	    NULL };
	int		 p[2];
	char		*rest;
	size_t		 restlen;

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "zz", 2), 2);
	cgi_request_init(&req, env);
	assert_int_equal(cgi_request_read(&req, p[0]), 0);
	assert_int_equal(req.body_len, 0);
	close(p[1]);
	rest = tu_read_fd(p[0], &restlen);
	close(p[0]);
	assert_string_equal(rest, "zz");
	free(rest);
	cgi_request_free(&req);
}

static void
test_request_read_large_in_pieces(void **state)
{
	enum { N = 300000 };
	struct request	 req;
	char		 var[64];
	char		*env[3];
	char		*data, *rest;
	size_t		 i, restlen;
	int		 p[2], status;
	pid_t		 pid;

	(void)state;
	data = malloc(N);
	assert_non_null(data);
	for (i = 0; i < N; i++)
		data[i] = (char)('a' + i % 26);
	assert_int_equal(pipe(p), 0);
	/* More than a pipe holds: a child writes it in pieces. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		size_t	off = 0;
		ssize_t	n;

		close(p[0]);
		while (off < N) {
			n = write(p[1], data + off,
			    N - off > 1000 ? 1000 : N - off);
			if (n <= 0)
				_exit(1);
			off += (size_t)n;
		}
		if (write(p[1], "TAIL", 4) != 4)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	snprintf(var, sizeof(var), "CONTENT_LENGTH=%d", N);
	env[0] = "REQUEST_METHOD=POST";
	env[1] = var;
	env[2] = NULL;
	cgi_request_init(&req, env);
	assert_int_equal(cgi_request_read(&req, p[0]), 0);
	assert_int_equal(req.body_len, N);
	assert_memory_equal(req.body, data, N);
	rest = tu_read_fd(p[0], &restlen);
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_string_equal(rest, "TAIL");
	free(rest);
	free(data);
	cgi_request_free(&req);
}

/* cgi_is_json */

static void
test_is_json(void **state)
{
	(void)state;
	assert_true(cgi_is_json("application/json"));
	assert_true(cgi_is_json("application/json; charset=utf-8"));
	assert_true(cgi_is_json("application/json;charset=UTF-8"));
	assert_true(cgi_is_json("Application/JSON"));
	assert_false(cgi_is_json("application/jsonx"));
	assert_false(cgi_is_json("application/json-patch+json"));
	assert_false(cgi_is_json("text/plain"));
	assert_false(cgi_is_json("text/json"));
	assert_false(cgi_is_json("application/x-www-form-urlencoded"));
	assert_false(cgi_is_json(""));
	assert_false(cgi_is_json(NULL));
}

static void
test_response_error(void **state)
{
	struct response	*resp;
	json_error_t	 e;
	json_t		*v;

	(void)state;
	resp = response_error(500, "boom");
	assert_non_null(resp);
	assert_int_equal(resp->status, 500);
	assert_string_equal(resp->content_type, PROBLEM_TYPE);
	v = json_loadb(resp->body, resp->body_len, 0, &e);
	assert_non_null(v);
	assert_int_equal(json_integer_value(json_object_get(v, "status")),
	    500);
	assert_string_equal(json_string_value(json_object_get(v, "detail")),
	    "boom");
	assert_string_equal(json_string_value(json_object_get(v, "title")),
	    "Internal Server Error");
	json_decref(v);
	response_free(resp);

	resp = response_error(503, "spool full");
	assert_non_null(resp);
	assert_int_equal(resp->status, 503);
	response_free(resp);
}

static void
test_server_error(void **state)
{
	char		*none[] = { "REQUEST_METHOD=GET", NULL };
	char		*ok[] = { "REDIRECT_STATUS=200", NULL };
	char		*bad[] = { "REDIRECT_STATUS=41x", NULL };
	char		*len[] = { "REDIRECT_STATUS=411", NULL };
	char		*nf[] = { "REDIRECT_STATUS=404", NULL };
	char		*other[] = { "REDIRECT_STATUS=414", NULL };
	struct response	*resp;
	json_error_t	 e;
	json_t		*v;

	(void)state;
	/* An ordinary request, lighttpd's 200, nonsense: nothing. */
	assert_null(cgi_server_error(none));
	assert_null(cgi_server_error(ok));
	assert_null(cgi_server_error(bad));
	/* The server's 411: the program's own problem for it. */
	assert_non_null(resp = cgi_server_error(len));
	assert_int_equal(resp->status, 411);
	assert_string_equal(resp->content_type, PROBLEM_TYPE);
	assert_non_null(v = json_loadb(resp->body, resp->body_len, 0, &e));
	assert_string_equal(json_string_value(json_object_get(v, "type")),
	    "urn:msgspool:problem:length-required");
	assert_string_equal(json_string_value(json_object_get(v, "title")),
	    "Length Required");
	json_decref(v);
	response_free(resp);
	assert_non_null(resp = cgi_server_error(nf));
	assert_int_equal(resp->status, 404);
	assert_non_null(v = json_loadb(resp->body, resp->body_len, 0, &e));
	assert_string_equal(json_string_value(json_object_get(v, "type")),
	    "urn:msgspool:problem:not-found");
	json_decref(v);
	response_free(resp);
	assert_non_null(resp = cgi_server_error(other));
	assert_int_equal(resp->status, 414);
	assert_non_null(v = json_loadb(resp->body, resp->body_len, 0, &e));
	assert_string_equal(json_string_value(json_object_get(v, "type")),
	    "urn:msgspool:problem:invalid-request");
	json_decref(v);
	response_free(resp);
}
/* cgi_acting_client: the acting client of a request with query q. */
static struct response *
acting(unsigned scopes, const char *q, char *id)
{
	struct request	 req;
	struct client	 key = { .id = "ops" }, out;
	struct response	*r = NULL;
	struct ctx	 ctx = { .req = &req, .client = &key };
	char		 qs[256];
	char		*envp[] = { "REQUEST_METHOD=GET", qs, NULL };

	key.scopes = scopes;
	snprintf(qs, sizeof(qs), "QUERY_STRING=%s", q ? q : "");
	if (q == NULL)
		envp[1] = NULL;
	cgi_request_init(&req, envp);
	if (cgi_acting_client(&ctx, &out, &r) == 0) {
		assert_null(r);
		assert_int_equal(out.scopes, scopes);
		strcpy(id, out.id);
	} else
		assert_non_null(r);
	cgi_request_free(&req);
	return r;
}

/* r is a problem of status whose errors name "client"; freed. */
static void
assert_client_problem(struct response *r, int status, const char *type)
{
	json_error_t	 e;
	json_t		*v;

	assert_non_null(r);
	assert_int_equal(r->status, status);
	assert_string_equal(r->content_type, PROBLEM_TYPE);
	v = json_loadb(r->body, r->body_len, 0, &e);
	assert_non_null(v);
	assert_string_equal(json_string_value(json_object_get(v, "type")),
	    type);
	assert_non_null(json_object_get(json_object_get(v, "errors"),
	    "client"));
	json_decref(v);
	response_free(r);
}

static void
test_acting_client(void **state)
{
	char	id[CLIENT_ID_MAX + 1];

	(void)state;
	/* No client=: the key's own, whatever its scopes. */
	assert_null(acting(SCOPE_ALL, NULL, id));
	assert_string_equal(id, "ops");
	assert_null(acting(SCOPE_ADMIN, "limit=2&after=x", id));
	assert_string_equal(id, "ops");
	/* Another pair that does not decode is the route's to judge. */
	assert_null(acting(SCOPE_ADMIN, "a=%zz&clients=x&&", id));
	assert_string_equal(id, "ops");
	/* An admin key acts for the client it names, decoded. */
	assert_null(acting(SCOPE_ADMIN, "limit=2&client=acme", id));
	assert_string_equal(id, "acme");
	assert_null(acting(SCOPE_ADMIN | SCOPE_SMS, "cl%69ent=a%2Db.c_9",
	    id));
	assert_string_equal(id, "a-b.c_9");
	/* Any other key: 403, whatever it names. */
	assert_client_problem(acting(SCOPE_ALL | SCOPE_METRICS,
	    "client=acme", id), 403, "urn:msgspool:problem:forbidden");
	assert_client_problem(acting(SCOPE_SMS, "client=.x", id), 403,
	    "urn:msgspool:problem:forbidden");
	assert_client_problem(acting(0, "client", id), 403,
	    "urn:msgspool:problem:forbidden");
	/* An admin key's client= that is no client id: 400. */
	assert_client_problem(acting(SCOPE_ADMIN, "client=", id), 400,
	    "urn:msgspool:problem:invalid-query");
	assert_client_problem(acting(SCOPE_ADMIN, "client", id), 400,
	    "urn:msgspool:problem:invalid-query");
	assert_client_problem(acting(SCOPE_ADMIN, "client=.acme", id), 400,
	    "urn:msgspool:problem:invalid-query");
	assert_client_problem(acting(SCOPE_ADMIN, "client=a%2Fb", id), 400,
	    "urn:msgspool:problem:invalid-query");
	assert_client_problem(acting(SCOPE_ADMIN, "client=a%00b", id), 400,
	    "urn:msgspool:problem:invalid-query");
	assert_client_problem(acting(SCOPE_ADMIN, "client=%ff", id), 400,
	    "urn:msgspool:problem:invalid-query");
	assert_client_problem(acting(SCOPE_ADMIN, "client=%zz", id), 400,
	    "urn:msgspool:problem:invalid-query");
	assert_client_problem(acting(SCOPE_ADMIN, "client=aaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", id), 400,
	    "urn:msgspool:problem:invalid-query");
	/* Twice is ambiguous, even the same one. */
	assert_client_problem(acting(SCOPE_ADMIN, "client=a&client=a", id),
	    400, "urn:msgspool:problem:invalid-query");
	/* 64 characters is a client id. */
	assert_null(acting(SCOPE_ADMIN, "client=aaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", id));
	assert_int_equal(strlen(id), 64);
}

static void
test_request_drain_exactly_the_body(void **state)
{
	struct request	 req;
	char		*envp[] = { "REQUEST_METHOD=POST", "CONTENT_LENGTH=5",
			    NULL };
	char		 rest[8];
	int		 p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "helloNEXT", 9), 9);
	close(p[1]);
	cgi_request_init(&req, envp);
	cgi_request_drain(&req, p[0], 1024);
	assert_true(req.consumed);
	/* What follows the body is not ours and is still there. */
	assert_int_equal(read(p[0], rest, sizeof(rest)), 4);
	assert_memory_equal(rest, "NEXT", 4);
	close(p[0]);
	cgi_request_free(&req);
}

static void
test_request_drain_over_the_cap(void **state)
{
	struct request	 req;
	char		*envp[] = { "REQUEST_METHOD=POST", "CONTENT_LENGTH=5",
			    NULL };
	char		 rest[8];
	int		 p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "hello", 5), 5);
	close(p[1]);
	cgi_request_init(&req, envp);
	cgi_request_drain(&req, p[0], 4);	/* too big to drain */
	assert_int_equal(read(p[0], rest, sizeof(rest)), 5);
	close(p[0]);
	cgi_request_free(&req);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_request_init),
		cmocka_unit_test(test_request_init_absent),
		cmocka_unit_test(test_request_init_bad_length),
		cmocka_unit_test(test_request_init_zero_length),
		cmocka_unit_test(test_request_read_exact),
		cmocka_unit_test(test_request_read_short),
		cmocka_unit_test(test_request_read_empty),
		cmocka_unit_test(test_request_read_large_in_pieces),
		cmocka_unit_test(test_is_json),
		cmocka_unit_test(test_response_error),
		cmocka_unit_test(test_server_error),
		cmocka_unit_test(test_acting_client),
		cmocka_unit_test(test_request_drain_exactly_the_body),
		cmocka_unit_test(test_request_drain_over_the_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
