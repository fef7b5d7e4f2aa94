/*
 * gsm.h: the text of an SMS as an SMSC takes it (msgspool.conf(5),
 * "The smpp provider"): the GSM 03.38 default alphabet with its
 * extension table when every character fits (data_coding 0, one septet
 * per octet), else UCS-2 (data_coding 8, UTF-16 big-endian, a character
 * beyond the BMP as its surrogate pair); a text too long for one SMS
 * split into concatenated parts, each starting with the 8-bit-reference
 * concatenation UDH (05 00 03 REF TOTAL SEQ; esm_class UDHI).  An
 * escaped GSM character or a surrogate pair is never split between
 * parts.  Pure functions, tested on their own.
 */
#ifndef GSM_H
#define GSM_H

#include <stddef.h>
#include <stdint.h>

#define GSM_CODING_DEFAULT	0x00	/* data_coding: SMSC default (GSM) */
#define GSM_CODING_UCS2		0x08	/* data_coding: UCS-2 */
#define GSM_SEPTETS_ONE		160	/* a GSM text in one SMS, at most */
#define GSM_SEPTETS_PART	153	/* ... in each concatenated part */
#define GSM_UCS2_ONE		70	/* UTF-16 units in one SMS */
#define GSM_UCS2_PART		67	/* ... in each part */
#define GSM_UDH_LEN		6	/* 05 00 03 REF TOTAL SEQ */
#define GSM_PARTS_MAX		255
#define GSM_OCTETS_MAX		(GSM_UDH_LEN + GSM_SEPTETS_PART > \
				    GSM_SEPTETS_ONE ? GSM_UDH_LEN + \
				    GSM_SEPTETS_PART : GSM_SEPTETS_ONE)

/* One short_message: its octets, UDH included when concatenated. */
struct gsm_part {
	size_t	len;
	uint8_t	octets[GSM_OCTETS_MAX];
};

struct gsm_sms {
	uint8_t		 coding;	/* GSM_CODING_DEFAULT or _UCS2 */
	int		 udhi;		/* parts carry a UDH (esm_class) */
	size_t		 units;		/* septets or UTF-16 units in all */
	size_t		 nparts;
	struct gsm_part	*parts;		/* nparts of them; gsm_free */
};

/*
 * Whether each character of the UTF-8 text (len bytes) is in the GSM
 * default alphabet or its extension table; *septets, when not NULL,
 * gets the septets it takes (2 for an escaped one).  1 or 0; -1 when
 * the text is not valid UTF-8.
 */
int	 gsm_fits(const char *text, size_t len, size_t *septets);

/*
 * Encode the UTF-8 text (len bytes) into sms: GSM when it fits, else
 * UCS-2, in one part or in concatenated parts with reference ref.  0,
 * or -1 with the reason in err (not UTF-8, empty, more than
 * GSM_PARTS_MAX parts, out of memory).  gsm_free frees the parts.
 */
int	 gsm_encode(const char *text, size_t len, uint8_t ref,
	    struct gsm_sms *sms, char *err, size_t errlen);

void	 gsm_free(struct gsm_sms *sms);

/* data_coding values of a received SMS beside GSM and UCS-2. */
#define GSM_CODING_ASCII	0x01	/* IA5 */
#define GSM_CODING_LATIN1	0x03	/* ISO 8859-1 */

/*
 * The text of a received SMS (the octets after its UDH) as UTF-8, by its
 * data_coding: 0x00 (and a message class 0xF0-0xF3) the GSM 03.38
 * default alphabet, one septet an octet, with its extension table; 0x01
 * ASCII; 0x03 Latin-1; 0x08 UCS-2 (UTF-16 big-endian, surrogate pairs
 * joined).  What cannot be read (an octet that is no septet, half of a
 * pair) becomes U+FFFD; an escape to no character of the table is the
 * basic table's character (3GPP TS 23.038).  *out is malloc'd and
 * NUL-terminated.  0; 1 when the coding is no text (binary data, a
 * national alphabet), *out NULL; -1 out of memory.
 */
int	 gsm_decode(uint8_t coding, const uint8_t *octets, size_t len,
	    char **out);

#endif
