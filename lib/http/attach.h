/*
 * attach.h: email attachments as a request gives them (conf/openapi.yaml):
 * base64 decoded within its limit and typed from its bytes (libmagic),
 * or an earlier upload of the client named by attachmentId.  The email
 * route and the upload share it; a program that uses it links -lmagic.
 */
#ifndef ATTACH_H
#define ATTACH_H

#include <stddef.h>
#include <jansson.h>

struct mimetype;
struct problem;
struct spool;

struct attachment {
	char		*name;
	char		 type[128];
	size_t		 size;
	json_t		*base64;	/* canonical encoding, for the spool */
	unsigned char	*data;		/* or the bytes, to store once */
};

struct attachments {
	struct attachment	*v;
	size_t			 n;
};

/* What loading needs: where uploads are, the limits, libmagic. */
struct attach_ctx {
	struct spool	*spool;
	const char	*client;
	size_t		 max_one;	/* max-attachment, decoded */
	size_t		 max_total;	/* max-message-attachments */
	struct mimetype	*magic;		/* opened on first use */
	int		 failed;	/* a failure of ours, not the request's */
};

/*
 * Decode content (a base64 JSON string) within max bytes and type it:
 * 0 with *data (malloc'd) and type, -1 not base64, -2 over max, -3 the
 * types cannot be detected (a server failure, logged).
 */
int	 attach_decode(struct attach_ctx *, const json_t *content, size_t max,
	    unsigned char **data, size_t *len, char *type, size_t typelen);

/*
 * Decode and type the attachments of list (the request's JSON path in
 * path), keeping their bytes when bytes is set (to store them once),
 * else their base64.  Problems go into p (its status raised to 413 for
 * sizes).  0, or -1 when any was bad or, with c->failed set, when the
 * failure was ours (answer 500, not p).
 */
int	 attach_load(struct attach_ctx *, const json_t *list, const char *path,
	    struct attachments *out, struct problem *p, int bytes);

/*
 * The attachments of a message: each with its content (base64), or,
 * when stored once, the index of its blob (blob.h) instead.
 */
json_t	*attach_json(const struct attachments *, int stored);

void	 attach_free(struct attachments *);
void	 attach_ctx_free(struct attach_ctx *);

#endif
