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
 * How a spool's commits are made durable (msgspool.conf(5), sync): each
 * file synced alone and each directory shared (file); or, for a commit
 * of SPOOL_SYNCFS_MIN files or more, the whole file system synced once
 * for the files and once for their names, shared by the processes of
 * the host that wait at the same time (filesystem: for a spool on a
 * file system of its own).
 */
#define SPOOL_SYNCFS_MIN	16

enum spool_sync {
	SPOOL_SYNC_FILE,
	SPOOL_SYNC_FS
};

/* The value of "sync": NULL or "file", "filesystem"; -1 for another. */
int	spool_sync_parse(const char *, enum spool_sync *);

/* What the spool's commits do from now on (a new spool: file). */
void	spool_sync_set(struct spool *, enum spool_sync);

/*
 * Make durable every rename this process did into the directory of
 * state d (enum spool_dir) before the call: 0, or -1 with errno (the
 * directory's sync failed).
 */
int	spool_syncdir(struct spool *, int d);

/*
 * Make durable everything this process wrote, renamed or linked on the
 * spool's file system before the call (syncfs(2), shared by group
 * commit): 0, or -1 with errno (the sync failed, or reported an error
 * of the file system's writes since this process last asked).
 */
int	spool_syncfs(struct spool *);

/* A spool's mapping of the record (spool_free releases it). */
void	spool_dsync_free(struct dsync *);

#endif
