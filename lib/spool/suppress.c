/*
 * suppress.c: each client's suppression lists (suppress.h;
 * msgspool-spool(5), Suppressions).  The one file that knows a
 * suppression's document and where it lives:
 *
 *	suppressions/CLIENT/CHANNEL/NAME.json
 *	{"version":1, "id", "channel", "address", "source", "reason",
 *	 "createdAt"}
 *
 * NAME is the normalized address with every byte but letters, digits
 * and "@.+_-" escaped as %XX, so a lookup is one open of a path made
 * from what the caller has, and the list of a channel is ls.  "id" is
 * when the suppression was made, in nanoseconds since the epoch as 16
 * hex digits, and 8 random ones: lists sort by it (newest first) and a
 * page's cursor is the last one's.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "base/log.h"
#include "base/rfc3339.h"
#include "base/util.h"
#include "base/valid.h"
#include "spool/spool.h"
#include "spool/spool_impl.h"
#include "spool/suppress.h"
#include "spool/suppress_impl.h"

#define DOC_VERSION	1
#define DOC_MAX		(16 * 1024)	/* a suppression's file, at most */
#define NAME_LEN	256		/* a file name and its NUL */
/* An escaped address longer than this is cut and a digest added. */
#define PLAIN_MAX	200
#define CUT_LEN		160
_Static_assert(PLAIN_MAX + sizeof(".json") <= NAME_LEN &&
    CUT_LEN + 1 + 2 * 32 + sizeof(".json") <= NAME_LEN,
    "a file name of suppress.c fits NAME_LEN");

int
suppress_key_valid(const char *s)
{
	return s != NULL && strlen(s) == SUPPRESS_KEY_LEN &&
	    strspn(s, "0123456789ABCDEF") == SUPPRESS_KEY_LEN;
}

/* A new "id" into key (SUPPRESS_KEY_LEN + 1 bytes): now, and random bits. */
static void
key_new(char *key)
{
	struct timespec	ts;
	uint32_t	r;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (uint32_t)getpid() ^ (uint32_t)ts.tv_nsec;
	snprintf(key, SUPPRESS_KEY_LEN + 1, "%016llX%08X",
	    (unsigned long long)ts.tv_sec * 1000000000ULL +
	    (unsigned long long)ts.tv_nsec, (unsigned)r);
}

static const char *const sources[] = { "manual", "stop", "bounce",
    "unsubscribe" };

static int
source_valid(const char *s)
{
	size_t	i;

	for (i = 0; s != NULL && i < sizeof(sources) / sizeof(sources[0]);
	    i++)
		if (strcmp(s, sources[i]) == 0)
			return 1;
	return 0;
}

int
suppress_normalize(enum channel ch, const char *addr, char *out,
    size_t outlen)
{
	size_t	len, i;
	char	*at;

	if (addr == NULL)
		return -1;
	len = strlen(addr);
	switch (ch) {
	case CHANNEL_SMS:
	case CHANNEL_VOICE:
		if (valid_e164(addr, len) != NULL)
			return -1;
		break;
	case CHANNEL_OTT:
		/* Digits, country code first; a '+' before them is dropped. */
		if (addr[0] == '+') {
			addr++;
			len--;
		}
		if (valid_msisdn(addr, len) != NULL)
			return -1;
		break;
	case CHANNEL_EMAIL:
		if (valid_email(addr, len) != NULL)
			return -1;
		break;
	default:
		return -1;
	}
	if (len >= outlen)
		return -1;
	memcpy(out, addr, len + 1);
	/* A domain's case means nothing; a local part's may. */
	if (ch == CHANNEL_EMAIL && (at = strchr(out, '@')) != NULL)
		for (i = 1; at[i] != '\0'; i++)
			at[i] = (char)tolower((unsigned char)at[i]);
	return 0;
}

/*
 * The file name of a normalized address into out (NAME_LEN bytes):
 * "NAME.json", NAME the address with unsafe bytes as %XX; one over
 * PLAIN_MAX is cut to CUT_LEN and "~" and its SHA-256 in hex added
 * ('~' is escaped in every other name, so the two never meet).
 */
static void
file_name(const char *addr, char *out)
{
	static const char	 hex[] = "0123456789ABCDEF";
	struct sha256_ctx	 ctx;
	uint8_t			 d[SHA256_DIGEST_SIZE];
	char			 esc[3 * SUPPRESS_ADDR_MAX + 1];
	size_t			 i, n = 0;
	unsigned char		 c;

	for (i = 0; addr[i] != '\0' && n + 3 < sizeof(esc); i++) {
		c = (unsigned char)addr[i];
		if (c < 0x80 && (isalnum(c) || (strchr("@.+_-", c) != NULL &&
		    !(i == 0 && c == '.'))))
			esc[n++] = (char)c;
		else {
			esc[n++] = '%';
			esc[n++] = hex[c >> 4];
			esc[n++] = hex[c & 0xf];
		}
	}
	if (n <= PLAIN_MAX) {
		/* n + ".json" fits NAME_LEN: copied, not formatted. */
		memcpy(out, esc, n);
		memcpy(out + n, ".json", sizeof(".json"));
		return;
	}
	/* Not in the middle of an escape. */
	n = CUT_LEN;
	if (esc[n - 1] == '%')
		n -= 1;
	else if (esc[n - 2] == '%')
		n -= 2;
	esc[n] = '~';
	sha256_init(&ctx);
	sha256_update(&ctx, strlen(addr), (const uint8_t *)addr);
	sha256_digest(&ctx, sizeof(d), d);
	for (i = 0; i < sizeof(d); i++) {
		esc[n + 1 + 2 * i] = hex[d[i] >> 4];
		esc[n + 2 + 2 * i] = hex[d[i] & 0xf];
	}
	n += 1 + 2 * sizeof(d);
	memcpy(out, esc, n);
	memcpy(out + n, ".json", sizeof(".json"));
}

/* The directory fd of a client's list of a channel; -1 with errno. */
static int
list_dir(struct spool *s, const char *client, enum channel ch, int create)
{
	int	afd, cfd, fd, e;

	if ((afd = spool_area(s, SUPPRESS_AREA, create)) == -1)
		return -1;
	cfd = spool_subdir(afd, client, create);
	e = errno;
	close(afd);
	if (cfd == -1) {
		errno = e;
		return -1;
	}
	fd = spool_subdir(cfd, channel_info(ch)->name, create);
	e = errno;
	close(cfd);
	errno = e;
	return fd;
}

/*
 * The directory of client's list of ch as the NFS server has it now, for
 * a look-up or a removal: -1 with errno (ENOENT: no such list).  One path
 * look-up would do on a local disk; on NFS it may trust this host's cache
 * of "no such file" (a negative dentry) until its directory's attributes
 * time out (acdirmin, 30 s by default), so that a suppression another
 * host has just made goes unseen, and a message is sent, meanwhile
 * (tests/nfs/run.sh saw it of a STOP).  The open of a directory asks the
 * server for its attributes (close-to-open), which drops what this host
 * cached of the names in it: so each directory is opened in turn, from
 * the spool's root opened by its path (the one the spool opened, when
 * that was within the last second: a request's).  On a local disk it
 * costs a few opens of cached directories.
 */
static int
fresh_list_dir(struct spool *s, const char *client, enum channel ch)
{
	const char	*names[3];
	size_t		 i;
	int		 fd = s->rootfd, next, e;

	names[0] = SUPPRESS_AREA;
	names[1] = client;
	names[2] = channel_info(ch)->name;
	if (!spool_root_fresh(s) && (fd = open(s->root, O_RDONLY |
	    O_DIRECTORY | O_CLOEXEC)) == -1 &&
	    (fd = fcntl(s->rootfd, F_DUPFD_CLOEXEC, 0)) == -1)
		return -1;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		next = openat(fd, names[i], O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC);
		e = errno;
		if (fd != s->rootfd)
			close(fd);
		if ((fd = next) == -1) {
			errno = e;
			return -1;
		}
	}
	return fd;
}

/*
 * What the caller's arguments name: the normalized address into norm
 * (SUPPRESS_ADDR_MAX) and its file name into name (NAME_LEN).  0, or -1
 * with errno EINVAL.
 */
static int
target(const char *client, enum channel ch, const char *addr, char *norm,
    char *name)
{
	if (client == NULL || !valid_client_id(client) ||
	    channel_info(ch) == NULL ||
	    suppress_normalize(ch, addr, norm, SUPPRESS_ADDR_MAX) == -1) {
		errno = EINVAL;
		return -1;
	}
	file_name(norm, name);
	return 0;
}

/*
 * The public object of a suppression's document: {"channel","address",
 * "source","reason","createdAt"}, the document's id into id (when not
 * NULL).  NULL when the document is not one (of channel ch, and of
 * address addr when it is not NULL).
 */
static json_t *
public_of(const json_t *doc, enum channel ch, const char *addr, char *id)
{
	const char	*v, *a, *src, *at;
	json_t		*reason;

	if (!json_is_object(doc) ||
	    json_integer_value(json_object_get(doc, "version")) !=
	    DOC_VERSION ||
	    !suppress_key_valid(v = json_string_value(json_object_get(doc,
	    "id"))) ||
	    json_string_value(json_object_get(doc, "channel")) == NULL ||
	    strcmp(json_string_value(json_object_get(doc, "channel")),
	    channel_info(ch)->name) != 0 ||
	    (a = json_string_value(json_object_get(doc, "address"))) ==
	    NULL || (addr != NULL && strcmp(a, addr) != 0) ||
	    !source_valid(src = json_string_value(json_object_get(doc,
	    "source"))) ||
	    (at = json_string_value(json_object_get(doc, "createdAt"))) ==
	    NULL)
		return NULL;
	reason = json_object_get(doc, "reason");
	if (reason != NULL && !json_is_string(reason) && !json_is_null(reason))
		return NULL;
	if (id != NULL)
		snprintf(id, SUPPRESS_KEY_LEN + 1, "%s", v);
	return json_pack("{s:s, s:s, s:s, s:O, s:s}", "channel",
	    channel_info(ch)->name, "address", a, "source", src, "reason",
	    reason != NULL ? reason : json_null(), "createdAt", at);
}

json_t *
suppress_read(int fd, enum channel ch, const char *addr, const char *what,
    char *id)
{
	json_t	*doc, *pub;
	char	*buf;
	size_t	 len;
	int	 e;

	if (util_read_all(fd, DOC_MAX, &buf, &len) == -1) {
		e = errno;
		close(fd);
		log_err("suppress: %s: %s", what, strerror(e));
		errno = e;
		return NULL;
	}
	close(fd);
	doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
	free(buf);
	pub = public_of(doc, ch, addr, id);
	json_decref(doc);
	if (pub == NULL) {
		log_err("suppress: %s: not a suppression of ours", what);
		errno = EINVAL;
	}
	return pub;
}

/*
 * NULL for a look-up that failed with e at path: errno 0 when e says
 * there is no such list or file (nothing suppressed), else logged and
 * errno e.
 */
static json_t *
not_found(struct spool *s, const char *path, int e)
{
	if (e == ENOENT) {
		errno = 0;
		return NULL;
	}
	log_err("suppress: %s/%s: %s", s->root, path, strerror(e));
	errno = e;
	return NULL;
}

/* The suppression named name in the list dfd (path for the log). */
static json_t *
get_in(struct spool *s, int dfd, enum channel ch, const char *norm,
    const char *name, const char *path)
{
	int	fd;

	if ((fd = util_open_regular(dfd, name, 1)) == -1)
		return not_found(s, path, errno);
	return suppress_read(fd, ch, norm, path, NULL);
}

json_t *
suppress_get(struct spool *s, const char *client, enum channel ch,
    const char *addr)
{
	char	 norm[SUPPRESS_ADDR_MAX], name[NAME_LEN];
	char	 path[NAME_LEN + CLIENT_ID_MAX + 64];
	json_t	*sup;
	int	 dfd, e;

	if (target(client, ch, addr, norm, name) == -1)
		return NULL;
	snprintf(path, sizeof(path), "%s/%s/%s/%s", SUPPRESS_AREA, client,
	    channel_info(ch)->name, name);
	/* One look-up of a name, whatever the list's size. */
	if ((dfd = fresh_list_dir(s, client, ch)) == -1)
		return not_found(s, path, errno);
	sup = get_in(s, dfd, ch, norm, name, path);
	e = errno;
	close(dfd);
	errno = e;
	return sup;
}

int
suppress_add(struct spool *s, const char *client, enum channel ch,
    const char *addr, const char *source, const char *reason, json_t **out)
{
	char		 norm[SUPPRESS_ADDR_MAX], name[NAME_LEN];
	char		 id[SUPPRESS_KEY_LEN + 1], at[RFC3339_LEN];
	const char	*names[1] = { name };
	const json_t	*docs[1];
	enum msg_status	 st;
	json_t		*doc, *had, *why;
	time_t		 mtimes[1] = { 0 };
	int		 fd, e;

	if (out != NULL)
		*out = NULL;
	if (target(client, ch, addr, norm, name) == -1 ||
	    !source_valid(source))
		return errno = EINVAL, -1;
	/* There already: left as it was, its source and reason too. */
	if ((had = suppress_get(s, client, ch, norm)) != NULL) {
		if (out != NULL)
			*out = had;
		else
			json_decref(had);
		return 0;
	}
	if (errno != 0)
		return -1;
	key_new(id);
	rfc3339_format(time(NULL), at, sizeof(at));
	/* A reason that is not UTF-8 is none that JSON can hold. */
	if ((why = reason != NULL ? json_string(reason) : json_null()) ==
	    NULL)
		return errno = EINVAL, -1;
	doc = json_pack("{s:i, s:s, s:s, s:s, s:s, s:o, s:s}", "version",
	    DOC_VERSION, "id", id, "channel", channel_info(ch)->name,
	    "address", norm, "source", source, "reason", why, "createdAt",
	    at);
	if (doc == NULL)
		return errno = ENOMEM, -1;
	if ((fd = list_dir(s, client, ch, 1)) == -1) {
		e = errno;
		log_err("suppress: %s/%s/%s/%s: %s", s->root, SUPPRESS_AREA,
		    client, channel_info(ch)->name, strerror(e));
		json_decref(doc);
		return errno = e, -1;
	}
	/*
	 * Written in tmp/, synced, renamed into place and the directory
	 * synced: the rename is the commit.  Of two made at once, the
	 * later stays; both were added.
	 */
	docs[0] = doc;
	errno = 0;
	spool_commit_files(s, docs, &fd, names, mtimes, &st, 1);
	e = errno;
	close(fd);
	if (st != MSG_OK) {
		json_decref(doc);
		/* An errno that says the same to the caller (503 or 500). */
		if (e == 0 || spool_errno_status(e) != st)
			e = st == MSG_TEMPFAIL ? EAGAIN : EPERM;
		return errno = e, -1;
	}
	if (out != NULL)
		*out = public_of(doc, ch, norm, NULL);
	json_decref(doc);
	if (out != NULL && *out == NULL)
		return errno = ENOMEM, -1;
	return 1;
}

int
suppress_remove(struct spool *s, const char *client, enum channel ch,
    const char *addr, const char *only_source)
{
	char	 norm[SUPPRESS_ADDR_MAX], name[NAME_LEN];
	json_t	*had;
	int	 fd, e;

	if (target(client, ch, addr, norm, name) == -1)
		return -1;
	if (only_source != NULL) {
		if ((had = suppress_get(s, client, ch, norm)) == NULL)
			return errno == 0 ? 1 : -1;
		e = strcmp(json_string_value(json_object_get(had, "source")),
		    only_source) != 0;
		json_decref(had);
		if (e)
			return 1;
	}
	if ((fd = fresh_list_dir(s, client, ch)) == -1)
		return errno == ENOENT ? 1 : -1;
	if (unlinkat(fd, name, 0) == -1) {
		e = errno;
		close(fd);
		if (e == ENOENT)
			return 1;
		log_err("suppress: remove %s/%s/%s/%s: %s", s->root,
		    SUPPRESS_AREA, client, channel_info(ch)->name, strerror(e));
		return errno = e, -1;
	}
	/* Gone for good once its directory says so. */
	if (fsync(fd) == -1) {
		e = errno;
		close(fd);
		log_err("suppress: fsync of %s/%s/%s/%s: %s", s->root,
		    SUPPRESS_AREA, client, channel_info(ch)->name, strerror(e));
		return errno = e, -1;
	}
	close(fd);
	return 0;
}


/*
 * What doc's recipient is checked as: its client, channel and address
 * (normalized into norm); 1, or 0 when no list holds it (errno 0), -1
 * with errno EINVAL when doc names no client or channel.
 */
static int
doc_target(const json_t *doc, const char **client, int *ch, char *norm)
{
	/*
	 * The confirmation of a stop goes to the number that just asked to
	 * stop (msgspool-spool(5), Keywords): msgspoold alone marks it.
	 */
	if (msgdoc_is_stop_reply(doc)) {
		errno = 0;
		return 0;
	}
	*client = msgdoc_client(doc);
	if (*client == NULL || (*ch = channel_parse(msgdoc_channel(doc) ?
	    msgdoc_channel(doc) : "")) == -1) {
		errno = EINVAL;
		return -1;
	}
	/* No list holds what is not an address of the channel. */
	if (suppress_normalize((enum channel)*ch, msgdoc_recipient(doc), norm,
	    SUPPRESS_ADDR_MAX) == -1) {
		errno = 0;
		return 0;
	}
	return 1;
}

json_t *
suppress_doc(struct spool *s, const json_t *doc)
{
	const char	*client;
	char		 norm[SUPPRESS_ADDR_MAX];
	int		 ch;

	if (doc_target(doc, &client, &ch, norm) != 1)
		return NULL;
	return suppress_get(s, client, (enum channel)ch, norm);
}

void
suppress_look_init(struct suppress_look *l)
{
	l->client[0] = '\0';
	l->ch = -1;
	l->dfd = -1;
}

void
suppress_look_end(struct suppress_look *l)
{
	if (l->dfd != -1)
		close(l->dfd);
	suppress_look_init(l);
}

json_t *
suppress_doc_look(struct spool *s, struct suppress_look *l,
    const json_t *doc)
{
	const char	*client;
	char		 addr[SUPPRESS_ADDR_MAX], norm[SUPPRESS_ADDR_MAX];
	char		 name[NAME_LEN], path[NAME_LEN + CLIENT_ID_MAX + 64];
	int		 ch, dfd;

	if (doc_target(doc, &client, &ch, addr) != 1 ||
	    target(client, (enum channel)ch, addr, norm, name) == -1)
		return NULL;
	snprintf(path, sizeof(path), "%s/%s/%s/%s", SUPPRESS_AREA, client,
	    channel_info((enum channel)ch)->name, name);
	if (l->client[0] == '\0' || strcmp(l->client, client) != 0 ||
	    l->ch != ch) {
		suppress_look_end(l);
		if ((dfd = fresh_list_dir(s, client, (enum channel)ch)) == -1 &&
		    errno != ENOENT)
			return not_found(s, path, errno);
		/* Kept, or known to be none, for the request's others. */
		snprintf(l->client, sizeof(l->client), "%s", client);
		l->ch = ch;
		l->dfd = dfd;
	}
	if (l->dfd == -1) {
		errno = 0;
		return NULL;
	}
	return get_in(s, l->dfd, (enum channel)ch, norm, name, path);
}

const char *
suppress_why(const json_t *sup, char *buf, size_t len)
{
	const char	*src;

	src = json_string_value(json_object_get(sup, "source"));
	snprintf(buf, len, "suppressed (%s)", src ? src : "manual");
	return buf;
}
