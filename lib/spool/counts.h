/*
 * counts.h: counters that the CGI programs keep in the spool, by
 * channel, for GET /metrics (metrics.h): what happens in a request
 * rather than in msgspoold, whose counters are its own since it started
 * (status/daemon.json).  One so far: COUNTS_CANCELED, the messages
 * canceled (spool_cancel, cancel.h), msgspool_messages_completed_total
 * {status="canceled"}.
 *
 * A counter is the file SPOOL/metrics/NAME (msgspool-spool(5),
 * metrics/): a line "CHANNEL COUNT" for each channel, the count 20
 * digits wide, so the file's size never changes.  An increment locks
 * the file (flock, LOCK_EX: on NFS the server's lock, which several
 * hosts share), reads it, and writes it back whole in place and
 * fsyncs it; a reader takes the lock shared, so it never sees half of
 * a write.  On NFS a writer whose lock the server gave away (its lease
 * lapsed) gets EIO from the write and changes nothing.  A counter only
 * grows; it starts at 0 when the file is first written.
 */
#ifndef COUNTS_H
#define COUNTS_H

#include "base/channel.h"
#include "spool/spool.h"

#define COUNTS_CANCELED	"canceled"

/*
 * Add 1 to counter name for channel.  0, or -1 with errno set (the
 * counter is left as it was).
 */
int	counts_add(struct spool *, const char *name, enum channel);

/*
 * Read counter name into v[channel]: zeroes when it was never written.
 * 0, or -1 with errno set (v zeroed).
 */
int	counts_read(struct spool *, const char *name,
	    unsigned long long v[CHANNEL__MAX]);

#endif
