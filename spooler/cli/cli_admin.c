/*
 * cli_admin.c: the msgspool verbs that administer rather than inspect
 * (msgspool(8)): keys, failed webhook events, webhook secrets.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/config.h"
#include "base/util.h"
#include "cli/cli.h"
#include "content/keys.h"
#include "spool/event.h"
#include "spool/spool.h"

static char *
keys_file(struct cli *c)
{
	return config_path(c->cfg, NULL, "keys", "keys");
}

int
cmd_key(struct cli *c, int argc, char **argv)
{
	char	 key[64], err[1024], *path;
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
int
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
			printf("%-26s %-16s %-20s %3lld %s\n", cli_str(ev, "id"),
			    cli_str(ev, "client"), cli_str(ev, "type"),
			    event_attempts(ev), cli_str(ev, "lastError"));
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
 * webhook-secret CLIENT: a new secret into the client's
 * webhook-secret-file, printed once.  The file keeps its owner, group
 * and mode (0600 when there was none): msgspoold, which may run as
 * another user, reads it at its next try of each event.
 */
int
cmd_webhook_secret(struct cli *c, int argc, char **argv)
{
	char	 section[128], err[1024], *path, *secret, *line;

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
	if (asprintf(&line, "%s\n", secret) == -1) {
		fprintf(stderr, "msgspool: webhook-secret: out of memory\n");
		free(secret);
		free(path);
		return 1;
	}
	if (util_replace_file(path, line, strlen(line), 0600, err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "msgspool: webhook-secret: %s\n", err);
		free(line);
		free(secret);
		free(path);
		return 1;
	}
	free(line);
	printf("%s\n", secret);
	free(secret);
	free(path);
	return 0;
}
