/*
 * unsub.h: one-click unsubscribe (RFC 8058; msgspool.conf(5),
 * list-unsubscribe; conf/openapi.yaml, /unsubscribe/{token}).  Every
 * email of a client with list-unsubscribe = yes carries a link,
 *
 *	List-Unsubscribe: <PUBLIC-URL/unsubscribe/TOKEN>
 *	List-Unsubscribe-Post: List-Unsubscribe=One-Click
 *
 * whose token names the client and the recipient's address and is
 * signed with unsubscribe-secret.  No state is kept for it: the
 * unsubscribe program finds both in the token and checks its signature.
 * A token is, in base64url without padding (RFC 4648 section 5),
 *
 *	B64URL(CLIENT ":" ADDRESS) "." B64URL(HMAC-SHA256(KEY,
 *	    "msgspool-unsubscribe:" CLIENT ":" ADDRESS))
 *
 * KEY being config_secret_key's bytes of unsubscribe-secret.  It does
 * not expire; another secret makes every earlier token fail.
 */
#ifndef UNSUB_H
#define UNSUB_H

#include <stddef.h>

#include "base/config.h"
#include "base/valid.h"		/* CLIENT_ID_MAX */

/* An address in a token: an addr-spec, at most (RFC 5321's 254). */
#define UNSUB_ADDR_MAX	254
/* A token, at most: 4/3 of the longest client, ':' and address, '.', 43. */
#define UNSUB_TOKEN_MAX	512

/*
 * The token of client's address (a client id and an ASCII addr-spec of
 * at most UNSUB_ADDR_MAX bytes) under the key of len bytes.  malloc'd
 * (caller frees); NULL with errno EINVAL when client or address is not
 * one, ENOMEM.
 */
char	*unsub_token(const unsigned char *key, size_t len, const char *client,
	    const char *addr);

/*
 * Whether token is one of the key's: 1 with its client (CLIENT_ID_MAX + 1
 * bytes) and address (UNSUB_ADDR_MAX + 1 bytes) copied out, 0 when it is
 * not (not a token, or its signature is not the key's: compared in
 * constant time; a token with any byte changed is not one).
 */
int	 unsub_verify(const unsigned char *key, size_t len, const char *token,
	    char *client, char *addr);

/*
 * Whether [client.ID] section asks for the link: 1 for list-unsubscribe
 * = yes, 0 for no or none, -1 for another value.
 */
int	 unsub_wanted(const struct config *, const char *section);

/*
 * The links of a config: public-url, the key and the clients with
 * list-unsubscribe = yes.  NULL with a reason naming the key in err when
 * one of them asks for it without a public-url (or one that is not an
 * http or https URL) or without a valid unsubscribe-secret, or a
 * list-unsubscribe is neither yes nor no (msgspoold refuses such a
 * config).  Free with unsub_free.
 */
struct unsub;
struct unsub	*unsub_new(const struct config *, char *err, size_t errlen);
void		 unsub_free(struct unsub *);

/*
 * The link of client's addr (the addr-spec of its To): 0 with *url the
 * malloc'd "PUBLIC-URL/unsubscribe/TOKEN", or NULL when the client has
 * none; -1 with errno (EINVAL: not an address a token can name, ENOMEM).
 */
int		 unsub_url(const struct unsub *, const char *client,
		    const char *addr, char **url);

#endif
