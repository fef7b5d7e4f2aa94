/*
 * test_claim_owner.c: who holds a claim (lib/spool/claim_owner.c;
 * msgspool-spool(5), claims/): a daemon's records are links to one file
 * of its own, read as any record, removed with their claims; the file
 * of a daemon gone is pruned once no record links to it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/msgspool.h"
#include "base/netfs.h"
#include "spool/spool.h"
#include "testutil.h"

/* Enqueue a fresh document into new/: its id and file name. */
static json_t *
enqueue(const struct tu_spool *f, const char *body, char *id, char *name,
    size_t namelen)
{
	json_t	*doc;

	assert_int_equal(ulid_new(id), 0);
	doc = msgdoc_new(id, "sms", "acme", 0,
	    json_pack("{s:s,s:s}", "to", "+4915112345678", "body", body));
	assert_non_null(doc);
	assert_int_equal(spool_enqueue(f->sp, doc, SPOOL_NEW), MSG_OK);
	snprintf(name, namelen, "%s.json", id);
	return doc;
}

/*
 * A daemon's claims (spool_claim_linked): each record a link to one file
 * of the process, none made a claim; it reads as any record does, goes
 * when its claim is released, and the file goes once linking ends.
 */
static void
test_claim_owner_linked(void **state)
{
	struct tu_spool	*f = *state;
	char		 a[SPOOL_ID_LEN + 1], b[SPOOL_ID_LEN + 1];
	char		 na[64], nb[64], err[256], path[512], owner[512];
	char		 host[64], mine[NETFS_HOST_MAX + 1];
	json_t		*da, *db, *doc;
	struct stat	 sa, sb, so;
	long		 pid;
	int		 fa, fb;

	spool_claim_linked(f->sp, 1);
	da = enqueue(f, "one", a, na, sizeof(na));
	db = enqueue(f, "two", b, nb, sizeof(nb));
	fa = spool_claim(f->sp, na, &doc, err, sizeof(err));
	assert_true(fa >= 0);
	json_decref(doc);
	fb = spool_claim(f->sp, nb, &doc, err, sizeof(err));
	assert_true(fb >= 0);
	json_decref(doc);
	snprintf(path, sizeof(path), "%s/claims/%s", f->dir, na);
	assert_int_equal(stat(path, &sa), 0);
	snprintf(path, sizeof(path), "%s/claims/%s", f->dir, nb);
	assert_int_equal(stat(path, &sb), 0);
	snprintf(owner, sizeof(owner), "%s/claims/.owner.%s.%ld", f->dir,
	    netfs_hostname(mine, sizeof(mine)), (long)getpid());
	assert_int_equal(stat(owner, &so), 0);
	/* One file, three names. */
	assert_int_equal(sa.st_ino, so.st_ino);
	assert_int_equal(sb.st_ino, so.st_ino);
	assert_int_equal(so.st_nlink, 3);
	assert_int_equal(spool_claim_owner(f->sp, na, host, sizeof(host),
	    &pid), 0);
	assert_string_equal(host, mine);
	assert_int_equal(pid, (long)getpid());
	spool_release(f->sp, na, fa);
	assert_int_equal(spool_claim_owner(f->sp, na, host, sizeof(host),
	    &pid), -1);
	assert_int_equal(spool_claim_owner(f->sp, nb, host, sizeof(host),
	    &pid), 0);
	spool_release(f->sp, nb, fb);
	assert_int_equal(stat(owner, &so), 0);
	assert_int_equal(so.st_nlink, 1);
	spool_claim_linked(f->sp, 0);
	assert_int_equal(stat(owner, &so), -1);
	json_decref(da);
	json_decref(db);
}

/*
 * The file of a daemon that died, which no record links to any more,
 * goes with recovery's pruning after a minute; a younger one stays.
 */
static void
test_claim_owner_file_pruned(void **state)
{
	struct tu_spool	*f = *state;
	struct timespec	 t[2];
	char		 dir[512], old[600], young[600];
	int		 fd;

	snprintf(dir, sizeof(dir), "%s/claims", f->dir);
	mkdir(dir, 0700);
	snprintf(old, sizeof(old), "%s/.owner.gone.1", dir);
	snprintf(young, sizeof(young), "%s/.owner.gone.2", dir);
	fd = open(old, O_WRONLY | O_CREAT, 0640);
	assert_true(fd >= 0);
	t[0].tv_sec = t[1].tv_sec = time(NULL) - 120;
	t[0].tv_nsec = t[1].tv_nsec = 0;
	assert_int_equal(futimens(fd, t), 0);
	close(fd);
	fd = open(young, O_WRONLY | O_CREAT, 0640);
	assert_true(fd >= 0);
	close(fd);
	spool_recover(f->sp);
	assert_int_equal(access(old, F_OK), -1);
	assert_int_equal(access(young, F_OK), 0);
}

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, tu_spool_setup, tu_spool_teardown)
	const struct CMUnitTest tests[] = {
		T(test_claim_owner_linked),
		T(test_claim_owner_file_pruned),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
