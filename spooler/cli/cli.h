/*
 * cli.h: what the msgspool CLI's files share (msgspool(8)).
 */
#ifndef CLI_H
#define CLI_H

#include <jansson.h>

struct config;
struct spool;

struct cli {
	struct config	*cfg;
	struct spool	*spool;		/* NULL for a verb without one */
};

/* A string member of o, or "-" when it has none. */
const char	*cli_str(const json_t *o, const char *key);

/*
 * cli_inbox.c: the inbound messages (list --inbound), and one of them
 * shown (show ID): 0, 1 on failure (said on stderr), -1 when there is
 * no inbound message id.
 */
int		 cli_list_inbound(struct cli *);
int		 cli_show_inbound(struct cli *, const char *id);

/* The verbs of cli_admin.c: key, events, webhook-secret. */
int		 cmd_key(struct cli *, int argc, char **argv);
int		 cmd_events(struct cli *, int argc, char **argv);
int		 cmd_webhook_secret(struct cli *, int argc, char **argv);

/* cli_suppress.c: suppress list, suppress add, suppress remove. */
int		 cmd_suppress(struct cli *, int argc, char **argv);

/* cli_erase.c: erase ADDRESS [--client ID]: 0, 1 (an error), 2 (busy). */
int		 cmd_erase(struct cli *, int argc, char **argv);

#endif
