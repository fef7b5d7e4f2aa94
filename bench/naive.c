/*
 * naive.c: the baseline of make bench for POST /sms/v1/deliver in CGI
 * mode: what a careful programmer writes in an afternoon to accept a
 * message durably, with no validation, no key, no JSON.  It reads the
 * body (CONTENT_LENGTH bytes), writes it to SPOOL/tmp/NAME, fsyncs it,
 * renames it into SPOOL/new/ and fsyncs that directory, then answers
 * 202.  SPOOL is the "spool" directory next to $MSGSPOOL_CONFIG, as
 * bench/instance.py lays an instance out.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int
fail(const char *why)
{
	static const char resp[] = "Status: 500 Internal Server Error\r\n"
	    "Content-Type: text/plain\r\nContent-Length: 6\r\n\r\nerror\n";

	fprintf(stderr, "naive: %s\n", why);
	return write(STDOUT_FILENO, resp, sizeof(resp) - 1) ==
	    (ssize_t)sizeof(resp) - 1 ? 1 : 2;
}

int
main(void)
{
	static const char resp[] = "Status: 202 Accepted\r\n"
	    "Content-Type: application/json\r\nContent-Length: 18\r\n\r\n"
	    "{\"queued\": true}\r\n";
	char		 body[65536], spool[PATH_MAX - 64], tmp[PATH_MAX],
			 dst[PATH_MAX], *slash;
	const char	*conf = getenv("MSGSPOOL_CONFIG"),
			*cl = getenv("CONTENT_LENGTH");
	size_t		 len, got = 0;
	ssize_t		 n;
	struct timespec	 ts;
	int		 fd;

	if (conf == NULL || cl == NULL || (len = strtoul(cl, NULL, 10)) >
	    sizeof(body))
		return fail("no MSGSPOOL_CONFIG or CONTENT_LENGTH");
	while (got < len && (n = read(STDIN_FILENO, body + got, len - got)) > 0)
		got += (size_t)n;
	if (got != len)
		return fail("short body");
	if ((size_t)snprintf(spool, sizeof(spool), "%s", conf) >=
	    sizeof(spool))
		return fail("MSGSPOOL_CONFIG too long");
	if ((slash = strrchr(spool, '/')) == NULL)
		return fail("MSGSPOOL_CONFIG is not a path");
	snprintf(slash, sizeof(spool) - (size_t)(slash - spool), "/spool");
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(tmp, sizeof(tmp), "%s/tmp/%lld.%09ld.%d", spool,
	    (long long)ts.tv_sec, ts.tv_nsec, (int)getpid());
	snprintf(dst, sizeof(dst), "%s/new/%lld.%09ld.%d", spool,
	    (long long)ts.tv_sec, ts.tv_nsec, (int)getpid());
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600)) == -1)
		return fail("open");
	if (write(fd, body, len) != (ssize_t)len || fsync(fd) == -1 ||
	    close(fd) == -1)
		return fail("write");
	if (rename(tmp, dst) == -1)
		return fail("rename");
	snprintf(dst, sizeof(dst), "%s/new", spool);
	if ((fd = open(dst, O_RDONLY | O_DIRECTORY)) == -1 || fsync(fd) == -1)
		return fail("fsync new/");
	close(fd);
	return write(STDOUT_FILENO, resp, sizeof(resp) - 1) ==
	    (ssize_t)sizeof(resp) - 1 ? 0 : 1;
}
