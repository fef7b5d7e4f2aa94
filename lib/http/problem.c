/*
 * problem.c: RFC 9457 problem details.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "http/problem.h"

#define PROBLEM_TYPE_PREFIX	"urn:msgspool:problem:"

struct problem *
problem_new(int status, const char *slug, const char *fmt, ...)
{
	struct problem	*p;
	va_list		 ap;
	int		 rc;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	p->status = status;
	va_start(ap, fmt);
	rc = vasprintf(&p->detail, fmt, ap);
	va_end(ap);
	if (rc == -1)
		p->detail = NULL;
	if (asprintf(&p->type, "%s%s", PROBLEM_TYPE_PREFIX, slug) == -1)
		p->type = NULL;
	p->errors = json_object();
	if (p->detail == NULL || p->type == NULL || p->errors == NULL) {
		problem_free(p);
		return NULL;
	}
	return p;
}

void
problem_free(struct problem *p)
{
	if (p == NULL)
		return;
	free(p->type);
	free(p->detail);
	json_decref(p->errors);
	free(p);
}

void
problem_add(struct problem *p, const char *path, const char *fmt, ...)
{
	json_t	*list;
	char	*msg;
	va_list	 ap;
	int	 rc;

	if (p == NULL)
		return;
	va_start(ap, fmt);
	rc = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (rc == -1)
		return;
	if ((list = json_object_get(p->errors, path)) == NULL) {
		list = json_array();
		json_object_set_new(p->errors, path, list);
	}
	json_array_append_new(list, json_string(msg));
	free(msg);
}

size_t
problem_count(const struct problem *p)
{
	return p == NULL ? 0 : json_object_size(p->errors);
}

struct response *
problem_response(struct problem *p)
{
	struct response	*r;
	json_t		*o;
	char		*body;
	size_t		 len;

	if (p == NULL)
		return NULL;
	o = json_pack("{s:s, s:s, s:i, s:s}", "type", p->type,
	    "title", http_reason(p->status), "status", p->status,
	    "detail", p->detail);
	if (o != NULL && json_object_size(p->errors) > 0)
		json_object_set(o, "errors", p->errors);
	body = o == NULL ? NULL : buf_json_text(o, JSON_COMPACT, &len);
	json_decref(o);
	r = body == NULL ? NULL : response_new(p->status,
	    "application/problem+json", body, len);
	free(body);
	problem_free(p);
	return r;
}

char *
problem_errors_line(const json_t *errors)
{
	const char	*path;
	json_t		*list, *msg;
	char		*out = NULL, *next;
	size_t		 i;

	json_object_foreach((json_t *)errors, path, list) {
		json_array_foreach(list, i, msg) {
			if (asprintf(&next, "%s%s%s%s%s", out ? out : "",
			    out ? "; " : "", path, *path ? ": " : "",
			    json_string_value(msg)) == -1)
				next = NULL;
			free(out);
			if ((out = next) == NULL)
				return NULL;
		}
	}
	return out != NULL ? out : strdup("invalid entry");
}

struct response *
response_error(int status, const char *detail)
{
	struct response	*r;

	r = problem_response(problem_new(status,
	    status == 503 ? "spool-unavailable" : "internal", "%s", detail));
	if (r != NULL && status == 503)
		response_header(r, "Retry-After", "60");
	return r;
}
