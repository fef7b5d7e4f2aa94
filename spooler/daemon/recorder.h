/*
 * recorder.h: msgspoold's recording thread on a spool of this host
 * (msgspoold(8), Claims).  Outcomes are decided on the event loop and
 * written here, with a spool handle of the thread's own, so that the
 * loop goes on with the transfers while the files and directories of
 * the last outcomes are synced.  The outcomes handed over while it
 * writes are written together next, in the order given; each is handed
 * back through a pipe the loop polls.  (On a spool shared by several
 * hosts the claim keeper records instead: claimkeep.h.)
 */
#ifndef RECORDER_H
#define RECORDER_H

#include <stddef.h>
#include <time.h>

struct spool;
struct recorder;

/*
 * The work of a recorder: the args of every task waiting when the
 * thread came to them (n of them, in the order given), done at once so
 * that they share one commit's syncs.
 */
typedef void	(*recorder_fn)(struct spool *, void **args, size_t n);

/*
 * A recorder over the spool at root (opened again, every state's
 * directory at once) doing fn, or NULL with the reason in err; local
 * when the spool is this host's alone (the lists' names then kept:
 * list_keep).
 */
struct recorder	*recorder_new(const char *root, recorder_fn fn, int local,
		    char *err, size_t errlen);

/*
 * Run every task given and not yet run, then stop the thread.  The
 * tasks' args are still handed back by recorder_recorded.  NULL is fine.
 */
void		 recorder_finish(struct recorder *);

/* Free a finished recorder (its args handed back already).  NULL fine. */
void		 recorder_free(struct recorder *);

/*
 * Hand arg to the thread: done with those waiting when it comes to them,
 * after those given before.  0, or -1 (ENOMEM, or finished).
 */
int		 recorder_run(struct recorder *, void *arg);

/* The arg of the next task run to its end, or NULL. */
void		*recorder_recorded(struct recorder *);

/* Whether no task is waiting or running. */
int		 recorder_idle(struct recorder *);

/*
 * When the run of fn under way began, 0 when none is: on a shared spool
 * a run this long means its server does not answer (claimkeep.h,
 * keeper_stuck).
 */
time_t		 recorder_busy_since(struct recorder *);

/* Readable when a task has ended (for poll); recorder_recorded empties it. */
int		 recorder_fd(const struct recorder *);

#endif
