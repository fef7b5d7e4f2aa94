/*
 * test_cgi.c: unit tests for lib/cgi.c (RFC 3875; conf/openapi.yaml).
 *
 * The cgi_run tests build a whole temporary installation (config, keys
 * file, spool, templates) and drive cgi_run with an environment array,
 * a file as stdin and a file as stdout.
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
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "cgi.h"
#include "config.h"
#include "keys.h"
#include "problem.h"
#include "testutil.h"

#define PROBLEM_TYPE	"application/problem+json"
#define MAXENV		16

/* What the test handler saw on its last call. */
static struct {
	int	called;
	int	has_req;
	int	has_client;
	char	client[CLIENT_ID_MAX + 1];
	int	has_spool;
	int	has_body;
	int	has_limits;
	size_t	limit_body;
	char	templates[512];
} seen;

struct fixture {
	char	dir[TU_DIR_SIZE];	/* first: see testutil.h */
	char	conf[128];		/* the good config */
	char	conf_nospool[128];	/* spool without subdirectories */
	char	conf_small[128];	/* max-body = 16 */
	char	conf_nokeys[128];	/* keys file missing */
	char	templates[128];
};

struct env {
	char	*v[MAXENV + 1];
	size_t	 n;
};

struct result {
	int	 rc;
	int	 status;
	char	*raw;		/* all output */
	size_t	 rawlen;
	char	*head;		/* up to and including the blank line */
	char	*body;		/* after it */
	size_t	 bodylen;
};

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

static int
setup(void **state)
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

static void env_add(struct env *, const char *, ...)
    __attribute__((format(printf, 2, 3)));

static void
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

static void
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
static void
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

static char *
slurp_fd(int fd, size_t *lenp)
{
	char	*buf = NULL, *nb;
	size_t	 len = 0, cap = 0;
	ssize_t	 n;

	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			nb = realloc(buf, cap);
			assert_non_null(nb);
			buf = nb;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n == -1 && errno == EINTR)
			continue;
		assert_true(n >= 0);
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (buf == NULL) {
		buf = malloc(1);
		assert_non_null(buf);
	}
	buf[len] = '\0';
	*lenp = len;
	return buf;
}

/* Split raw CGI output into status, head and body. */
static void
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

static void
result_free(struct result *r)
{
	free(r->raw);
	free(r->head);
	memset(r, 0, sizeof(*r));
}

/* The value of header name in r->head (case-insensitive), or NULL. */
static char *
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
static void
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
	r->raw = slurp_fd(out, &r->rawlen);
	close(out);
	parse_output(r);
	env_free(e);
}

static json_t *
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
static void
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

static const struct endpoint ep_sms = {
	.method = "POST",
	.needs_key = 1,
	.scope = SCOPE_SMS,
	.limit = LIMIT_BODY,
	.needs_spool = 1,
	.handler = echo_handler,
};
static const struct endpoint ep_email = {
	.method = "POST",
	.needs_key = 1,
	.scope = SCOPE_EMAIL,
	.limit = LIMIT_EMAIL,
	.needs_spool = 1,
	.handler = echo_handler,
};
static const struct endpoint ep_ping = {
	.method = "GET",
	.needs_key = 0,
	.scope = 0,
	.limit = LIMIT_NONE,
	.needs_spool = 0,
	.handler = echo_handler,
};
static const struct endpoint ep_templates = {
	.method = "GET",
	.needs_key = 1,
	.scope = 0,
	.limit = LIMIT_NONE,
	.needs_spool = 0,
	.handler = echo_handler,
};

#define GOOD_BODY	"{\"x\":\"hello\"}"

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
	rest = slurp_fd(p[0], &restlen);
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
	rest = slurp_fd(p[0], &restlen);
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
	rest = slurp_fd(p[0], &restlen);
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

/* The 202 of the echo handler. */
static void
assert_accepted(const struct result *r)
{
	if (r->status != 202)
		fail_msg("wanted 202, got:\n%s", r->raw);
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
	assert_405(&r, "GET");
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
#define T(fn)	cmocka_unit_test_setup_teardown(fn, setup, tu_teardown)
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
		cmocka_unit_test(test_request_drain_exactly_the_body),
		cmocka_unit_test(test_request_drain_over_the_cap),
		T(test_run_ok),
		T(test_run_json_with_charset),
		T(test_run_star_scope),
		T(test_run_wrong_method),
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
