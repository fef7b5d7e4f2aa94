/*
 * test_cgi_serve.c: unit tests for cgi_serve of lib/cgi.c (RFC 3875;
 * conf/openapi.yaml): the route pipeline over a cgi_io in memory, with
 * a config of the caller's, as msgspool-fcgi runs it, on the temporary
 * installation of cgirun.h.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "cgi.h"
#include "config.h"
#include "cgirun.h"
#include "testutil.h"

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
		T(test_serve_io),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
