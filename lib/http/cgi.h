/*
 * cgi.h: the CGI/1.1 side of a request (RFC 3875), plus cgi_run, which every program in cgi-bin/ calls from main.
 *
 * A handler is a function of a request returning a response: it never
 * exits, never writes to stdout, and keeps no state between calls.
 */
#ifndef CGI_H
#define CGI_H

#include <stddef.h>
#include <sys/types.h>
#include <jansson.h>

#include "base/config.h"
#include "content/keys.h"
#include "content/tmpl.h"
#include "http/http.h"

struct spool;
struct spool_seen;
struct cgi_io;
struct spool_keep;
struct memo;
struct route_table;

/*
 * A request that has not been answered in this time is killed (SIGALRM):
 * the CGI, or the msgspool-fcgi worker, which is replaced.
 */
#define CGI_TIMEOUT	60

/* A body taken as it is (a provider's receipt): at most this. */
#define CGI_RAW_MAX	(64 * 1024)

struct request {
	char *const	*envp;		/* the CGI environment */
	const char	*method;	/* REQUEST_METHOD; GET for a HEAD */
	int		 head;		/* a HEAD: answered as GET, no body */
	const char	*content_type;	/* CONTENT_TYPE or NULL */
	const char	*api_key;	/* HTTP_X_API_KEY, Bearer, NULL */
	int		 has_length;	/* CONTENT_LENGTH was given */
	size_t		 content_length;
	char		*body;		/* content_length bytes + NUL */
	size_t		 body_len;
	int		 consumed;	/* the body was read (or drained) */
	const struct cgi_io *io;	/* where it comes from (cgi_serve) */
};

/*
 * What a handler gets: everything checked before it runs.  An endpoint
 * that needs no key, body or spool (the health check) gets only req:
 * it answers even when the config cannot be read.
 */
struct ctx {
	const struct request	*req;
	const struct config	*cfg;		/* NULL: see above */
	const struct limits	*limits;	/* NULL: see above */
	const struct client	*client;	/* NULL when no key needed */
	struct spool		*spool;		/* NULL unless needs_spool */
	/*
	 * The config's routes (content/route.h) on a route that queues
	 * (messages set), else NULL: batch.h refuses by them a message no
	 * route takes.  A config whose routes are wrong is a 500 before the
	 * handler runs.
	 */
	struct route_table	*routes;
	char			*templates;	/* templates root */
	json_t			*body;		/* parsed JSON or NULL */
};

typedef struct response *(*handler_fn)(struct ctx *);

enum body_limit {
	LIMIT_NONE,	/* GET: no body */
	LIMIT_BODY,	/* max-body */
	LIMIT_EMAIL,	/* max-email-body */
	LIMIT_RAW	/* CGI_RAW_MAX, any type, not parsed: req->body (POST) */
};

/* One route (conf/openapi.yaml), declared by its program. */
struct endpoint {
	const char	*method;	/* the allowed method, or several:
					   "GET, DELETE" (also the Allow) */
	/*
	 * The methods of the request's path, for a program that serves
	 * paths allowing different ones (/suppressions: GET;
	 * /suppressions/{channel}/{address}: GET, PUT, DELETE); NULL: all
	 * its paths allow method.
	 */
	const char	*(*methods)(const struct request *);
	int		 needs_key;
	unsigned	 scope;		/* SCOPE_* or 0 for any valid key */
	enum body_limit	 limit;
	int		 needs_spool;
	handler_fn	 handler;
	/*
	 * How many messages a (parsed) body asks for, for the client's
	 * rate limit (rate.h); NULL: the route queues none.
	 */
	size_t		 (*messages)(const json_t *body);
	/*
	 * Whether the route takes an Idempotency-Key (conf/openapi.yaml):
	 * every route that queues (messages set) does; this adds one that
	 * stores something else (the upload).
	 */
	int		 idempotent;
	/*
	 * Whether its body may be left out (PUT /suppressions/...: its
	 * reason): a Content-Length of 0, or none and no Content-Type, is
	 * no body (ctx->body NULL); one given is checked as any other.  Of
	 * a route's methods only POST and PUT have a body read (limit);
	 * GET and DELETE none.
	 */
	int		 body_optional;
};

/*
 * Where a request's body comes from and its response goes: the CGI's
 * stdin and stdout (cgi_run), or a FastCGI request's streams
 * (msgspool-fcgi).  arg is passed to every callback.
 */
struct cgi_io {
	/* Like read(2): bytes read, 0 at the end of the body, -1. */
	ssize_t		 (*read)(void *arg, char *buf, size_t len);
	/* Write all len bytes: 0, or -1. */
	int		 (*write)(void *arg, const char *buf, size_t len);
	/*
	 * The config at path, owned by the caller and valid for the whole
	 * request (a persistent process's cache: read once, re-read when
	 * the file changes); NULL with a reason in err.  A NULL callback:
	 * the request loads the config for itself.
	 */
	const struct config *(*config)(void *arg, const char *path,
			    char *err, size_t errlen);
	/*
	 * Look a key up in the keys file at path as keys_lookup does, in
	 * the caller's copy of the file (read once, re-read when it
	 * changes).  A NULL callback: keys_lookup reads the file.
	 */
	enum keys_result (*keys)(void *arg, const char *path, const char *key,
			    size_t len, struct client *out);
	/*
	 * tmpl_load from the caller's templates (read once, re-read when
	 * a file changes; tmpl_cache_load).  A NULL callback: tmpl_load.
	 */
	struct tmpl	*(*tmpl)(void *arg, const char *root,
			    const char *client, enum tmpl_kind, const char *id,
			    enum msg_status *status, char *err, size_t errlen);
	/*
	 * What the caller saw of the spool's root in its earlier requests
	 * (a persistent process's: spool_open_seen).  NULL: the request
	 * looks at every state (spool_open).
	 */
	struct spool_seen *seen;
	void		*arg;
	/*
	 * What the caller keeps of the spool between requests (spool.h,
	 * spool_lend), lent to each spool the request opens; NULL: none.
	 */
	struct spool_keep *keep;
	/*
	 * The caller's memo of replies (memo.h), kept between requests;
	 * NULL: none, each reply is made anew.
	 */
	struct memo	*memo;
	/*
	 * Called once the request's work is done, its spool closed, before
	 * its reply is written (NULL: nothing to do): where a persistent
	 * process lets go of what it keeps when no request waits, so that
	 * it holds nothing of the spool open while idle.
	 */
	void		 (*done)(void *arg);
};

/*
 * A template of the request's client, as tmpl_load answers, through the
 * request's cgi_io (a persistent process's cache) when it has one.
 */
struct tmpl	*cgi_tmpl_load(const struct ctx *, enum tmpl_kind,
		    const char *id, enum msg_status *status, char *err,
		    size_t errlen);

/*
 * A cgi_io over a pair of file descriptors, a CGI's stdin and stdout
 * (cgi_run); fds holds them and must live as long as io.
 */
struct cgi_fds {
	int	in;
	int	out;
};
void		 cgi_fd_io(struct cgi_io *io, struct cgi_fds *fds, int in,
		    int out);

/*
 * The client a request acts for (msgspool.conf(5), KEYS FILE): its key's
 * own, or, for a key with the admin scope, the one its query names with
 * client=ID (GET /messages, GET and DELETE /messages/{id}, the
 * suppression routes).  Into out: the key's client with that id.  0, or
 * -1 with *r the answer: 403 forbidden for client= from a key without
 * the admin scope; 400 invalid-query, errors under "client", for one
 * that is no client id, is given more than once or does not decode.
 * The query's other parameters are the route's to judge.
 */
int		 cgi_acting_client(const struct ctx *, struct client *out,
		    struct response **r);

/* The value of name in a NULL-terminated environment, or NULL. */
const char	*cgi_env(char *const *envp, const char *name);

/*
 * The path of a request's uri (REQUEST_URI) as the web servers map it to
 * a program (lighttpd with its defaults; msgspool-fcgi(8)), so its route
 * (msgspool-fcgi's, an Idempotency-Key's) whatever its spelling: up to a '?'
 * or '#', with the percent-escapes of letters, digits, "-._~" and "/"
 * decoded and any other escape kept as it came ("%3F", "%00", a
 * malformed "%zz"), then its dot segments removed and repeated slashes
 * merged (RFC 3986 5.2.4): "/x/..//p%69ng" is "/ping".  malloc'd; NULL
 * when uri is NULL or out of memory.
 */
char		*cgi_path(const char *uri);

/*
 * Fill req from the environment; the body is not read yet.  Never fails:
 * missing variables are NULL (method defaults to "GET").  A HEAD request
 * is a GET with head set: every route that answers GET answers HEAD with
 * the same status and headers and no body (conf/openapi.yaml).  A
 * CONTENT_LENGTH that is not a plain decimal sets has_length but
 * content_length to SIZE_MAX, which any limit rejects.
 */
void		 cgi_request_init(struct request *, char *const *envp);

/*
 * Read exactly req->content_length bytes from fd, never more.  Returns
 * 0, or -1 when the body ended early or could not be read.  The body is
 * NUL-terminated for convenience; body_len counts the bytes.
 */
int		 cgi_request_read(struct request *, int fd);
int		 cgi_request_read_io(struct request *, const struct cgi_io *);

void		 cgi_request_free(struct request *);

/*
 * Read and discard a body that was not read, exactly CONTENT_LENGTH bytes
 * and never more, when it is at most max: a server still writing it would
 * otherwise reset the connection instead of passing on an early answer
 * (401, 413, 415).  Bounded in time by the CGI's alarm.
 */
void		 cgi_request_drain(struct request *, int fd, size_t max);
void		 cgi_request_drain_io(struct request *, const struct cgi_io *,
		    size_t max);

/*
 * Write r over io as a CGI response: its header block, and its body
 * unless head (the answer to a HEAD, whose Content-Length stays the
 * GET's).  0, or -1 when it could not be rendered or written.
 */
int		 cgi_respond(const struct cgi_io *, const struct response *,
		    int head);

/* Whether a Content-Type is application/json, parameters allowed. */
int		 cgi_is_json(const char *content_type);

/*
 * Run one request of an endpoint: check the method (405), the key (401,
 * 403), CONTENT_LENGTH (411, 413), Content-Type (415), read and parse the
 * body (400), open the spool (503), call the handler, and write its
 * response to outfd.  Returns the exit status for main (0 when a
 * response was written, whatever its HTTP status).
 */
int		 cgi_run(const struct endpoint *, char *const *envp,
		    int infd, int outfd);

/*
 * The web server's own error handed to a program (REDIRECT_STATUS of
 * 400 to 599, as lighttpd's server.error-handler and Apache's
 * ErrorDocument give it): that status as a problem, so that what the
 * server refuses itself (a POST without Content-Length, a path that is
 * no route, a malformed request) is problem+json too.  NULL otherwise
 * (none, or 200 on every ordinary request of lighttpd).  The caller
 * frees the response.
 */
struct response	*cgi_server_error(char *const *envp);

/*
 * The same request over io: what cgi_run does once the process is set
 * up (its alarm armed, jansson seeded).  0 when a response was written.
 */
int		 cgi_serve(const struct endpoint *, char *const *envp,
		    const struct cgi_io *io);

/*
 * The main() of a program that serves endpoint e on stdin and stdout.
 * Compiled into msgspool-fcgi (MSGSPOOL_FCGI), a program is its
 * endpoint alone.
 */
#ifdef MSGSPOOL_FCGI
#define CGI_MAIN(e)
#else
#define CGI_MAIN(e)							\
int									\
main(int argc, char *argv[], char *envp[])				\
{									\
	(void)argc;							\
	(void)argv;							\
	return cgi_run(&(e), envp, STDIN_FILENO, STDOUT_FILENO);	\
}
#endif

#endif
