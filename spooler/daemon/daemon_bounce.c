/*
 * daemon_bounce.c: msgspoold suppresses the addresses that can never be
 * reached (msgspool-spool(5), Suppressions, source "bounce"; msgspoold(8),
 * Outcomes and Receipts): the recipient of a message whose provider said
 * so, in its answer to an attempt or in a receipt, for the message's
 * client, on the channel the rule names (policy_unreachable).  The rule
 * is policy.c's; this is where it is written down.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/channel.h"
#include "base/log.h"
#include "daemon/daemon.h"
#include "providers/policy.h"
#include "spool/msgdoc.h"
#include "spool/suppress.h"

/*
 * Suppress the recipient of doc for its client on channel ch, with the
 * reason why and the message it came from.  0 (added, there already,
 * or no address of the channel: logged), -1 with errno when the list
 * cannot be written now.
 */
static int
suppress_recipient(struct spool *s, const json_t *doc, int ch,
    const char *why)
{
	const char	*id = msgdoc_id(doc), *client = msgdoc_client(doc);
	const char	*to = msgdoc_recipient(doc), *chan;
	char		 reason[640], *p;
	int		 e;

	chan = channel_info((enum channel)ch)->name;
	if (client == NULL || id == NULL)
		return 0;
	snprintf(reason, sizeof(reason), "%s (message %s)", why, id);
	/* A server's reply need not be UTF-8; what JSON keeps must be. */
	for (p = reason; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			*p = '?';
	switch (suppress_add(s, client, (enum channel)ch, to, "bounce", reason,
	    NULL)) {
	case 1:
		log_info("%s: %s suppressed for %s on %s (bounce): %s", id, to,
		    client, chan, why);
		return 0;
	case 0:
		return 0;
	default:
		e = errno;
		if (e == EINVAL) {
			log_warn("%s: %s is no %s address to suppress: %s", id,
			    to, chan, why);
			return 0;
		}
		log_err("%s: cannot suppress %s for %s on %s (bounce): %s", id,
		    to, client, chan, strerror(e));
		errno = e;
		return -1;
	}
}

void
bounce_outcome(struct spool *s, const struct job *job)
{
	char	why[512];
	int	ch;

	if ((ch = policy_unreachable(msgdoc_channel(job->doc), job->status,
	    job->reply, job->err, why, sizeof(why))) == -1)
		return;
	/* The outcome is recorded whatever: the message failed anyway. */
	(void)suppress_recipient(s, job->doc, ch, why);
}

int
bounce_receipt(struct spool *s, const json_t *doc, const json_t *receipt)
{
	char	why[512];
	int	ch;

	if ((ch = policy_receipt_unreachable(msgdoc_channel(doc), receipt,
	    why, sizeof(why))) == -1)
		return 0;
	return suppress_recipient(s, doc, ch, why);
}
