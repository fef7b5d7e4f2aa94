/*
 * dsync.h: group commit of the spool's directory syncs
 * (msgspool-spool(5), Queueing and "Group commit").
 *
 * A message is queued when its file is synced, renamed into new/ (or
 * deferred/, ...) and that directory synced.  One sync of a directory
 * makes durable every rename into it that was done before the sync
 * began, whoever did it: so the processes of one host that queue at the
 * same time share it.  Each counts its rename in a record the host's
 * processes map (SPOOL/sync/HOST); one of them, the writer, holding the
 * record's lock, notes how many renames are done, syncs the directory
 * and then records that count as synced; every process whose rename is
 * within a recorded count returns without a sync of its own.  Nobody
 * hears "queued" before a sync that began after its rename has ended,
 * as before; a writer that dies or fails leaves the lock (fcntl, freed
 * with the process) to the next, which syncs again.
 *
 * Where the record cannot be had (no sync/ area, another owner, a full
 * disk), the directory is synced by the caller alone, as without it.
 */
#ifndef SPOOL_DSYNC_H
#define SPOOL_DSYNC_H

struct dsync;
struct spool;

/*
 * Make durable every rename this process did into the directory of
 * state d (enum spool_dir) before the call: 0, or -1 with errno (the
 * directory's sync failed).
 */
int	spool_syncdir(struct spool *, int d);

/* A spool's mapping of the record (spool_free releases it). */
void	spool_dsync_free(struct dsync *);

#endif
