/*
 * erase_impl.h: what erase.c (the address, the ids erased, reading and
 * reporting, the run) and erase_files.c (the files of each state and
 * area, removed under their locks) share; nothing else sees it.
 */
#ifndef ERASE_IMPL_H
#define ERASE_IMPL_H

#include <stddef.h>
#include <sys/types.h>

#include "spool/erase.h"
#include "spool/spool.h"

/* Who a file of an area belongs to, for --client. */
enum owner {
	OWNER_NONE,	/* no one says: with a client, only an erased id */
	OWNER_MEMBER,	/* its "client" member */
	OWNER_NUMBER	/* the client whose inbound key lists its "to" */
};

/* A file another held when it was to be erased. */
struct held {
	char	 name[SPOOL_NAME_MAX];
	int	 inbox;		/* in inbox/, else in a state */
	char	 area[32];	/* or in that area, reported busy once */
	enum { HELD, GONE, BUSY } state;  /* BUSY: reported, left alone */
};

/* One erase_run. */
struct run {
	struct spool		*s;
	const struct erase_addr	*a;
	const struct erase_opts	*o;
	struct erase_counts	*c;
	char			(*ids)[SPOOL_ID_LEN + 1]; /* erased, sorted */
	size_t			 nids, capids;
	struct held		*held;
	size_t			 nheld, capheld;
};

/* erase.c: the ids of the messages erased. */
void		 erase_add_id(struct run *, const char *name);
/* Whether the SPOOL_ID_LEN bytes at p are an id erased. */
int		 erase_is_erased(struct run *, const char *p);
/* Whether the text names an erased id: a word of 26 id bytes. */
int		 erase_names_id(struct run *, const char *p, size_t len);

/* The names in a directory, sorted; dot names left out.  -1 on error. */
ssize_t		 erase_names_of(int dfd, char ***out);
/* Count and report dir/name (what, why: erase_opts's report). */
void		 erase_tell(struct run *, enum erase_report what,
		    const char *dir, const char *name, const char *why);
void		 erase_progress(struct run *, const char *what, size_t done,
		    size_t total);
/*
 * dfd/name read whole into *text (the caller frees): 1; 0 when it is
 * gone or no regular file (not ours to read); -1 reported as failed.
 */
int		 erase_slurp(struct run *, int dfd, const char *label,
		    const char *name, char **text, size_t *len);
/* Whether a file naming the address is of the client erased for. */
int		 erase_of_client(struct run *, enum owner how, const char *text,
		    size_t len);

/*
 * erase_files.c: the messages of every state and the inbound messages,
 * each under its lock, those held looked at again for wait_ms, tmp/'s
 * leftovers; then what names the address or an erased message in the
 * areas beside them and the file providers' directories.
 */
void		 erase_messages(struct run *, long wait_ms);
void		 erase_dependents(struct run *);

#endif
