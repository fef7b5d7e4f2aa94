/*
 * policy.c: temporary or permanent, when to retry, when to give up.
 */
#include "policy.h"

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
