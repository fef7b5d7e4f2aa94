/*
 * test_netfs.c: unit tests for lib/base/netfs.c, on mountinfo lines of the
 * kinds proc(5) documents and Linux 6.1 writes for NFS mounts.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/netfs.h"

#define ROOT	"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
#define NFS(dev, opts) \
	"40 22 " dev " / /srv/spool rw,relatime shared:5 - nfs4 " \
	"10.99.0.1:/ rw," opts "\n"
#define NFS42 "vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard," \
	"proto=tcp,timeo=600,retrans=2,sec=sys,clientaddr=10.99.0.11," \
	"local_lock=none,addr=10.99.0.1"

static int
check(const char *text, unsigned maj, unsigned min, struct netfs_mount *m,
    char *err, size_t errlen)
{
	err[0] = '\0';
	return netfs_check_text(text, makedev(maj, min), m, err, errlen);
}

static void
test_local_disk_is_fine(void **state)
{
	struct netfs_mount	m;
	char			err[256];

	(void)state;
	assert_int_equal(check(ROOT NFS("0:50", NFS42), 8, 1, &m, err,
	    sizeof(err)), 0);
	assert_string_equal(m.fstype, "ext4");
	assert_string_equal(m.point, "/");
	assert_int_equal(m.network, 0);
	assert_int_equal(m.nfs, 0);
}

static void
test_nfs42_hard_is_accepted(void **state)
{
	struct netfs_mount	m;
	char			err[256];

	(void)state;
	assert_int_equal(check(ROOT NFS("0:50", NFS42), 0, 50, &m, err,
	    sizeof(err)), 0);
	assert_string_equal(m.fstype, "nfs4");
	assert_string_equal(m.source, "10.99.0.1:/");
	assert_string_equal(m.point, "/srv/spool");
	assert_int_equal(m.network, 1);
	assert_int_equal(m.nfs, 1);
	assert_int_equal(m.vers_major, 4);
	assert_int_equal(m.vers_minor, 2);
	assert_string_equal(err, "");
}

static void
test_nfs41_is_accepted(void **state)
{
	struct netfs_mount	m;
	char			err[256];

	(void)state;
	assert_int_equal(check(NFS("0:51", "vers=4.1,hard,local_lock=none"),
	    0, 51, &m, err, sizeof(err)), 0);
	assert_int_equal(m.vers_minor, 1);
}

static void
test_nfs3_is_refused(void **state)
{
	struct netfs_mount	m;
	char			err[256];
	const char		*t = "41 22 0:52 / /srv/spool rw - nfs "
	    "srv:/x rw,vers=3,hard,proto=tcp,local_lock=none\n";

	(void)state;
	assert_int_equal(check(t, 0, 52, &m, err, sizeof(err)), -1);
	assert_int_equal(m.vers_major, 3);
	assert_non_null(strstr(err, "NFS version 3"));
	assert_non_null(strstr(err, "4.1 or later"));
}

static void
test_nfs2_and_40_are_refused(void **state)
{
	struct netfs_mount	m;
	char			err[256];

	(void)state;
	assert_int_equal(check("41 22 0:52 / /s rw - nfs srv:/x rw,vers=2,"
	    "hard\n", 0, 52, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "version 2"));
	assert_int_equal(check(NFS("0:53", "vers=4.0,hard,local_lock=none"),
	    0, 53, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "version 4.0"));
}

static void
test_nolock_is_refused(void **state)
{
	struct netfs_mount	m;
	char			err[256];

	(void)state;
	assert_int_equal(check(NFS("0:54", "vers=4.2,hard,nolock"), 0, 54,
	    &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "nolock"));
}

static void
test_local_lock_is_refused(void **state)
{
	struct netfs_mount	m;
	char			err[256];

	(void)state;
	assert_int_equal(check(NFS("0:55", "vers=4.2,hard,local_lock=flock"),
	    0, 55, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "local_lock=flock"));
	assert_int_equal(check(NFS("0:55", "vers=4.2,hard,local_lock=all"),
	    0, 55, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "local_lock=all"));
}

static void
test_soft_is_refused(void **state)
{
	struct netfs_mount	m;
	char			err[256];

	(void)state;
	assert_int_equal(check(NFS("0:56", "vers=4.2,soft,local_lock=none"),
	    0, 56, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "soft mount"));
	assert_int_equal(check(NFS("0:56", "vers=4.2,softerr,"
	    "local_lock=none"), 0, 56, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "soft mount"));
	/* "softreval" is not "soft": only the option itself counts. */
	assert_int_equal(check(NFS("0:56", "vers=4.2,hard,softreval,"
	    "local_lock=none"), 0, 56, &m, err, sizeof(err)), 0);
}

static void
test_last_mount_of_a_device_wins(void **state)
{
	struct netfs_mount	m;
	char			err[256];
	const char		*t = NFS("0:57", "vers=3,hard")
	    NFS("0:57", NFS42);

	(void)state;
	/* Stacked on the same place: the kernel lists the newest last. */
	assert_int_equal(check(t, 0, 57, &m, err, sizeof(err)), 0);
	assert_int_equal(m.vers_minor, 2);
}

static void
test_escaped_mount_point(void **state)
{
	struct netfs_mount	m;
	char			err[256];

	(void)state;
	assert_int_equal(check("50 22 0:60 / /srv/my\\040spool rw - nfs4 "
	    "srv:/ rw,vers=4.2,hard,local_lock=none\n", 0, 60, &m, err,
	    sizeof(err)), 0);
	assert_string_equal(m.point, "/srv/my spool");
}

static void
test_optional_fields_and_other_network_fs(void **state)
{
	struct netfs_mount	m;
	char			err[256];

	(void)state;
	/* Several optional fields before the "-". */
	assert_int_equal(check("60 22 0:70 / /mnt rw shared:9 master:2 - "
	    "cifs //srv/share rw,vers=3.1.1\n", 0, 70, &m, err, sizeof(err)),
	    0);
	assert_string_equal(m.fstype, "cifs");
	assert_int_equal(m.network, 1);
	assert_int_equal(m.nfs, 0);
}

static void
test_unknown_device_and_garbage(void **state)
{
	struct netfs_mount	m;
	char			err[256];

	(void)state;
	assert_int_equal(check(ROOT "not a mountinfo line\n\n", 9, 9, &m,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "9:9"));
	assert_int_equal(check("", 8, 1, &m, err, sizeof(err)), -1);
}

static void
test_check_this_directory(void **state)
{
	struct netfs_mount	m;
	char			err[256];

	(void)state;
	/* The real table: the working directory is on some mount. */
	assert_int_equal(netfs_check(".", &m, err, sizeof(err)), 0);
	assert_true(m.fstype[0] != '\0');
	assert_true(m.point[0] == '/');
	assert_int_equal(netfs_check("/no/such/dir", &m, err, sizeof(err)),
	    -1);
	assert_non_null(strstr(err, "/no/such/dir"));
}

static void
test_hostname_is_a_safe_name(void **state)
{
	char	h[NETFS_HOST_MAX + 1], small[4];
	size_t	i;

	(void)state;
	netfs_hostname(h, sizeof(h));
	assert_true(h[0] != '\0');
	for (i = 0; h[i] != '\0'; i++)
		assert_non_null(strchr("abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_", h[i]));
	assert_true(strlen(h) <= NETFS_HOST_MAX);
	netfs_hostname(small, sizeof(small));
	assert_true(strlen(small) <= 3);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_local_disk_is_fine),
		cmocka_unit_test(test_nfs42_hard_is_accepted),
		cmocka_unit_test(test_nfs41_is_accepted),
		cmocka_unit_test(test_nfs3_is_refused),
		cmocka_unit_test(test_nfs2_and_40_are_refused),
		cmocka_unit_test(test_nolock_is_refused),
		cmocka_unit_test(test_local_lock_is_refused),
		cmocka_unit_test(test_soft_is_refused),
		cmocka_unit_test(test_last_mount_of_a_device_wins),
		cmocka_unit_test(test_escaped_mount_point),
		cmocka_unit_test(test_optional_fields_and_other_network_fs),
		cmocka_unit_test(test_unknown_device_and_garbage),
		cmocka_unit_test(test_check_this_directory),
		cmocka_unit_test(test_hostname_is_a_safe_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
