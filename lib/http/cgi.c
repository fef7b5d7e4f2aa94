/*
 * cgi.c: the CGI/1.1 side of a request (RFC 3875): its environment, its
 * path as the web servers route it, its body read (exactly
 * CONTENT_LENGTH bytes) or drained, over a cgi_io.
 * The pipeline every route shares is serve.c's.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/util.h"
#include "base/valid.h"
#include "http/cgi.h"
#include "http/problem.h"
#include "spool/receipt.h"

const char *
cgi_env(char *const *envp, const char *name)
{
	size_t	len = strlen(name);

	for (; envp != NULL && *envp != NULL; envp++)
		if (strncmp(*envp, name, len) == 0 && (*envp)[len] == '=')
			return *envp + len + 1;
	return NULL;
}

int
cgi_acting_client(const struct ctx *ctx, struct client *out,
    struct response **r)
{
	struct problem	*p;
	const char	*q, *amp, *eq, *v, *why = NULL;
	json_t		*one;
	char		 id[CLIENT_ID_MAX + 1];
	int		 given = 0, named;

	*r = NULL;
	if (ctx->client == NULL)
		return 0;
	*out = *ctx->client;
	if ((q = cgi_env(ctx->req->envp, "QUERY_STRING")) == NULL)
		q = "";
	/* Each pair on its own: another's faults are the route's. */
	for (; *q != '\0'; q = *amp ? amp + 1 : amp) {
		amp = q + strcspn(q, "&");
		eq = memchr(q, '=', (size_t)(amp - q));
		if (amp == q || (one = receipt_form_parse(q,
		    (size_t)((eq ? eq : amp) - q))) == NULL)
			continue;
		named = json_object_get(one, "client") != NULL;
		json_decref(one);
		if (!named)
			continue;
		if (given++) {
			why = "is given more than once";
			continue;
		}
		one = receipt_form_parse(q, (size_t)(amp - q));
		v = json_string_value(json_object_get(one, "client"));
		if (v == NULL || strlen(v) > CLIENT_ID_MAX ||
		    !valid_client_id(v))
			why = "must be a client id: 1 to 64 of A-Z a-z 0-9 "
			    "_ . -, not starting with '.'";
		else
			memcpy(id, v, strlen(v) + 1);
		json_decref(one);
	}
	if (!given)
		return 0;
	/* Only an admin key names a client, whatever it names. */
	if ((ctx->client->scopes & SCOPE_ADMIN) == 0) {
		if ((p = problem_new(403, "forbidden", "client '%s' lacks "
		    "the 'admin' scope: only an admin key may act for a "
		    "client with client=", ctx->client->id)) != NULL)
			problem_add(p, "client", "needs a key with the "
			    "admin scope");
		*r = problem_response(p);
		return -1;
	}
	if (why != NULL) {
		if ((p = problem_new(400, "invalid-query", "the query has "
		    "invalid parameters")) != NULL)
			problem_add(p, "client", "%s", why);
		*r = problem_response(p);
		return -1;
	}
	memcpy(out->id, id, sizeof(id));
	return 0;
}

/* Whether a path may hold c as it is: RFC 3986's unreserved, and "/". */
static int
path_char(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	    c == '~' || c == '/';
}

/*
 * RFC 3986 5.2.4 on p, a path from its "/", in place, as lighttpd's
 * buffer_path_simplify does: "." and empty segments go (so "//" is "/"),
 * ".." takes the segment before it (none above the root), and a path
 * that ended on one of them ends on "/".
 */
static void
path_simplify(char *p)
{
	char	*out = p, *in = p, *seg;
	size_t	 n;

	while (*in == '/') {
		seg = ++in;
		n = strcspn(seg, "/");
		in += n;
		if (n == 2 && seg[0] == '.' && seg[1] == '.') {
			while (out > p && *--out != '/')
				continue;
		} else if (n > 1 || (n == 1 && seg[0] != '.')) {
			*out++ = '/';
			memmove(out, seg, n);
			out += n;
			continue;
		}
		if (*in == '\0')
			*out++ = '/';
	}
	if (out == p)
		*out++ = '/';
	*out = '\0';
}

char *
cgi_path(const char *uri)
{
	char	*path;
	size_t	 len, i, n = 0;
	int	 c;

	if (uri == NULL)
		return NULL;
	len = strcspn(uri, "?#");
	if ((path = malloc(len + 1)) == NULL)
		return NULL;
	for (i = 0; i < len; i++) {
		/*
		 * What a route or its parameter is made of is decoded, and
		 * "/" (lighttpd's url-path-2f-decode, nginx's $uri); any other
		 * escape ("%3F", "%00") or a malformed one stays as it came.
		 */
		if ((c = util_escape_at(uri + i)) != -1 && path_char(c)) {
			path[n++] = (char)c;
			i += 2;
		} else
			path[n++] = uri[i];
	}
	path[n] = '\0';
	/* A path that is no path ("*", "ping") routes nowhere as it is. */
	if (path[0] == '/')
		path_simplify(path);
	return path;
}

void
cgi_request_init(struct request *req, char *const *envp)
{
	const char	*cl, *auth;
	char		*end;
	unsigned long long n;

	memset(req, 0, sizeof(*req));
	req->envp = envp;
	req->method = cgi_env(envp, "REQUEST_METHOD");
	if (req->method == NULL || *req->method == '\0')
		req->method = "GET";
	/* RFC 9110 9.3.2: a GET whose answer goes without its body. */
	if (strcmp(req->method, "HEAD") == 0) {
		req->method = "GET";
		req->head = 1;
	}
	req->content_type = cgi_env(envp, "CONTENT_TYPE");
	req->api_key = cgi_env(envp, "HTTP_X_API_KEY");
	/*
	 * Or RFC 6750's "Authorization: Bearer KEY" (what Prometheus'
	 * authorization setting sends: conf/openapi.yaml, Authentication).
	 */
	if ((req->api_key == NULL || *req->api_key == '\0') &&
	    (auth = cgi_env(envp, "HTTP_AUTHORIZATION")) != NULL &&
	    strncasecmp(auth, "Bearer ", 7) == 0) {
		for (auth += 7; *auth == ' '; auth++)
			;
		req->api_key = auth;
	}
	if ((cl = cgi_env(envp, "CONTENT_LENGTH")) != NULL && *cl != '\0') {
		req->has_length = 1;
		req->content_length = SIZE_MAX;
		if (isdigit((unsigned char)*cl)) {
			errno = 0;
			n = strtoull(cl, &end, 10);
			if (errno == 0 && *end == '\0' && n < SIZE_MAX)
				req->content_length = (size_t)n;
		}
	}
}

static ssize_t
fd_read(void *arg, char *buf, size_t len)
{
	ssize_t	n;

	while ((n = read(((struct cgi_fds *)arg)->in, buf, len)) == -1 &&
	    errno == EINTR)
		continue;
	return n;
}

static int
fd_write(void *arg, const char *buf, size_t len)
{
	return util_write_all(((struct cgi_fds *)arg)->out, buf, len);
}

void
cgi_fd_io(struct cgi_io *io, struct cgi_fds *fds, int in, int out)
{
	memset(io, 0, sizeof(*io));
	fds->in = in;
	fds->out = out;
	io->read = fd_read;
	io->write = fd_write;
	io->arg = fds;
}

int
cgi_request_read_io(struct request *req, const struct cgi_io *io)
{
	ssize_t	n;
	size_t	len = 0;

	free(req->body);
	req->body_len = 0;
	if (req->content_length == SIZE_MAX ||
	    (req->body = malloc(req->content_length + 1)) == NULL)
		return -1;
	/* Exactly CONTENT_LENGTH bytes; whatever follows is not ours. */
	while (len < req->content_length) {
		n = io->read(io->arg, req->body + len,
		    req->content_length - len);
		if (n <= 0)
			return -1;
		len += (size_t)n;
	}
	req->body[len] = '\0';
	req->body_len = len;
	req->consumed = 1;
	return 0;
}

int
cgi_request_read(struct request *req, int fd)
{
	struct cgi_fds	fds;
	struct cgi_io	io;

	cgi_fd_io(&io, &fds, fd, -1);
	return cgi_request_read_io(req, &io);
}

void
cgi_request_drain_io(struct request *req, const struct cgi_io *io,
    size_t max)
{
	char	buf[65536];
	size_t	left;
	ssize_t	n;

	if (req->consumed || !req->has_length || req->content_length > max)
		return;
	req->consumed = 1;
	for (left = req->content_length; left > 0; left -= (size_t)n) {
		n = io->read(io->arg, buf, left < sizeof(buf) ? left :
		    sizeof(buf));
		if (n <= 0)
			return;
	}
}

void
cgi_request_drain(struct request *req, int fd, size_t max)
{
	struct cgi_fds	fds;
	struct cgi_io	io;

	cgi_fd_io(&io, &fds, fd, -1);
	cgi_request_drain_io(req, &io, max);
}

void
cgi_request_free(struct request *req)
{
	if (req == NULL)
		return;
	free(req->body);
	req->body = NULL;
	req->body_len = 0;
}

int
cgi_respond(const struct cgi_io *io, const struct response *r, int head)
{
	char	*out;
	size_t	 len;
	int	 rc;

	if (response_render(r, &out, &len) == -1)
		return -1;
	/* The body is the rendering's tail: a HEAD's answer stops before. */
	rc = io->write(io->arg, out, head ? len - r->body_len : len);
	free(out);
	return rc;
}

int
cgi_is_json(const char *ct)
{
	size_t	len = strlen("application/json");

	if (ct == NULL)
		return 0;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (strncasecmp(ct, "application/json", len) != 0)
		return 0;
	ct += len;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	return *ct == '\0' || *ct == ';';
}
