/*
 * durable.c: the disk's limit for what msgspool promises, measured by
 * make bench next to msgspool-fcgi.  PROCS processes each, for SECONDS,
 * queue a message of 400 bytes the way msgspool-spool(5) says every
 * message is queued: a new file in DIR/tmp/, written, fsynced, renamed
 * into DIR/new/, and DIR/new/ fsynced; no HTTP, no parsing.  Prints
 * "rps=N" for all of them together.
 *
 *	durable PROCS SECONDS DIR
 */
#include <sys/wait.h>

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double
now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One process's loop: how many it queued, or -1. */
static long
queue(const char *dir, int id, double secs)
{
	char	 body[400], tmp[PATH_MAX], dst[PATH_MAX];
	double	 end = now() + secs;
	long	 n;
	int	 fd, dfd;

	memset(body, 'x', sizeof(body));
	snprintf(dst, sizeof(dst), "%s/new", dir);
	if ((dfd = open(dst, O_RDONLY | O_DIRECTORY)) == -1)
		return -1;
	for (n = 0; now() < end; n++) {
		snprintf(tmp, sizeof(tmp), "%s/tmp/%d.%ld", dir, id, n);
		snprintf(dst, sizeof(dst), "%s/new/%d.%ld", dir, id, n);
		if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600)) == -1 ||
		    write(fd, body, sizeof(body)) != (ssize_t)sizeof(body) ||
		    fsync(fd) == -1 || close(fd) == -1 ||
		    rename(tmp, dst) == -1 || fsync(dfd) == -1)
			return -1;
	}
	close(dfd);
	return n;
}

int
main(int argc, char *argv[])
{
	int	 procs, i, p[2], status, failed = 0;
	double	 secs, t0;
	long	 n, total = 0;

	if (argc != 4 || (procs = atoi(argv[1])) < 1 || procs > 256 ||
	    (secs = atof(argv[2])) <= 0) {
		fprintf(stderr, "usage: durable PROCS SECONDS DIR\n");
		return 64;
	}
	if (pipe(p) == -1)
		return 1;
	t0 = now();
	for (i = 0; i < procs; i++)
		switch (fork()) {
		case -1:
			return 1;
		case 0:
			n = queue(argv[3], i, secs);
			_exit(write(p[1], &n, sizeof(n)) == sizeof(n) ? 0 : 1);
		}
	close(p[1]);
	for (i = 0; i < procs; i++) {
		if (read(p[0], &n, sizeof(n)) != sizeof(n) || n < 0)
			failed = 1;
		else
			total += n;
	}
	while (wait(&status) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed = 1;
	if (failed) {
		fprintf(stderr, "durable: a process failed in %s\n", argv[3]);
		return 1;
	}
	printf("rps=%.0f\n", (double)total / (now() - t0));
	return 0;
}
