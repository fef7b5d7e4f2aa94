/*
 * claimkeep.h: the claim keeper of msgspoold (msgspool-spool(5),
 * Several hosts, one spool).  A thread of its own proves, every
 * KEEP_EVERY seconds, that each claim the daemon holds is still its own
 * (spool_claim_renew: a write and fsync of the locked file, which NFS
 * fails with EIO once the server gave the lock to another host), and
 * ends claims (spool_release), so that neither those calls nor a close
 * that waits for the server stalls the event loop.  A second thread
 * takes the claims (spool_claim: open, lock, rename, read) and returns
 * dead ones (spool_recover, every KEEP_RECOVER_EVERY seconds): the loop
 * asks for as many as it has room for and is woken when they are ready.
 * A third does the daemon's housekeeping of the spool (keeper_tidy).
 * Outcomes are written by the daemon's recorder (recorder.h), whose
 * thread keeper_stuck does not see: recorder_busy_since does.
 */
#ifndef CLAIMKEEP_H
#define CLAIMKEEP_H

#include <time.h>
#include <jansson.h>

#define KEEP_EVERY	2	/* seconds between proofs of a claim */
#define KEEP_STALE	5	/* no proof this long: the claim is in doubt */
#define KEEP_RESCAN_EVERY 1	/* new/ read afresh at least this often */
#define KEEP_RECOVER_EVERY 5	/* cur/ scanned for dead claims */
#define KEEP_STUCK	2	/* a spool call this long: the server is away */

enum keep_state {
	KEEP_OK,	/* proved within KEEP_STALE seconds */
	KEEP_DOUBT,	/* not proved lately: wait before acting on it */
	KEEP_LOST	/* a proof failed: another host has it */
};

struct keeper;
struct kept;

#define KEEP_FULL_MAX	1024	/* bytes of the names of full routes */
#define KEEP_SKIP_MAX	256	/* messages of full routes passed over in
				   one listing of new/, at most */

/*
 * The route a message goes by: its name into buf, NULL when it has none
 * (msgspoold's route_section).  Called on the claiming thread.
 */
typedef const char *(*keep_route_fn)(const json_t *doc, char *buf,
		    size_t len);

/*
 * A keeper over the spool at root (opened again: each thread has its
 * own handle), route naming a message's route for the cap of
 * keeper_want.  NULL with the reason in err.
 */
struct keeper	*keeper_new(const char *root, keep_route_fn route, char *err,
		    size_t errlen);

/* Stop the thread and end every claim still kept.  NULL is fine. */
void		 keeper_free(struct keeper *);

/*
 * Keep the claim of name held on fd (spool_claim's) from now on, proved
 * now; the keeper owns fd from here.  NULL out of memory (fd is then
 * released at once).
 */
struct kept	*keeper_add(struct keeper *, const char *name, int fd);

enum keep_state	 keeper_state(struct keeper *, struct kept *, time_t now);

/*
 * Prove the claim now, from the calling thread (the recording one, just
 * before it records): 0, or -1 when it is lost (then marked so).
 */
int		 keeper_prove(struct kept *);

/* Ask for a proof as soon as the thread can. */
void		 keeper_poke(struct keeper *, struct kept *);

/* End a claim: released by the thread, the record dropped.  NULL fine. */
void		 keeper_release(struct kept *);

/* A message the claiming thread claimed, kept from then on. */
struct claimed {
	struct claimed	*next;
	char		 name[64];
	struct kept	*kept;
	json_t		*doc;		/* the caller's reference */
	/*
	 * Its recipient's suppression, looked up when it was claimed (no
	 * NFS call on the loop), the caller's reference; or NULL, superr
	 * the errno of a list that could not be read (0: none).
	 */
	json_t		*sup;
	int		 superr;
};

/*
 * Ask for claims: room for this many messages (those claimed and not
 * taken yet count against it); dirty when new/ may have changed; full,
 * the nfull routes at their cap (msgspoold(8), concurrency), whose
 * messages are read before they are claimed and left in new/ (at most
 * KEEP_SKIP_MAX a listing; names past KEEP_FULL_MAX bytes are not kept).
 */
void		 keeper_want(struct keeper *, size_t room, int dirty,
		    const char *const *full, size_t nfull);

/*
 * The next claimed message, or NULL.  Free it with free() once its doc
 * and kept are the caller's.
 */
struct claimed	*keeper_take(struct keeper *);

/*
 * A descriptor readable when claims or housekeeping are ready (for
 * poll).  keeper_take and keeper_tidied each empty it: when it was
 * readable, call both.
 */
int		 keeper_fd(struct keeper *);

struct spool;

/*
 * Run fn(spool, arg) on the keeper's housekeeping thread, which has a
 * spool handle of its own: 0; 1 when the run given before has not been
 * collected yet (nothing runs); -1 out of memory.  Housekeeping is many
 * short calls, any number of them, so it does not count towards
 * keeper_stuck: the other threads see a server that is away.
 */
int		 keeper_tidy(struct keeper *,
		    void (*fn)(struct spool *, void *), void *arg);

/* The arg of the housekeeping run to its end, once; else NULL. */
void		*keeper_tidied(struct keeper *);

/*
 * Whether a thread of the keeper has been inside one call to the spool
 * for KEEP_STUCK seconds or more: the server is not answering, and the
 * loop leaves the spool alone meanwhile.
 */
int		 keeper_stuck(struct keeper *, time_t now);

#endif
