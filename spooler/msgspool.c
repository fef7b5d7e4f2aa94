/*
 * msgspool: the operator's CLI over the spool and the keys file
 * (msgspool(8)).  A table of verbs, like mailq and smtpctl.
 *
 *	msgspool [-c FILE] list | show ID | retry ID...|--failed |
 *	    delete ID... | key add CLIENT SCOPES | key disable CLIENT |
 *	    events [resend ID...|--all] | webhook-secret CLIENT
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "blob.h"
#include "config.h"
#include "event.h"
#include "keys.h"
#include "spool.h"
#include "util.h"

struct cli {
	struct config	*cfg;
	struct spool	*spool;
};

struct verb {
	const char	*name;
	int		 min, max;	/* argument counts; -1: any */
	int		 needs_spool;
	const char	*usage;
	int		 (*run)(struct cli *, int, char **);
};

static const char *
str(const json_t *o, const char *key)
{
	const char	*s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : "-";
}

/* The recipient of a message: "to" for every channel. */
static const char *
recipient(const json_t *doc)
{
	return str(json_object_get(doc, "message"), "to");
}

static size_t	sessions(struct cli *);

static int
cmd_list(struct cli *c, int argc, char **argv)
{
	static const enum spool_dir states[] = { SPOOL_NEW, SPOOL_CUR,
	    SPOOL_DEFERRED, SPOOL_FAILED, SPOOL_SENT };
	char		**names, err[512];
	json_t		*doc;
	ssize_t		 n, i;
	size_t		 s, total = 0;
	int		 want = -1;

	if (argc == 1 && ((want = spool_dir_parse(argv[0])) == -1 ||
	    want == SPOOL_TMP)) {
		fprintf(stderr, "msgspool: list: unknown state '%s'\n",
		    argv[0]);
		return 1;
	}
	printf("%-26s %-8s %-11s %-7s %-20s %3s %-20s %s\n", "ID", "STATE",
	    "STATUS", "CHANNEL", "RECIPIENT", "TRY", "NEXT-TRY",
	    "LAST-ERROR");
	for (s = 0; s < sizeof(states) / sizeof(states[0]); s++) {
		if (want != -1 && (int)states[s] != want)
			continue;
		if ((n = spool_list(c->spool, states[s], &names)) == -1) {
			fprintf(stderr, "msgspool: %s/: %s\n",
			    spool_dirname(states[s]), strerror(errno));
			return 1;
		}
		for (i = 0; i < n; i++) {
			doc = spool_load(c->spool, states[s], names[i], err,
			    sizeof(err));
			if (doc == NULL) {
				if (errno != ENOENT)
					printf("%-26.26s %-8s (unreadable: "
					    "%s)\n", names[i],
					    spool_dirname(states[s]), err);
				continue;
			}
			printf("%-26s %-8s %-11s %-7s %-20s %3lld %-20s %s\n",
			    str(doc, "id"), spool_dirname(states[s]),
			    msgdoc_status(doc, spool_dirname(states[s])),
			    str(doc, "channel"), recipient(doc),
			    (long long)json_integer_value(json_object_get(doc,
			    "attempts")), str(doc, "nextAttempt"),
			    str(doc, "lastError"));
			json_decref(doc);
			total++;
		}
		spool_names_free(names, (size_t)n);
	}
	printf("%zu message%s\n", total, total == 1 ? "" : "s");
	if (want == -1)
		sessions(c);
	return 0;
}

/*
 * The sessions msgspoold runs (the smpp provider's; msgspool(8),
 * status): each [section] with provider smpp and the state its daemon
 * last wrote.  The number of sessions.
 */
static size_t
sessions(struct cli *c)
{
	const char	*sec, *p, *state;
	json_t		*st;
	char		 name[128];
	pid_t		 pid;
	size_t		 i, n = 0;

	for (i = 0; (sec = config_section(c->cfg, i)) != NULL; i++) {
		if ((p = config_get(c->cfg, sec, "provider")) == NULL ||
		    strcmp(p, "smpp") != 0)
			continue;
		n++;
		snprintf(name, sizeof(name), "smpp-%s", sec);
		if ((st = spool_status_get(c->spool, name)) == NULL) {
			printf("smpp [%s] %s: no session yet (msgspoold binds "
			    "with the first message)\n", sec,
			    config_get(c->cfg, sec, "host"));
			continue;
		}
		state = str(st, "state");
		pid = (pid_t)json_integer_value(json_object_get(st, "pid"));
		/* A daemon that died wrote no "stopped". */
		if (strcmp(state, "stopped") != 0 && pid > 0 &&
		    kill(pid, 0) == -1 && errno == ESRCH)
			state = "stopped (msgspoold is not running)";
		printf("smpp [%s] %s:%s as %s: %s since %s, window %lld/%lld "
		    "in use, %lld queued%s%s\n", sec, str(st, "host"),
		    str(st, "port"), str(st, "systemId"), state,
		    str(st, "since"),
		    (long long)json_integer_value(json_object_get(st,
		    "inUse")), (long long)json_integer_value(json_object_get(st,
		    "window")), (long long)json_integer_value(json_object_get(st,
		    "queued")), json_is_string(json_object_get(st,
		    "lastError")) ? "; last error: " : "",
		    json_is_string(json_object_get(st, "lastError")) ?
		    str(st, "lastError") : "");
		json_decref(st);
	}
	return n;
}

static int
cmd_status(struct cli *c, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	if (sessions(c) == 0)
		printf("no sessions: no section has provider smpp\n");
	return 0;
}

/* Find id; prints the reason and returns -1 when it is not there. */
static int
find(struct cli *c, const char *verb, const char *id, enum spool_dir *dir,
    char *name)
{
	if (spool_find(c->spool, id, dir, name) == 0)
		return 0;
	fprintf(stderr, "msgspool: %s: no message '%s'\n", verb, id);
	return -1;
}

static int
cmd_show(struct cli *c, int argc, char **argv)
{
	enum spool_dir	 dir;
	enum msg_status	 st;
	char		 name[SPOOL_NAME_MAX], err[512], *text;
	json_t		*doc, *msg;

	(void)argc;
	if (find(c, "show", argv[0], &dir, name) == -1)
		return 1;
	if ((doc = spool_load(c->spool, dir, name, err, sizeof(err))) ==
	    NULL) {
		fprintf(stderr, "msgspool: show: %s\n", err);
		return 1;
	}
	/* Whole: attachments stored once are read back (blob.h); when
	 * one cannot be, the document as it is, and why. */
	if ((msg = blob_message(c->spool, name, json_object_get(doc,
	    "message"), &st, err, sizeof(err))) != NULL)
		json_object_set_new(doc, "message", msg);
	else
		fprintf(stderr, "msgspool: show: %s\n", err);
	json_object_set_new(doc, "state", json_string(spool_dirname(dir)));
	/* The status GET /messages/{id} reports, by the same rule. */
	json_object_set_new(doc, "status", json_string(msgdoc_status(doc,
	    spool_dirname(dir))));
	text = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(doc);
	if (text == NULL)
		return 1;
	puts(text);
	free(text);
	return 0;
}

/*
 * Requeue one message of failed/ or deferred/ (name in dir): due now.
 * 0, or -1 with the reason on stderr.
 */
static int
requeue(struct cli *c, enum spool_dir dir, const char *name)
{
	json_t	*doc;
	char	 err[512];

	if ((doc = spool_load(c->spool, dir, name, err, sizeof(err))) ==
	    NULL) {
		/*
		 * Not a spool file (a link, a FIFO, bad JSON, a wrong id):
		 * the daemon would only set it aside again.  Left for the
		 * operator, never read through.
		 */
		fprintf(stderr, "msgspool: retry: %s\n", err);
		return -1;
	}
	/* A retry by hand gets a whole max-age again. */
	msgdoc_retry(doc, time(NULL));
	if (spool_store(c->spool, SPOOL_NEW, name, doc, dir) != MSG_OK) {
		fprintf(stderr, "msgspool: retry: %s: %s\n", name,
		    strerror(errno));
		json_decref(doc);
		return -1;
	}
	json_decref(doc);
	return 0;
}

/* Whether failed/name is a message its client canceled. */
static int
canceled(struct cli *c, const char *name)
{
	json_t	*doc;
	int	 yes;

	if ((doc = spool_load(c->spool, SPOOL_FAILED, name, NULL, 0)) == NULL)
		return 0;
	yes = strcmp(msgdoc_status(doc, "failed"), "canceled") == 0;
	json_decref(doc);
	return yes;
}

static int
cmd_retry(struct cli *c, int argc, char **argv)
{
	enum spool_dir	 dir;
	char		 name[SPOOL_NAME_MAX], **names;
	ssize_t		 n, i;
	size_t		 done = 0;
	int		 rc = 0, a;

	if (argc == 1 && strcmp(argv[0], "--failed") == 0) {
		if ((n = spool_list(c->spool, SPOOL_FAILED, &names)) == -1) {
			fprintf(stderr, "msgspool: failed/: %s\n",
			    strerror(errno));
			return 1;
		}
		for (i = 0; i < n; i++) {
			/* A client canceled it: only a retry by id undoes that. */
			if (canceled(c, names[i]))
				continue;
			if (requeue(c, SPOOL_FAILED, names[i]) == -1)
				rc = 1;
			else
				done++;
		}
		printf("%zu message%s requeued\n", done, done == 1 ? "" :
		    "s");
		spool_names_free(names, (size_t)n);
		return rc;
	}
	for (a = 0; a < argc; a++) {
		if (find(c, "retry", argv[a], &dir, name) == -1) {
			rc = 1;
			continue;
		}
		switch (dir) {
		case SPOOL_NEW:
			break;
		case SPOOL_FAILED:
		case SPOOL_DEFERRED:
			if (requeue(c, dir, name) == -1)
				rc = 1;
			break;
		default:
			fprintf(stderr, "msgspool: retry: %s is in %s/, "
			    "not retried\n", argv[a], spool_dirname(dir));
			rc = 1;
			break;
		}
	}
	return rc;
}

static int
cmd_delete(struct cli *c, int argc, char **argv)
{
	enum spool_dir	dir;
	char		name[SPOOL_NAME_MAX];
	int		rc = 0, a;

	for (a = 0; a < argc; a++) {
		if (find(c, "delete", argv[a], &dir, name) == -1) {
			rc = 1;
			continue;
		}
		if (dir == SPOOL_CUR) {
			fprintf(stderr, "msgspool: delete: %s is being sent "
			    "(cur/)\n", argv[a]);
			rc = 1;
		} else if (spool_remove(c->spool, dir, name) == -1) {
			fprintf(stderr, "msgspool: delete: %s: %s\n", argv[a],
			    strerror(errno));
			rc = 1;
		} else
			blob_remove(c->spool, name);	/* its attachments */
	}
	return rc;
}

static char *
keys_file(struct cli *c)
{
	return config_path(c->cfg, NULL, "keys", "keys");
}

static int
cmd_key(struct cli *c, int argc, char **argv)
{
	char	 key[64], err[512], *path;
	int	 rc;

	if ((path = keys_file(c)) == NULL)
		return 1;
	if (strcmp(argv[0], "add") == 0 && (argc == 3 || (argc == 4 &&
	    strcmp(argv[3], "--test") == 0)))
		rc = keys_add(path, argv[1], argv[2], argc == 4, key,
		    sizeof(key), err, sizeof(err));
	else if (strcmp(argv[0], "disable") == 0 && argc == 2)
		rc = keys_disable(path, argv[1], err, sizeof(err));
	else {
		free(path);
		fprintf(stderr, "usage: msgspool key add CLIENT SCOPES [--test] "
		    "| key disable CLIENT\n");
		return 1;
	}
	free(path);
	if (rc == -1) {
		fprintf(stderr, "msgspool: key %s: %s\n", argv[0], err);
		return 1;
	}
	if (strcmp(argv[0], "add") == 0)
		printf("%s\n", key);
	return 0;
}

/* The names of an area's files, gathered by spool_area_scan. */
struct names {
	char	**v;
	size_t	  n;
};

static int
gather(void *arg, const char *name)
{
	struct names	*ns = arg;
	char		**v;

	if ((v = reallocarray(ns->v, ns->n + 1, sizeof(*v))) == NULL ||
	    (v[ns->n] = strdup(name)) == NULL) {
		if (v != NULL)
			ns->v = v;
		return 1;
	}
	ns->v = v;
	ns->n++;
	return 0;
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Put events-failed/name back into events/, due now.  0 or -1. */
static int
resend(struct cli *c, const char *name)
{
	json_t	*ev;
	char	 err[512];

	if ((ev = spool_area_load(c->spool, EVENT_FAILED_AREA, name, err,
	    sizeof(err))) == NULL) {
		fprintf(stderr, "msgspool: events resend: %s\n", err);
		return -1;
	}
	event_resend(ev, time(NULL));
	if (spool_area_store(c->spool, EVENT_AREA, (const json_t **)&ev, 1)
	    != MSG_OK) {
		fprintf(stderr, "msgspool: events resend: %s: %s\n", name,
		    strerror(errno));
		json_decref(ev);
		return -1;
	}
	json_decref(ev);
	spool_area_remove(c->spool, EVENT_FAILED_AREA, name);
	return 0;
}

/*
 * events: the webhook events given up on (events-failed/), or resend
 * some or all of them.
 */
static int
cmd_events(struct cli *c, int argc, char **argv)
{
	struct names	 ns = { NULL, 0 };
	json_t		*ev;
	char		 name[SPOOL_NAME_MAX], err[512];
	size_t		 i, done = 0;
	int		 rc = 0, a;

	if (argc > 0 && (strcmp(argv[0], "resend") != 0 || argc < 2)) {
		fprintf(stderr, "usage: msgspool events [resend ID... | "
		    "resend --all]\n");
		return 1;
	}
	if (argc == 0 || (argc == 2 && strcmp(argv[1], "--all") == 0)) {
		spool_area_scan(c->spool, EVENT_FAILED_AREA, gather, &ns);
		qsort(ns.v, ns.n, sizeof(*ns.v), by_name);
	}
	if (argc == 0) {
		printf("%-26s %-16s %-20s %3s %s\n", "ID", "CLIENT", "TYPE",
		    "TRY", "LAST-ERROR");
		for (i = 0; i < ns.n; i++) {
			if ((ev = spool_area_load(c->spool, EVENT_FAILED_AREA,
			    ns.v[i], err, sizeof(err))) == NULL) {
				if (errno != ENOENT)
					printf("%-26.26s (unreadable: %s)\n",
					    ns.v[i], err);
				continue;
			}
			printf("%-26s %-16s %-20s %3lld %s\n", str(ev, "id"),
			    str(ev, "client"), str(ev, "type"),
			    event_attempts(ev), str(ev, "lastError"));
			json_decref(ev);
			done++;
		}
		printf("%zu failed event%s\n", done, done == 1 ? "" : "s");
	} else if (argc == 2 && strcmp(argv[1], "--all") == 0) {
		for (i = 0; i < ns.n; i++)
			if (resend(c, ns.v[i]) == -1)
				rc = 1;
			else
				done++;
		printf("%zu event%s resent\n", done, done == 1 ? "" : "s");
	} else
		for (a = 1; a < argc; a++) {
			if (!ulid_valid(argv[a])) {
				fprintf(stderr, "msgspool: events resend: "
				    "'%s' is not an event id\n", argv[a]);
				rc = 1;
				continue;
			}
			snprintf(name, sizeof(name), "%s.json", argv[a]);
			if (resend(c, name) == -1)
				rc = 1;
		}
	for (i = 0; i < ns.n; i++)
		free(ns.v[i]);
	free(ns.v);
	return rc;
}

/*
 * Write text to path atomically: a temporary file beside it (mode 0600,
 * or the old file's), synced, renamed over it, the directory synced.
 * 0, or -1 with errno set.
 */
static int
write_atomic(const char *path, const char *text)
{
	struct stat	 st;
	char		 tmp[4096], dir[4096];
	int		 fd, dfd, e;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >=
	    sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((fd = mkstemp(tmp)) == -1)
		return -1;
	if ((stat(path, &st) == 0 && fchmod(fd, st.st_mode & 0640) == -1) ||
	    util_write_all(fd, text, strlen(text)) == -1 ||
	    util_write_all(fd, "\n", 1) == -1 || fsync(fd) == -1) {
		e = errno;
		close(fd);
		unlink(tmp);
		errno = e;
		return -1;
	}
	if (close(fd) == -1 || rename(tmp, path) == -1) {
		e = errno;
		unlink(tmp);
		errno = e;
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	if ((dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY)) != -1) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

/*
 * webhook-secret CLIENT: a new secret into the client's
 * webhook-secret-file, printed once.  msgspoold reads it at its next
 * try of each event.
 */
static int
cmd_webhook_secret(struct cli *c, int argc, char **argv)
{
	char	 section[128], *path, *secret;

	(void)argc;
	if ((size_t)snprintf(section, sizeof(section), "client.%s", argv[0]) >=
	    sizeof(section) || event_section_client(section) == NULL) {
		fprintf(stderr, "msgspool: webhook-secret: '%s' is not a "
		    "client id\n", argv[0]);
		return 1;
	}
	if (config_get(c->cfg, section, "webhook-secret") != NULL) {
		fprintf(stderr, "msgspool: webhook-secret: [%s] has its "
		    "webhook-secret in the config file; use "
		    "webhook-secret-file to have one made\n", section);
		return 1;
	}
	if ((path = config_path(c->cfg, section, "webhook-secret-file",
	    NULL)) == NULL) {
		fprintf(stderr, "msgspool: webhook-secret: [%s] has no "
		    "webhook-secret-file\n", section);
		return 1;
	}
	if ((secret = event_secret_new()) == NULL) {
		fprintf(stderr, "msgspool: webhook-secret: no random bytes\n");
		free(path);
		return 1;
	}
	if (write_atomic(path, secret) == -1) {
		fprintf(stderr, "msgspool: webhook-secret: %s: %s\n", path,
		    strerror(errno));
		free(secret);
		free(path);
		return 1;
	}
	printf("%s\n", secret);
	free(secret);
	free(path);
	return 0;
}

static const struct verb verbs[] = {
	{ "list", 0, 1, 1, "list [STATE]", cmd_list },
	{ "show", 1, 1, 1, "show ID", cmd_show },
	{ "status", 0, 0, 1, "status", cmd_status },
	{ "retry", 1, -1, 1, "retry ID... | retry --failed", cmd_retry },
	{ "delete", 1, -1, 1, "delete ID...", cmd_delete },
	{ "key", 2, 4, 0, "key add CLIENT SCOPES [--test] | key disable CLIENT",
	    cmd_key },
	{ "events", 0, -1, 1, "events | events resend ID... | "
	    "events resend --all", cmd_events },
	{ "webhook-secret", 1, 1, 0, "webhook-secret CLIENT",
	    cmd_webhook_secret },
};

static void
usage(void)
{
	size_t	i;

	fprintf(stderr, "usage: msgspool [-c FILE] COMMAND\n");
	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		fprintf(stderr, "       msgspool %s\n", verbs[i].usage);
}

int
main(int argc, char *argv[], char *envp[])
{
	const struct verb	*v = NULL;
	struct cli		 c;
	const char		*path;
	char			 err[512], *root;
	size_t			 i;
	int			 ch, rc, nargs;

	path = config_default_path(envp);
	while ((ch = getopt(argc, argv, "+c:h")) != -1) {
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 'h':
			usage();
			return 0;
		default:
			usage();
			return 1;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1) {
		usage();
		return 1;
	}
	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(verbs[i].name, argv[0]) == 0)
			v = &verbs[i];
	nargs = argc - 1;
	if (v == NULL || nargs < v->min || (v->max != -1 && nargs > v->max)) {
		if (v != NULL)
			fprintf(stderr, "usage: msgspool %s\n", v->usage);
		else
			usage();
		return 1;
	}
	memset(&c, 0, sizeof(c));
	if ((c.cfg = config_load(path, err, sizeof(err))) == NULL) {
		fprintf(stderr, "msgspool: %s\n", err);
		return 1;
	}
	if (v->needs_spool) {
		root = config_path(c.cfg, NULL, "spool", "spool");
		if (root == NULL || (c.spool = spool_open(root, 0, err,
		    sizeof(err))) == NULL) {
			fprintf(stderr, "msgspool: spool: %s\n",
			    root ? err : "out of memory");
			free(root);
			config_free(c.cfg);
			return 1;
		}
		free(root);
	}
	rc = v->run(&c, nargs, argv + 1);
	spool_free(c.spool);
	config_free(c.cfg);
	return rc;
}
