/*
 * fuzz_bounce: msgspool-bounce's reading of a bounce (spooler/
 * msgspool-bounce.c, included here with its main renamed), which anyone
 * who can mail the bounce address feeds.  The input is the message: it
 * is parsed with GMime and visited as the program does, its id looked
 * for in its headers, and what the report says is stored as a receipt
 * for a message of a scratch spool.  Besides memory errors: an id found
 * is a valid one; a report read is stored (EX_OK) by a healthy spool
 * whatever its bytes, since a bounce refused for ever as "try again"
 * (EX_TEMPFAIL) would sit in the MTA's queue until it expires; and a
 * failure's receipt has its error.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzzutil.h"

int	bounce_main(int, char *[], char *[]);
#define main bounce_main
#include "spooler/bounce/msgspool-bounce.c"
#undef main

#include "base/ulid.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define ID	"01J0000000000000000000FVZZ"

static struct spool	*spool;
static char		 receipts[FUZZ_PATH_MAX];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char	dir[FUZZ_PATH_MAX], root[FUZZ_PATH_MAX], err[256];

	(void)argc;
	(void)argv;
	fuzz_scratch(dir, sizeof(dir), "bounce");
	fuzz_path(root, "%s/spool", dir);
	if ((spool = spool_open(root, 1, err, sizeof(err))) == NULL)
		fuzz_fail("spool_open: %s", err);
	fuzz_path(receipts, "%s/receipts", root);
	g_mime_init();
	return 0;
}

/*
 * A failure's receipt carries its error, {"code", "message"}: the
 * Status and Diagnostic-Code the client is to see (the header comment
 * of msgspool-bounce.c).
 */
static void
check_error(void)
{
	DIR		*dir;
	struct dirent	*de;
	json_t		*doc;
	char		 err[256];
	int		 n = 0;

	if ((dir = opendir(receipts)) == NULL)
		fuzz_fail("no receipts/ after a failure");
	while ((de = readdir(dir)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		n++;
		if ((doc = spool_area_load(spool, "receipts", de->d_name, err,
		    sizeof(err))) == NULL)
			fuzz_fail("receipts/%s: %s", de->d_name, err);
		if (!json_is_string(json_object_get(json_object_get(doc,
		    "error"), "message")))
			fuzz_fail("a failure stored without its error");
		json_decref(doc);
	}
	closedir(dir);
	if (n != 1)
		fuzz_fail("%d receipts for one failure", n);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dsn	 d;
	GMimeStream	*in;
	GMimeParser	*parser;
	GMimeMessage	*msg;
	char		 id[SPOOL_ID_LEN + 1];
	int		 rc;

	memset(&d, 0, sizeof(d));
	in = g_mime_stream_mem_new_with_buffer((const char *)data, size);
	parser = g_mime_parser_new_with_stream(in);
	msg = g_mime_parser_construct_message(parser, NULL);
	g_object_unref(parser);
	g_object_unref(in);
	if (msg == NULL)
		return 0;
	g_mime_message_foreach(msg, visit, &d);
	id[0] = '\0';
	if (id_of_address(g_mime_object_get_header(GMIME_OBJECT(msg),
	    "To"), id) == 0 && !ulid_valid(id))
		fuzz_fail("id '%s' from To", id);
	if (d.id[0] != '\0' && !ulid_valid(d.id))
		fuzz_fail("id '%s' from the returned message", d.id);
	g_object_unref(msg);
	/* FUZZ_VERBOSE=1 when replaying: what the report was read as. */
	if (getenv("FUZZ_VERBOSE") != NULL)
		printf("seen %d, action '%s', status '%s', diagnostic '%s', "
		    "id '%s', returned id '%s'\n", d.seen, d.action, d.status,
		    d.diagnostic, id, d.id);
	if (!d.seen)
		return 0;
	if ((rc = store(spool, ID, &d)) != EX_OK)
		fuzz_fail("a report (action '%s', status '%s') not stored: "
		    "exit %d", d.action, d.status, rc);
	if (strcasecmp(d.action, "failed") == 0)
		check_error();
	fuzz_empty_dir(receipts, NULL);
	return 0;
}
