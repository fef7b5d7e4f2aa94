/*
 * cli_erase.c: msgspool erase ADDRESS [--client ID] (msgspool(8)): an
 * address erased from the whole spool, as a person may ask (GDPR,
 * article 17), what was removed printed a line each
 * (msgspool-spool(5), Erasure).  The work is lib/spool/erase.c's; here
 * the arguments, the file providers' directories from the config, and
 * what is printed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/channel.h"
#include "base/config.h"
#include "base/valid.h"
#include "cli/cli.h"
#include "cli/cli_progress.h"
#include "spool/erase.h"
#include "spool/spool.h"

#define ERASE_USAGE	"erase ADDRESS [--client ID]"
/* How long a message msgspoold holds is waited for (msgspool(8)). */
#define ERASE_BUSY_MS	5000
/* The file providers' directories, at most: one a channel's section. */
#define ERASE_OUTBOX_MAX	64

/* Each file removed on stdout; what is left, and why, on stderr. */
static void
report(void *arg, enum erase_report what, const char *where,
    const char *why)
{
	(void)arg;
	cli_progress_end(NULL);
	if (what == ERASE_REMOVED)
		printf("%s\n", where);
	else
		fprintf(stderr, "msgspool: erase: %s: %s%s\n", where, why,
		    what == ERASE_BUSY ? "; left, erase again later" : "");
}

/* Whether path names the directory of one of the n paths of v. */
static int
seen(char **v, size_t n, const char *path)
{
	struct stat	a, b;
	size_t		i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i], path) == 0 || (stat(v[i], &a) == 0 &&
		    stat(path, &b) == 0 && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino))
			return 1;
	return 0;
}

/*
 * The directories the file provider writes (msgspool.conf(5), Provider
 * file): outbox/ in the spool, and the dir of each channel's section
 * whose provider is file, the default.  NULL-ended into v; how many.
 */
static size_t
outboxes(struct cli *c, char **v, size_t max)
{
	const char	*sec, *p;
	char		*path;
	size_t		 i, n = 0;

	if (asprintf(&path, "%s/outbox", spool_root(c->spool)) != -1)
		v[n++] = path;
	for (i = 0; (sec = config_section(c->cfg, i)) != NULL && n + 1 < max;
	    i++) {
		if (channel_of_section(sec) == -1 || ((p = config_get(c->cfg,
		    sec, "provider")) != NULL && strcmp(p, "file") != 0) ||
		    (path = config_path(c->cfg, sec, "dir", NULL)) == NULL)
			continue;
		if (seen(v, n, path))
			free(path);
		else
			v[n++] = path;
	}
	v[n] = NULL;
	return n;
}

int
cmd_erase(struct cli *c, int argc, char **argv)
{
	struct erase_addr	 a;
	struct erase_opts	 o;
	struct erase_counts	 n;
	const char		*addr = NULL, *client = NULL;
	char			*dirs[ERASE_OUTBOX_MAX + 1];
	size_t			 ndirs, i;
	int			 k, rc;

	for (k = 0; k < argc; k++) {
		if (strcmp(argv[k], "--client") == 0 && k + 1 < argc &&
		    client == NULL)
			client = argv[++k];
		else if (argv[k][0] != '-' && addr == NULL)
			addr = argv[k];
		else
			break;
	}
	if (addr == NULL || k < argc) {
		fprintf(stderr, "usage: msgspool " ERASE_USAGE "\n");
		return 1;
	}
	if (client != NULL && !valid_client_id(client)) {
		fprintf(stderr, "msgspool: erase: '%s' is not a client id\n",
		    client);
		return 1;
	}
	if (erase_addr_parse(addr, &a) == -1) {
		fprintf(stderr, "msgspool: erase: '%s' is neither a phone "
		    "number ('+' and 8 to 15 digits, or the digits) nor an "
		    "email address\n", addr);
		return 1;
	}
	ndirs = outboxes(c, dirs, ERASE_OUTBOX_MAX);
	memset(&o, 0, sizeof(o));
	o.client = client;
	o.cfg = c->cfg;
	o.outboxes = (const char *const *)dirs;
	o.busy_ms = ERASE_BUSY_MS;
	o.report = report;
	o.progress = cli_progress;
	rc = erase_run(c->spool, &a, &o, &n);
	cli_progress_end(NULL);
	for (i = 0; i < ndirs; i++)
		free(dirs[i]);
	if (rc == -1) {
		fprintf(stderr, "msgspool: erase: %s: %s\n",
		    spool_root(c->spool), strerror(errno));
		return 1;
	}
	if (n.listed > 0)
		printf("lists: %zu entr%s\n", n.listed, n.listed == 1 ? "y" :
		    "ies");
	if (n.removed == 0 && n.listed == 0 && n.busy == 0 && n.failed == 0) {
		printf("nothing names %s\n", a.key);
		return 0;
	}
	printf("erased %s: %zu file%s (%zu message%s, %zu inbound), %zu "
	    "list entr%s", a.key, n.removed, n.removed == 1 ? "" : "s",
	    n.messages, n.messages == 1 ? "" : "s", n.inbound, n.listed,
	    n.listed == 1 ? "y" : "ies");
	if (n.busy > 0)
		printf("; %zu busy, left", n.busy);
	if (n.failed > 0)
		printf("; %zu failed", n.failed);
	printf("\n");
	return n.failed > 0 ? 1 : n.busy > 0 ? 2 : 0;
}
