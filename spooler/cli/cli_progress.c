/*
 * cli_progress.c: the progress line of the long commands (msgspool(8)),
 * on stderr when it is a terminal only.
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_progress.h"

/* The least time between two lines drawn: ten a second. */
#define PROGRESS_NS	100000000L

/* The line of a caller that passes NULL: the CLI is one program. */
static struct cli_progress	shared;

static struct cli_progress *
state(void *arg)
{
	return arg != NULL ? arg : &shared;
}

static long long
elapsed_ns(const struct timespec *from, const struct timespec *to)
{
	return (long long)(to->tv_sec - from->tv_sec) * 1000000000LL +
	    (to->tv_nsec - from->tv_nsec);
}

void
cli_progress(void *arg, const char *what, size_t done, size_t total)
{
	struct cli_progress	*p = state(arg);
	struct timespec		 now;
	char			 line[128];
	int			 n;
	size_t			 len;

	if (p->tty == 0)
		p->tty = isatty(STDERR_FILENO) ? 1 : -1;
	if (p->tty != 1)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	/* The last of a total always, so the line ends on what was done. */
	if (p->drawn && elapsed_ns(&p->last, &now) < PROGRESS_NS &&
	    (total == 0 || done < total))
		return;
	if (total > 0)
		n = snprintf(line, sizeof(line), "msgspool: %s %zu/%zu "
		    "(%d%%)", what != NULL ? what : "", done, total,
		    done >= total ? 100 : (int)((double)done * 100 / total));
	else if (done > 0)
		n = snprintf(line, sizeof(line), "msgspool: %s %zu",
		    what != NULL ? what : "", done);
	else
		n = snprintf(line, sizeof(line), "msgspool: %s",
		    what != NULL ? what : "");
	if (n < 0)
		return;
	len = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
	/* Blanks over the rest of a longer line drawn before. */
	fprintf(stderr, "\r%s%*s", line, p->width > len ?
	    (int)(p->width - len) : 0, "");
	fflush(stderr);
	p->width = len;
	p->drawn = 1;
	p->last = now;
}

void
cli_progress_end(void *arg)
{
	struct cli_progress	*p = state(arg);

	if (!p->drawn)
		return;
	fprintf(stderr, "\r%*s\r", (int)p->width, "");
	fflush(stderr);
	p->drawn = 0;
	p->width = 0;
}
