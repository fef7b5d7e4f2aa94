/*
 * http.c: HTTP responses as values (status, headers, body) and their
 * CGI form.  Below everything that answers a request: problem.c builds
 * its errors on it, cgi.c and the persistent mode write them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "http/http.h"

const char *
http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 411: return "Length Required";
	case 413: return "Content Too Large";
	case 415: return "Unsupported Media Type";
	case 422: return "Unprocessable Content";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	default: return "";
	}
}

struct response *
response_new(int status, const char *content_type, const char *body,
    size_t len)
{
	struct response	*r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->status = status;
	if ((content_type != NULL &&
	    (r->content_type = strdup(content_type)) == NULL) ||
	    (r->body = malloc(len + 1)) == NULL) {
		response_free(r);
		return NULL;
	}
	if (len > 0)
		memcpy(r->body, body, len);
	r->body[len] = '\0';
	r->body_len = len;
	return r;
}

struct response *
response_buf(int status, const char *content_type, struct buf *b)
{
	struct response	*r;
	size_t		 len;
	char		*body;

	if ((body = buf_take(b, &len)) == NULL)
		return NULL;
	if ((r = response_new(status, content_type, "", 0)) == NULL) {
		free(body);
		return NULL;
	}
	free(r->body);
	r->body = body;
	r->body_len = len;
	return r;
}

/*
 * The room a JSON reply's text starts with: a message's status (about
 * 600 bytes) and most replies fit, written once where they stay.
 */
#define RESPONSE_JSON_ROOM	1023

struct response *
response_json(int status, json_t *value)
{
	struct buf	 b = { 0 };
	int		 rc;

	if (value == NULL)
		return NULL;
	rc = buf_reserve(&b, RESPONSE_JSON_ROOM) == -1 ? -1 :
	    buf_json(&b, value, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(value);
	if (rc == -1) {
		buf_free(&b);
		return NULL;
	}
	return response_buf(status, "application/json", &b);
}

void
response_free(struct response *r)
{
	size_t	i;

	if (r == NULL)
		return;
	for (i = 0; i < r->nheaders; i++) {
		free(r->headers[i].name);
		free(r->headers[i].value);
	}
	free(r->headers);
	free(r->content_type);
	free(r->body);
	free(r);
}

int
response_header(struct response *r, const char *name, const char *value)
{
	struct header	*h;

	if (r == NULL)
		return -1;
	/* Header injection is a bug of ours, never something to send. */
	if (strpbrk(name, "\r\n:") != NULL || strpbrk(value, "\r\n") != NULL)
		return -1;
	h = reallocarray(r->headers, r->nheaders + 1, sizeof(*h));
	if (h == NULL)
		return -1;
	r->headers = h;
	h = &r->headers[r->nheaders];
	h->name = strdup(name);
	h->value = strdup(value);
	if (h->name == NULL || h->value == NULL) {
		free(h->name);
		free(h->value);
		return -1;
	}
	r->nheaders++;
	return 0;
}

/* The head's room before its headers: the status line and two. */
#define HEAD_ROOM	128

/* The decimal digits of n into b. */
static void
put_number(struct buf *b, size_t n)
{
	char	 d[24];
	size_t	 i = sizeof(d);

	do
		d[--i] = (char)('0' + n % 10);
	while ((n /= 10) > 0);
	buf_add(b, d + i, sizeof(d) - i);
}

int
response_render(const struct response *r, char **out, size_t *len)
{
	struct buf	 b = { 0 };
	size_t		 i;

	*out = NULL;
	*len = 0;
	/* One buffer, made once, its pieces put by hand: no printf. */
	buf_reserve(&b, HEAD_ROOM + r->body_len);
	buf_puts(&b, "Status: ");
	put_number(&b, (size_t)r->status);
	buf_putc(&b, ' ');
	buf_puts(&b, http_reason(r->status));
	buf_puts(&b, "\r\n");
	if (r->content_type != NULL) {
		buf_puts(&b, "Content-Type: ");
		buf_puts(&b, r->content_type);
		buf_puts(&b, "\r\n");
	}
	/* A 204 has no content, nor a length (RFC 9110 8.6). */
	if (r->status != 204) {
		buf_puts(&b, "Content-Length: ");
		put_number(&b, r->body_len);
		buf_puts(&b, "\r\n");
	}
	for (i = 0; i < r->nheaders; i++) {
		buf_puts(&b, r->headers[i].name);
		buf_puts(&b, ": ");
		buf_puts(&b, r->headers[i].value);
		buf_puts(&b, "\r\n");
	}
	buf_puts(&b, "\r\n");
	buf_add(&b, r->body, r->body_len);
	if ((*out = buf_take(&b, len)) == NULL) {
		*len = 0;
		return -1;
	}
	return 0;
}

int
response_write(const struct response *r, int fd)
{
	char	*buf;
	size_t	 len;
	int	 rc;

	if (response_render(r, &buf, &len) == -1)
		return -1;
	rc = util_write_all(fd, buf, len);
	free(buf);
	return rc;
}
