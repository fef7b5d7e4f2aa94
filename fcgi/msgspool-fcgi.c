/*
 * msgspool-fcgi: every route of conf/openapi.yaml as one FastCGI
 * responder (msgspool-fcgi(8)).  The endpoints and handlers are those of
 * the programs in cgi-bin/, compiled in, and each request runs the same
 * pipeline as a CGI (cgi_serve); only the process lives on.
 *
 * The listening socket is FastCGI's: descriptor 0 as the web server
 * (lighttpd's mod_fastcgi), spawn-fcgi or a systemd socket unit
 * (StandardInput=socket) hands it over, or -s to open one.  A supervisor
 * forks the workers that accept on it and replaces any that dies.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fcgiapp.h>
#include <jansson.h>

#include "base/config.h"
#include "base/log.h"
#include "http/cgi.h"
#include "http/problem.h"
#include "spool/spool.h"

#include "arena.h"
#include "fcgi.h"

/* Workers by default: the best of 1, 2, 4 and 8 (bench/results.md). */
#define WORKERS_DEFAULT	8
#define WORKERS_MAX	256
/* A worker that dies sooner than this after its start is respawned late. */
#define RESPAWN_SOON	1

/* The cgi_io of a FastCGI request. */
struct fcgi_io {
	FCGX_Request		*req;
	struct fcgi_cache	*cache;
	int			 sock;		/* the listening socket */
};

static ssize_t
io_read(void *arg, char *buf, size_t len)
{
	struct fcgi_io	*f = arg;
	int		 n;

	n = FCGX_GetStr(buf, len > INT_MAX ? INT_MAX : (int)len,
	    f->req->in);
	if (n == 0 && FCGX_GetError(f->req->in) != 0)
		return -1;
	return n;
}

static int
io_write(void *arg, const char *buf, size_t len)
{
	struct fcgi_io	*f = arg;
	int		 n;

	while (len > 0) {
		n = len > INT_MAX ? INT_MAX : (int)len;
		if (FCGX_PutStr(buf, n, f->req->out) != n)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static const struct config *
io_config(void *arg, const char *path, char *err, size_t errlen)
{
	return fcgi_cache_config(((struct fcgi_io *)arg)->cache, path, err,
	    errlen);
}

static struct tmpl *
io_tmpl(void *arg, const char *root, const char *client, enum tmpl_kind kind,
    const char *id, enum msg_status *status, char *err, size_t errlen)
{
	return tmpl_cache_load(&((struct fcgi_io *)arg)->cache->tmpls, root,
	    client, kind, id, status, err, errlen);
}

/*
 * Write a response the pipeline did not make (r NULL: a 500), without
 * its body to a HEAD, as the pipeline answers one.
 */
static int
answer(const struct cgi_io *io, struct response *r, char *const *envp)
{
	struct request	 req;
	int		 rc = -1;

	cgi_request_init(&req, envp);
	if (r == NULL)
		r = response_error(500, "out of memory");
	if (r != NULL)
		rc = cgi_respond(io, r, req.head);
	response_free(r);
	return rc;
}

/*
 * 404 for a path that is no route: the document the web servers' own
 * 404 is (their configs), so that no answer tells CGI from FastCGI.
 */
static int
not_found(const struct cgi_io *io, char *const *envp)
{
	return answer(io, problem_response(problem_new(404, "not-found",
	    "no such route")), envp);
}

/*
 * A request's work done, its reply not yet written: with no other
 * request waiting, the spool's record (spool_keep) and its root and
 * states (spool_seen) are let go, so that an idle worker holds nothing
 * of the spool open (a remount read-only would fail: "busy", an unmount
 * too); under load they are kept for the next.  Nothing held, nothing
 * is asked.
 */
static void
io_done(void *arg)
{
	struct fcgi_io	*f = arg;
	struct fcgi_cache *c = f->cache;
	struct pollfd	 p = { .fd = f->sock, .events = POLLIN };

	if ((c->spool.dsync != NULL || c->spool.flink != 0 || c->seen.held) &&
	    poll(&p, 1, 0) != 1) {
		spool_keep_free(&c->spool);
		spool_seen_release(&c->seen);
	}
}

static enum keys_result
io_keys(void *arg, const char *path, const char *key, size_t len,
    struct client *out)
{
	return fcgi_cache_keys(((struct fcgi_io *)arg)->cache, path, key, len,
	    out);
}

/*
 * jansson's allocator in a worker: the arena of its requests
 * (msgspool-fcgi(8), Memory).  Under AddressSanitizer (or built with
 * -DMSGSPOOL_NO_ARENA) jansson keeps malloc, so that a use of a JSON
 * value after its free is still caught.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(MSGSPOOL_NO_ARENA)
#define JSON_ARENA	0
#else
#define JSON_ARENA	1
#endif

static struct arena	json_arena;

/*
 * The status replies remembered (memo.h; msgspool-fcgi(8), Per
 * request): mapped by the supervisor, shared by every worker it forks.
 */
static struct memo	replies;

static void *
json_arena_malloc(size_t size)
{
	return arena_alloc(&json_arena, size);
}

static void
json_arena_free(void *p)
{
	arena_free(&json_arena, p);
}

/*
 * Signals: a worker told to stop between requests goes at once, in a
 * request after answering it.
 */
static volatile sig_atomic_t	in_request, stopping;

static void
on_stop(int sig)
{
	(void)sig;
	if (!in_request)
		_exit(0);
	stopping = 1;
}

static int
worker(int sock, const char *config)
{
	FCGX_Request		 req;
	struct fcgi_cache	 cache;
	struct fcgi_io		 f;
	struct cgi_io		 io = { .read = io_read, .write = io_write,
				    .config = io_config, .keys = io_keys,
				    .tmpl = io_tmpl, .done = io_done,
				    .arg = &f };
	const struct endpoint	*ep;
	struct response		*r;
	const char		*uri, *path_info;
	char			**env, *extra[2], *path;
	struct sigaction	 sa;

	memset(&cache, 0, sizeof(cache));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (FCGX_InitRequest(&req, sock, 0) != 0) {
		log_err("FCGX_InitRequest failed");
		return 1;
	}
	f.req = &req;
	f.cache = &cache;
	io.seen = &cache.seen;
	f.sock = sock;
	io.keep = &cache.spool;
	io.memo = replies.slots != NULL ? &replies : NULL;
	arena_init(&json_arena);
	if (JSON_ARENA)
		json_set_alloc_funcs(json_arena_malloc, json_arena_free);
	while (!stopping) {
		if (FCGX_Accept_r(&req) < 0)
			break;
		in_request = 1;
		/* What jansson allocates from here on is this request's. */
		arena_begin(&json_arena);
		/* Bounded as a CGI is: a worker past it dies, replaced. */
		alarm(CGI_TIMEOUT);
		if ((uri = cgi_env(req.envp, "REQUEST_URI")) == NULL)
			uri = "";
		path = NULL;
		/* The server's own error (lighttpd's server.error-handler). */
		if ((r = cgi_server_error(req.envp)) != NULL)
			answer(&io, r, req.envp);
		else if ((path = cgi_path(uri)) == NULL) {
			log_err("out of memory");
			answer(&io, NULL, req.envp);
		} else if ((ep = fcgi_route(path, &path_info)) == NULL)
			not_found(&io, req.envp);
		else if ((env = fcgi_env(req.envp, path_info, config,
		    extra)) == NULL) {
			log_err("out of memory");
			answer(&io, NULL, req.envp);
		} else {
			cgi_serve(ep, env, &io);
			free(extra[0]);
			free(extra[1]);
			free(env);
		}
		free(path);
		FCGX_Finish_r(&req);
		arena_end(&json_arena);
		alarm(0);
		in_request = 0;
	}
	fcgi_cache_free(&cache);
	arena_release(&json_arena);
	FCGX_Free(&req, 0);
	return 0;
}

/* The supervisor's children, and whether it was told to stop. */
static volatile sig_atomic_t	sup_stop;

static void
on_sup_stop(int sig)
{
	sup_stop = sig;
}

static pid_t
spawn(int sock, const char *config, pid_t parent)
{
	pid_t	pid;

	if ((pid = fork()) != 0)
		return pid;
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	/* A supervisor that is killed takes its workers with it. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(0);
	_exit(worker(sock, config));
}

static int
supervise(int sock, const char *config, int n)
{
	struct sigaction	 sa;
	pid_t			*pids, pid, self = getpid();
	time_t			*born;
	int			 i, status;

	if ((pids = calloc((size_t)n, sizeof(*pids))) == NULL ||
	    (born = calloc((size_t)n, sizeof(*born))) == NULL) {
		log_err("out of memory");
		free(pids);
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sup_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	for (i = 0; i < n; i++) {
		if ((pids[i] = spawn(sock, config, self)) == -1)
			log_err("fork: %s", strerror(errno));
		born[i] = time(NULL);
	}
	while (!sup_stop) {
		pid = waitpid(-1, &status, 0);
		if (pid == -1) {
			if (errno == EINTR)
				continue;
			/* No child left (all forks failed): try again. */
			sleep(RESPAWN_SOON);
		}
		for (i = 0; i < n && !sup_stop; i++) {
			if (pids[i] > 0 && pids[i] != pid)
				continue;
			if (pids[i] > 0) {
				if (WIFSIGNALED(status))
					log_warn("worker %ld killed by signal "
					    "%d; replaced", (long)pid,
					    WTERMSIG(status));
				else
					log_warn("worker %ld exited with %d; "
					    "replaced", (long)pid,
					    WEXITSTATUS(status));
			}
			/* Dying at once again and again: no busy loop. */
			if (time(NULL) - born[i] < RESPAWN_SOON)
				sleep(RESPAWN_SOON);
			if ((pids[i] = spawn(sock, config, self)) == -1)
				log_err("fork: %s", strerror(errno));
			born[i] = time(NULL);
		}
	}
	for (i = 0; i < n; i++)
		if (pids[i] > 0)
			kill(pids[i], SIGTERM);
	for (i = 0; i < n; i++)
		if (pids[i] > 0)
			waitpid(pids[i], NULL, 0);
	free(pids);
	free(born);
	return 0;
}

static void
usage(void)
{
	fprintf(stderr, "usage: msgspool-fcgi [-c config] [-s socket] "
	    "[-w workers]\n");
}

int
main(int argc, char *argv[])
{
	const char	*config, *sockpath = NULL, *s;
	char		*end, *own = NULL;
	size_t		 seed = 0;
	long		 n;
	int		 ch, sock = 0, workers = WORKERS_DEFAULT;

	config = getenv("MSGSPOOL_CONFIG");
	if (config != NULL && *config == '\0')
		config = NULL;
	if ((s = getenv("MSGSPOOL_FCGI_WORKERS")) != NULL && *s != '\0') {
		n = strtol(s, &end, 10);
		if (*end != '\0' || n < 1 || n > WORKERS_MAX) {
			log_err("MSGSPOOL_FCGI_WORKERS=%s: not 1 to %d", s,
			    WORKERS_MAX);
			return 2;
		}
		workers = (int)n;
	}
	while ((ch = getopt(argc, argv, "c:s:w:")) != -1) {
		switch (ch) {
		case 'c':
			config = optarg;
			break;
		case 's':
			sockpath = optarg;
			break;
		case 'w':
			n = strtol(optarg, &end, 10);
			if (*end != '\0' || n < 1 || n > WORKERS_MAX) {
				log_err("-w %s: not 1 to %d", optarg,
				    WORKERS_MAX);
				return 2;
			}
			workers = (int)n;
			break;
		default:
			usage();
			return 2;
		}
	}
	if (optind != argc) {
		usage();
		return 2;
	}
	if (FCGX_Init() != 0) {
		log_err("FCGX_Init failed");
		return 1;
	}
	if (sockpath != NULL) {
		/*
		 * ":PORT" is loopback's (msgspool-fcgi(8)), not every address
		 * as libfcgi takes it: a FastCGI socket trusts whoever talks
		 * to it.  0.0.0.0:PORT for every address.
		 */
		if (*sockpath == ':' && asprintf(&own, "127.0.0.1%s",
		    sockpath) == -1) {
			log_err("out of memory");
			return 1;
		}
		sock = FCGX_OpenSocket(own != NULL ? own : sockpath, 128);
		free(own);
		if (sock == -1) {
			log_err("%s: cannot listen", sockpath);
			return 1;
		}
	} else if (FCGX_IsCGI()) {
		log_err("descriptor 0 is no FastCGI socket: run me from a web "
		    "server, spawn-fcgi or a socket unit, or give -s");
		return 2;
	}
	/* A peer gone mid-answer is an error of that write, not our end. */
	signal(SIGPIPE, SIG_IGN);
	/* Seed jansson's hashes once, before any worker parses a body. */
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == sizeof(seed) &&
	    seed != 0)
		json_object_seed(seed);
	if (memo_open(&replies) == -1)
		log_warn("no memo of replies: %s", strerror(errno));
	return supervise(sock, config, workers);
}
