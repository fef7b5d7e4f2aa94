/*
 * msgspool: the operator's CLI over the spool and the keys file
 * (msgspool(8)).  A table of verbs, like mailq and smtpctl.
 *
 *	msgspool [-c FILE] list [--inbound] | show ID | retry ID...|--failed |
 *	    delete ID... | key add CLIENT SCOPES | key disable CLIENT |
 *	    events [resend ID...|--all] | webhook-secret CLIENT |
 *	    suppress list [CLIENT] | suppress add|remove CLIENT CHANNEL ADDRESS |
 *	    erase ADDRESS [--client ID]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/config.h"
#include "base/util.h"
#include "cli/cli.h"
#include "cli/cli_progress.h"
#include "content/keys.h"
#include "content/route.h"
#include "spool/blob.h"
#include "spool/event.h"
#include "spool/list.h"
#include "spool/spool.h"

struct verb {
	const char	*name;
	int		 min, max;	/* argument counts; -1: any */
	int		 needs_spool;
	const char	*usage;
	int		 (*run)(struct cli *, int, char **);
};

const char *
cli_str(const json_t *o, const char *key)
{
	const char	*s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : "-";
}

/* The recipient of a message: "to" for every channel. */
static const char *
recipient(const json_t *doc)
{
	return cli_str(json_object_get(doc, "message"), "to");
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

	/* What people sent to the clients' numbers (cli_inbox.c). */
	if (argc == 1 && strcmp(argv[0], "--inbound") == 0)
		return cli_list_inbound(c);
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
			    cli_str(doc, "id"), spool_dirname(states[s]),
			    msgdoc_status(doc, spool_dirname(states[s])),
			    cli_str(doc, "channel"), recipient(doc),
			    (long long)json_integer_value(json_object_get(doc,
			    "attempts")), cli_str(doc, "nextAttempt"),
			    cli_str(doc, "lastError"));
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
		state = cli_str(st, "state");
		pid = (pid_t)json_integer_value(json_object_get(st, "pid"));
		/* A daemon that died wrote no "stopped". */
		if (strcmp(state, "stopped") != 0 && pid > 0 &&
		    kill(pid, 0) == -1 && errno == ESRCH)
			state = "stopped (msgspoold is not running)";
		printf("smpp [%s] %s:%s as %s: %s since %s, window %lld/%lld "
		    "in use, %lld queued%s%s\n", sec, cli_str(st, "host"),
		    cli_str(st, "port"), cli_str(st, "systemId"), state,
		    cli_str(st, "since"),
		    (long long)json_integer_value(json_object_get(st,
		    "inUse")), (long long)json_integer_value(json_object_get(st,
		    "window")), (long long)json_integer_value(json_object_get(st,
		    "queued")), json_is_string(json_object_get(st,
		    "lastError")) ? "; last error: " : "",
		    json_is_string(json_object_get(st, "lastError")) ?
		    cli_str(st, "lastError") : "");
		json_decref(st);
	}
	return n;
}

/*
 * Each route of the config (msgspool.conf(5), Routes) and its state as
 * msgspoold last wrote it (status/route-NAME.json): in, out or probing,
 * since when, and the last error.  1 when the routes cannot be read.
 */
static int
routes(struct cli *c)
{
	const struct route_conf	*r;
	struct route_table	*t;
	const char		*prov, *state;
	char			 name[160], err[512];
	json_t			*st;
	pid_t			 pid;
	size_t			 i;

	if ((t = route_table_new(c->cfg, err, sizeof(err))) == NULL) {
		fprintf(stderr, "msgspool: status: %s\n", err);
		return 1;
	}
	for (i = 0; (r = route_at(t, i)) != NULL; i++) {
		if ((prov = config_get(c->cfg, r->section, "provider")) ==
		    NULL)
			prov = "file";
		snprintf(name, sizeof(name), "route-%s", r->name);
		if ((st = spool_status_get(c->spool, name)) == NULL) {
			printf("route %s (%s, provider %s): in (no message "
			    "yet)\n", r->name, r->channel, prov);
			continue;
		}
		state = cli_str(st, "state");
		pid = (pid_t)json_integer_value(json_object_get(st, "pid"));
		printf("route %s (%s, provider %s): %s since %s", r->name,
		    r->channel, prov, state, cli_str(st, "since"));
		if (json_is_string(json_object_get(st, "outUntil")) &&
		    strcmp(state, "in") != 0)
			printf(" until %s", cli_str(st, "outUntil"));
		if (json_integer_value(json_object_get(st, "failures")) > 0)
			printf(", %lld failures in a row",
			    (long long)json_integer_value(json_object_get(st,
			    "failures")));
		if (json_is_string(json_object_get(st, "lastError")))
			printf("; last error: %s", cli_str(st, "lastError"));
		/* A daemon that died keeps no breaker. */
		if (pid > 0 && kill(pid, 0) == -1 && errno == ESRCH)
			printf(" (msgspoold is not running)");
		printf("\n");
		json_decref(st);
	}
	route_table_free(t);
	return 0;
}

static int
cmd_status(struct cli *c, int argc, char **argv)
{
	int	rc;

	(void)argc;
	(void)argv;
	rc = routes(c);
	if (sessions(c) == 0)
		printf("no sessions: no section has provider smpp\n");
	return rc;
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

	int		 r;

	(void)argc;
	/* Not a message sent: one received, or none. */
	if (spool_find(c->spool, argv[0], &dir, name) == -1 &&
	    (r = cli_show_inbound(c, argv[0])) != -1)
		return r;
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

/* Looks at a message that moves, or that another holds, before giving up. */
#define RETRY_TRIES	5

/*
 * spool_retry, again a little later each time while another holds the
 * message (a client's cancel, a daemon recording a try: a third of a
 * second in all).  What spool_retry returns; errno EBUSY when it stayed
 * held.
 */
static int
retry_held(struct cli *c, enum spool_dir dir, const char *name, int flags,
    char *err, size_t errlen)
{
	int	r, tries;

	for (tries = 0; (r = spool_retry(c->spool, dir, name, flags,
	    time(NULL), err, errlen)) == -1 && errno == EBUSY &&
	    tries < RETRY_TRIES; tries++)
		usleep(10000 << tries);
	return r;
}

/* The reason a retry failed, on one line of stderr. */
static void
retry_failed(const char *what, int e, const char *err)
{
	if (e == EBUSY)
		fprintf(stderr, "msgspool: retry: %s is held by a cancel or "
		    "a daemon recording a try, not retried\n", what);
	else
		fprintf(stderr, "msgspool: retry: %s\n", err);
}

/*
 * Retry the message id wherever it is now, looked up again when it
 * moves meanwhile (msgspool(8), retry).  0, or 1 with the reason on
 * stderr.
 */
static int
retry_id(struct cli *c, const char *id)
{
	enum spool_dir	dir;
	char		name[SPOOL_NAME_MAX], err[512];
	int		tries;

	for (tries = 0; tries < RETRY_TRIES; tries++) {
		if (find(c, "retry", id, &dir, name) == -1)
			return 1;
		if (dir == SPOOL_NEW)
			return 0;	/* queued already: left alone */
		if (dir != SPOOL_FAILED && dir != SPOOL_DEFERRED) {
			fprintf(stderr, "msgspool: retry: %s is in %s/, "
			    "not retried\n", id, spool_dirname(dir));
			return 1;
		}
		if (retry_held(c, dir, name, 0, err, sizeof(err)) == 0)
			return 0;
		if (errno != ENOENT && errno != EAGAIN) {
			retry_failed(id, errno, err);
			return 1;
		}
	}
	fprintf(stderr, "msgspool: retry: %s keeps moving, not retried\n", id);
	return 1;
}

static int
cmd_retry(struct cli *c, int argc, char **argv)
{
	char		 err[512], **names;
	ssize_t		 n, i;
	size_t		 done = 0;
	int		 rc = 0, a, r;

	if (argc == 1 && strcmp(argv[0], "--failed") == 0) {
		if ((n = spool_list(c->spool, SPOOL_FAILED, &names)) == -1) {
			fprintf(stderr, "msgspool: failed/: %s\n",
			    strerror(errno));
			return 1;
		}
		for (i = 0; i < n; i++) {
			/* A client canceled it: only a retry by id undoes
			 * that.  Gone meanwhile: another took it. */
			if ((r = retry_held(c, SPOOL_FAILED, names[i],
			    SPOOL_RETRY_NOT_CANCELED, err, sizeof(err))) == 0)
				done++;
			else if (r == -1 && errno != ENOENT &&
			    errno != EAGAIN) {
				retry_failed(names[i], errno, err);
				rc = 1;
			}
		}
		printf("%zu message%s requeued\n", done, done == 1 ? "" :
		    "s");
		spool_names_free(names, (size_t)n);
		return rc;
	}
	for (a = 0; a < argc; a++)
		if (retry_id(c, argv[a]) != 0)
			rc = 1;
	return rc;
}

/*
 * Delete the message id wherever it is now, looked up again when it
 * moves meanwhile; one in cur/ is being sent.  0, or 1 with the reason
 * on stderr.
 */
static int
delete_id(struct cli *c, const char *id)
{
	enum spool_dir	dir;
	json_t		*doc;
	char		name[SPOOL_NAME_MAX];
	int		tries;

	for (tries = 0; tries < RETRY_TRIES; tries++) {
		if (find(c, "delete", id, &dir, name) == -1)
			return 1;
		if (dir == SPOOL_CUR) {
			fprintf(stderr, "msgspool: delete: %s is being sent "
			    "(cur/)\n", id);
			return 1;
		}
		/* Whose it is, for its client's list (list.h). */
		doc = spool_load(c->spool, dir, name, NULL, 0);
		if (spool_remove(c->spool, dir, name) == 0) {
			blob_remove(c->spool, name);	/* its attachments */
			if (doc != NULL && msgdoc_client(doc) != NULL &&
			    list_note_gone(c->spool, msgdoc_client(doc),
			    id) == -1)
				fprintf(stderr, "msgspool: delete: %s: the "
				    "list of %s: %s (msgspool reindex mends "
				    "it)\n", id, msgdoc_client(doc),
				    strerror(errno));
			json_decref(doc);
			return 0;
		}
		json_decref(doc);
		if (errno != ENOENT) {
			fprintf(stderr, "msgspool: delete: %s: %s\n", id,
			    strerror(errno));
			return 1;
		}
	}
	fprintf(stderr, "msgspool: delete: %s keeps moving, not deleted\n",
	    id);
	return 1;
}

static int
cmd_delete(struct cli *c, int argc, char **argv)
{
	int	rc = 0, a;

	for (a = 0; a < argc; a++)
		if (delete_id(c, argv[a]) != 0)
			rc = 1;
	return rc;
}

/*
 * Build every client's list again from the spool's files (msgspool(8),
 * reindex), with progress on a terminal.
 */
static int
cmd_reindex(struct cli *c, int argc, char **argv)
{
	struct timespec	t0, t1;
	char		err[512];
	ssize_t		n;

	(void)argc;
	(void)argv;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	n = list_reindex(c->spool, cli_progress, NULL, err, sizeof(err));
	cli_progress_end(NULL);
	if (n == -1) {
		fprintf(stderr, "msgspool: reindex: %s\n", err);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%zd messages listed in %.1f s\n", n, (double)(t1.tv_sec -
	    t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}

static const struct verb verbs[] = {
	{ "list", 0, 1, 1, "list [STATE] | list --inbound", cmd_list },
	{ "show", 1, 1, 1, "show ID", cmd_show },
	{ "status", 0, 0, 1, "status", cmd_status },
	{ "retry", 1, -1, 1, "retry ID... | retry --failed", cmd_retry },
	{ "delete", 1, -1, 1, "delete ID...", cmd_delete },
	{ "reindex", 0, 0, 1, "reindex", cmd_reindex },
	{ "key", 2, 4, 0, "key add CLIENT SCOPES [--test] | key disable CLIENT",
	    cmd_key },
	{ "events", 0, -1, 1, "events | events resend ID... | "
	    "events resend --all", cmd_events },
	{ "webhook-secret", 1, 1, 0, "webhook-secret CLIENT",
	    cmd_webhook_secret },
	{ "suppress", 1, 4, 1, "suppress list [CLIENT] | suppress add CLIENT "
	    "CHANNEL ADDRESS | suppress remove CLIENT CHANNEL ADDRESS",
	    cmd_suppress },
	{ "erase", 1, 3, 1, "erase ADDRESS [--client ID]", cmd_erase },
};

static void
usage(void)
{
	size_t	i;

	fprintf(stderr, "usage: msgspool [-c FILE] COMMAND\n"
	    "       msgspool -V | --version\n");
	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		fprintf(stderr, "       msgspool %s\n", verbs[i].usage);
}

/*
 * A usage error: why, on one line (msgspool(8), EXIT STATUS), with the
 * commands there are; -h prints them whole.  Returns 1.
 */
static int
usage_error(const char *why, const char *arg)
{
	size_t	i;

	fprintf(stderr, "msgspool: %s%s%s%s; commands:", why, arg ? " '" : "",
	    arg ? arg : "", arg ? "'" : "");
	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		fprintf(stderr, "%s %s", i ? "," : "", verbs[i].name);
	fprintf(stderr, " (msgspool -h)\n");
	return 1;
}

static const struct option longopts[] = {
	{ "version",	no_argument,	NULL,	'V' },
	{ NULL,		0,		NULL,	0 }
};

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
	opterr = 0;	/* one line of our own, not getopt's and the usage */
	while ((ch = getopt_long(argc, argv, "+:c:hV", longopts, NULL)) !=
	    -1) {
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 'h':
			usage();
			return 0;
		case 'V':
			/* The newest entry of debian/changelog (Makefile). */
			printf("msgspool %s\n", MSGSPOOL_VERSION);
			return 0;
		case ':':
			return usage_error("-c needs a FILE", NULL);
		default:
			snprintf(err, sizeof(err), "-%c", optopt);
			return usage_error("unknown option", err);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		return usage_error("no command", NULL);
	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(verbs[i].name, argv[0]) == 0)
			v = &verbs[i];
	nargs = argc - 1;
	if (v == NULL || nargs < v->min || (v->max != -1 && nargs > v->max)) {
		if (v == NULL)
			return usage_error("unknown command", argv[0]);
		fprintf(stderr, "usage: msgspool %s\n", v->usage);
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
