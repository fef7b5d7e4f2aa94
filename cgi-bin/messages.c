/*
 * messages: GET and DELETE /messages/{id} (conf/openapi.yaml,
 * MessageStatus): what happened to one message of the caller, and its
 * cancel.  The status comes from where the file is and what it records
 * (msgdoc_status); a lookup is a few stats and one read, whatever the
 * spool's size.  A cancel takes the file the way a daemon claims it (a
 * lock and a rename into cur/), so the two never both win, and records
 * it in failed/ marked canceled.
 *
 * An inbound message (inbox.h) is one of its client's messages too: GET
 * answers its inbound object; it was received, not sent, so there is
 * nothing to cancel (409).
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "endpoints.h"
#include "http/cgi.h"
#include "http/problem.h"
#include "spool/event.h"
#include "spool/inbox.h"
#include "spool/spool.h"

/* Where lookup found an inbound message: in no state, in inbox/. */
#define INBOUND_DIR	SPOOL__MAX

/* Tries when the file moves between the lookup and the take. */
#define CANCEL_TRIES	5

/*
 * The id of the request's path: PATH_INFO "/ID" (the server mapped
 * /messages/ID to this program), else REQUEST_URI "/messages/ID".
 * Copied into id; -1 when there is none or it is not an id.  PATH_INFO
 * is decoded: a '?' there came as "%3F" and is part of no id.
 */
static int
path_id(const struct request *req, char *id)
{
	const char	*p;
	size_t		 len;

	if ((p = cgi_env(req->envp, "PATH_INFO")) != NULL && *p == '/')
		len = strlen(++p);
	else if ((p = cgi_env(req->envp, "REQUEST_URI")) != NULL &&
	    (p = strstr(p, "/messages/")) != NULL) {
		p += strlen("/messages/");
		len = strcspn(p, "?");
	} else
		return -1;
	if (len != SPOOL_ID_LEN)
		return -1;
	memcpy(id, p, len);
	id[len] = '\0';
	return ulid_valid(id) ? 0 : -1;
}

static struct response *
not_found(const char *id)
{
	return problem_response(problem_new(404, "not-found",
	    "no message %s for this client", id));
}

/*
 * The caller's inbound message id: its document, *dir INBOUND_DIR; or
 * NULL with *r NULL (none: not found) or the response (500).
 */
static json_t *
lookup_inbound(struct ctx *ctx, const char *id, enum spool_dir *dir,
    struct response **r)
{
	json_t	*doc;
	char	 err[512];

	*r = NULL;
	if ((doc = inbox_load(ctx->spool, id, err, sizeof(err))) == NULL) {
		if (errno != ENOENT) {
			log_err("messages: %s", err);
			*r = response_error(500, "the message cannot be read");
		}
		return NULL;
	}
	if (strcmp(inbox_client(doc) ? inbox_client(doc) : "",
	    ctx->client->id) != 0) {
		json_decref(doc);
		return NULL;
	}
	*dir = INBOUND_DIR;
	return doc;
}

/*
 * The caller's message id: its state and document (an inbound
 * message's: state INBOUND_DIR), or NULL with *r the response (404, or
 * 500).
 */
static json_t *
lookup(struct ctx *ctx, const char *id, enum spool_dir *dir, char *name,
    struct response **r)
{
	json_t	*doc;
	char	 err[512];
	int	 tries;

	*r = NULL;
	/* A file can move between the stat and the read: look again. */
	for (tries = 0; tries < CANCEL_TRIES; tries++) {
		if (spool_find(ctx->spool, id, dir, name) == -1) {
			if ((doc = lookup_inbound(ctx, id, dir, r)) != NULL ||
			    *r != NULL)
				return doc;
			break;
		}
		if ((doc = spool_load(ctx->spool, *dir, name, err,
		    sizeof(err))) != NULL) {
			/* Another client's message does not exist for this one. */
			if (strcmp(msgdoc_client(doc) ? msgdoc_client(doc) : "",
			    ctx->client->id) != 0) {
				json_decref(doc);
				break;
			}
			return doc;
		}
		if (errno != ENOENT) {
			log_err("messages: %s", err);
			*r = response_error(500, "the message cannot be read");
			return NULL;
		}
	}
	*r = not_found(id);
	return NULL;
}

static struct response *
status_reply(const json_t *doc, enum spool_dir dir)
{
	if (dir == INBOUND_DIR)
		return response_json(200, inbox_object(doc));
	return response_json(200, msgdoc_status_object(doc,
	    spool_dirname(dir), 1));
}

/*
 * 409: the message is past canceling, or busy (a daemon holds its claim:
 * it is sending it, or recording how its try went).
 */
static struct response *
conflict(const json_t *doc, enum spool_dir dir, int busy)
{
	if (dir == INBOUND_DIR)
		return problem_response(problem_new(409, "not-cancelable",
		    "the message is inbound: it was received, not sent, and "
		    "only a scheduled, queued or retrying message can be "
		    "canceled"));
	return problem_response(problem_new(409, "not-cancelable",
	    "the message is %s: only a scheduled, queued or retrying "
	    "message can be canceled", busy ? "sending" :
	    msgdoc_status(doc, spool_dirname(dir))));
}

/*
 * Cancel the message the caller owns: take it from new/ or deferred/
 * into cur/ (as a daemon's claim), record it canceled in failed/, and
 * let go.  A message that is sending or further on is a 409.
 */
static struct response *
cancel(struct ctx *ctx, const char *id)
{
	struct response	*r;
	enum spool_dir	 dir;
	enum msg_status	 st;
	json_t		*doc, *taken;
	char		 name[SPOOL_NAME_MAX], err[512];
	char		 evname[SPOOL_NAME_MAX];
	int		 tries, fd, busy = 0;

	for (tries = 0; tries < CANCEL_TRIES; tries++) {
		if ((doc = lookup(ctx, id, &dir, name, &r)) == NULL)
			return r;
		/* Canceled already: the same answer again. */
		if (dir == SPOOL_FAILED && strcmp(msgdoc_status(doc,
		    spool_dirname(dir)), "canceled") == 0) {
			r = status_reply(doc, dir);
			json_decref(doc);
			return r;
		}
		if (dir != SPOOL_NEW && dir != SPOOL_DEFERRED) {
			r = conflict(doc, dir, 0);
			json_decref(doc);
			return r;
		}
		json_decref(doc);
		fd = spool_take(ctx->spool, dir, name, &taken, err,
		    sizeof(err));
		if (fd == -1) {
			/*
			 * A daemon holds it now (its claim, or the claim in
			 * cur/ whose outcome it is recording), or it moved:
			 * look again, a little later each time.
			 */
			busy = errno == EBUSY;
			if (errno == ENOENT || errno == EBUSY ||
			    errno == EAGAIN) {
				if (busy)
					usleep(10000 << tries);
				continue;
			}
			log_err("messages: cancel %s: %s", id, strerror(errno));
			return response_error(errno == EROFS ||
			    errno == ENOSPC ? 503 : 500,
			    "the message cannot be canceled now");
		}
		if (taken == NULL) {
			/* Not a spool file after all: set aside, as a daemon
			 * would. */
			spool_move(ctx->spool, SPOOL_CUR, SPOOL_FAILED, name);
			close(fd);
			return not_found(id);
		}
		msgdoc_cancel(taken, time(NULL));
		/* Its client's webhook event first (msgspool-spool(5),
		 * events/), so that a cancel is never missed. */
		st = event_record(ctx->spool, ctx->cfg, taken, "failed",
		    time(NULL), evname);
		if (st == MSG_OK && (st = spool_store(ctx->spool, SPOOL_FAILED,
		    name, taken, SPOOL_CUR)) != MSG_OK && evname[0] != '\0')
			spool_area_remove(ctx->spool, EVENT_AREA, evname);
		if (st != MSG_OK) {
			/* Back where it was: the cancel did not happen. */
			spool_move(ctx->spool, SPOOL_CUR, dir, name);
			close(fd);
			json_decref(taken);
			return response_error(st == MSG_TEMPFAIL ? 503 : 500,
			    "the message cannot be canceled now");
		}
		close(fd);
		r = status_reply(taken, SPOOL_FAILED);
		json_decref(taken);
		return r;
	}
	/* Still moving after every try: a daemon is on it. */
	if ((doc = lookup(ctx, id, &dir, name, &r)) == NULL)
		return r;
	r = conflict(doc, dir, busy && (dir == SPOOL_NEW ||
	    dir == SPOOL_DEFERRED));
	json_decref(doc);
	return r;
}

static struct response *
messages(struct ctx *ctx)
{
	struct response	*r;
	enum spool_dir	 dir;
	json_t		*doc;
	char		 id[SPOOL_ID_LEN + 1], name[SPOOL_NAME_MAX];

	if (path_id(ctx->req, id) == -1)
		return problem_response(problem_new(400, "invalid-id",
		    "the path must be /messages/ID with a message id of "
		    "26 characters"));
	if (strcmp(ctx->req->method, "DELETE") == 0)
		return cancel(ctx, id);
	if ((doc = lookup(ctx, id, &dir, name, &r)) == NULL)
		return r;
	r = status_reply(doc, dir);
	json_decref(doc);
	return r;
}

const struct endpoint ep_messages = {
	.method = "GET, DELETE",
	.needs_key = 1,
	.scope = 0,
	.limit = LIMIT_NONE,
	.needs_spool = 1,
	.handler = messages,
};

CGI_MAIN(ep_messages)
