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
 *
 * A line "# durable-fcgi: MODE [FILES]" in that config (a comment to
 * msgspool) makes it one of the ceilings make bench sets beside it, on
 * the same server path:
 *   nodir          each file synced and renamed, new/ never synced: not
 *                  durable, the most any sharing of directory syncs
 *                  among requests could give;
 *   file N         the body cut into N files, each synced and renamed,
 *                  new/ synced once for them;
 *   filesystem N   the body cut into N files, the file system synced
 *                  once (syncfs) for them, all renamed, synced once more:
 *                  what a batch of N costs with nothing but its files.
 */
#define _GNU_SOURCE		/* syncfs */
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
#define FILES_MAX	1000

enum mode { NAIVE, NODIR, FILES, FILESYSTEM };

struct how {
	enum mode	mode;
	int		files;
};

/* The mode of a "# durable-fcgi: " line's rest: 0, or -1 when unknown. */
static int
mode_of(const char *v, struct how *how)
{
	char	word[16];
	int	n = 0;

	if (sscanf(v, "%15s %d", word, &n) < 1)
		return -1;
	how->files = n;
	if (strcmp(word, "nodir") == 0)
		how->mode = NODIR;
	else if (strcmp(word, "file") == 0)
		how->mode = FILES;
	else if (strcmp(word, "filesystem") == 0)
		how->mode = FILESYSTEM;
	else
		return -1;
	if (how->mode != NODIR && (n < 1 || n > FILES_MAX))
		return -1;
	return 0;
}

static int
spool_of(const char *conf, char *spool, size_t len, struct how *how)
{
	static const char tag[] = "# durable-fcgi: ";
	char	 line[PATH_MAX + 64], *v, *e;
	FILE	*f;
	int	 found = -1;

	if ((f = fopen(conf, "r")) == NULL)
		return -1;
	how->mode = NAIVE;
	while (fgets(line, sizeof(line), f) != NULL) {
		if ((e = strchr(line, '\n')) != NULL)
			*e = '\0';
		if (strncmp(line, tag, sizeof(tag) - 1) == 0) {
			if (mode_of(line + sizeof(tag) - 1, how) == -1) {
				found = -1;
				break;
			}
			continue;
		}
		if (strncmp(line, "spool", 5) != 0 ||
		    (v = strchr(line, '=')) == NULL)
			continue;
		for (v++; *v == ' '; v++)
			continue;
		snprintf(spool, len, "%s", v);
		found = 0;
	}
	fclose(f);
	return found;
}

/* Queue one body: 0, or -1 when any step failed. */
static int
queue(int tmpfd, int newfd, const char *body, size_t len, long seq, int dir)
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
	    (dir && fsync(newfd) == -1))
		return -1;
	return 0;
}

/*
 * Queue a body cut into how->files files (the last takes what is left):
 * written, synced each (FILES) or by one syncfs (FILESYSTEM), renamed
 * into new/, then new/ synced (or the file system once more).  0, or -1
 * when any step failed.
 */
static int
queue_files(int tmpfd, int newfd, const char *body, size_t len, long *seq,
    const struct how *how)
{
	char	name[64];
	size_t	part = len / (size_t)how->files, off = 0, n;
	long	first = *seq;
	int	i, fd;

	for (i = 0; i < how->files; i++, off += n) {
		n = i == how->files - 1 ? len - off : part;
		snprintf(name, sizeof(name), "%ld.%ld.json", (long)getpid(),
		    (*seq)++);
		if ((fd = openat(tmpfd, name, O_WRONLY | O_CREAT | O_EXCL |
		    O_CLOEXEC, 0640)) == -1)
			return -1;
		if (write(fd, body + off, n) != (ssize_t)n ||
		    (how->mode == FILES && fsync(fd) == -1)) {
			close(fd);
			return -1;
		}
		if (close(fd) == -1)
			return -1;
	}
	if (how->mode == FILESYSTEM && syncfs(tmpfd) == -1)
		return -1;
	for (i = 0; i < how->files; i++) {
		snprintf(name, sizeof(name), "%ld.%ld.json", (long)getpid(),
		    first + i);
		if (renameat(tmpfd, name, newfd, name) == -1)
			return -1;
	}
	return how->mode == FILESYSTEM ? syncfs(newfd) : fsync(newfd);
}

static int
serve(const char *spool, const struct how *how)
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
		if (n >= 0 && (how->mode == FILES || how->mode == FILESYSTEM ?
		    queue_files(tmpfd, newfd, body, n, &seq, how) :
		    queue(tmpfd, newfd, body, n, seq++, how->mode == NAIVE)) == 0)
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
	struct how	 how = { NAIVE, 0 };
	int		 i, n = s != NULL ? atoi(s) : 8;

	if (conf == NULL || spool_of(conf, spool, sizeof(spool), &how) == -1) {
		fprintf(stderr, "durable-fcgi: no spool, or a bad mode, in "
		    "MSGSPOOL_CONFIG\n");
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
			_exit(serve(spool, &how));
		}
	while (wait(NULL) > 0)
		continue;
	return 0;
}
