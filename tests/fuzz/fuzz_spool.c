/*
 * fuzz_spool: the spool loader (lib/spool/spool.c).  The input is written as a
 * message file in new/, read with spool_load, then claimed with
 * spool_claim as msgspoold does; and written as an upload, read with
 * spool_upload_load.  Besides memory errors: a document either loader
 * returns is a version 1 object whose "id" is the id of its file name
 * (msgspool-spool(5); a provider builds paths from it), the two agree
 * on what they take, and a claim moves the file to cur/ whatever it
 * holds, so that msgspoold can move a bad one on to failed/.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzzutil.h"
#include "spool/spool.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define ID	"01J0000000000000000000FVZZ"
#define NAME	ID ".json"

static struct spool	*spool;
static char		 new_path[FUZZ_PATH_MAX], cur_path[FUZZ_PATH_MAX];
static char		 upload_path[FUZZ_PATH_MAX];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char	dir[FUZZ_PATH_MAX], root[FUZZ_PATH_MAX], err[256];

	(void)argc;
	(void)argv;
	fuzz_scratch(dir, sizeof(dir), "spool");
	fuzz_path(root, "%s/spool", dir);
	if ((spool = spool_open(root, 1, err, sizeof(err))) == NULL)
		fuzz_fail("spool_open: %s", err);
	fuzz_path(new_path, "%s/new/%s", root, NAME);
	fuzz_path(cur_path, "%s/cur/%s", root, NAME);
	fuzz_path(upload_path, "%s/uploads/acme", root);
	fuzz_path(dir, "%s/uploads", root);
	if (mkdir(dir, 0700) == -1 || mkdir(upload_path, 0700) == -1)
		fuzz_fail("mkdir %s: %s", upload_path, strerror(errno));
	fuzz_path(upload_path, "%s/uploads/acme/%s", root, NAME);
	return 0;
}

static void
check_doc(const json_t *doc, const char *who)
{
	const char	*id;

	if (!json_is_object(doc))
		fuzz_fail("%s: not an object", who);
	if (json_integer_value(json_object_get(doc, "version")) !=
	    MSGDOC_VERSION)
		fuzz_fail("%s: version is not %d", who, MSGDOC_VERSION);
	id = json_string_value(json_object_get(doc, "id"));
	if (id == NULL || strcmp(id, ID) != 0)
		fuzz_fail("%s: id '%s' in file %s", who, id ? id : "(none)",
		    NAME);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t	*loaded, *claimed, *up;
	char	 err[512];
	int	 fd;

	fuzz_write_file(new_path, data, size);
	if ((loaded = spool_load(spool, SPOOL_NEW, NAME, err,
	    sizeof(err))) != NULL)
		check_doc(loaded, "spool_load");

	err[0] = '\0';
	if ((fd = spool_claim(spool, NAME, &claimed, err, sizeof(err))) == -1)
		fuzz_fail("spool_claim: %s", strerror(errno));
	if (access(new_path, F_OK) == 0 || access(cur_path, F_OK) == -1)
		fuzz_fail("the claimed file is not in cur/ alone");
	if (claimed != NULL)
		check_doc(claimed, "spool_claim");
	else if (err[0] == '\0')
		fuzz_fail("spool_claim refused the file without a reason");
	if ((loaded == NULL) != (claimed == NULL))
		fuzz_fail("spool_load %s it, spool_claim %s it",
		    loaded ? "takes" : "refuses", claimed ? "takes" : "refuses");
	close(fd);
	unlink(cur_path);
	json_decref(loaded);
	json_decref(claimed);

	/* An upload is read by the client that made it, by its id. */
	fuzz_write_file(upload_path, data, size);
	if ((up = spool_upload_load(spool, "acme", ID)) != NULL) {
		if (!json_is_object(up))
			fuzz_fail("spool_upload_load: not an object");
		json_decref(up);
	}
	unlink(upload_path);
	return 0;
}
