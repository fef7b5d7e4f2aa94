/*
 * rate.c: fixed-window counters, one locked file per client.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "base/util.h"
#include "base/valid.h"
#include "http/rate.h"
#include "spool/spool.h"

int
rate_parse(const char *s, struct rate *r)
{
	char	*end;
	long	 n;

	if (s == NULL || *s < '1' || *s > '9')
		return -1;
	errno = 0;
	n = strtol(s, &end, 10);
	if (errno != 0 || n < 1 || *end != '/')
		return -1;
	end++;
	if (strcmp(end, "s") == 0)
		r->window = 1;
	else if (strcmp(end, "min") == 0)
		r->window = 60;
	else if (strcmp(end, "h") == 0)
		r->window = 3600;
	else
		return -1;
	r->limit = n;
	r->remaining = n;
	r->reset = r->window;
	return 0;
}

int
rate_take(struct spool *s, const char *client, struct rate *r, size_t n,
    time_t now)
{
	char		 buf[64];
	long long	 start = 0, used = 0, wstart;
	ssize_t		 got;
	int		 afd, fd, ok;

	wstart = (long long)now - (long long)now % r->window;
	r->reset = (long)(wstart + r->window - now);
	r->remaining = r->limit;
	if (!valid_client_id(client) ||
	    (afd = spool_area(s, "rates", 1)) == -1)
		return -1;
	fd = openat(afd, client, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
	    0660);
	close(afd);
	if (fd == -1)
		return -1;
	/* Every process serving the client counts under this lock. */
	if (flock(fd, LOCK_EX) == -1) {
		close(fd);
		return -1;
	}
	if ((got = pread(fd, buf, sizeof(buf) - 1, 0)) > 0) {
		buf[got] = '\0';
		if (sscanf(buf, "%lld %lld", &start, &used) != 2)
			start = used = 0;
	}
	if (start != wstart)
		used = 0;
	ok = used + (long long)n <= r->limit;
	if (ok) {
		used += (long long)n;
		/* Fixed width: it always overwrites the whole record. */
		got = snprintf(buf, sizeof(buf), "%020lld %020lld\n", wstart,
		    used);
		if (pwrite(fd, buf, (size_t)got, 0) != got) {
			close(fd);
			return -1;
		}
	}
	r->remaining = (long)(r->limit - used > 0 ? r->limit - used : 0);
	close(fd);	/* the lock goes with it */
	return ok;
}

void
rate_headers(const struct rate *r, char *policy, size_t plen, char *state,
    size_t slen)
{
	snprintf(policy, plen, "\"msgs\";q=%ld;w=%ld", r->limit, r->window);
	snprintf(state, slen, "\"msgs\";r=%ld;t=%ld", r->remaining, r->reset);
}
