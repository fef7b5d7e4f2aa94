/*
 * rate.h: per-client rate limits (msgspool.conf(5), [client.ID] rate):
 * N messages a second, minute or hour, counted in fixed windows shared
 * by every process serving the client through a locked file in the
 * spool's rates/ area.  Replies carry the IETF RateLimit-Policy and
 * RateLimit headers.
 */
#ifndef RATE_H
#define RATE_H

#include <stddef.h>
#include <time.h>

struct spool;

struct rate {
	long	limit;		/* messages a window */
	long	window;		/* seconds: 1, 60 or 3600 */
	long	remaining;	/* after this request */
	long	reset;		/* seconds until the window ends */
};

/* Parse "N/s", "N/min" or "N/h" (N >= 1).  0, or -1 when it is not. */
int		 rate_parse(const char *s, struct rate *);

/*
 * Take n messages from client's allowance at now.  1 when they fit (and
 * are counted), 0 when they do not (nothing counted: a batch larger
 * than what remains is refused whole), -1 when the count cannot be kept
 * (the caller answers 503).  remaining and reset are set either way.
 */
int		 rate_take(struct spool *, const char *client, struct rate *,
		    size_t n, time_t now);

/* The header values: RateLimit-Policy and RateLimit, into buffers. */
void		 rate_headers(const struct rate *, char *policy, size_t plen,
		    char *state, size_t slen);

#endif
