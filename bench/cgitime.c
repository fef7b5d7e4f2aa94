/*
 * cgitime: run a CGI program N times as a web server would (environment
 * from this process, the body from a file on stdin, stdout to /dev/null)
 * and print the median and 99th percentile wall time from fork to exit,
 * in microseconds, and the largest peak RSS of a run, in KiB.
 *
 *	cgitime N BODYFILE PROGRAM
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int
cmp(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char *argv[])
{
	struct timespec	 t0, t1;
	struct rusage	 ru;
	double		*us;
	long		 maxrss = 0;
	int		 n, i, status, in, out;
	pid_t		 pid;

	if (argc != 4 || (n = atoi(argv[1])) < 1) {
		fprintf(stderr, "usage: cgitime N BODYFILE PROGRAM\n");
		return 1;
	}
	if ((us = calloc((size_t)n, sizeof(*us))) == NULL)
		return 1;
	for (i = 0; i < n; i++) {
		if ((in = open(argv[2], O_RDONLY)) == -1 ||
		    (out = open("/dev/null", O_WRONLY)) == -1) {
			perror(argv[2]);
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if ((pid = fork()) == 0) {
			dup2(in, 0);
			dup2(out, 1);
			execl(argv[3], argv[3], (char *)NULL);
			_exit(127);
		}
		if (pid == -1 || wait4(pid, &status, 0, &ru) == -1) {
			perror("fork");
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		close(in);
		close(out);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "%s exited %d\n", argv[3], status);
			return 1;
		}
		us[i] = (t1.tv_sec - t0.tv_sec) * 1e6 +
		    (t1.tv_nsec - t0.tv_nsec) / 1e3;
		if (ru.ru_maxrss > maxrss)
			maxrss = ru.ru_maxrss;
	}
	qsort(us, (size_t)n, sizeof(*us), cmp);
	printf("p50_us=%.0f p99_us=%.0f maxrss_kib=%ld\n", us[n / 2],
	    us[(size_t)(n * 99 / 100) < (size_t)n ? n * 99 / 100 : n - 1],
	    maxrss);
	return 0;
}
