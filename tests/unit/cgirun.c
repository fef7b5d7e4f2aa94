/*
 * cgirun.c: a temporary installation (config, keys file, spool,
 * templates) for the tests of cgi_run and cgi_serve, cgi_run run on it
 * with an environment array, a file as stdin and a file as stdout, and
 * its output parsed and checked.
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
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cgirun.h"
#include "content/keys.h"
#include "http/cgi.h"
#include "http/problem.h"
#include "testutil.h"

struct seen	 seen;

static void
make_dir(const char *dir, const char *name)
{
	char	path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(mkdir(path, 0700), 0);
}

static void
write_conf(const char *path, const char *dir, const char *spool,
    const char *keys, const char *extra)
{
	char	text[2048];

	snprintf(text, sizeof(text), "# test config\n%s"
	    "spool = %s/%s\nkeys = %s/%s\ntemplates = %s/templates\n"
	    "[sms]\nprovider = file\n", extra, dir, spool, dir, keys, dir);
	tu_write_text(path, text);
}

int
cgirun_setup(void **state)
{
	struct fixture	*f;
	char		 path[512], keys[2048], line[256];
	static const char *const subdirs[] = {
		"spool/tmp", "spool/new", "spool/deferred", "spool/cur",
		"spool/sent", "spool/failed"
	};
	size_t		 i;

	memset(&seen, 0, sizeof(seen));
	if ((f = tu_fixture_new(sizeof(*f), "cgi")) == NULL)
		return -1;
	*state = f;

	make_dir(f->dir, "spool");
	for (i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++)
		make_dir(f->dir, subdirs[i]);
	make_dir(f->dir, "bare");
	make_dir(f->dir, "templates");
	snprintf(f->templates, sizeof(f->templates), "%s/templates", f->dir);

	keys[0] = '\0';
	strcat(keys, "# test keys\n");
	tu_key_line(line, sizeof(line), "acme", "key-acme", "sms", "");
	strcat(keys, line);
	tu_key_line(line, sizeof(line), "mail", "key-mail", "email", "");
	strcat(keys, line);
	tu_key_line(line, sizeof(line), "off", "key-off", "*", ":disabled");
	strcat(keys, line);
	tu_key_line(line, sizeof(line), "boss", "key-all", "*", "");
	strcat(keys, line);
	snprintf(path, sizeof(path), "%s/keys", f->dir);
	tu_write_text(path, keys);

	snprintf(f->conf, sizeof(f->conf), "%s/msgspool.conf", f->dir);
	write_conf(f->conf, f->dir, "spool", "keys", "");
	snprintf(f->conf_nospool, sizeof(f->conf_nospool), "%s/nospool.conf",
	    f->dir);
	write_conf(f->conf_nospool, f->dir, "bare", "keys", "");
	snprintf(f->conf_small, sizeof(f->conf_small), "%s/small.conf",
	    f->dir);
	write_conf(f->conf_small, f->dir, "spool", "keys", "max-body = 16\n");
	snprintf(f->conf_nokeys, sizeof(f->conf_nokeys), "%s/nokeys.conf",
	    f->dir);
	write_conf(f->conf_nokeys, f->dir, "spool", "no-such-keys", "");
	return 0;
}

void
env_add(struct env *e, const char *fmt, ...)
{
	va_list	ap;
	int	r;

	assert_true(e->n < MAXENV);
	va_start(ap, fmt);
	r = vasprintf(&e->v[e->n], fmt, ap);
	va_end(ap);
	assert_true(r >= 0);
	e->n++;
	e->v[e->n] = NULL;
}

void
env_free(struct env *e)
{
	size_t	i;

	for (i = 0; i < e->n; i++)
		free(e->v[i]);
	e->n = 0;
	e->v[0] = NULL;
}

/*
 * A POST environment: config, method, key, type, length (each NULL to
 * leave it out).
 */
void
env_request(struct env *e, const char *conf, const char *method,
    const char *key, const char *type, const char *length)
{
	memset(e, 0, sizeof(*e));
	env_add(e, "PATH=/usr/bin:/bin");
	env_add(e, "GATEWAY_INTERFACE=CGI/1.1");
	if (conf != NULL)
		env_add(e, "MSGSPOOL_CONFIG=%s", conf);
	if (method != NULL)
		env_add(e, "REQUEST_METHOD=%s", method);
	if (key != NULL)
		env_add(e, "HTTP_X_API_KEY=%s", key);
	if (type != NULL)
		env_add(e, "CONTENT_TYPE=%s", type);
	if (length != NULL)
		env_add(e, "CONTENT_LENGTH=%s", length);
}

/* Split raw CGI output into status, head and body. */
void
parse_output(struct result *r)
{
	char	*sep;

	r->status = -1;
	r->head = NULL;
	r->body = NULL;
	r->bodylen = 0;
	if (strncmp(r->raw, "Status: ", 8) == 0)
		r->status = atoi(r->raw + 8);
	sep = strstr(r->raw, "\r\n\r\n");
	if (sep == NULL)
		return;
	r->head = strndup(r->raw, (size_t)(sep - r->raw) + 4);
	assert_non_null(r->head);
	r->body = sep + 4;
	r->bodylen = r->rawlen - (size_t)(r->body - r->raw);
}

void
result_free(struct result *r)
{
	free(r->raw);
	free(r->head);
	memset(r, 0, sizeof(*r));
}

/* The value of header name in r->head (case-insensitive), or NULL. */
char *
header_value(const struct result *r, const char *name, char *buf,
    size_t len)
{
	const char	*p, *eol, *v;
	size_t		 nl = strlen(name);

	if (r->head == NULL)
		return NULL;
	for (p = r->head; *p != '\0'; p = eol + 2) {
		if ((eol = strstr(p, "\r\n")) == NULL || eol == p)
			break;
		if ((size_t)(eol - p) > nl && strncasecmp(p, name, nl) == 0 &&
		    p[nl] == ':') {
			v = p + nl + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			snprintf(buf, len, "%.*s", (int)(eol - v), v);
			return buf;
		}
	}
	return NULL;
}

/* Run cgi_run with body as stdin; the output lands in r. */
void
run(const struct fixture *f, const struct endpoint *ep, struct env *e,
    const char *body, size_t bodylen, struct result *r)
{
	char	inpath[512], outpath[512];
	int	in, out;

	snprintf(inpath, sizeof(inpath), "%s/stdin", f->dir);
	snprintf(outpath, sizeof(outpath), "%s/stdout", f->dir);
	tu_write_file(inpath, body != NULL ? body : "", bodylen);
	in = open(inpath, O_RDONLY);
	assert_true(in >= 0);
	out = open(outpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(out >= 0);

	memset(r, 0, sizeof(*r));
	r->rc = cgi_run(ep, e->v, in, out);
	/* cgi_run may arm alarm(); the test process must not get it. */
	alarm(0);
	close(in);
	assert_int_equal(lseek(out, 0, SEEK_SET), 0);
	r->raw = tu_read_fd(out, &r->rawlen);
	close(out);
	parse_output(r);
	env_free(e);
}

json_t *
body_json(const struct result *r)
{
	json_error_t	 err;
	json_t		*v;

	assert_non_null(r->body);
	v = json_loadb(r->body, r->bodylen, 0, &err);
	if (v == NULL)
		fail_msg("response body is not JSON (%s): %s", err.text,
		    r->body);
	return v;
}

/*
 * A problem response with status: check head and body.  A 401 names
 * the scheme in WWW-Authenticate.
 */
void
assert_problem(const struct result *r, int status)
{
	char	 buf[256];
	json_t	*v;

	if (r->status != status)
		fail_msg("wanted status %d, got:\n%s", status, r->raw);
	assert_int_equal(r->rc, 0);
	assert_non_null(header_value(r, "Content-Type", buf, sizeof(buf)));
	assert_string_equal(buf, PROBLEM_TYPE);
	v = body_json(r);
	assert_int_equal(json_integer_value(json_object_get(v, "status")),
	    status);
	assert_string_equal(json_string_value(json_object_get(v, "title")),
	    http_reason(status));
	assert_true(strncmp(json_string_value(json_object_get(v, "type")),
	    "urn:msgspool:problem:", 21) == 0);
	assert_non_null(json_string_value(json_object_get(v, "detail")));
	json_decref(v);
	assert_int_equal(seen.called, 0);
	if (status == 401) {
		assert_non_null(header_value(r, "WWW-Authenticate", buf,
		    sizeof(buf)));
		assert_string_equal(buf, "ApiKey header=\"X-API-KEY\"");
	}
}

/* The handler: records what it saw and echoes it back with a 202. */
static struct response *
echo_handler(struct ctx *c)
{
	struct response	*r;
	json_t		*v;

	seen.called++;
	seen.has_req = c->req != NULL;
	seen.has_client = c->client != NULL;
	if (c->client != NULL)
		snprintf(seen.client, sizeof(seen.client), "%s", c->client->id);
	seen.has_spool = c->spool != NULL;
	seen.has_body = c->body != NULL;
	seen.has_limits = c->limits != NULL;
	if (c->limits != NULL)
		seen.limit_body = c->limits->body;
	if (c->templates != NULL)
		snprintf(seen.templates, sizeof(seen.templates), "%s",
		    c->templates);
	v = json_pack("{s:s,s:O?}", "client",
	    c->client != NULL ? c->client->id : "", "body", c->body);
	r = response_json(202, v);
	if (r != NULL)
		response_header(r, "X-Handler", "yes");
	return r;
}

const struct endpoint ep_sms = {
	.method = "POST",
	.needs_key = 1,
	.scope = SCOPE_SMS,
	.limit = LIMIT_BODY,
	.needs_spool = 1,
	.handler = echo_handler,
};
const struct endpoint ep_email = {
	.method = "POST",
	.needs_key = 1,
	.scope = SCOPE_EMAIL,
	.limit = LIMIT_EMAIL,
	.needs_spool = 1,
	.handler = echo_handler,
};
const struct endpoint ep_ping = {
	.method = "GET",
	.needs_key = 0,
	.scope = 0,
	.limit = LIMIT_NONE,
	.needs_spool = 0,
	.handler = echo_handler,
};
const struct endpoint ep_templates = {
	.method = "GET",
	.needs_key = 1,
	.scope = 0,
	.limit = LIMIT_NONE,
	.needs_spool = 0,
	.handler = echo_handler,
};

/* The 202 of the echo handler. */
void
assert_accepted(const struct result *r)
{
	if (r->status != 202)
		fail_msg("wanted 202, got:\n%s", r->raw);
}
