/*
 * test_serve.c: unit tests for lib/http/serve.c (RFC 3875;
 * conf/openapi.yaml): the route pipeline, from method, key and scope
 * through the body's limits and type to the spool and the handler, as
 * cgi_run drives it for a CGI program and cgi_serve over a cgi_io in
 * memory with a config of the caller's, as msgspool-fcgi does.
 *
 * Each test builds a whole temporary installation (config, keys file,
 * spool, templates) and drives cgi_run with an environment array, a file
 * as stdin and a file as stdout (cgirun.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include <jansson.h>

#include "base/config.h"
#include "cgirun.h"
#include "http/cgi.h"
#include "testutil.h"

/* cgi_run */

/* POST GOOD_BODY as JSON to ep with key (NULL: none) under conf. */
static void
post_good(const struct fixture *f, const char *conf,
    const struct endpoint *ep, const char *key, struct result *r)
{
	struct env	e;

	env_request(&e, conf, "POST", key, "application/json", "13");
	run(f, ep, &e, GOOD_BODY, 13, r);
}

/* A GET of ep with key (NULL: none) under conf. */
static void
get(const struct fixture *f, const char *conf, const struct endpoint *ep,
    const char *key, struct result *r)
{
	struct env	e;

	env_request(&e, conf, "GET", key, NULL, NULL);
	run(f, ep, &e, NULL, 0, r);
}

/* POST GOOD_BODY as post_good does: the answer is a problem with status. */
static void
post_problem(const struct fixture *f, const char *conf,
    const struct endpoint *ep, const char *key, int status)
{
	struct result	r;

	post_good(f, conf, ep, key, &r);
	assert_problem(&r, status);
	result_free(&r);
}

/*
 * POST body, bodylen bytes, to ep_sms with key-acme under conf, with
 * CONTENT_TYPE type and CONTENT_LENGTH length (each NULL to leave it
 * out): the answer is a problem with status.
 */
static void
post_acme_problem(const struct fixture *f, const char *conf,
    const char *type, const char *length, const char *body, size_t bodylen,
    int status)
{
	struct env	e;
	struct result	r;

	env_request(&e, conf, "POST", "key-acme", type, length);
	run(f, &ep_sms, &e, body, bodylen, &r);
	assert_problem(&r, status);
	result_free(&r);
}

static void
test_run_ok(void **state)
{
	struct fixture	*f = *state;
	struct result	 r;
	char		 buf[256];
	json_t		*v;

	post_good(f, f->conf, &ep_sms, "key-acme", &r);
	assert_accepted(&r);
	assert_int_equal(r.rc, 0);
	assert_true(strncmp(r.raw, "Status: 202 Accepted\r\n", 22) == 0);
	assert_non_null(header_value(&r, "X-Handler", buf, sizeof(buf)));
	assert_string_equal(buf, "yes");
	v = body_json(&r);
	assert_string_equal(json_string_value(json_object_get(v, "client")),
	    "acme");
	assert_string_equal(json_string_value(json_object_get(
	    json_object_get(v, "body"), "x")), "hello");
	json_decref(v);
	assert_int_equal(seen.called, 1);
	assert_true(seen.has_req);
	assert_true(seen.has_client);
	assert_string_equal(seen.client, "acme");
	assert_true(seen.has_spool);
	assert_true(seen.has_body);
	assert_true(seen.has_limits);
	assert_int_equal(seen.limit_body, 1024 * 1024);
	assert_string_equal(seen.templates, f->templates);
	result_free(&r);
}

static void
test_run_json_with_charset(void **state)
{
	struct fixture	*f = *state;
	struct env	 e;
	struct result	 r;

	env_request(&e, f->conf, "POST", "key-acme",
	    "application/json; charset=utf-8", "13");
	run(f, &ep_sms, &e, GOOD_BODY, 13, &r);
	assert_accepted(&r);
	result_free(&r);
}

static void
test_run_star_scope(void **state)
{
	struct fixture	*f = *state;
	struct result	 r;

	post_good(f, f->conf, &ep_sms, "key-all", &r);
	assert_accepted(&r);
	assert_string_equal(seen.client, "boss");
	result_free(&r);
}

/* A 405 whose Allow names allow. */
static void
assert_405(const struct result *r, const char *allow)
{
	char	buf[256];

	assert_problem(r, 405);
	assert_non_null(header_value(r, "Allow", buf, sizeof(buf)));
	assert_string_equal(buf, allow);
}

static void
test_run_wrong_method(void **state)
{
	struct fixture	*f = *state;
	struct env	 e;
	struct result	 r;

	get(f, f->conf, &ep_sms, "key-acme", &r);
	assert_405(&r, "POST");
	result_free(&r);

	/* Before the key is looked at. */
	env_request(&e, f->conf, "PUT", NULL, "application/json", "13");
	run(f, &ep_sms, &e, GOOD_BODY, 13, &r);
	assert_405(&r, "POST");
	result_free(&r);

	post_good(f, f->conf, &ep_ping, NULL, &r);
	assert_405(&r, "GET, HEAD");
	result_free(&r);
}

/* A HEAD is the GET without its body: the same status and header block. */
static void
test_run_head(void **state)
{
	struct fixture	*f = *state;
	struct env	 e;
	struct result	 g, h;

	get(f, f->conf, &ep_ping, NULL, &g);
	env_request(&e, f->conf, "HEAD", NULL, NULL, NULL);
	run(f, &ep_ping, &e, NULL, 0, &h);
	assert_int_equal(h.status, g.status);
	assert_string_equal(h.head, g.head);
	assert_true(g.bodylen > 0);
	assert_int_equal(h.bodylen, 0);
	result_free(&g);
	result_free(&h);
	/* A route without GET: its 405, without the body too. */
	env_request(&e, f->conf, "HEAD", "key-acme", NULL, NULL);
	run(f, &ep_sms, &e, NULL, 0, &h);
	assert_int_equal(h.status, 405);
	assert_non_null(strstr(h.head, "\r\nAllow: POST\r\n"));
	assert_int_equal(h.bodylen, 0);
	result_free(&h);
}

/*
 * A route whose body is optional and whose paths allow different
 * methods, as the suppressions': PUT with PATH_INFO, or GET alone.
 */
static const char *
put_methods(const struct request *req)
{
	return cgi_env(req->envp, "PATH_INFO") != NULL ?
	    "GET, PUT, DELETE" : "GET";
}

/* Run method on ep at path (NULL: none) with a type, length and body. */
static void
run_put(const struct fixture *f, const struct endpoint *ep,
    const char *method, const char *path, const char *type,
    const char *length, const char *body, struct result *r)
{
	struct env	e;

	env_request(&e, f->conf, method, "key-acme", type, length);
	if (path != NULL)
		env_add(&e, "PATH_INFO=%s", path);
	memset(&seen, 0, sizeof(seen));
	run(f, ep, &e, body, body != NULL ? strlen(body) : 0, r);
}

static void
test_run_optional_body(void **state)
{
	struct fixture	*f = *state;
	struct endpoint	 ep = ep_sms;
	struct result	 r;

	ep.method = "GET, PUT, DELETE";
	ep.methods = put_methods;
	ep.scope = 0;
	ep.body_optional = 1;
	/* None: no length and no type, or a length of 0. */
	run_put(f, &ep, "PUT", "/x", NULL, NULL, NULL, &r);
	assert_accepted(&r);
	assert_false(seen.has_body);
	result_free(&r);
	run_put(f, &ep, "PUT", "/x", "application/json", "0", NULL, &r);
	assert_accepted(&r);
	assert_false(seen.has_body);
	result_free(&r);
	/* One: checked and parsed as any. */
	run_put(f, &ep, "PUT", "/x", "application/json", "13", GOOD_BODY, &r);
	assert_accepted(&r);
	assert_true(seen.has_body);
	result_free(&r);
	run_put(f, &ep, "PUT", "/x", "application/json", "1", "{", &r);
	assert_problem(&r, 400);
	result_free(&r);
	run_put(f, &ep, "PUT", "/x", "text/plain", "13", GOOD_BODY, &r);
	assert_problem(&r, 415);
	result_free(&r);
	/* A type without a length: a body of a length unknown. */
	run_put(f, &ep, "PUT", "/x", "application/json", NULL, GOOD_BODY, &r);
	assert_problem(&r, 411);
	assert_int_equal(seen.called, 0);
	result_free(&r);
	/* GET and DELETE read none, whatever comes. */
	run_put(f, &ep, "DELETE", "/x", "application/json", "13", GOOD_BODY,
	    &r);
	assert_accepted(&r);
	assert_false(seen.has_body);
	result_free(&r);
	/* The methods of the path: the Allow names them. */
	run_put(f, &ep, "PUT", NULL, NULL, NULL, NULL, &r);
	assert_405(&r, "GET, HEAD");
	result_free(&r);
	run_put(f, &ep, "POST", "/x", "application/json", "13", GOOD_BODY, &r);
	assert_405(&r, "GET, HEAD, PUT, DELETE");
	result_free(&r);
	run_put(f, &ep, "GET", NULL, NULL, NULL, NULL, &r);
	assert_accepted(&r);
	result_free(&r);
}

static void
test_run_missing_key(void **state)
{
	struct fixture	*f = *state;

	post_problem(f, f->conf, &ep_sms, NULL, 401);
}

static void
test_run_empty_key(void **state)
{
	struct fixture	*f = *state;

	post_problem(f, f->conf, &ep_sms, "", 401);
}

static void
test_run_unknown_key(void **state)
{
	struct fixture	*f = *state;

	post_problem(f, f->conf, &ep_sms, "key-nobody", 401);
}

static void
test_run_disabled_key(void **state)
{
	struct fixture	*f = *state;

	post_problem(f, f->conf, &ep_sms, "key-off", 403);
}

static void
test_run_missing_scope(void **state)
{
	struct fixture	*f = *state;

	post_problem(f, f->conf, &ep_sms, "key-mail", 403);
	post_problem(f, f->conf, &ep_email, "key-acme", 403);
}

static void
test_run_no_content_length(void **state)
{
	struct fixture	*f = *state;

	post_acme_problem(f, f->conf, "application/json", NULL, GOOD_BODY, 13,
	    411);
}

static void
test_run_too_large(void **state)
{
	struct fixture	*f = *state;

	/* Over the default 1 MiB: refused before any byte is read. */
	post_acme_problem(f, f->conf, "application/json", "1048577", NULL, 0,
	    413);
	/* Over a configured limit. */
	post_acme_problem(f, f->conf_small, "application/json", "17",
	    "{\"x\":\"123456789\"}", 17, 413);
	/* A CONTENT_LENGTH that is not a number is over any limit. */
	post_acme_problem(f, f->conf, "application/json", "lots", GOOD_BODY,
	    13, 413);
}

static void
test_run_at_limit(void **state)
{
	struct fixture	*f = *state;
	struct env	 e;
	struct result	 r;

	/* Exactly max-body bytes is allowed. */
	env_request(&e, f->conf_small, "POST", "key-acme", "application/json",
	    "16");
	run(f, &ep_sms, &e, "{\"x\":\"12345678\"}", 16, &r);
	assert_accepted(&r);
	assert_int_equal(seen.limit_body, 16);
	result_free(&r);
}

static void
test_run_email_limit(void **state)
{
	struct fixture	*f = *state;
	struct env	 e;
	struct result	 r;

	/* LIMIT_EMAIL uses max-email-body, not max-body. */
	env_request(&e, f->conf_small, "POST", "key-mail", "application/json",
	    "17");
	run(f, &ep_email, &e, "{\"x\":\"123456789\"}", 17, &r);
	assert_accepted(&r);
	assert_string_equal(seen.client, "mail");
	result_free(&r);
}

static void
test_run_wrong_content_type(void **state)
{
	struct fixture	*f = *state;

	post_acme_problem(f, f->conf, "text/plain", "13", GOOD_BODY, 13, 415);
	post_acme_problem(f, f->conf, NULL, "13", GOOD_BODY, 13, 415);
}

static void
test_run_bad_json(void **state)
{
	struct fixture	*f = *state;

	post_acme_problem(f, f->conf, "application/json", "7", "{\"x\":1,", 7,
	    400);
	/* Valid JSON text but invalid UTF-8 inside a string. */
	post_acme_problem(f, f->conf, "application/json", "10",
	    "{\"x\":\"\xff\xfe\"}", 10, 400);
	/* An empty body is not JSON either. */
	post_acme_problem(f, f->conf, "application/json", "0", "", 0, 400);
}

static void
test_run_short_body(void **state)
{
	struct fixture	*f = *state;
	struct env	 e;
	struct result	 r;

	/* CONTENT_LENGTH promises more than arrives: not a 2xx. */
	env_request(&e, f->conf, "POST", "key-acme", "application/json", "50");
	run(f, &ep_sms, &e, GOOD_BODY, 13, &r);
	assert_int_equal(r.rc, 0);
	assert_true(r.status >= 400);
	assert_int_equal(seen.called, 0);
	result_free(&r);
}

static void
test_run_spool_unavailable(void **state)
{
	struct fixture	*f = *state;
	struct result	 r;
	char		 buf[256];

	post_good(f, f->conf_nospool, &ep_sms, "key-acme", &r);
	assert_problem(&r, 503);
	/* A 503 carries Retry-After (conf/openapi.yaml). */
	assert_non_null(header_value(&r, "Retry-After", buf, sizeof(buf)));
	assert_true(atoi(buf) > 0);
	result_free(&r);
}

static void
test_run_no_spool_needed(void **state)
{
	struct fixture	*f = *state;
	struct result	 r;

	/* An endpoint without needs_spool runs with a broken spool. */
	get(f, f->conf_nospool, &ep_templates, "key-mail", &r);
	assert_accepted(&r);
	assert_false(seen.has_spool);
	assert_false(seen.has_body);
	assert_true(seen.has_client);
	assert_string_equal(seen.client, "mail");
	result_free(&r);
}

static void
test_run_any_valid_key(void **state)
{
	struct fixture	*f = *state;
	struct result	 r;

	/* scope 0: any valid key, still not a disabled or unknown one. */
	get(f, f->conf, &ep_templates, "key-acme", &r);
	assert_accepted(&r);
	result_free(&r);
	memset(&seen, 0, sizeof(seen));

	get(f, f->conf, &ep_templates, "key-off", &r);
	assert_problem(&r, 403);
	result_free(&r);

	get(f, f->conf, &ep_templates, NULL, &r);
	assert_problem(&r, 401);
	result_free(&r);
}

static void
test_run_ping_ignores_key(void **state)
{
	struct fixture	*f = *state;
	struct result	 r;

	get(f, f->conf, &ep_ping, NULL, &r);
	assert_accepted(&r);
	assert_false(seen.has_client);
	assert_false(seen.has_spool);
	result_free(&r);

	/* A bad key is not even looked at. */
	get(f, f->conf, &ep_ping, "key-nobody", &r);
	assert_accepted(&r);
	result_free(&r);

	/* Nor a missing keys file. */
	get(f, f->conf_nokeys, &ep_ping, NULL, &r);
	assert_accepted(&r);
	result_free(&r);
}

static void
test_run_ping_handler_gets_request(void **state)
{
	struct fixture	*f = *state;
	struct result	 r;

	/* cgi.h: a handler is a function of a request; ctx->req is set. */
	get(f, f->conf, &ep_ping, NULL, &r);
	result_free(&r);
	assert_int_equal(seen.called, 1);
	assert_true(seen.has_req);
}

static void
test_run_missing_config(void **state)
{
	struct fixture	*f = *state;
	char		 conf[512];

	snprintf(conf, sizeof(conf), "%s/no-such.conf", f->dir);
	post_problem(f, conf, &ep_sms, "key-acme", 500);
}

static void
test_run_missing_keys_file(void **state)
{
	struct fixture	*f = *state;

	post_problem(f, f->conf_nokeys, &ep_sms, "key-acme", 500);
}
/* cgi_serve */

/* cgi_serve over a cgi_io in memory, with a config of the caller's. */
struct memio {
	const char		*in;
	size_t			 inlen, inoff;
	size_t			 chunk;		/* most bytes a read gives */
	char			 out[4096];
	size_t			 outlen;
	const struct config	*cfg;
	int			 config_calls;
	char			 path[512];	/* the path asked for */
};

static ssize_t
mem_read(void *arg, char *buf, size_t len)
{
	struct memio	*m = arg;

	if (len > m->chunk)
		len = m->chunk;
	if (len > m->inlen - m->inoff)
		len = m->inlen - m->inoff;
	memcpy(buf, m->in + m->inoff, len);
	m->inoff += len;
	return (ssize_t)len;
}

static int
mem_write(void *arg, const char *buf, size_t len)
{
	struct memio	*m = arg;

	if (len > sizeof(m->out) - m->outlen)
		return -1;
	memcpy(m->out + m->outlen, buf, len);
	m->outlen += len;
	return 0;
}

static const struct config *
mem_config(void *arg, const char *path, char *err, size_t errlen)
{
	struct memio	*m = arg;

	m->config_calls++;
	snprintf(m->path, sizeof(m->path), "%s", path);
	if (m->cfg == NULL)
		snprintf(err, errlen, "no config");
	return m->cfg;
}

static void
test_serve_io(void **state)
{
	const struct fixture	*f = *state;
	struct memio		 m;
	struct cgi_io		 io = { .read = mem_read, .write = mem_write,
				    .config = mem_config, .arg = &m };
	struct env		 e;
	struct config		*cfg;
	struct result		 r;
	char			 err[256];

	assert_non_null(cfg = config_load(f->conf, err, sizeof(err)));
	memset(&m, 0, sizeof(m));
	m.in = GOOD_BODY "trailing bytes of another request";
	m.inlen = strlen(m.in);
	m.chunk = 3;				/* the body in pieces */
	m.cfg = cfg;
	env_request(&e, f->conf, "POST", "key-acme", "application/json", "13");
	assert_int_equal(cgi_serve(&ep_sms, e.v, &io), 0);
	env_free(&e);
	/* The caller's config, asked for by the request's path, kept. */
	assert_int_equal(m.config_calls, 1);
	assert_string_equal(m.path, f->conf);
	/* Exactly the body, never what follows it. */
	assert_int_equal(m.inoff, 13);
	memset(&r, 0, sizeof(r));
	assert_non_null(r.raw = strndup(m.out, m.outlen));
	r.rawlen = m.outlen;
	parse_output(&r);
	assert_accepted(&r);
	assert_string_equal(seen.client, "acme");
	result_free(&r);

	/* The caller's config cannot be had: a 500, as a bad file is. */
	memset(&seen, 0, sizeof(seen));
	memset(&m, 0, sizeof(m));
	m.in = GOOD_BODY;
	m.inlen = m.chunk = 13;
	env_request(&e, f->conf, "POST", "key-acme", "application/json", "13");
	assert_int_equal(cgi_serve(&ep_sms, e.v, &io), 0);
	env_free(&e);
	assert_int_equal(m.config_calls, 1);
	/* The unread body was drained off the server's hands. */
	assert_int_equal(m.inoff, 13);
	memset(&r, 0, sizeof(r));
	assert_non_null(r.raw = strndup(m.out, m.outlen));
	r.rawlen = m.outlen;
	parse_output(&r);
	assert_problem(&r, 500);
	result_free(&r);
	config_free(cfg);
}

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, cgirun_setup, \
	    tu_teardown)
	const struct CMUnitTest tests[] = {
		T(test_run_ok),
		T(test_run_json_with_charset),
		T(test_run_star_scope),
		T(test_run_wrong_method),
		T(test_run_head),
		T(test_run_optional_body),
		T(test_run_missing_key),
		T(test_run_empty_key),
		T(test_run_unknown_key),
		T(test_run_disabled_key),
		T(test_run_missing_scope),
		T(test_run_no_content_length),
		T(test_run_too_large),
		T(test_run_at_limit),
		T(test_run_email_limit),
		T(test_run_wrong_content_type),
		T(test_run_bad_json),
		T(test_run_short_body),
		T(test_run_spool_unavailable),
		T(test_run_no_spool_needed),
		T(test_run_any_valid_key),
		T(test_run_ping_ignores_key),
		T(test_run_ping_handler_gets_request),
		T(test_run_missing_config),
		T(test_run_missing_keys_file),
		T(test_serve_io),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
