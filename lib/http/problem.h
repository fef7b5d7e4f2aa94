/*
 * problem.h: RFC 9457 problem details (conf/openapi.yaml, Problem).
 *
 *	{"type":"urn:msgspool:problem:invalid-field","title":"Bad Request",
 *	 "status":400,"detail":"the request has invalid fields",
 *	 "errors":{"payload[2].recipient":["must be 8 to 15 digits"]}}
 */
#ifndef PROBLEM_H
#define PROBLEM_H

#include <jansson.h>

struct response;

struct problem {
	int	 status;
	char	*type;		/* "urn:msgspool:problem:" + slug */
	char	*detail;
	json_t	*errors;	/* object: JSON path -> array of strings */
};

/*
 * A new problem with an HTTP status, a slug naming its kind
 * ("invalid-json") and a printf-style detail.  NULL only when out of
 * memory.  Free with problem_free or hand to problem_response.
 */
struct problem	*problem_new(int status, const char *slug,
		    const char *fmt, ...)
		    __attribute__((format(printf, 3, 4)));

void		 problem_free(struct problem *);

/* Add a message for a JSON path of the request ("" for the body). */
void		 problem_add(struct problem *, const char *path,
		    const char *fmt, ...)
		    __attribute__((format(printf, 3, 4)));

/* How many paths carry messages. */
size_t		 problem_count(const struct problem *);

/*
 * The problem as an application/problem+json response.  Consumes p.
 * NULL only when out of memory.
 */
struct response	*problem_response(struct problem *p);

/*
 * The problem of a server-side failure, when nothing better is known:
 * status 503 ("spool-unavailable", with Retry-After) or 500
 * ("internal").  NULL only when out of memory.
 */
struct response	*response_error(int status, const char *detail);

/*
 * Join an errors object into one line ("recipient: must be ...; x: ..."),
 * for per-entry errors of batch replies.  Returns a malloc'd string.
 */
char		*problem_errors_line(const json_t *errors);

#endif
