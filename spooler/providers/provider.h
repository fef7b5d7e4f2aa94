/*
 * provider.h: how msgspoold hands a message to the outside world.  One
 * struct provider per implementation, one file each (provider_NAME.c).
 *
 * A send is a job.  start() either finishes it at once (the file
 * provider) or sets up job->easy, which the daemon runs on its curl
 * multi handle; when the transfer ends, finish() turns its outcome into
 * MSG_OK, MSG_TEMPFAIL or MSG_PERMFAIL.
 *
 * A provider with a session of its own (smpp) keeps the job instead:
 * start() sets job->pending; the daemon waits on the descriptors fds()
 * names beside its curl transfers, calls run() when one is ready or a
 * timer is due, and takes back each job it finished with reap().
 */
#ifndef PROVIDER_H
#define PROVIDER_H

#include <stddef.h>
#include <curl/curl.h>
#include <jansson.h>

#include "base/buf.h"
#include "base/config.h"
#include "base/msgspool.h"
#include "spool/spool.h"

struct route;
struct kept;

/* Routes a message tries at most in one claim (msgspool.conf(5)). */
#define JOB_TRIES_MAX	16

struct job {
	char			 name[SPOOL_NAME_MAX];
	json_t			*doc;		/* the spool document */
	int			 lockfd;	/* the claim, from spool_claim */
	struct kept		*kept;		/* or its keeper's, on NFS */
	struct route		*route;

	CURL			*easy;		/* NULL: finished in start() */
	int			 pending;	/* kept by a session: reap() */
	struct curl_slist	*headers;
	struct curl_slist	*rcpts;
	char			*body;		/* request body, if any */
	size_t			 bodylen;	/* its length, when read by */
	size_t			 bodyoff;	/* curl from bodyoff on (smtp) */
	struct buf		 resp;		/* response body */
	char			 curlerr[CURL_ERROR_SIZE];

	/* The outcome. */
	enum msg_status		 status;
	json_t			*reply;		/* the provider's answer */
	char			 err[512];
	long			 retry_after;	/* seconds, 0: none */
	/* The routes it tries, in order (daemon_routes.c); the one now. */
	struct route		*tries[JOB_TRIES_MAX];
	size_t			 ntries, tried;
};

struct provider {
	const char	*name;
	/* The channels it serves, e.g. "sms,voice". */
	const char	*channels;
	/*
	 * Read the provider's keys from [section].  Returns its state (freed
	 * with free_state), or NULL with a reason in err.  The config
	 * outlives the state (msgspoold frees its routes before the config
	 * they were made with): a state may keep it.
	 */
	void		*(*init)(const struct config *, const char *section,
			    const char *spool_root, char *err, size_t errlen);
	/* Start a job: set job->easy up, or set its outcome. */
	void		 (*start)(void *state, struct job *);
	/* A transfer ended with rc and (HTTP or SMTP) response code. */
	void		 (*finish)(void *state, struct job *, CURLcode rc,
			    long code);
	void		 (*free_state)(void *state);

	/*
	 * A provider with a session (NULL for the others).  fds: the
	 * descriptors to wait on (max at most) and, in *timeout_ms, when
	 * run() is due at the latest (lowered, never raised).  run: read,
	 * write and keep time; stopping: submit nothing new and wind down.
	 * reap: a job it finished (its outcome set), or NULL.
	 */
	size_t		 (*fds)(void *state, struct curl_waitfd *, size_t max,
			    int *timeout_ms);
	void		 (*run)(void *state, int stopping);
	struct job	*(*reap)(void *state);
	/*
	 * Whether it can take a message now (a session bound); NULL: it
	 * always can.  A route that cannot passes its messages to its
	 * fallback, when it has one.
	 */
	int		 (*ready)(void *state);
};

extern const struct provider provider_file;
extern const struct provider provider_http;
extern const struct provider provider_smtp;
extern const struct provider provider_twilio;
extern const struct provider provider_whatsapp;
/* A test key's messages: completed, never sent (not in the table). */
extern const struct provider provider_test;
#define PROVIDER_TEST_SECTION	"test key"	/* its route's name */

/* Whether the provider serves a channel. */
int			 provider_serves(const struct provider *,
			    const char *channel);

/*
 * A new easy handle for job: URL, timeouts from the section's "timeout"
 * (seconds, default 30), the response gathered into job->resp, errors
 * into job->curlerr, CURLOPT_PRIVATE set to job.  NULL on failure.
 */
CURL			*provider_easy(struct job *, const char *url,
			    long timeout);

/* The job's failure from a finished transfer that did not give 2xx:
 * 408, 429, 5xx and transport errors are TEMPFAIL, other 4xx PERMFAIL.
 * what describes the provider's error (may be NULL). */
void			 provider_http_outcome(struct job *, CURLcode rc,
			    long code, const char *what);

/* Read the per-section "timeout" (seconds); 0, or -1 with err. */
int			 provider_timeout(const struct config *,
			    const char *section, long *out, char *err,
			    size_t errlen);

/* The message object of the job's document (borrowed). */
const json_t		*provider_message(const struct job *);

/* A string member of the message, or NULL. */
const char		*provider_msg_str(const struct job *, const char *key);

#endif
