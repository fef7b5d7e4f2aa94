/*
 * test_claim.c: claims on spool files (lib/spool/claim.c; msgspool-spool(5),
 * Claims and recovery): a claim names its owner, is renewed and
 * released; recovery sends a dead claim back to new/ or deferred/ by
 * its due time and leaves a live one; a take never renames over a live
 * claim, nor does a retry by hand; an erasure removes only what no one
 * holds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/msgspool.h"
#include "base/netfs.h"
#include "spool/spool.h"
#include "testutil.h"

static void
state_path(const struct tu_spool *f, enum spool_dir d, const char *name,
    char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s/%s", f->dir, spool_dirname(d), name);
}

static int
exists(const struct tu_spool *f, enum spool_dir d, const char *name)
{
	char		path[512];
	struct stat	st;

	state_path(f, d, name, path, sizeof(path));
	return stat(path, &st) == 0;
}

/*
 * Enqueue a fresh document with body into dest; its id in id, its file
 * name in name.  The document, for the caller to free.
 */
static json_t *
enqueue(const struct tu_spool *f, enum spool_dir dest, const char *body,
    char *id, char *name, size_t namelen)
{
	json_t	*doc;

	assert_int_equal(ulid_new(id), 0);
	doc = msgdoc_new(id, "sms", "acme", 0,
	    json_pack("{s:s,s:s}", "to", "+4915112345678", "body", body));
	assert_non_null(doc);
	assert_int_equal(spool_enqueue(f->sp, doc, dest), MSG_OK);
	snprintf(name, namelen, "%s.json", id);
	return doc;
}

/*
 * A dead claim goes back to new/, or to deferred/ (due at its mtime)
 * when it was taken before its time (a client's cancel that died).
 */
static void
test_recover_by_due_time(void **state)
{
	struct tu_spool	*f = *state;
	char		 a[SPOOL_ID_LEN + 1], b[SPOOL_ID_LEN + 1];
	char		 na[64], nb[64], err[256], path[512];
	json_t		*da, *db, *doc;
	struct stat	 st;
	time_t		 later = time(NULL) + 3600;
	int		 fd;

	da = enqueue(f, SPOOL_NEW, "now", a, na, sizeof(na));
	assert_int_equal(ulid_new(b), 0);
	db = msgdoc_new(b, "sms", "acme", later, json_pack("{s:s,s:s}", "to",
	    "+4915112345678", "body", "later"));
	assert_int_equal(spool_enqueue(f->sp, db, SPOOL_DEFERRED), MSG_OK);
	snprintf(nb, sizeof(nb), "%s.json", b);
	fd = spool_claim(f->sp, na, &doc, err, sizeof(err));
	assert_true(fd >= 0);
	json_decref(doc);
	close(fd);
	fd = spool_take(f->sp, SPOOL_DEFERRED, nb, &doc, err, sizeof(err));
	assert_true(fd >= 0);
	json_decref(doc);
	close(fd);
	assert_true(exists(f, SPOOL_CUR, na) && exists(f, SPOOL_CUR, nb));
	assert_int_equal(spool_recover(f->sp), 1);
	assert_true(exists(f, SPOOL_NEW, na));
	assert_true(exists(f, SPOOL_DEFERRED, nb));
	state_path(f, SPOOL_DEFERRED, nb, path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mtime, later);
	json_decref(da);
	json_decref(db);
}

/*
 * Several hosts, one spool: a claim names its owner (this host, this
 * pid), is renewed by rewriting its file unchanged, and its release
 * drops the record; recovery names the owner of a dead claim.
 */
static void
test_claim_owner_renew_release(void **state)
{
	struct tu_spool	*f = *state;
	char		 id[SPOOL_ID_LEN + 1], name[64], err[256], path[512];
	char		 host[64], mine[NETFS_HOST_MAX + 1], *before, *after;
	json_t		*doc, *got;
	struct stat	 st;
	long		 pid;
	int		 fd;

	doc = enqueue(f, SPOOL_NEW, "owned", id, name, sizeof(name));
	assert_int_equal(spool_claim_owner(f->sp, name, host, sizeof(host),
	    &pid), -1);
	fd = spool_claim(f->sp, name, &got, err, sizeof(err));
	assert_true(fd >= 0);
	json_decref(got);
	assert_int_equal(spool_claim_owner(f->sp, name, host, sizeof(host),
	    &pid), 0);
	assert_string_equal(host, netfs_hostname(mine, sizeof(mine)));
	assert_int_equal(pid, (long)getpid());
	snprintf(path, sizeof(path), "%s/claims/%s", f->dir, name);
	assert_int_equal(stat(path, &st), 0);
	/* Opened for writing: an NFS lock needs it, and so does renewal. */
	assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDWR);
	state_path(f, SPOOL_CUR, name, path, sizeof(path));
	before = tu_read_text(path);
	assert_int_equal(spool_claim_renew(fd), 0);
	after = tu_read_text(path);
	assert_string_equal(before, after);
	/* Released: the record goes, the lock with the fd. */
	spool_release(f->sp, name, fd);
	assert_int_equal(spool_claim_owner(f->sp, name, host, sizeof(host),
	    &pid), -1);
	/* A closed descriptor cannot prove a claim. */
	assert_int_equal(spool_claim_renew(fd), -1);
	free(before);
	free(after);
	json_decref(doc);
}

static void
test_recover_keeps_live_and_names_dead(void **state)
{
	struct tu_spool	*f = *state;
	char		 a[SPOOL_ID_LEN + 1], b[SPOOL_ID_LEN + 1];
	char		 na[64], nb[64], err[256], host[64];
	json_t		*da, *db, *doc;
	long		 pid;
	int		 fa, fb;

	da = enqueue(f, SPOOL_NEW, "alive", a, na, sizeof(na));
	db = enqueue(f, SPOOL_NEW, "dead", b, nb, sizeof(nb));
	fa = spool_claim(f->sp, na, &doc, err, sizeof(err));
	assert_true(fa >= 0);
	json_decref(doc);
	fb = spool_claim(f->sp, nb, &doc, err, sizeof(err));
	assert_true(fb >= 0);
	json_decref(doc);
	/* b's holder dies without releasing: the record stays. */
	close(fb);
	assert_int_equal(spool_recover(f->sp), 1);
	assert_true(exists(f, SPOOL_CUR, na));
	assert_true(exists(f, SPOOL_NEW, nb));
	assert_int_equal(spool_claim_owner(f->sp, na, host, sizeof(host),
	    &pid), 0);
	spool_release(f->sp, na, fa);
	json_decref(da);
	json_decref(db);
}

/*
 * A take never renames over a claim another holds in cur/: a daemon
 * that has written a message's outcome into deferred/ still holds its
 * claim there until it removes it, and a cancel taking the new file
 * then would have it removed (msgspool-spool(5), Claims and recovery).
 * Once the claim is gone, or dead, the take goes through.
 */
static void
test_take_never_replaces_a_held_claim(void **state)
{
	struct tu_spool	*f = *state;
	char		 id[SPOOL_ID_LEN + 1], name[64], err[256];
	json_t		*doc, *got;
	int		 claim, take;

	doc = enqueue(f, SPOOL_NEW, "raced", id, name, sizeof(name));
	claim = spool_claim(f->sp, name, &got, err, sizeof(err));
	assert_true(claim >= 0);
	json_decref(got);
	/* The outcome written, the claim not yet removed. */
	assert_int_equal(spool_store(f->sp, SPOOL_DEFERRED, name, doc,
	    SPOOL__MAX), MSG_OK);
	assert_int_equal(spool_take(f->sp, SPOOL_DEFERRED, name, &got, err,
	    sizeof(err)), -1);
	assert_int_equal(errno, EBUSY);
	assert_null(got);
	assert_true(exists(f, SPOOL_DEFERRED, name));
	assert_true(exists(f, SPOOL_CUR, name));
	/* Nor does a daemon's claim of the same name from new/. */
	assert_int_equal(spool_store(f->sp, SPOOL_NEW, name, doc,
	    SPOOL__MAX), MSG_OK);
	assert_int_equal(spool_claim(f->sp, name, &got, err, sizeof(err)),
	    -1);
	assert_int_equal(errno, EBUSY);
	assert_int_equal(spool_remove(f->sp, SPOOL_NEW, name), 0);
	/* The claim removed and let go: the take goes through. */
	assert_int_equal(spool_remove(f->sp, SPOOL_CUR, name), 0);
	spool_release(f->sp, name, claim);
	take = spool_take(f->sp, SPOOL_DEFERRED, name, &got, err,
	    sizeof(err));
	assert_true(take >= 0);
	json_decref(got);
	assert_false(exists(f, SPOOL_DEFERRED, name));
	assert_true(exists(f, SPOOL_CUR, name));
	/* A dead claim (its holder gone, its outcome written) is replaced. */
	close(take);
	assert_int_equal(spool_store(f->sp, SPOOL_DEFERRED, name, doc,
	    SPOOL__MAX), MSG_OK);
	take = spool_take(f->sp, SPOOL_DEFERRED, name, &got, err,
	    sizeof(err));
	assert_true(take >= 0);
	json_decref(got);
	assert_false(exists(f, SPOOL_DEFERRED, name));
	assert_true(exists(f, SPOOL_CUR, name));
	spool_release(f->sp, name, take);
	json_decref(doc);
}

/*
 * A retry by hand moves the message as a claim does (msgspool(8),
 * retry): never over a claim held in cur/, never while another holds
 * the file; a canceled one stays when asked; a file that is no spool
 * document stays where it is.  Once done the message is in new/ alone.
 */
static void
test_retry_moves_it_as_a_claim(void **state)
{
	struct tu_spool	*f = *state;
	char		 id[SPOOL_ID_LEN + 1], name[64], err[256], path[512];
	json_t		*doc, *got;
	time_t		 now = time(NULL);
	int		 claim, fd;

	doc = enqueue(f, SPOOL_NEW, "again", id, name, sizeof(name));
	claim = spool_claim(f->sp, name, &got, err, sizeof(err));
	assert_true(claim >= 0);
	json_decref(got);
	/* A daemon has written the outcome, its claim still held. */
	assert_int_equal(spool_store(f->sp, SPOOL_FAILED, name, doc,
	    SPOOL__MAX), MSG_OK);
	assert_int_equal(spool_retry(f->sp, SPOOL_FAILED, name, 0, now, err,
	    sizeof(err)), -1);
	assert_int_equal(errno, EBUSY);
	assert_true(exists(f, SPOOL_FAILED, name));
	assert_false(exists(f, SPOOL_NEW, name));
	assert_int_equal(spool_remove(f->sp, SPOOL_CUR, name), 0);
	spool_release(f->sp, name, claim);
	/* The file itself held (a cancel taking it): busy too. */
	state_path(f, SPOOL_FAILED, name, path, sizeof(path));
	assert_true((fd = open(path, O_RDONLY)) >= 0);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	assert_int_equal(spool_retry(f->sp, SPOOL_FAILED, name, 0, now, err,
	    sizeof(err)), -1);
	assert_int_equal(errno, EBUSY);
	close(fd);
	/* Canceled, and to be left: left. */
	msgdoc_cancel(doc, now);
	assert_int_equal(spool_store(f->sp, SPOOL_FAILED, name, doc,
	    SPOOL__MAX), MSG_OK);
	assert_int_equal(spool_retry(f->sp, SPOOL_FAILED, name,
	    SPOOL_RETRY_NOT_CANCELED, now, err, sizeof(err)), 1);
	assert_true(exists(f, SPOOL_FAILED, name));
	/* Retried: in new/ alone, due now, not canceled. */
	assert_int_equal(spool_retry(f->sp, SPOOL_FAILED, name, 0, now, err,
	    sizeof(err)), 0);
	assert_false(exists(f, SPOOL_FAILED, name));
	assert_false(exists(f, SPOOL_CUR, name));
	assert_true(exists(f, SPOOL_NEW, name));
	got = spool_load(f->sp, SPOOL_NEW, name, err, sizeof(err));
	assert_non_null(got);
	assert_null(json_object_get(got, "canceled"));
	assert_int_equal(msgdoc_due(got), now);
	json_decref(got);
	/* Gone meanwhile: ENOENT; from new/: not a retry's. */
	assert_int_equal(spool_retry(f->sp, SPOOL_DEFERRED, name, 0, now, err,
	    sizeof(err)), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(spool_retry(f->sp, SPOOL_NEW, name, 0, now, err,
	    sizeof(err)), -1);
	assert_int_equal(errno, EINVAL);
	/* Not a spool document: left where it is. */
	assert_int_equal(spool_move(f->sp, SPOOL_NEW, SPOOL_DEFERRED, name),
	    0);
	state_path(f, SPOOL_DEFERRED, name, path, sizeof(path));
	assert_int_equal(truncate(path, 1), 0);
	assert_int_equal(spool_retry(f->sp, SPOOL_DEFERRED, name, 0, now, err,
	    sizeof(err)), -1);
	assert_int_equal(errno, EINVAL);
	assert_true(exists(f, SPOOL_DEFERRED, name));
	assert_false(exists(f, SPOOL_CUR, name));
	json_decref(doc);
}

/*
 * A retry that died between its new/ file and the removal of its
 * claim: recovery removes the claim and keeps the retry.
 */
static void
test_recover_keeps_a_retry_in_new(void **state)
{
	struct tu_spool	*f = *state;
	char		 id[SPOOL_ID_LEN + 1], name[64], err[256];
	json_t		*doc, *got;
	int		 fd;

	doc = enqueue(f, SPOOL_DEFERRED, "retried", id, name, sizeof(name));
	fd = spool_take(f->sp, SPOOL_DEFERRED, name, &got, err, sizeof(err));
	assert_true(fd >= 0);
	json_decref(got);
	msgdoc_retry(doc, time(NULL));
	assert_int_equal(spool_store(f->sp, SPOOL_NEW, name, doc, SPOOL__MAX),
	    MSG_OK);
	close(fd);
	assert_int_equal(spool_recover(f->sp), 0);
	assert_false(exists(f, SPOOL_CUR, name));
	got = spool_load(f->sp, SPOOL_NEW, name, err, sizeof(err));
	assert_non_null(got);
	assert_non_null(json_object_get(got, "retriedAt"));
	json_decref(got);
	json_decref(doc);
}

/*
 * An erasure (msgspool erase) removes a message under its lock: one of
 * new/ taken as a claim would be, with no owner record left; one a
 * claim holds in cur/, or a retry in failed/, is EBUSY and stays; a
 * dead claim's goes, its owner record too.
 */
static void
test_erase_under_the_lock(void **state)
{
	struct tu_spool	*f = *state;
	char		 a[SPOOL_ID_LEN + 1], b[SPOOL_ID_LEN + 1];
	char		 na[64], nb[64], err[256], path[512];
	json_t		*da, *db, *doc;
	int		 fd, held;

	da = enqueue(f, SPOOL_NEW, "erase me", a, na, sizeof(na));
	db = enqueue(f, SPOOL_NEW, "claimed", b, nb, sizeof(nb));
	assert_int_equal(spool_erase(f->sp, SPOOL_NEW, na), 0);
	assert_false(exists(f, SPOOL_NEW, na));
	assert_false(exists(f, SPOOL_CUR, na));
	snprintf(path, sizeof(path), "%s/claims/%s", f->dir, na);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(spool_erase(f->sp, SPOOL_NEW, na), -1);
	assert_int_equal(errno, ENOENT);
	/* A live claim. */
	fd = spool_claim(f->sp, nb, &doc, err, sizeof(err));
	assert_true(fd >= 0);
	json_decref(doc);
	assert_int_equal(spool_erase(f->sp, SPOOL_CUR, nb), -1);
	assert_int_equal(errno, EBUSY);
	assert_true(exists(f, SPOOL_CUR, nb));
	/* Its daemon died: the claim is dead, and goes with its record. */
	close(fd);
	assert_int_equal(spool_erase(f->sp, SPOOL_CUR, nb), 0);
	assert_false(exists(f, SPOOL_CUR, nb));
	snprintf(path, sizeof(path), "%s/claims/%s", f->dir, nb);
	assert_int_equal(access(path, F_OK), -1);
	/* In failed/, held by a retry. */
	assert_int_equal(spool_store(f->sp, SPOOL_FAILED, na, da, SPOOL__MAX),
	    MSG_OK);
	state_path(f, SPOOL_FAILED, na, path, sizeof(path));
	assert_true((held = open(path, O_RDONLY)) != -1);
	assert_int_equal(flock(held, LOCK_EX), 0);
	assert_int_equal(spool_erase(f->sp, SPOOL_FAILED, na), -1);
	assert_int_equal(errno, EBUSY);
	assert_true(exists(f, SPOOL_FAILED, na));
	close(held);
	assert_int_equal(spool_erase(f->sp, SPOOL_FAILED, na), 0);
	assert_false(exists(f, SPOOL_FAILED, na));
	/* Not a state of messages. */
	assert_int_equal(spool_erase(f->sp, SPOOL_TMP, na), -1);
	assert_int_equal(errno, EINVAL);
	json_decref(da);
	json_decref(db);
}

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, tu_spool_setup, tu_spool_teardown)
	const struct CMUnitTest tests[] = {
		T(test_recover_by_due_time),
		T(test_claim_owner_renew_release),
		T(test_recover_keeps_live_and_names_dead),
		T(test_take_never_replaces_a_held_claim),
		T(test_retry_moves_it_as_a_claim),
		T(test_recover_keeps_a_retry_in_new),
		T(test_erase_under_the_lock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
