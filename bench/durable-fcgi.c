/*
 * durable-fcgi.c: the naive durable FastCGI responder, the baseline of
 * make bench for msgspool-fcgi's POST /sms/v1/deliver.  Each request's
 * body is queued the way msgspool-spool(5), Queueing, promises every
 * message is: a new file in SPOOL/tmp/, written, fsynced, renamed into
 * SPOOL/new/, SPOOL/new/ fsynced, and only then "202 Accepted" with a
 * small JSON reply.  No key, no parsing, no validation: what the promise
 * alone costs behind the same web server, one sync of the file and one
 * of the directory per message.  It forks as many processes as
 * msgspool-fcgi would (MSGSPOOL_FCGI_WORKERS, default 8) on the socket
 * it is given (descriptor 0), and finds the spool in the config named by
 * MSGSPOOL_CONFIG (its "spool = " line), as msgspool-fcgi does.
 */
#include <sys/prctl.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fcgiapp.h>

#define BODY_MAX	65536

static int
spool_of(const char *conf, char *spool, size_t len)
{
	char	 line[PATH_MAX + 64], *v, *e;
	FILE	*f;

	if ((f = fopen(conf, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "spool", 5) != 0 ||
		    (v = strchr(line, '=')) == NULL)
			continue;
		for (v++; *v == ' '; v++)
			continue;
		if ((e = strchr(v, '\n')) != NULL)
			*e = '\0';
		snprintf(spool, len, "%s", v);
		fclose(f);
		return 0;
	}
	fclose(f);
	return -1;
}

/* Queue one body: 0, or -1 when any step failed. */
static int
queue(int tmpfd, int newfd, const char *body, size_t len, long seq)
{
	char	name[64];
	int	fd;

	snprintf(name, sizeof(name), "%ld.%ld.json", (long)getpid(), seq);
	if ((fd = openat(tmpfd, name, O_WRONLY | O_CREAT | O_EXCL |
	    O_CLOEXEC, 0640)) == -1)
		return -1;
	if (write(fd, body, len) != (ssize_t)len || fsync(fd) == -1) {
		close(fd);
		return -1;
	}
	if (close(fd) == -1 || renameat(tmpfd, name, newfd, name) == -1 ||
	    fsync(newfd) == -1)
		return -1;
	return 0;
}

static int
serve(const char *spool)
{
	static const char ok[] = "Status: 202 Accepted\r\n"
	    "Content-Type: application/json\r\nContent-Length: 21\r\n\r\n"
	    "{\"status\":\"Queued\"}\r\n";
	static const char fail[] = "Status: 503 Service Unavailable\r\n"
	    "Content-Length: 0\r\n\r\n";
	FCGX_Request	 req;
	char		 path[PATH_MAX + 8], *body;
	int		 tmpfd, newfd, n;
	long		 seq = 0;

	snprintf(path, sizeof(path), "%s/tmp", spool);
	if ((tmpfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return 1;
	snprintf(path, sizeof(path), "%s/new", spool);
	if ((newfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return 1;
	if ((body = malloc(BODY_MAX)) == NULL ||
	    FCGX_InitRequest(&req, 0, 0) != 0)
		return 1;
	while (FCGX_Accept_r(&req) >= 0) {
		n = FCGX_GetStr(body, BODY_MAX, req.in);
		if (n >= 0 && queue(tmpfd, newfd, body, n, seq++) == 0)
			FCGX_PutStr(ok, sizeof(ok) - 1, req.out);
		else
			FCGX_PutStr(fail, sizeof(fail) - 1, req.out);
		FCGX_Finish_r(&req);
	}
	return 0;
}

int
main(void)
{
	const char	*s = getenv("MSGSPOOL_FCGI_WORKERS");
	const char	*conf = getenv("MSGSPOOL_CONFIG");
	char		 spool[PATH_MAX];
	int		 i, n = s != NULL ? atoi(s) : 8;

	if (conf == NULL || spool_of(conf, spool, sizeof(spool)) == -1) {
		fprintf(stderr, "durable-fcgi: no spool in MSGSPOOL_CONFIG\n");
		return 1;
	}
	if (FCGX_Init() != 0)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	if (n < 1)
		n = 1;
	for (i = 0; i < n; i++)
		if (fork() == 0) {
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			_exit(serve(spool));
		}
	while (wait(NULL) > 0)
		continue;
	return 0;
}
