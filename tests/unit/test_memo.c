/*
 * test_memo.c: unit tests for lib/http/memo.c (memo.h): a reply is
 * given back only for the very bytes (their SHA-256) and place it was
 * made from, and to its owner; what does not fit a slot is not kept; a
 * slot left odd by a writer that died is never read; and processes
 * forked after the memo was made, writing and reading the same slots
 * at once, never see a reply other than the one made from the bytes
 * they give.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "http/memo.h"

static const char doc[] = "{\"id\": \"01ARZ3NDEKTSV4RRFFQ69G5FAV\", "
    "\"client\": \"acme\"}";
static const char reply[] = "{\"status\":\"sent\"}";
#define NAME	"01ARZ3NDEKTSV4RRFFQ69G5FAV.json"

/* memo_get of name made from text where tag says, for acme. */
static int
get(struct memo *m, const char *name, int tag, const char *text, size_t len,
    char *out, size_t *outlen)
{
	unsigned char	d[MEMO_DIGEST];

	memo_digest(text, len, d);
	return memo_get(m, name, tag, d, "acme", out, outlen);
}

static void
put(struct memo *m, const char *name, int tag, const char *text, size_t len,
    const char *owner, const char *r, size_t rlen)
{
	unsigned char	d[MEMO_DIGEST];

	memo_digest(text, len, d);
	memo_put(m, name, tag, d, owner, r, rlen);
}

/* SHA-256 of "abc" (FIPS 180-2, B.1). */
static void
test_digest(void **state)
{
	static const unsigned char want[MEMO_DIGEST] = {
		0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea,
		0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
		0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c,
		0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad,
	};
	unsigned char	d[MEMO_DIGEST];

	(void)state;
	memo_digest("abc", 3, d);
	assert_memory_equal(d, want, MEMO_DIGEST);
}

static void
test_same_bytes_only(void **state)
{
	struct memo	 m;
	char		 other[sizeof(doc)], out[MEMO_SLOT_SIZE];
	size_t		 len = 0;

	(void)state;
	assert_int_equal(memo_open(&m), 0);
	assert_int_equal(get(&m, NAME, 4, doc, strlen(doc), out, &len), 0);
	put(&m, NAME, 4, doc, strlen(doc), "acme", reply, strlen(reply));
	assert_int_equal(get(&m, NAME, 4, doc, strlen(doc), out, &len), 1);
	assert_int_equal(len, strlen(reply));
	assert_memory_equal(out, reply, len);
	/* One byte other, one byte fewer, another place, another name. */
	memcpy(other, doc, sizeof(doc));
	other[10] = 'X';
	assert_int_equal(get(&m, NAME, 4, other, strlen(other), out, &len),
	    0);
	assert_int_equal(get(&m, NAME, 4, doc, strlen(doc) - 1, out, &len),
	    0);
	assert_int_equal(get(&m, NAME, 5, doc, strlen(doc), out, &len), 0);
	assert_int_equal(get(&m, "01ARZ3NDEKTSV4RRFFQ69G5FAW.json", 4, doc,
	    strlen(doc), out, &len), 0);
	assert_int_equal(m.hits, 1);
	assert_int_equal(m.misses, 5);
	/* Made again from other bytes: the new reply only. */
	put(&m, NAME, 4, other, strlen(other), "acme", "{}", 2);
	assert_int_equal(get(&m, NAME, 4, doc, strlen(doc), out, &len), 0);
	assert_int_equal(get(&m, NAME, 4, other, strlen(other), out, &len),
	    1);
	assert_int_equal(len, 2);
	assert_memory_equal(out, "{}", 2);
	/* Another owner's: said so, the reply not given. */
	put(&m, NAME, 4, doc, strlen(doc), "globex", reply, strlen(reply));
	len = 0;
	assert_int_equal(get(&m, NAME, 4, doc, strlen(doc), out, &len), 2);
	assert_int_equal(len, 0);
	memo_close(&m);
	assert_null(m.slots);
	/* No memo: nothing kept, nothing found. */
	put(&m, NAME, 4, doc, strlen(doc), "acme", reply, strlen(reply));
	assert_int_equal(get(&m, NAME, 4, doc, strlen(doc), out, &len), 0);
}

/* What does not fit a slot is not kept, and leaves the slot as it was. */
static void
test_too_large(void **state)
{
	struct memo	 m;
	char		*big, out[MEMO_SLOT_SIZE];
	size_t		 len, n = 4 * MEMO_SLOT_SIZE;

	(void)state;
	assert_int_equal(memo_open(&m), 0);
	assert_non_null(big = malloc(n));
	memset(big, 'a', n);
	put(&m, NAME, 1, doc, strlen(doc), "acme", reply, strlen(reply));
	put(&m, NAME, 1, big, n, "acme", big, MEMO_SLOT_SIZE);
	assert_int_equal(get(&m, NAME, 1, big, n, out, &len), 0);
	assert_int_equal(get(&m, NAME, 1, doc, strlen(doc), out, &len), 1);
	/* A file of any size, its reply small: kept. */
	put(&m, NAME, 1, big, n, "acme", reply, strlen(reply));
	assert_int_equal(get(&m, NAME, 1, big, n, out, &len), 1);
	memo_close(&m);
	free(big);
}

/*
 * A writer that died holding its slot (its count left odd): the slot is
 * neither read nor written again.
 */
static void
test_dead_writer(void **state)
{
	struct memo	 m;
	pid_t		 pid;
	char		 out[MEMO_SLOT_SIZE];
	size_t		 len, i;
	int		 st;
	atomic_uint	*seq;

	(void)state;
	assert_int_equal(memo_open(&m), 0);
	put(&m, NAME, 1, doc, strlen(doc), "acme", reply, strlen(reply));
	assert_int_equal(get(&m, NAME, 1, doc, strlen(doc), out, &len), 1);
	/* The slot's count is its first word (memo.c, struct memo_head). */
	for (i = 0; i < MEMO_SLOTS; i++) {
		seq = (atomic_uint *)((char *)m.slots + i * MEMO_SLOT_SIZE);
		if (atomic_load(seq) != 0)
			break;
	}
	assert_int_equal(atomic_load(seq), 2);
	if ((pid = fork()) == 0) {
		atomic_store(seq, 3);	/* its write begun, then killed */
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(get(&m, NAME, 1, doc, strlen(doc), out, &len), 0);
	put(&m, NAME, 1, doc, strlen(doc), "acme", "{}", 2);
	assert_int_equal(atomic_load(seq), 3);
	assert_int_equal(get(&m, NAME, 1, doc, strlen(doc), out, &len), 0);
	memo_close(&m);
}

/* The reply of text in the race below: its own length and bytes. */
static size_t
reply_of(const char *text, char *out)
{
	size_t	n = 1500 + (unsigned char)text[strlen(text) - 1] % 200, i;

	for (i = 0; i < n; i++)
		out[i] = text[i % strlen(text)];
	return n;
}

/*
 * One process of the race: 200,000 puts and gets from a sequence of its
 * own.  Its exit status: 1 when a reply got was not the one asked for,
 * 2 when it found none, else 0.
 */
static int
racer(struct memo *m, unsigned r)
{
	char	 name[32], text[64], want[MEMO_SLOT_SIZE];
	char	 out[MEMO_SLOT_SIZE];
	size_t	 len, wlen;
	int	 k, fails = 0;

	for (k = 0; k < 200000; k++) {
		r = r * 1103515245u + 12345u;
		snprintf(name, sizeof(name), "n%u", (r >> 8) % 2);
		snprintf(text, sizeof(text), "%s-v%u", name, (r >> 12) % 4);
		wlen = reply_of(text, want);
		if ((r >> 20) & 1)
			put(m, name, 0, text, strlen(text), "acme", want, wlen);
		else if (get(m, name, 0, text, strlen(text), out, &len) == 1 &&
		    (len != wlen || memcmp(out, want, len) != 0))
			fails++;
	}
	return fails > 0 ? 1 : m->hits > 0 ? 0 : 2;
}

/*
 * Four processes forked after the memo was made, each putting and
 * getting 200,000 times over 8 names (so slots are written and read at
 * once) and texts of 4 versions, each with a reply of its own length:
 * a reply got is always the one made from the bytes asked for.
 */
static void
test_shared_race(void **state)
{
	struct memo	 m;
	pid_t		 pids[4];
	int		 i, st, bad = 0;
	unsigned long	 hits = 0;

	(void)state;
	assert_int_equal(memo_open(&m), 0);
	for (i = 0; i < 4; i++) {
		if ((pids[i] = fork()) == 0)
			_exit(racer(&m, (unsigned)i * 7919u + 1));
		assert_true(pids[i] > 0);
	}
	for (i = 0; i < 4; i++) {
		assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
		assert_true(WIFEXITED(st));
		bad += WEXITSTATUS(st) == 1;
		hits += WEXITSTATUS(st) == 0;
	}
	assert_int_equal(bad, 0);
	/* Each process found some of what the others put. */
	assert_true(hits > 0);
	memo_close(&m);
}

int
main(void)
{
	const struct CMUnitTest	tests[] = {
		cmocka_unit_test(test_digest),
		cmocka_unit_test(test_same_bytes_only),
		cmocka_unit_test(test_too_large),
		cmocka_unit_test(test_dead_writer),
		cmocka_unit_test(test_shared_race),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
