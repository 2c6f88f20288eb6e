/*
 * sha1.c - SHA-1 (FIPS 180-4), for one purpose: the name Redis gives a
 * Lua script, so that redis.c can call a script by EVALSHA without
 * asking the server for its name first.  Not for anything secret.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "heart.h"

#define ROL(x, n)	(((x) << (n)) | ((x) >> (32 - (n))))

static void
block(uint32_t h[5], const unsigned char *p)
{
	uint32_t w[80], a, b, c, d, e, f, k, t;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 |
		    (uint32_t)p[4 * i + 1] << 16 |
		    (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (; i < 80; i++)
		w[i] = ROL(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
	for (i = 0; i < 80; i++) {
		if (i < 20)
			f = (b & c) | (~b & d), k = 0x5a827999;
		else if (i < 40)
			f = b ^ c ^ d, k = 0x6ed9eba1;
		else if (i < 60)
			f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
		else
			f = b ^ c ^ d, k = 0xca62c1d6;
		t = ROL(a, 5) + f + e + k + w[i];
		e = d, d = c, c = ROL(b, 30), b = a, a = t;
	}
	h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

/* The digest of len bytes at data, as 40 lowercase hex digits. */
void
sha1_hex(const void *data, size_t len, char out[41])
{
	uint32_t h[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476,
	    0xc3d2e1f0 };
	const unsigned char *p = data;
	unsigned char last[128];
	uint64_t bits = (uint64_t)len * 8;
	size_t n, i;

	for (; len >= 64; p += 64, len -= 64)
		block(h, p);
	memset(last, 0, sizeof last);
	memcpy(last, p, len);
	last[len] = 0x80;
	n = len + 1 + 8 <= 64 ? 64 : 128;
	for (i = 0; i < 8; i++)
		last[n - 1 - i] = (unsigned char)(bits >> (8 * i));
	for (i = 0; i < n; i += 64)
		block(h, last + i);
	for (i = 0; i < 5; i++)
		snprintf(out + 8 * i, 9, "%08x", (unsigned)h[i]);
}
