/*
 * cli_progress.h: how far a long command is (msgspool(8): reindex,
 * erase), on one line of stderr redrawn in place, and only when stderr
 * is a terminal: in a pipe or a log the commands stay quiet.
 */
#ifndef CLI_PROGRESS_H
#define CLI_PROGRESS_H

#include <stddef.h>
#include <time.h>

/*
 * The state of one progress line.  arg of the functions below is a
 * struct cli_progress * zeroed before the first call, or NULL for one
 * the CLI keeps (a command shows one line at a time).
 */
struct cli_progress {
	struct timespec	 last;		/* when the line was drawn */
	int		 tty;		/* 0 not known, 1 a terminal, -1 not */
	int		 drawn;		/* a line is on screen */
	size_t		 width;		/* its length, to blank it */
};

/*
 * done of total units of what ("reading", "writing"; total 0: not known
 * yet), as "msgspool: what done/total (N%)" ("msgspool: what done"
 * without a total, "msgspool: what" while done is 0 too), redrawn with
 * "\r" at most ten times a second, and always when done reaches total.  The
 * signature of list_progress_fn (spool/list.h), so that it can be passed
 * to list_reindex as it is.
 */
void	cli_progress(void *arg, const char *what, size_t done, size_t total);

/*
 * Blank the line drawn, if any, so that what is printed next starts on a
 * clean line; the next cli_progress draws it again.
 */
void	cli_progress_end(void *arg);

#endif
