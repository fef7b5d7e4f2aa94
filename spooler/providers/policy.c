/*
 * policy.c: temporary or permanent, when to retry, when to give up,
 * whose webhook goes next.
 */
#include <stdlib.h>

#include <sys/random.h>
#include <unistd.h>

#include "providers/policy.h"

enum msg_status
policy_http(long code)
{
	if (code >= 200 && code <= 299)
		return MSG_OK;
	if (code == 408 || code == 429 || code >= 500 || code < 200)
		return MSG_TEMPFAIL;
	return MSG_PERMFAIL;
}

long
policy_backoff(long attempt, unsigned rnd)
{
	long	delay = POLICY_BACKOFF_FIRST;

	while (--attempt > 1 && delay < POLICY_BACKOFF_MAX)
		delay *= 2;
	if (delay > POLICY_BACKOFF_MAX)
		delay = POLICY_BACKOFF_MAX;
	return delay * 8 / 10 + (long)(rnd % (unsigned)(delay * 4 / 10 + 1));
}

long
policy_retry_after(long long seconds)
{
	if (seconds <= 0)
		return 0;
	return seconds > POLICY_RETRY_AFTER_MAX ? POLICY_RETRY_AFTER_MAX :
	    (long)seconds;
}

time_t
policy_not_before(const struct timespec *now, long seconds)
{
	return now->tv_sec + seconds + (now->tv_nsec > 0);
}

enum msg_status
policy_max_age(enum msg_status st, time_t now, time_t age_from,
    long max_age, const char **gave_up)
{
	*gave_up = NULL;
	if (st == MSG_TEMPFAIL && now - age_from >= max_age) {
		*gave_up = "older than max-age";
		return MSG_PERMFAIL;
	}
	return st;
}

size_t
policy_schedule_parse(const char *s, long *out, size_t max)
{
	char	*end;
	long	 v;
	size_t	 n = 0;

	if (s == NULL || *s == '\0')
		return 0;
	for (;;) {
		if (*s < '0' || *s > '9')
			return 0;
		v = strtol(s, &end, 10);
		if (v < 1 || v > POLICY_RETRY_AFTER_MAX || n == max)
			return 0;
		out[n++] = v;
		if (*end == '\0')
			return n;
		if (*end != ',')
			return 0;
		s = end + 1;
	}
}

enum msg_status
policy_webhook_http(long code)
{
	if (code >= 200 && code <= 299)
		return MSG_OK;
	return code == 410 ? MSG_PERMFAIL : MSG_TEMPFAIL;
}

long
policy_webhook_delay(long failures, unsigned rnd, long retry_after,
    const long *schedule, size_t n)
{
	long	delay;

	if (failures < 1 || (size_t)failures > n)
		return -1;
	delay = schedule[failures - 1];
	delay = delay * 8 / 10 + (long)(rnd % (unsigned)(delay * 4 / 10 + 1));
	if (delay < 1)
		delay = 1;
	retry_after = policy_retry_after(retry_after);
	return retry_after > delay ? retry_after : delay;
}

size_t
policy_webhook_next(const struct policy_webhook_client *c, size_t n,
    size_t cap, size_t *turn)
{
	size_t	i, k, busy = 0, active = 0, idle = 0, share;

	for (i = 0; i < n; i++) {
		busy += c[i].busy;
		if (c[i].busy > 0 || c[i].due > 0)
			active++;
		if (c[i].wants && c[i].busy == 0)
			idle++;
	}
	if (busy >= cap || active == 0)
		return n;
	share = cap / active > 1 ? cap / active : 1;
	for (k = 0; k < n; k++) {
		i = (*turn + k) % n;
		if (c[i].due == 0 || c[i].busy >= share)
			continue;
		/* A further one keeps a free one for each client with none. */
		if (c[i].busy > 0 && cap - busy - 1 < idle)
			continue;
		*turn = (i + 1) % n;
		return i;
	}
	return n;
}

unsigned
policy_jitter(void)
{
	unsigned short	r = 0;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (unsigned short)getpid();
	return r;
}
