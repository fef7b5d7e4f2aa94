/*
 * spooldir.h: a spool in a scratch directory as a cmocka fixture, and
 * checks of the files in its state directories (spooldir.c).
 */
#ifndef MSGSPOOL_SPOOLDIR_H
#define MSGSPOOL_SPOOLDIR_H

#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include <jansson.h>

#include "spool/spool.h"
#include "testutil.h"

/* The names of the state directories, by enum spool_dir. */
extern const char *const state_names[SPOOL__MAX];

struct fixture {
	char		 dir[TU_DIR_SIZE];	/* first: see testutil.h */
	char		 root[128];		/* dir/spool */
	struct spool	*sp;			/* open on root, created */
};

/*
 * cmocka setup and teardown: setup_dir makes dir and dir/spool, nothing
 * in it; setup_spool also a created spool open on it (sp); teardown
 * frees the spool and removes dir.
 */
int	 setup_dir(void **state);
int	 setup_spool(void **state);
int	 teardown(void **state);

/* The path of root/state (name NULL) or root/state/name in buf. */
void	 state_path(const struct fixture *f, enum spool_dir d,
	    const char *name, char *buf, size_t len);

/* Entries of root/state, not counting "." and "..". */
size_t	 count_entries(const struct fixture *f, enum spool_dir d);

/* Whether root/state/name exists. */
int	 exists(const struct fixture *f, enum spool_dir d, const char *name);

/* The process's umask, which the modes of new files go through. */
mode_t	 spool_umask(void);

/* The JSON of the file at path (a new reference), or the test fails. */
json_t	*load_path(const char *path);

/*
 * The file name in d is a regular file that holds doc: its writer's,
 * readable by the group at most (SPOOL_FILE_MODE less the umask).
 */
void	 assert_on_file(const struct fixture *f, enum spool_dir d,
	    const char *name, const json_t *doc);

/* A fresh document with a new id (copied to id). */
json_t	*new_doc(char *id, const char *body, time_t notbefore);

/*
 * Enqueue a fresh document with body into dest; its id in id, its file
 * name in name.  The document, for the caller to free.
 */
json_t	*enqueue(const struct fixture *f, enum spool_dir dest,
	    const char *body, char *id, char *name, size_t namelen);

#endif
