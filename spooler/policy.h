/*
 * policy.h: what an attempt's result means for a message, as
 * msgspoold(8) describes it: which HTTP answers are worth retrying, how
 * long to wait before the next try, and when to give up (max-age).
 * Pure functions, so that the rules are tested on their own.
 */
#ifndef POLICY_H
#define POLICY_H

#include <time.h>

#include "msgspool.h"

#define POLICY_BACKOFF_FIRST	60	/* seconds; doubling ... */
#define POLICY_BACKOFF_MAX	3600	/* ... to an hour, +-20% jitter */
#define POLICY_RETRY_AFTER_MAX	86400	/* a provider's wait, at most */

/*
 * An HTTP status of a provider: 2xx MSG_OK; 408, 429, 5xx and anything
 * below 200 MSG_TEMPFAIL; any other 4xx (or 3xx) MSG_PERMFAIL.
 */
enum msg_status	 policy_http(long code);

/*
 * Seconds to wait before attempt number attempt (the first retry is
 * attempt 2): 60 s doubling up to an hour, then spread by +-20% with
 * rnd (any random value) so a burst of failures does not retry in
 * lockstep.
 */
long		 policy_backoff(long attempt, unsigned rnd);

/*
 * A provider's Retry-After in seconds (0 or less: none given), bounded
 * to a day.  0 when there is none.
 */
long		 policy_retry_after(long long seconds);

/*
 * The status an attempt's status becomes at now for a message whose
 * max-age (seconds) counts from age_from: a temporary failure past it
 * is permanent.  *gave_up is set to why it gave up, else NULL.
 */
enum msg_status	 policy_max_age(enum msg_status, time_t now, time_t age_from,
		    long max_age, const char **gave_up);

#endif
