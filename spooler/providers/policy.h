/*
 * policy.h: what an attempt's result means for a message, as
 * msgspoold(8) describes it: which HTTP answers are worth retrying, how
 * long to wait before the next try, and when to give up (max-age);
 * and whose webhook event goes next.  Pure functions, so that the rules
 * are tested on their own.
 */
#ifndef POLICY_H
#define POLICY_H

#include <time.h>
#include <jansson.h>

#include "base/channel.h"
#include "base/msgspool.h"

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

/* A random value for the jitter of a backoff (getrandom, else the pid). */
unsigned	 policy_jitter(void);

/*
 * A provider's Retry-After in seconds (0 or less: none given), bounded
 * to a day.  0 when there is none.
 */
long		 policy_retry_after(long long seconds);

/*
 * When a wait of seconds from the moment (now, to the nanosecond) ends,
 * as the whole second a due time is kept in: rounded up, so that one
 * due at that second (promoted when the clock's second reaches it) is
 * never early: a Retry-After of 3 is 3 seconds or more.
 */
time_t		 policy_not_before(const struct timespec *now, long seconds);

/*
 * The status an attempt's status becomes at now for a message whose
 * max-age (seconds) counts from age_from: a temporary failure past it
 * is permanent.  *gave_up is set to why it gave up, else NULL.
 */
enum msg_status	 policy_max_age(enum msg_status, time_t now, time_t age_from,
		    long max_age, const char **gave_up);

/*
 * Addresses that can never be reached (msgspool-spool(5), Suppressions,
 * source "bounce"): what a provider said of a message that makes
 * msgspoold suppress its recipient for its client.  Only a permanent
 * failure counts, and only the codes that speak of the address:
 *
 *	smtp	a 5xx reply to RCPT TO
 *	email	a bounce (msgspool-bounce(8)): Action failed, Status 5.x.x
 *	twilio	21610 (unsubscribed: sms), 21211 (not a valid number: sms
 *		and voice), 21614 (not a mobile number: sms), in its answer
 *		or in a receipt's ErrorCode
 *	smpp	ESME_RINVDSTADR in a submit_sm_resp (sms)
 *
 * An email status that names something other than the address does
 * not count: the sender's (5.1.7, 5.1.8), the message's size (5.2.3,
 * 5.3.4), time expired after temporary failures (5.4.7), the protocol
 * (5.5.x), the content (5.6.x), policy and security (5.7.x: relay
 * denied, authentication, spam, DMARC).  A reply without an enhanced
 * code counts as its class (5.0.0).
 */

/*
 * The attempt's outcome: status (the provider's own, before max-age),
 * its reply (job->reply) and error text (job->err) of a message on
 * channel ("sms" ...).  The channel whose list takes the recipient,
 * the reason to record into why; -1 when it says no such thing.
 */
int		 policy_unreachable(const char *channel, enum msg_status,
		    const json_t *reply, const char *err, char *why,
		    size_t whylen);

/*
 * A receipt document (msgspool-spool(5), receipts/) of a message on
 * channel: the same, from its provider, status, providerStatus and
 * error.
 */
int		 policy_receipt_unreachable(const char *channel,
		    const json_t *receipt, char *why, size_t whylen);

/*
 * Whether an email status (RFC 3463, "5.1.1", "5.1.1 (comment)"; an
 * SMTP reply's enhanced code) is a permanent failure of the address, as
 * above.  A bare reply code's class stands for it when code is given
 * (550: 5.0.0) and status has none.
 */
int		 policy_email_unreachable(const char *status, long code);

/*
 * Webhooks to clients (msgspoold(8), Webhooks): the waits before each
 * retry of an event, as Standard Webhooks suggests, each spread by
 * +-20%.  An event has 1 + that many tries.
 */
#define POLICY_WEBHOOK_SCHEDULE	"5,300,1800,7200,18000,36000,36000"
#define POLICY_WEBHOOK_TRIES_MAX	32	/* a schedule's length, at most */
#define POLICY_WEBHOOK_TIMEOUT	15	/* seconds a delivery may take */

/*
 * Parse a schedule, seconds separated by commas ("5,300,1800"), into
 * out (max entries).  The count, or 0 when it is empty, too long or not
 * all whole seconds from 1 to a day.
 */
size_t		 policy_schedule_parse(const char *s, long *out, size_t max);

/*
 * A client's answer to a webhook: 2xx MSG_OK; 410 MSG_PERMFAIL (stop at
 * once); anything else, a timeout or no connection (code 0)
 * MSG_TEMPFAIL.
 */
enum msg_status	 policy_webhook_http(long code);

/*
 * Seconds to wait after an event's failed try number failures (from 1)
 * by the schedule of n waits: the failures-th wait spread by +-20% with
 * rnd, or the client's Retry-After (retry_after > 0, bounded to a day)
 * when it is longer.  -1 when the tries are exhausted.
 */
long		 policy_webhook_delay(long failures, unsigned rnd,
		    long retry_after, const long *schedule, size_t n);

/*
 * The webhook transfers shared among clients (msgspoold(8), Webhooks).
 * One client's place: its transfers under way, its events due that are
 * not, and whether it has a webhook-url now.
 */
struct policy_webhook_client {
	size_t	busy;
	size_t	due;
	int	wants;
};

/*
 * Which of the n clients c starts a transfer next, with cap transfers
 * at most in all: in turn from *turn (moved past the one chosen), the
 * next with an event due that is under its share, cap divided among
 * the clients with events due or under way (at least 1), and that
 * either has none under way or leaves a transfer free for each other
 * client with a webhook-url and none under way.  So a client whose
 * receiver hangs holds only its share, and one that has none under
 * way finds a free transfer at once while there are no more clients
 * than cap.  n when none may start.
 */
size_t		 policy_webhook_next(const struct policy_webhook_client *c,
		    size_t n, size_t cap, size_t *turn);

#endif
