/*
 * test_unsub.c: unit tests for lib/content/unsub.c: the one-click
 * unsubscribe token (its format, that it verifies only as made, in
 * every byte) and the links of a config (msgspool.conf(5),
 * list-unsubscribe, public-url, unsubscribe-secret).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "content/unsub.h"

#define KEY	"0123456789abcdef01234567"
#define KEYLEN	24
/* acme:ann@example.com under KEY, as unsub.h's format makes it. */
#define ANN_TOKEN	"YWNtZTphbm5AZXhhbXBsZS5jb20." \
			"brkMhuBt65GXJmhMuK7Qj45yR7dPop5S_9dQ3UFJ9gk"

static const unsigned char *key = (const unsigned char *)KEY;

/* Whether token verifies under KEY; its client and address out. */
static int
verifies(const char *token, char *client, char *addr)
{
	char	c[CLIENT_ID_MAX + 1], a[UNSUB_ADDR_MAX + 1];

	return unsub_verify(key, KEYLEN, token, client ? client : c,
	    addr ? addr : a);
}

static void
test_token_format(void **state)
{
	char	*t, client[CLIENT_ID_MAX + 1], addr[UNSUB_ADDR_MAX + 1];

	(void)state;
	assert_non_null(t = unsub_token(key, KEYLEN, "acme",
	    "ann@example.com"));
	assert_string_equal(t, ANN_TOKEN);
	assert_int_equal(verifies(t, client, addr), 1);
	assert_string_equal(client, "acme");
	assert_string_equal(addr, "ann@example.com");
	/* URL-safe: base64url, no padding. */
	assert_int_equal(strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn"
	    "opqrstuvwxyz0123456789-_."), strlen(t));
	free(t);
	/* The address as written: another case is another token. */
	assert_non_null(t = unsub_token(key, KEYLEN, "acme",
	    "ann@EXAMPLE.com"));
	assert_string_not_equal(t, ANN_TOKEN);
	assert_int_equal(verifies(t, NULL, addr), 1);
	assert_string_equal(addr, "ann@EXAMPLE.com");
	free(t);
}

static void
test_every_byte_changed_fails(void **state)
{
	static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijkl"
	    "mnopqrstuvwxyz0123456789-_.=+/ %";
	char	t[] = ANN_TOKEN;
	size_t	i, j;
	char	was;

	(void)state;
	for (i = 0; i < strlen(t); i++) {
		was = t[i];
		for (j = 0; j < strlen(alphabet); j++) {
			if (alphabet[j] == was)
				continue;
			t[i] = alphabet[j];
			if (verifies(t, NULL, NULL))
				fail_msg("byte %zu as '%c' verifies: %s", i,
				    alphabet[j], t);
		}
		t[i] = was;
	}
	assert_int_equal(verifies(t, NULL, NULL), 1);
}

static void
test_not_tokens(void **state)
{
	char	 t[UNSUB_TOKEN_MAX + 8];
	char	*other;
	size_t	 n;

	(void)state;
	assert_int_equal(verifies(NULL, NULL, NULL), 0);
	assert_int_equal(verifies("", NULL, NULL), 0);
	assert_int_equal(verifies(".", NULL, NULL), 0);
	assert_int_equal(verifies("YWNtZTphbm5AZXhhbXBsZS5jb20", NULL, NULL),
	    0);
	/* Cut short, lengthened, padded, doubled. */
	n = strlen(ANN_TOKEN);
	snprintf(t, sizeof(t), "%.*s", (int)n - 1, ANN_TOKEN);
	assert_int_equal(verifies(t, NULL, NULL), 0);
	snprintf(t, sizeof(t), "%sA", ANN_TOKEN);
	assert_int_equal(verifies(t, NULL, NULL), 0);
	snprintf(t, sizeof(t), "%s=", ANN_TOKEN);
	assert_int_equal(verifies(t, NULL, NULL), 0);
	snprintf(t, sizeof(t), "YWNtZTphbm5AZXhhbXBsZS5jb20=.%s",
	    strchr(ANN_TOKEN, '.') + 1);
	assert_int_equal(verifies(t, NULL, NULL), 0);
	snprintf(t, sizeof(t), "%s.%s", ANN_TOKEN, ANN_TOKEN);
	assert_int_equal(verifies(t, NULL, NULL), 0);
	/* Another key's, and the signature of one text on another. */
	assert_non_null(other = unsub_token((const unsigned char *)
	    "another key of 24 bytes!", 24, "acme", "ann@example.com"));
	assert_int_equal(verifies(other, NULL, NULL), 0);
	free(other);
	assert_non_null(other = unsub_token(key, KEYLEN, "acme",
	    "bob@example.com"));
	snprintf(t, sizeof(t), "%.*s%s", (int)(strchr(other, '.') - other),
	    other, strchr(ANN_TOKEN, '.'));
	assert_int_equal(verifies(t, NULL, NULL), 0);
	free(other);
	/* Too long to be one. */
	memset(t, 'A', sizeof(t) - 1);
	t[sizeof(t) - 1] = '\0';
	t[10] = '.';
	assert_int_equal(verifies(t, NULL, NULL), 0);
}

static void
test_what_a_token_names(void **state)
{
	char	 client[CLIENT_ID_MAX + 2], addr[UNSUB_ADDR_MAX + 2];
	char	 c[CLIENT_ID_MAX + 1], a[UNSUB_ADDR_MAX + 1];
	char	*t;

	(void)state;
	/* Neither a client nor an address that is not one. */
	errno = 0;
	assert_null(unsub_token(key, KEYLEN, "no:colon", "a@example.com"));
	assert_int_equal(errno, EINVAL);
	assert_null(unsub_token(key, KEYLEN, "", "a@example.com"));
	assert_null(unsub_token(key, KEYLEN, "acme", "not an address"));
	assert_null(unsub_token(key, KEYLEN, "acme", "Ann <a@example.com>"));
	assert_null(unsub_token(key, KEYLEN, "acme", "j\xc3\xb6rg@example.de"));
	assert_null(unsub_token(key, KEYLEN, "acme", NULL));
	/* The longest of both fit. */
	memset(client, 'c', CLIENT_ID_MAX);
	client[CLIENT_ID_MAX] = '\0';
	memset(addr, 'a', 64);
	addr[64] = '@';
	memset(addr + 65, 'd', UNSUB_ADDR_MAX - 65);
	addr[UNSUB_ADDR_MAX] = '\0';
	addr[100] = addr[160] = addr[220] = '.';
	assert_non_null(t = unsub_token(key, KEYLEN, client, addr));
	assert_true(strlen(t) <= UNSUB_TOKEN_MAX);
	assert_int_equal(unsub_verify(key, KEYLEN, t, c, a), 1);
	assert_string_equal(c, client);
	assert_string_equal(a, addr);
	free(t);
	/* One more of either is none. */
	client[CLIENT_ID_MAX] = 'c';
	client[CLIENT_ID_MAX + 1] = '\0';
	assert_null(unsub_token(key, KEYLEN, client, "a@example.com"));
	addr[UNSUB_ADDR_MAX] = 'd';
	addr[UNSUB_ADDR_MAX + 1] = '\0';
	assert_null(unsub_token(key, KEYLEN, "acme", addr));
	/* Punctuation an address may hold goes through, as it is. */
	assert_non_null(t = unsub_token(key, KEYLEN, "a.b_c-d",
	    "o'neil&co+x/y=z?@example.com"));
	assert_int_equal(unsub_verify(key, KEYLEN, t, c, a), 1);
	assert_string_equal(c, "a.b_c-d");
	assert_string_equal(a, "o'neil&co+x/y=z?@example.com");
	free(t);
}

/* The config of text (its path /etc/msgspool/msgspool.conf). */
static struct config *
conf(const char *text)
{
	struct config	*c;
	char		 err[512];

	if ((c = config_parse("/etc/msgspool/msgspool.conf", text,
	    strlen(text), err, sizeof(err))) == NULL)
		fail_msg("config: %s", err);
	return c;
}

/* unsub_new of text fails naming why. */
static void
refused(const char *text, const char *why)
{
	struct config	*c = conf(text);
	char		 err[512] = "";

	if (unsub_new(c, err, sizeof(err)) != NULL)
		fail_msg("%s: taken", text);
	if (strstr(err, why) == NULL)
		fail_msg("%s: '%s', wanted '%s'", text, err, why);
	config_free(c);
}

static void
test_links(void **state)
{
	struct config	*c;
	struct unsub	*u;
	char		 err[512] = "", *url;

	(void)state;
	c = conf("public-url = https://msg.example.com//\n"
	    "unsubscribe-secret = " KEY "\n"
	    "[client.acme]\nlist-unsubscribe = yes\n"
	    "[client.other]\nlist-unsubscribe = no\n"
	    "[client.third]\nrate = 5/s\n");
	if ((u = unsub_new(c, err, sizeof(err))) == NULL)
		fail_msg("unsub_new: %s", err);
	assert_int_equal(unsub_url(u, "acme", "ann@example.com", &url), 0);
	assert_string_equal(url, "https://msg.example.com/unsubscribe/"
	    ANN_TOKEN);
	free(url);
	/* Only a client that asks for it; none of a client unknown. */
	assert_int_equal(unsub_url(u, "other", "ann@example.com", &url), 0);
	assert_null(url);
	assert_int_equal(unsub_url(u, "third", "ann@example.com", &url), 0);
	assert_null(url);
	assert_int_equal(unsub_url(u, "nobody", "ann@example.com", &url), 0);
	assert_null(url);
	assert_int_equal(unsub_url(u, "acme", "not one", &url), -1);
	assert_int_equal(errno, EINVAL);
	assert_null(url);
	unsub_free(u);
	config_free(c);
	unsub_free(NULL);

	/* No client asks for it: nothing else is needed. */
	c = conf("[client.acme]\nrate = 5/s\n");
	assert_non_null(u = unsub_new(c, err, sizeof(err)));
	assert_int_equal(unsub_url(u, "acme", "ann@example.com", &url), 0);
	assert_null(url);
	unsub_free(u);
	config_free(c);
	/* A whsec_ secret: its decoded bytes are the key. */
	c = conf("public-url = http://127.0.0.1:8080/msgspool\n"
	    "unsubscribe-secret = whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3\n"
	    "[client.acme]\nlist-unsubscribe = yes\n");
	assert_non_null(u = unsub_new(c, err, sizeof(err)));
	assert_int_equal(unsub_url(u, "acme", "ann@example.com", &url), 0);
	assert_string_equal(url, "http://127.0.0.1:8080/msgspool/unsubscribe/"
	    ANN_TOKEN);
	free(url);
	unsub_free(u);
	config_free(c);
}

static void
test_links_refused(void **state)
{
	(void)state;
	refused("unsubscribe-secret = " KEY "\n[client.acme]\n"
	    "list-unsubscribe = yes\n",
	    "[client.acme] list-unsubscribe = yes: no public-url");
	refused("public-url = ftp://x.example\nunsubscribe-secret = " KEY "\n"
	    "[client.acme]\nlist-unsubscribe = yes\n",
	    "public-url: not an http or https URL");
	refused("public-url = https://\nunsubscribe-secret = " KEY "\n"
	    "[client.acme]\nlist-unsubscribe = yes\n",
	    "public-url: not an http or https URL");
	refused("public-url = https://x.example/?a=b\nunsubscribe-secret = "
	    KEY "\n[client.acme]\nlist-unsubscribe = yes\n",
	    "public-url: not an http or https URL");
	refused("public-url = https://x.example\n[client.acme]\n"
	    "list-unsubscribe = yes\n", "[client.acme] list-unsubscribe = yes: "
	    "neither unsubscribe-secret nor unsubscribe-secret-file");
	refused("public-url = https://x.example\nunsubscribe-secret = short\n"
	    "[client.acme]\nlist-unsubscribe = yes\n",
	    "unsubscribe-secret: shorter than 24 bytes");
	refused("public-url = https://x.example\n"
	    "unsubscribe-secret-file = /nonexistent/secret\n"
	    "[client.acme]\nlist-unsubscribe = yes\n",
	    "unsubscribe-secret-file: /nonexistent/secret");
	refused("[client.acme]\nlist-unsubscribe = 1\n",
	    "[client.acme] list-unsubscribe: neither yes nor no");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_token_format),
		cmocka_unit_test(test_every_byte_changed_fails),
		cmocka_unit_test(test_not_tokens),
		cmocka_unit_test(test_what_a_token_names),
		cmocka_unit_test(test_links),
		cmocka_unit_test(test_links_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
