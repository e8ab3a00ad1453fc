/*
 * plan-hash.c - the hashes of libplan against published check values and
 * against independent implementations written here from plan-format.md:
 * CRC-32C, FNV-1a 64, the segment fingerprint; plan_now() and
 * SOURCE_DATE_EPOCH; the default limits; error strings.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "plan.h"
#include "tap.h"

/* Bit by bit, straight from the definition: reflected polynomial
 * 0x82F63B78, register preset to all ones, result inverted. */
static uint32_t crc32c_bitwise(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint32_t crc = 0xFFFFFFFFu;

	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		for (int k = 0; k < 8; k++)
			crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
	}
	return ~crc;
}

static uint64_t fnv1a(const void *data, size_t len, uint64_t h)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

/* The fingerprint's serialization per plan-format.md, into BUF. */
static size_t put32(unsigned char *b, size_t at, uint32_t v)
{
	for (int k = 0; k < 4; k++)
		b[at + k] = (unsigned char)(v >> (8 * k));
	return at + 4;
}

static size_t serialize(const struct plan_segment *s, unsigned char *b)
{
	size_t at = put32(b, 0, s->nnodes);

	for (uint32_t i = 0; i < s->nnodes; i++) {
		const struct plan_node *n = &s->nodes[i];
		size_t len = strlen(n->kernel);
		at = put32(b, at, (uint32_t)n->type);
		at = put32(b, at, (uint32_t)len);
		memcpy(b + at, n->kernel, len);
		at += len;
		for (int k = 0; k < 3; k++)
			at = put32(b, at, n->grid[k]);
		for (int k = 0; k < 3; k++)
			at = put32(b, at, n->block[k]);
		at = put32(b, at, n->shmem);
		at = put32(b, at, n->nparams);
		for (uint32_t k = 0; k < n->nparams; k++) {
			at = put32(b, at, n->params[k].index);
			at = put32(b, at, (uint32_t)n->params[k].offset);
			at = put32(b, at, (uint32_t)(n->params[k].offset >> 32));
		}
	}
	at = put32(b, at, s->nedges);
	for (uint32_t i = 0; i < s->nedges; i++) {
		at = put32(b, at, s->edges[i].from);
		at = put32(b, at, s->edges[i].to);
	}
	return at;
}

static void test_crc32c(void)
{
	unsigned char buf[32];

	is_u64(plan_crc32c("123456789", 9), 0xE3069283u, "crc32c(\"123456789\") is the check value");
	is_u64(plan_crc32c("", 0), 0, "crc32c of nothing is 0");
	/* RFC 3720, B.4: the iSCSI test patterns. */
	memset(buf, 0, sizeof buf);
	is_u64(plan_crc32c(buf, 32), 0x8A9136AAu, "crc32c of 32 zero bytes (RFC 3720)");
	memset(buf, 0xFF, sizeof buf);
	is_u64(plan_crc32c(buf, 32), 0x62A8AB43u, "crc32c of 32 0xFF bytes (RFC 3720)");
	for (int i = 0; i < 32; i++)
		buf[i] = (unsigned char)i;
	is_u64(plan_crc32c(buf, 32), 0x46DD794Eu, "crc32c of 0..31 (RFC 3720)");
	for (int i = 0; i < 32; i++)
		buf[i] = (unsigned char)(31 - i);
	is_u64(plan_crc32c(buf, 32), 0x113FDB5Cu, "crc32c of 31..0 (RFC 3720)");

	/* Every length and alignment against the bitwise definition. */
	unsigned char big[1031];
	int same = 1;
	for (size_t i = 0; i < sizeof big; i++)
		big[i] = (unsigned char)(i * 131 + 7);
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; len + off <= sizeof big; len += 17)
			if (plan_crc32c(big + off, len) != crc32c_bitwise(big + off, len))
				same = 0;
	ok(same, "crc32c agrees with the bitwise definition at every offset and many lengths");

	/* A megabyte and more: the long-buffer paths of the library. */
	size_t mlen = ((size_t)1 << 20) + 7;
	unsigned char *m = malloc(mlen);
	if (m != NULL) {
		for (size_t i = 0; i < mlen; i++)
			m[i] = (unsigned char)((i * 2654435761u) >> 11);
		is_u64(plan_crc32c(m, mlen), crc32c_bitwise(m, mlen),
		       "crc32c of 1 MiB + 7 bytes agrees with the bitwise definition");
		free(m);
	} else {
		ok(0, "allocate 1 MiB");
	}

	/* Past 1 GiB the library's int length no longer reaches: plan_crc32c
	 * goes through the buffer in pieces and carries the register. 1 GiB
	 * and 16 zero bytes, read from unwritten anonymous pages (no memory
	 * is used); the value is the one libplan's own table CRC (one look-up
	 * a byte, before ISA-L took its place) gives. */
	size_t zlen = ((size_t)1 << 30) + 16;
	void *z = mmap(NULL, zlen, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (z != MAP_FAILED) {
		is_u64(plan_crc32c(z, zlen), 0xA502D37Du, "crc32c of 1 GiB + 16 zero bytes");
		munmap(z, zlen);
	} else {
		ok(0, "map 1 GiB of zero pages");
	}
}

static void test_fnv(void)
{
	is_u64(plan_hash64("", 0, PLAN_HASH64_INIT), UINT64_C(0xcbf29ce484222325), "FNV-1a 64 of \"\"");
	is_u64(plan_hash64("a", 1, PLAN_HASH64_INIT), UINT64_C(0xaf63dc4c8601ec8c), "FNV-1a 64 of \"a\"");
	is_u64(plan_hash64("foobar", 6, PLAN_HASH64_INIT), UINT64_C(0x85944171f73967e8),
	       "FNV-1a 64 of \"foobar\"");
	is_u64(plan_hash64("bar", 3, plan_hash64("foo", 3, PLAN_HASH64_INIT)),
	       plan_hash64("foobar", 6, PLAN_HASH64_INIT), "FNV-1a 64 continues from a state");
}

static void test_fingerprint(void)
{
	struct plan_param pa[] = { { 0, 256 }, { 2, UINT64_C(0x100000200) } };
	struct plan_node nodes[] = {
		{ PLAN_NODE_KERNEL, 0, "gemm", { 4, 2, 1 }, { 128, 1, 1 }, 1024, 2, pa, PLAN_NONE },
		{ PLAN_NODE_MEMSET, PLAN_NONE, "", { 0, 0, 0 }, { 0, 0, 0 }, 0, 0, NULL, PLAN_NONE },
	};
	struct plan_edge edges[] = { { .from = 0, .to = 1 } };
	struct plan_segment s = { .flags = PLAN_SEG_NODES, .nnodes = 2, .nodes = nodes,
	                          .nedges = 1, .edges = edges };
	unsigned char buf[512];
	size_t n = serialize(&s, buf);
	uint64_t fp = plan_fingerprint(&s);

	is_int(n, 4 + (4 + 4 + 4 + 12 + 12 + 4 + 4 + 2 * 12) + (4 + 4 + 0 + 12 + 12 + 4 + 4) + 4 + 8,
	       "the fingerprint serialization has the length the spec gives");
	is_u64(fp, fnv1a(buf, n, UINT64_C(0xcbf29ce484222325)),
	       "plan_fingerprint is FNV-1a 64 of the serialization in plan-format.md");

	struct plan_segment empty = { 0 };
	unsigned char zero8[8] = { 0 };
	is_u64(plan_fingerprint(&empty), fnv1a(zero8, 8, UINT64_C(0xcbf29ce484222325)),
	       "an empty segment's fingerprint hashes two zero counts");

	nodes[0].op = 7;
	is_u64(plan_fingerprint(&s), fp, "the node's op does not enter the fingerprint");
	nodes[0].grid[2] = 2;
	ok(plan_fingerprint(&s) != fp, "the grid enters the fingerprint");
	nodes[0].grid[2] = 1;
	pa[1].offset += UINT64_C(1) << 32;
	ok(plan_fingerprint(&s) != fp, "a parameter's high offset bits enter the fingerprint");
	pa[1].offset -= UINT64_C(1) << 32;
	edges[0] = (struct plan_edge){ .from = 1, .to = 0 };
	ok(plan_fingerprint(&s) != fp, "an edge's direction enters the fingerprint");
	edges[0] = (struct plan_edge){ .from = 0, .to = 1 };
	nodes[0].kernel = "gem";
	nodes[1].kernel = "m";
	ok(plan_fingerprint(&s) != fp, "kernel names are length-prefixed (\"gem\"+\"m\" != \"gemm\"+\"\")");
	nodes[0].kernel = "gemm";
	nodes[1].kernel = "";
	is_u64(plan_fingerprint(&s), fp, "restored, the fingerprint is the same again");
}

static void test_now(void)
{
	time_t before = time(NULL);

	setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
	is_int(plan_now(), 1700000000, "SOURCE_DATE_EPOCH gives the time stamp");
	setenv("SOURCE_DATE_EPOCH", "0", 1);
	is_int(plan_now(), 0, "SOURCE_DATE_EPOCH=0 is a valid time");
	setenv("SOURCE_DATE_EPOCH", "9223372036854775807", 1);
	is_int(plan_now(), INT64_MAX, "the largest int64 is a valid time");
	const char *bad[] = { "", "abc", "12x", "-5", " 5", "+5", "9223372036854775808",
	                      "99999999999999999999999" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		setenv("SOURCE_DATE_EPOCH", bad[i], 1);
		int64_t t = plan_now();
		ok(t >= (int64_t)before && t <= (int64_t)time(NULL),
		   "SOURCE_DATE_EPOCH=\"%s\" is ignored: the current time is used", bad[i]);
	}
	unsetenv("SOURCE_DATE_EPOCH");
	int64_t t = plan_now();
	ok(t >= (int64_t)before && t <= (int64_t)time(NULL), "unset, the current time is used");
}

static void test_misc(void)
{
	struct plan_limits l;
	int codes[] = { PLAN_OK, PLAN_ERR_GENERIC, PLAN_ERR_BAD_MAGIC, PLAN_ERR_VERSION,
	                PLAN_ERR_TRUNCATED, PLAN_ERR_CHECKSUM, PLAN_ERR_CORRUPT, PLAN_ERR_RESERVED,
	                PLAN_ERR_DECOMPRESS, PLAN_ERR_LIMIT, PLAN_ERR_IO, PLAN_ERR_NOMEM,
	                PLAN_ERR_INVALID, PLAN_ERR_NOT_FOUND };
	int good = 1;

	plan_limits_default(&l);
	is_u64(l.max_file_bytes, UINT64_C(1) << 30, "default file limit: 1 GiB");
	is_u64(l.max_content_bytes, UINT64_C(1) << 30, "default content limit: 1 GiB");
	is_int(l.max_records, 1 << 24, "default record limit: 16 Mi");
	for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
		if (strcmp(plan_strerror(codes[i]), "unknown error") == 0 || plan_strerror(codes[i])[0] == '\0')
			good = 0;
	ok(good, "every error code has its own description");
	is_str(plan_strerror(77), "unknown error", "an undefined code is an unknown error");
}

int main(void)
{
	test_crc32c();
	test_fnv();
	test_fingerprint();
	test_now();
	test_misc();
	return tap_done();
}
