/*
 * cli_suppress.c: msgspool suppress (msgspool(8)): each client's
 * suppression lists, listed, added to and lifted by the operator, as the
 * /suppressions API does for a client (msgspool-spool(5),
 * Suppressions).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/channel.h"
#include "base/valid.h"
#include "cli/cli.h"
#include "spool/spool.h"
#include "spool/suppress.h"

#define SUPPRESS_USAGE	"suppress list [CLIENT] | suppress add CLIENT " \
			"CHANNEL ADDRESS | suppress remove CLIENT CHANNEL " \
			"ADDRESS"

/* A reason on one line: control characters shown as blanks. */
static void
print_reason(const char *s)
{
	if (s == NULL || *s == '\0') {
		putchar('-');
		return;
	}
	for (; *s != '\0'; s++)
		putchar((unsigned char)*s < 0x20 || *s == 0x7f ? ' ' : *s);
}

static int
list(struct cli *c, const char *client)
{
	json_t	*all, *s;
	size_t	 i;

	if (client != NULL && !valid_client_id(client)) {
		fprintf(stderr, "msgspool: suppress list: '%s' is not a client "
		    "id\n", client);
		return 1;
	}
	if ((all = suppress_list(c->spool, client, CHANNEL__MAX, NULL, 0,
	    NULL)) == NULL) {
		fprintf(stderr, "msgspool: suppress list: %s\n",
		    strerror(errno));
		return 1;
	}
	printf("%-16s %-7s %-24s %-11s %-20s %s\n", "CLIENT", "CHANNEL",
	    "ADDRESS", "SOURCE", "CREATED", "REASON");
	json_array_foreach(all, i, s) {
		printf("%-16s %-7s %-24s %-11s %-20s ", client != NULL ? client :
		    cli_str(s, "client"), cli_str(s, "channel"),
		    cli_str(s, "address"), cli_str(s, "source"),
		    cli_str(s, "createdAt"));
		print_reason(json_string_value(json_object_get(s, "reason")));
		putchar('\n');
	}
	printf("%zu suppression%s\n", json_array_size(all),
	    json_array_size(all) == 1 ? "" : "s");
	json_decref(all);
	return 0;
}

/* add or remove CLIENT CHANNEL ADDRESS. */
static int
change(struct cli *c, const char *verb, char **argv)
{
	json_t	*had;
	char	 norm[SUPPRESS_ADDR_MAX];
	int	 ch, rc;

	if (!valid_client_id(argv[0])) {
		fprintf(stderr, "msgspool: suppress %s: '%s' is not a client "
		    "id\n", verb, argv[0]);
		return 1;
	}
	if ((ch = channel_parse(argv[1])) == -1) {
		fprintf(stderr, "msgspool: suppress %s: '%s' is not a channel "
		    "(sms, ott, email, voice)\n", verb, argv[1]);
		return 1;
	}
	if (suppress_normalize((enum channel)ch, argv[2], norm,
	    sizeof(norm)) == -1) {
		fprintf(stderr, "msgspool: suppress %s: '%s' is not an address "
		    "of %s\n", verb, argv[2], argv[1]);
		return 1;
	}
	if (strcmp(verb, "add") == 0) {
		rc = suppress_add(c->spool, argv[0], (enum channel)ch, norm,
		    "manual", NULL, &had);
		if (rc == -1) {
			fprintf(stderr, "msgspool: suppress add: %s\n",
			    strerror(errno));
			return 1;
		}
		if (rc == 1)
			printf("suppressed %s on %s for %s\n", norm, argv[1],
			    argv[0]);
		else
			printf("%s was suppressed on %s for %s already (%s)\n",
			    norm, argv[1], argv[0], cli_str(had, "source"));
		json_decref(had);
		return 0;
	}
	rc = suppress_remove(c->spool, argv[0], (enum channel)ch, norm, NULL);
	if (rc == -1) {
		fprintf(stderr, "msgspool: suppress remove: %s\n",
		    strerror(errno));
		return 1;
	}
	if (rc == 1) {
		fprintf(stderr, "msgspool: suppress remove: %s is not suppressed "
		    "on %s for %s\n", norm, argv[1], argv[0]);
		return 1;
	}
	printf("removed %s on %s for %s\n", norm, argv[1], argv[0]);
	return 0;
}

int
cmd_suppress(struct cli *c, int argc, char **argv)
{
	if (strcmp(argv[0], "list") == 0 && argc <= 2)
		return list(c, argc == 2 ? argv[1] : NULL);
	if ((strcmp(argv[0], "add") == 0 || strcmp(argv[0], "remove") == 0) &&
	    argc == 4)
		return change(c, argv[0], argv + 1);
	fprintf(stderr, "usage: msgspool " SUPPRESS_USAGE "\n");
	return 1;
}
