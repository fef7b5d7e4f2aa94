/*
 * cgirun.h: what the tests of cgi_run and cgi_serve share (cgirun.c): a
 * temporary installation as a cmocka fixture, a handler that records what
 * it saw, endpoints around it, a run of cgi_run and its output parsed.
 */
#ifndef MSGSPOOL_CGIRUN_H
#define MSGSPOOL_CGIRUN_H

#include <stddef.h>

#include <jansson.h>

#include "content/keys.h"
#include "http/cgi.h"
#include "testutil.h"

#define PROBLEM_TYPE	"application/problem+json"
#define MAXENV		16

/* What the test handler saw on its last call. */
struct seen {
	int	called;
	int	has_req;
	int	has_client;
	char	client[CLIENT_ID_MAX + 1];
	int	has_spool;
	int	has_body;
	int	has_limits;
	size_t	limit_body;
	char	templates[512];
};
extern struct seen	 seen;

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

/*
 * The fixture (struct fixture): a scratch directory with a spool, a keys
 * file (acme: sms; mail: email; off: disabled; boss: *), templates and
 * the configs above; seen cleared.  A cmocka setup; tu_teardown undoes it.
 */
int	 cgirun_setup(void **state);

void	 env_add(struct env *, const char *, ...)
    __attribute__((format(printf, 2, 3)));
void	 env_free(struct env *e);

/*
 * A POST environment: config, method, key, type, length (each NULL to
 * leave it out).
 */
void	 env_request(struct env *e, const char *conf, const char *method,
	    const char *key, const char *type, const char *length);

/* Split raw CGI output into status, head and body. */
void	 parse_output(struct result *r);
void	 result_free(struct result *r);

/* The value of header name in r->head (case-insensitive), or NULL. */
char	*header_value(const struct result *r, const char *name, char *buf,
	    size_t len);

/* Run cgi_run with body as stdin; the output lands in r. */
void	 run(const struct fixture *f, const struct endpoint *ep,
	    struct env *e, const char *body, size_t bodylen, struct result *r);

/* The response body as JSON (a new reference), or the test fails. */
json_t	*body_json(const struct result *r);

/*
 * A problem response with status: check head and body.  A 401 names
 * the scheme in WWW-Authenticate.
 */
void	 assert_problem(const struct result *r, int status);

/* The 202 of the echo handler. */
void	 assert_accepted(const struct result *r);

/*
 * Endpoints around the echo handler, which records what it saw in seen
 * and echoes it back with a 202: sms and email (POST, a key with their
 * scope, a spool), ping (GET, no key), templates (GET, any valid key).
 */
extern const struct endpoint	ep_sms, ep_email, ep_ping, ep_templates;

#define GOOD_BODY	"{\"x\":\"hello\"}"

#endif
