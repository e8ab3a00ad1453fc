/*
 * plan-vector.c - the test vector of formats/plan-format.md, byte for byte.
 *
 * t/data/vector.plan is decoded here independently of libplan, by the
 * offsets and rules the spec gives: its own CRC-32C (bit by bit), its own
 * FNV-1a, libzstd called directly, the directory and records read at the
 * spec's offsets and compared with the values the spec walks through.
 * Then the same plan built in code must write exactly that content (and,
 * with the libzstd that made the file, exactly that file), and libplan
 * must read the file.
 *
 * t/data/vector-1.0.plan, the vector of format 1.0 (plan-format.md 1.0.0),
 * is decoded the same way by 1.0's offsets and must still be read, into
 * the plan 1.0 described, with the fields 1.1 added at their defaults.
 *
 * t/data/recorded.plan, the vector of a recorded plan (format 1.4), is
 * decoded by 1.4's offsets, its BLOB pieces, module hash (XXH64) and
 * recorded fingerprints computed here, and must be what sample_recorded(2)
 * writes.
 *
 * `t/unit/plan-vector.t --write FILE` writes the vector anew (after a format
 * change, together with the spec); `--write-recorded FILE` the recorded one.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>
#include <xxhash.h>

#include "plan.h"
#include "plan-sample.h"
#include "tap.h"

/* The libzstd version that compressed t/data/vector.plan. */
#define VECTOR_ZSTD_VERSION 10504

static uint32_t crc32c_bitwise(const unsigned char *p, size_t len)
{
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

static uint16_t u16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t u64(const unsigned char *p) { return u32(p) | (uint64_t)u32(p + 4) << 32; }
static double f64(const unsigned char *p)
{
	uint64_t u = u64(p);
	double d;
	memcpy(&d, &u, sizeof d);
	return d;
}

struct section {
	const char *id;
	uint32_t    rsize;
	uint32_t    count;
};

/* The sections of each vector, with the record sizes of the spec's tables
 * and the record counts of the plan the spec describes. */
static const struct section sections_1_1[] = {
	{ "META", 80, 1 }, { "STAT", 56, 1 }, { "DIMS", 24, 2 }, { "VARS", 40, 1 },
	{ "TENS", 144, 3 }, { "OPER", 48, 2 }, { "ATTR", 32, 1 }, { "IDXS", 4, 7 },
	{ "VARI", 32, 1 }, { "ITEM", 8, 2 }, { "SEGS", 56, 1 }, { "NODE", 48, 2 },
	{ "PARM", 16, 4 }, { "EDGE", 12, 1 }, { "BRKP", 40, 1 }, { "CHKS", 32, 1 },
	{ "DISP", 24, 1 }, { "CHOI", 24, 1 }, { "CAND", 16, 2 }, { "STRS", 0, 0 },
};
static const struct section sections_1_0[] = {
	{ "META", 72, 1 }, { "STAT", 56, 1 }, { "DIMS", 24, 2 }, { "VARS", 40, 1 },
	{ "TENS", 144, 3 }, { "OPER", 48, 2 }, { "ATTR", 32, 1 }, { "IDXS", 4, 7 },
	{ "VARI", 32, 1 }, { "ITEM", 8, 2 }, { "SEGS", 56, 1 }, { "NODE", 48, 1 },
	{ "PARM", 16, 3 }, { "EDGE", 8, 0 }, { "BRKP", 40, 1 }, { "CHKS", 32, 1 },
	{ "DISP", 24, 1 }, { "STRS", 0, 0 },
};

/* The string tables: the empty string, then every string in the order the
 * writer first meets it (plan-format.md, "STRS"). */
static const char *const strings_1_1[] = {
	"bcgtool 0.1.0", "vector.yaml", "NVIDIA H100 80GB HBM3", "T", "H", "4", "pos",
	"x", "w", "y", "matmul", "mm", "scale", "s", "factor", "matmul_f32",
	"splitk_reduce_f32", "eager: true", "mma", "cublas",
};
static const char *const strings_1_0[] = {
	"bcgtool 0.1.0", "vector.yaml", "NVIDIA H100 80GB HBM3", "T", "H", "4", "pos",
	"x", "w", "y", "matmul", "mm", "scale", "s", "factor", "matmul_f32", "eager: true",
};

#define LEN(a) (sizeof (a) / sizeof (a)[0])

/* One vector: its file, its format minor version, its layout. */
struct vector {
	const char            *file;
	unsigned               minor;
	const struct section  *sections;
	size_t                 nsect;
	const char *const     *strings;
	size_t                 nstr;
};

static const struct vector vector_1_1 = {
	"vector.plan", 1, sections_1_1, LEN(sections_1_1), strings_1_1, LEN(strings_1_1),
};
static const struct vector vector_1_0 = {
	"vector-1.0.plan", 0, sections_1_0, LEN(sections_1_0), strings_1_0, LEN(strings_1_0),
};

static const struct vector *V;   /* the vector under test */

static uint32_t str_off(const char *s)
{
	uint32_t off = 1;

	if (s[0] == '\0')
		return 0;
	for (size_t i = 0; i < V->nstr; i++) {
		if (strcmp(V->strings[i], s) == 0)
			return off;
		off += (uint32_t)strlen(V->strings[i]) + 1;
	}
	abort();
}

static const char *vector_path(const struct vector *v)
{
	static char path[4096];
	const char *src = getenv("BCG_SRC_DIR");

	snprintf(path, sizeof path, "%s/t/data/%s", src ? src : ".", v->file);
	return path;
}

static void check_header(const unsigned char *f, size_t len)
{
	static const unsigned char magic[8] = { 0x89, 'B', 'C', 'G', 0x0D, 0x0A, 0x1A, 0x0A };
	int zero = 1;

	ok(memcmp(f, magic, 8) == 0, "bytes 0-7: the magic number 89 42 43 47 0D 0A 1A 0A");
	is_int(u16(f + 8), 1, "bytes 8-9: Format_Major 1");
	is_int(u16(f + 10), V->minor, "bytes 10-11: Format_Minor %u", V->minor);
	is_int(u32(f + 12), 0, "bytes 12-15: Header_Flags 0");
	is_int(u32(f + 16), 64, "bytes 16-19: Header_Size 64");
	is_u64(u32(f + 20), crc32c_bitwise(f + 64, len - 64), "bytes 20-23: Payload_Checksum is "
	       "CRC-32C of the payload");
	is_u64(u64(f + 24), len - 64, "bytes 24-31: Payload_Size is the rest of the file");
	for (int i = 40; i < 60; i++)
		if (f[i] != 0)
			zero = 0;
	ok(zero, "bytes 40-59: Reserved, all zero");
	is_u64(u32(f + 60), crc32c_bitwise(f, 60), "bytes 60-63: Header_Checksum is CRC-32C of bytes 0-59");
	ok(u32(f + 64) == 0xFD2FB528u && (f[68] & 0x04) && !(f[68] & 0x03),
	   "the payload is a zstd frame with a content checksum and no dictionary");
}

static void check_directory(const unsigned char *c, size_t clen, size_t *strs_size)
{
	const struct section *sections = V->sections;
	uint64_t off = 8 + 24 * V->nsect, size = 0;
	int good = 1;

	is_int(u32(c), V->nsect, "content bytes 0-3: Section_Count %zu", V->nsect);
	is_int(u32(c + 4), 0, "content bytes 4-7: Reserved 0");
	*strs_size = 1;
	for (size_t i = 0; i < V->nstr; i++)
		*strs_size += strlen(V->strings[i]) + 1;
	for (size_t i = 0; i < V->nsect; i++) {
		const unsigned char *e = c + 8 + 24 * i;
		off = (off + 7) & ~(uint64_t)7;
		size = sections[i].rsize ? 8 + (uint64_t)sections[i].rsize * sections[i].count : *strs_size;
		if (memcmp(e, sections[i].id, 4) != 0 || u32(e + 4) != 1 || u64(e + 8) != off ||
		    u64(e + 16) != size) {
			diag("    entry %zu: %.4s flags %u offset %llu size %llu, want %s 1 %llu %llu",
			     i, (const char *)e, u32(e + 4), (unsigned long long)u64(e + 8),
			     (unsigned long long)u64(e + 16), sections[i].id,
			     (unsigned long long)off, (unsigned long long)size);
			good = 0;
		} else if (sections[i].rsize &&
		           (u32(c + off) != sections[i].rsize || u32(c + off + 4) != sections[i].count)) {
			diag("    section %s: record size %u count %u", sections[i].id, u32(c + off),
			     u32(c + off + 4));
			good = 0;
		}
		off += size;
	}
	ok(good, "the directory lists the %zu sections in order, each 8-byte aligned right after "
	   "the one before, with Required set and the sizes their records give", V->nsect);
	is_u64(clen, off, "the content ends with the string table (%zu bytes)", clen);
}

static const unsigned char *rec(const unsigned char *c, const char *id, uint32_t i)
{
	for (size_t k = 0; k < V->nsect; k++)
		if (memcmp(c + 8 + 24 * k, id, 4) == 0) {
			const unsigned char *s = c + u64(c + 8 + 24 * k + 8);
			return s + 8 + (size_t)i * u32(s);
		}
	abort();
}

static void check_records(const unsigned char *c, size_t strs_size)
{
	const unsigned char *r, *strs = rec(c, "STRS", 0) - 8;
	unsigned char table[256];
	size_t at = 1;

	/* STRS, built here from the list. */
	table[0] = 0;
	for (size_t i = 0; i < V->nstr; i++) {
		memcpy(table + at, V->strings[i], strlen(V->strings[i]) + 1);
		at += strlen(V->strings[i]) + 1;
	}
	ok(at == strs_size && memcmp(strs, table, at) == 0, "STRS: the empty string, then each "
	   "string once, in the order first met");

	r = rec(c, "META", 0);
	ok(u32(r) == str_off("bcgtool 0.1.0") && u32(r + 4) == str_off("vector.yaml") &&
	   u32(r + 8) == str_off("NVIDIA H100 80GB HBM3") && u32(r + 12) == PLAN_BACKEND_CUDA &&
	   u64(r + 16) == UINT64_C(0x1122334455667788) && u64(r + 24) == 1700000000 &&
	   u32(r + 32) == 9 && u32(r + 36) == 0 && u32(r + 40) == 13000 && u32(r + 44) == 13000 &&
	   u32(r + 48) == 130000 && u32(r + 52) == 256 && u64(r + 56) == 1024 && u64(r + 64) == 1024,
	   "META: every field at its offset");
	if (V->minor >= 1)
		ok(u32(r + 72) == PLAN_FEATURE_PDL && u32(r + 76) == 0,
		   "META: Features 1 (pdl), Reserved 0");
	r = rec(c, "STAT", 0);
	ok(u64(r) == 0 && u64(r + 32) == 0 && u32(r + 40) == 1 && u32(r + 44) == 1 && f64(r + 48) == 0,
	   "STAT: reference steps 1, verify exact 1, the rest 0");
	r = rec(c, "DIMS", 0);
	ok(u32(r) == str_off("T") && u32(r + 4) == 0 && u64(r + 8) == 2 && u32(r + 16) == 1 &&
	   u32(r + 20) == 0, "DIMS record 0: T, no expression, 2, the token dim");
	r = rec(c, "DIMS", 1);
	ok(u32(r) == str_off("H") && u32(r + 4) == str_off("4") && u64(r + 8) == 4 && u32(r + 16) == 0,
	   "DIMS record 1: H = \"4\" = 4");
	r = rec(c, "VARS", 0);
	ok(u32(r) == str_off("pos") && u64(r + 8) == 0 && u64(r + 16) == 1 && u64(r + 24) == 15 &&
	   u64(r + 32) == 768, "VARS record 0: pos from 0 by 1 to 15, mirror at 768");
	r = rec(c, "TENS", 1);
	ok(u32(r) == str_off("w") && r[4] == PLAN_DTYPE_F32 && r[5] == PLAN_ROLE_WEIGHT && r[6] == 2 &&
	   r[7] == 0 && u64(r + 8) == 256 && u64(r + 16) == 64 &&
	   u32(r + 24) == 1 && u64(r + 32) == 4 && u32(r + 40) == 1 && u64(r + 48) == 4 &&
	   u32(r + 56) == 0xFFFFFFFFu && u64(r + 64) == 0 && u32(r + 72) == 0xFFFFFFFFu &&
	   u64(r + 80) == 0 && r[88] == PLAN_INIT_RANDOM && r[89] == PLAN_FEED_NONE &&
	   u32(r + 92) == 0xFFFFFFFFu && u64(r + 96) == 2 && f64(r + 104) == 0.5 &&
	   f64(r + 112) == 0 && u64(r + 120) == 0 && u64(r + 128) == 0 && f64(r + 136) == 0,
	   "TENS record 1: w, f32 weight [H, H] at 256, random(seed 2, scale 0.5)");
	r = rec(c, "TENS", 0);
	ok(r[89] == PLAN_FEED_RANDOM && u32(r + 92) == 0xFFFFFFFFu && u64(r + 120) == 1 &&
	   f64(r + 136) == 1.0, "TENS record 0: x fed random(seed 1, scale 1)");
	r = rec(c, "OPER", 1);
	ok(u32(r) == str_off("scale") && u32(r + 4) == str_off("s") && u32(r + 8) == PLAN_OP_EAGER &&
	   u32(r + 12) == 8 && u32(r + 16) == 5 && u32(r + 20) == 3 && u32(r + 24) == 1 &&
	   u32(r + 28) == 4 && u32(r + 32) == 1 && u32(r + 36) == 0 && u32(r + 40) == 1 &&
	   u32(r + 44) == 0, "OPER record 1: scale s, eager, at 8:5, IDXS [3,+1) in, [4,+1) out, ATTR [0,+1)");
	r = rec(c, "ATTR", 0);
	ok(u32(r) == str_off("factor") && u32(r + 4) == PLAN_ATTR_FLOAT && u64(r + 8) == 0 &&
	   f64(r + 16) == 0.5 && u32(r + 24) == 0, "ATTR record 0: factor = 0.5");
	{
		static const uint32_t want[7] = { 0, 1, 2, 2, 2, 2, 2 };
		int same = 1;
		for (uint32_t i = 0; i < 7; i++)
			if (u32(rec(c, "IDXS", i)) != want[i])
				same = 0;
		ok(same, "IDXS: x w | y | y | y | reads y | writes y");
	}
	r = rec(c, "VARI", 0);
	ok(u64(r) == 2 && u32(r + 8) == PLAN_MODE_BREAKABLE && u64(r + 16) == 1024 &&
	   u32(r + 24) == 0 && u32(r + 28) == 2, "VARI record 0: 2 tokens, breakable, items [0,+2)");
	ok(u32(rec(c, "ITEM", 0)) == PLAN_ITEM_SEGMENT && u32(rec(c, "ITEM", 0) + 4) == 0 &&
	   u32(rec(c, "ITEM", 1)) == PLAN_ITEM_BREAK && u32(rec(c, "ITEM", 1) + 4) == 0,
	   "ITEM: segment 0, then breakpoint 0");

	/* The fingerprint from the spec's serialization of the nodes and the
	 * edge. */
	unsigned char ser[256];
	size_t n = 0;
#define PUT32(v) do { uint32_t v_ = (v); for (int k_ = 0; k_ < 4; k_++) ser[n++] = (unsigned char)(v_ >> (8 * k_)); } while (0)
	PUT32(1);
	PUT32(PLAN_NODE_KERNEL);
	PUT32(10);
	memcpy(ser + n, "matmul_f32", 10);
	n += 10;
	PUT32(1); PUT32(1); PUT32(1);
	PUT32(32); PUT32(1); PUT32(1);
	PUT32(0);
	PUT32(3);
	PUT32(0); PUT32(0); PUT32(0);
	PUT32(1); PUT32(256); PUT32(0);
	PUT32(2); PUT32(512); PUT32(0);
	if (V->minor >= 1) {
		ser[0] = 2;           /* two nodes: the count at the start */
		PUT32(PLAN_NODE_KERNEL);
		PUT32(17);
		memcpy(ser + n, "splitk_reduce_f32", 17);
		n += 17;
		PUT32(1); PUT32(1); PUT32(1);
		PUT32(32); PUT32(1); PUT32(1);
		PUT32(0);
		PUT32(1);
		PUT32(0); PUT32(512); PUT32(0);
		PUT32(1);             /* one edge */
		PUT32(0); PUT32(1);
		PUT32(1);             /* one edge with a type or ports */
		PUT32(0);             /* edge 0: programmatic, from the programmatic port */
		ser[n++] = 1;
		ser[n++] = 1;
		ser[n++] = 0;
	} else {
		PUT32(0);
	}
#undef PUT32
	uint64_t fp = fnv1a(ser, n, UINT64_C(0xcbf29ce484222325));
	uint32_t nn = V->minor >= 1 ? 2 : 1, ne = V->minor >= 1 ? 1 : 0;
	r = rec(c, "SEGS", 0);
	ok(u32(r) == 0 && u32(r + 4) == 0 && u32(r + 8) == 1 && u32(r + 12) == PLAN_SEG_NODES &&
	   u64(r + 24) == 0 && u64(r + 32) == 0 && u32(r + 40) == 0 && u32(r + 44) == nn &&
	   u32(r + 48) == 0 && u32(r + 52) == ne, "SEGS record 0: variant 0, op 0, nodes [0,+%u), "
	   "edges [0,+%u)", nn, ne);
	is_u64(u64(r + 16), fp, "SEGS record 0: the fingerprint is FNV-1a of the spec's "
	       "serialization (%zu bytes)", n);
	r = rec(c, "NODE", 0);
	ok(u32(r) == PLAN_NODE_KERNEL && u32(r + 4) == 0 && u32(r + 8) == str_off("matmul_f32") &&
	   u32(r + 12) == 1 && u32(r + 16) == 1 && u32(r + 20) == 1 && u32(r + 24) == 32 &&
	   u32(r + 28) == 1 && u32(r + 32) == 1 && u32(r + 36) == 0 && u32(r + 40) == 0 &&
	   u32(r + 44) == 3, "NODE record 0: kernel matmul_f32 <<<1, 32>>>, params [0,+3)");
	ok(u32(rec(c, "PARM", 1)) == 1 && u32(rec(c, "PARM", 1) + 4) == 0 &&
	   u64(rec(c, "PARM", 1) + 8) == 256 && u64(rec(c, "PARM", 2) + 8) == 512,
	   "PARM: parameter 1 points at 256, parameter 2 at 512");
	r = rec(c, "BRKP", 0);
	ok(u32(r) == 0 && u32(r + 4) == 1 && u32(r + 8) == str_off("s") && u32(r + 12) == PLAN_BREAK_FORCED &&
	   u32(r + 16) == str_off("eager: true") && u32(r + 20) == 5 && u32(r + 24) == 1 &&
	   u32(r + 28) == 6 && u32(r + 32) == 1, "BRKP record 0: s at op 1, forced, reads [5,+1), writes [6,+1)");
	r = rec(c, "CHKS", 0);
	ok(u32(r) == 0 && u32(r + 4) == 2 && u32(r + 8) == 1 && u64(r + 16) == UINT64_C(0xa5a5a5a55a5a5a5a) &&
	   f64(r + 24) == 1.5, "CHKS record 0: y after 1 step, sum 1.5");
	r = rec(c, "DISP", 0);
	ok(u64(r) == 1 && u64(r + 8) == 2 && u32(r + 16) == 0, "DISP record 0: 1..2 tokens on variant 0");
	if (V->minor < 1)
		return;
	r = rec(c, "NODE", 1);
	ok(u32(r) == PLAN_NODE_KERNEL && u32(r + 4) == 0 && u32(r + 8) == str_off("splitk_reduce_f32") &&
	   u32(r + 12) == 1 && u32(r + 24) == 32 && u32(r + 36) == 0 && u32(r + 40) == 3 &&
	   u32(r + 44) == 1, "NODE record 1: kernel splitk_reduce_f32 <<<1, 32>>>, params [3,+1)");
	ok(u32(rec(c, "PARM", 3)) == 0 && u64(rec(c, "PARM", 3) + 8) == 512,
	   "PARM record 3: parameter 0 points at 512");
	r = rec(c, "EDGE", 0);
	ok(u32(r) == 0 && u32(r + 4) == 1 && r[8] == PLAN_EDGE_PROGRAMMATIC &&
	   r[9] == PLAN_PORT_PROGRAMMATIC && r[10] == PLAN_PORT_DEFAULT && r[11] == 0,
	   "EDGE record 0: 0 -> 1, programmatic, from the programmatic port");
	r = rec(c, "CHOI", 0);
	ok(u32(r) == 0 && u32(r + 4) == 0 && u32(r + 8) == str_off("mma") &&
	   u32(r + 12) == (PLAN_CHOICE_TUNED | PLAN_CHOICE_CLOSE) && u32(r + 16) == 0 &&
	   u32(r + 20) == 2, "CHOI record 0: variant 0, op 0, mma, tuned and close, CAND [0,+2)");
	ok(u32(rec(c, "CAND", 0)) == str_off("mma") && u32(rec(c, "CAND", 0) + 4) == 0 &&
	   f64(rec(c, "CAND", 0) + 8) == 3.5 && u32(rec(c, "CAND", 1)) == str_off("cublas") &&
	   f64(rec(c, "CAND", 1) + 8) == 3.75, "CAND: mma 3.5 us, cublas 3.75 us");
}

/* The vector file V: decoded by the spec; read by libplan into WANT. */
static unsigned char *check_vector(const struct vector *v, const plan_t *want, size_t *len,
                                   unsigned char **content_out, size_t *clen_out)
{
	unsigned char *file, *content = NULL;
	size_t clen, strs_size;
	struct plan_diag d = { 0 };
	plan_t *q = NULL;
	unsigned major = 0, minor = 9;

	V = v;
	if ((file = sample_slurp(vector_path(v), len)) == NULL || *len < 64) {
		tap_skip(1, "a vector file cannot be read");
		free(file);
		return NULL;
	}
	diag("%s, format 1.%u", v->file, v->minor);
	check_header(file, *len);
	clen = (size_t)u64(file + 32);
	content = malloc(clen);
	ok(content != NULL && ZSTD_decompress(content, clen, file + 64, *len - 64) == clen,
	   "bytes 32-39: Content_Size %zu is what the frame decompresses to", clen);
	check_directory(content, clen, &strs_size);
	check_records(content, strs_size);
	is_int(plan_read_file(vector_path(v), NULL, &q, &d), 0, "libplan reads %s", v->file);
	if (q != NULL) {
		char why[256];
		if (!ok(sample_plans_equal(want, q, why, sizeof why), "into the plan the spec describes"))
			diag("    first difference: %s", why);
		plan_get_format_version(q, &major, &minor);
		ok(major == 1 && minor == v->minor, "and remembers format %u.%u", major, minor);
	}
	plan_free(q);
	*content_out = content;
	*clen_out = clen;
	return file;
}

/* ---------------------------------------------------------------------- */
/* The recorded vector (format 1.4): t/data/recorded.plan.                 */

static const struct section sections_1_4[] = {
	{ "META", 80, 1 }, { "STAT", 56, 1 }, { "DIMS", 24, 0 }, { "VARS", 40, 0 },
	{ "TENS", 144, 0 }, { "OPER", 48, 0 }, { "ATTR", 32, 0 }, { "IDXS", 4, 0 },
	{ "VARI", 32, 2 }, { "ITEM", 8, 5 }, { "SEGS", 56, 2 }, { "NODE", 48, 8 },
	{ "PARM", 16, 0 }, { "EDGE", 12, 6 }, { "BRKP", 40, 3 }, { "CHKS", 32, 0 },
	{ "DISP", 24, 0 }, { "CHOI", 24, 0 }, { "CAND", 16, 0 }, { "WSRC", 48, 0 },
	{ "VKEY", 8, 2 }, { "DKEY", 8, 0 }, { "RECD", 40, 1 }, { "MODS", 40, 2 },
	{ "FUNC", 16, 3 }, { "PINF", 8, 12 }, { "ALOC", 32, 2 }, { "LNCH", 152, 10 },
	{ "PTCH", 16, 17 }, { "VREC", 24, 2 }, { "SREC", 8, 2 }, { "NLCH", 4, 8 },
	{ "BLCH", 16, 3 }, { "BLOB", 0, 0 }, { "STRS", 0, 0 },
};
static const char *const strings_1_4[] = {
	"bcgtool 0.1.0", "NVIDIA H100 80GB HBM3", "_Z11rmsnorm_f16PK6__halfPS_if",
	"_Z6matmulIfLi128EEvPKT_S2_PS0_iii", "memcpy", "a copy from pageable host memory",
	"cublasLt", "a kernel of a library module outside the graphs",
	"a copy outside the graphs", "python3 serve.py --steps 8", "nvtx:decode_step",
	"libcudart 13.0.48; libcublas 13.0.0", "serve_kernels.cubin", "libcublasLt.so.13",
	"a library's module: --keep-libraries keeps it",
	"sm90_xmma_gemm_f16f16_f32_tn_n_tilesize128x128x64", "decode_step", "prefill_step",
};
/* BLOB: the image (24 bytes at 0), allocation 0's snapshot (64 at 24),
 * the copy's host bytes (16 at 88), the arguments of the kernels (24, 40,
 * 16, then 24, 40 twice for the two layers) from 104 to 312. */
#define REC_BLOB_SIZE 312

static const struct vector vector_1_4 = {
	"recorded.plan", 4, sections_1_4, LEN(sections_1_4), strings_1_4, LEN(strings_1_4),
};

static const unsigned char *section_of(const unsigned char *c, const char *id, uint64_t *size)
{
	for (size_t k = 0; k < V->nsect; k++)
		if (memcmp(c + 8 + 24 * k, id, 4) == 0) {
			*size = u64(c + 8 + 24 * k + 16);
			return c + u64(c + 8 + 24 * k + 8);
		}
	abort();
}

/* The recorded fingerprint of plan-format.md over a segment whose nodes
 * are the kernels of launches LAUNCH (NONE: a non-kernel node of TYPE),
 * read from the content's own records. */
static uint64_t recorded_fingerprint(const unsigned char *c, uint32_t seg)
{
	const unsigned char *s = rec(c, "SEGS", seg), *strs = rec(c, "STRS", 0) - 8;
	uint32_t nf = u32(s + 40), nn = u32(s + 44), ef = u32(s + 48), ne = u32(s + 52), ndata = 0;
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	unsigned char b[4];

#define H32(v) (b[0] = (unsigned char)(v), b[1] = (unsigned char)((v) >> 8), \
	        b[2] = (unsigned char)((v) >> 16), b[3] = (unsigned char)((v) >> 24), \
	        h = fnv1a(b, 4, h))
	H32(nn);
	for (uint32_t i = 0; i < nn; i++) {
		const unsigned char *n = rec(c, "NODE", nf + i);
		uint32_t type = u32(n), launch = u32(rec(c, "NLCH", nf + i));
		H32(type);
		if (type == 1) {
			const unsigned char *l = rec(c, "LNCH", launch);
			const char *name = (const char *)strs + u32(rec(c, "FUNC", u32(l + 4)) + 4);
			uint32_t pf = u32(l + 64), pc = u32(l + 68);
			H32((uint32_t)strlen(name));
			h = fnv1a(name, strlen(name), h);
			for (int k = 0; k < 10; k++)      /* grid, block, cluster, shared */
				H32(u32(l + 8 + 4 * k));
			H32(pc);
			for (uint32_t k = 0; k < pc; k++) {
				const unsigned char *pt = rec(c, "PTCH", pf + k);
				H32(u32(pt));
				H32(u32(pt + 4));
				h = fnv1a(pt + 8, 8, h);
			}
		} else {
			for (int k = 0; k < 12; k++)      /* "", 10 zeros, no patches */
				H32(0u);
		}
	}
	H32(ne);
	for (uint32_t i = 0; i < ne; i++) {
		const unsigned char *e = rec(c, "EDGE", ef + i);
		H32(u32(e));
		H32(u32(e + 4));
		if (e[8] || e[9] || e[10])
			ndata++;
	}
	if (ndata > 0) {
		H32(ndata);
		for (uint32_t i = 0; i < ne; i++) {
			const unsigned char *e = rec(c, "EDGE", ef + i);
			if (!(e[8] || e[9] || e[10]))
				continue;
			H32(i);
			h = fnv1a(e + 8, 3, h);
		}
	}
#undef H32
	return h;
}

static void check_recorded_records(const unsigned char *c)
{
	const unsigned char *r, *blob;
	uint64_t blob_size = 0;
	int good;

	blob = section_of(c, "BLOB", &blob_size);
	is_u64(blob_size, REC_BLOB_SIZE, "BLOB: %d bytes: the image, a snapshot, host bytes and "
	       "the kernels' arguments, each at a multiple of 8", REC_BLOB_SIZE);
	r = rec(c, "RECD", 0);
	ok(u32(r) == str_off("python3 serve.py --steps 8") && u32(r + 4) == str_off("nvtx:decode_step") &&
	   u32(r + 8) == str_off("libcudart 13.0.48; libcublas 13.0.0") && u32(r + 12) == 4242 &&
	   u32(r + 16) == 3 && u32(r + 20) == 0 && u64(r + 24) == 2500000000u && u64(r + 32) == 8,
	   "RECD: command, step rule, libraries, pid 4242, flags snapshot and NVTX, 2.5 s, 8 steps");
	r = rec(c, "MODS", 0);
	ok(u32(r) == str_off("serve_kernels.cubin") && u32(r + 4) == 0 && u32(r + 8) == 1 &&
	   u32(r + 12) == 0 && u64(r + 24) == 24 && u64(r + 32) == 0 &&
	   u64(r + 16) == XXH64(blob, 24, 0) && memcmp(blob, "\x7f" "ELF", 4) == 0,
	   "MODS record 0: the image kept at BLOB 0, its 24 bytes hashing (XXH64) to Hash");
	r = rec(c, "MODS", 1);
	ok(u32(r) == str_off("libcublasLt.so.13") &&
	   u32(r + 4) == str_off("a library's module: --keep-libraries keeps it") &&
	   u32(r + 8) == 0 && u64(r + 16) == UINT64_C(0x9e3779b97f4a7c15) && u64(r + 24) == 1048576 &&
	   u64(r + 32) == 0, "MODS record 1: not kept, a note saying why, image offset 0");
	r = rec(c, "FUNC", 1);
	ok(u32(r) == 0 && u32(r + 4) == str_off("_Z6matmulIfLi128EEvPKT_S2_PS0_iii") &&
	   u32(r + 8) == 4 && u32(r + 12) == 6, "FUNC record 1: module 0, matmul, PINF [4, +6)");
	good = 1;
	for (uint32_t k = 0; k < 6; k++) {
		static const uint32_t off[] = { 0, 8, 16, 24, 28, 32 }, size[] = { 8, 8, 8, 4, 4, 4 };
		if (u32(rec(c, "PINF", 4 + k)) != off[k] || u32(rec(c, "PINF", 4 + k) + 4) != size[k])
			good = 0;
	}
	ok(good, "PINF 4-9: matmul's parameters at 0, 8, 16 (8 bytes), 24, 28, 32 (4 bytes)");
	r = rec(c, "ALOC", 0);
	ok(u64(r) == UINT64_C(0x7f0000000000) && u64(r + 8) == 64 && u32(r + 16) == 0 &&
	   u32(r + 20) == 1 && u64(r + 24) == 24 && blob[24] == 1 && blob[25] == 8 &&
	   blob[24 + 63] == (unsigned char)(63 * 7 + 1),
	   "ALOC record 0: 64 bytes at 0x7f0000000000, its snapshot at BLOB 24");
	r = rec(c, "ALOC", 1);
	ok(u64(r + 8) == 1048576 && u32(r + 20) == 2 && u64(r + 24) == 0,
	   "ALOC record 1: 1 MiB made by cuMemMap, no snapshot");
	r = rec(c, "LNCH", 0);
	ok(u32(r) == 2 && u32(r + 4) == 0xFFFFFFFFu && u32(r + 52) == 0 && u64(r + 56) == 0 &&
	   u32(r + 72) == 0 && u64(r + 80) == 0 && u32(r + 76) == 0xFFFFFFFFu &&
	   u64(r + 88) == UINT64_C(0x560000001000) && u64(r + 96) == 16 && u32(r + 136) == 16 &&
	   u64(r + 144) == 88 && blob[88] == 0xf0 && blob[103] == 0xff,
	   "LNCH record 0: a copy of 16 host bytes, kept at BLOB 88, into allocation 0");
	r = rec(c, "LNCH", 2);
	good = u32(r) == 1 && u32(r + 4) == 1 && u32(r + 8) == 8 && u32(r + 12) == 4 &&
	       u32(r + 16) == 1 && u32(r + 20) == 128 && u32(r + 32) == 2 && u32(r + 36) == 1 &&
	       u32(r + 40) == 1 && u32(r + 44) == 49152 && u32(r + 48) == 1 && u32(r + 52) == 40 &&
	       u64(r + 56) == 128 && u32(r + 64) == 2 && u32(r + 68) == 3 &&
	       u32(r + 72) == 0xFFFFFFFFu && u32(r + 76) == 0xFFFFFFFFu && u64(r + 96) == 0 &&
	       u32(r + 108) == 0 && u32(r + 136) == 0 && u64(r + 144) == 0 &&
	       blob[128] == 0x10 && blob[167] == 0x10 + 39;
	ok(good, "LNCH record 2: matmul <<<(8,4,1), (128,1,1)>>>, cluster (2,1,1), 49152 bytes "
	   "shared, PDL, 40 argument bytes at BLOB 128, PTCH [2, +3), copy fields unused");
	r = rec(c, "PTCH", 4);
	ok(u32(r) == 16 && u32(r + 4) == 0 && u64(r + 8) == 32,
	   "PTCH record 4: matmul's word at byte 16 points into allocation 0 at 32");
	r = rec(c, "PTCH", 6);
	ok(u32(r) == 8 && u32(r + 4) == 0xFFFFFFFFu && u64(r + 8) == UINT64_C(0x7f5500000000),
	   "PTCH record 6: an address in no allocation keeps its value");
	r = rec(c, "LNCH", 3);
	ok(u32(r) == 3 && u32(r + 72) == 1 && u64(r + 80) == 8192 && u32(r + 104) == 0 &&
	   u32(r + 108) == 4 && u64(r + 112) == 256 && u64(r + 120) == 1 && u64(r + 128) == 0,
	   "LNCH record 3: a memset of 256 4-byte zeros at allocation 1 + 8192");
	ok(u32(rec(c, "NLCH", 0)) == 1 && u32(rec(c, "NLCH", 2)) == 3 &&
	   u32(rec(c, "NLCH", 3)) == 0xFFFFFFFFu && u32(rec(c, "NLCH", 4)) == 5,
	   "NLCH: nodes name launches 1, 2, 3, NONE (the empty node), 5, ...");
	r = rec(c, "NODE", 1);
	ok(u32(r) == 1 && u32(r + 4) == 0xFFFFFFFFu && u32(r + 8) == str_off("_Z6matmulIfLi128EEvPKT_S2_PS0_iii") &&
	   u32(r + 12) == 8 && u32(r + 24) == 128 && u32(r + 36) == 49152 && u32(r + 44) == 0,
	   "NODE record 1: op NONE, its launch's kernel, grid, block and shared memory");
	r = rec(c, "BLCH", 1);
	ok(u32(r) == 4 && u32(r + 4) == 1 && u64(r + 8) == 41000,
	   "BLCH record 1: the library GEMM, launch 4, 41 us");
	r = rec(c, "BRKP", 1);
	ok(u32(r + 4) == 0xFFFFFFFFu && u32(r + 12) == 5 && u32(r + 8) == str_off("cublasLt"),
	   "BRKP record 1: op NONE, reason 5 (recorded)");
	r = rec(c, "VREC", 1);
	ok(u32(r) == str_off("prefill_step") && u32(r + 4) == 0 && u64(r + 8) == 2 &&
	   u64(r + 16) == 5400000, "VREC record 1: prefill_step, seen twice, 5.4 ms");
	ok(u64(rec(c, "SREC", 0)) == 700000 && u64(rec(c, "SREC", 1)) == 5100000,
	   "SREC: the graphs' recorded times");
	r = rec(c, "VARI", 1);
	ok(u64(r) == 2 && u32(r + 8) == 1, "VARI record 1: number 2, breakable");
	for (uint32_t sg = 0; sg < 2; sg++)
		is_u64(u64(rec(c, "SEGS", sg) + 16), recorded_fingerprint(c, sg),
		       "SEGS record %u: Fingerprint is the recorded fingerprint of its nodes", sg);
}

static void check_recorded_vector(void)
{
	unsigned char *file, *content = NULL, *wcontent = NULL;
	size_t len = 0, clen = 0, strs_size = 0, wclen = 0;
	plan_t *want = sample_recorded(2), *q = NULL;
	struct plan_diag d = { 0 };
	void *written = NULL;
	size_t wlen = 0;

	V = &vector_1_4;
	if ((file = sample_slurp(vector_path(V), &len)) == NULL || len < 64 || want == NULL) {
		tap_skip(1, "the recorded vector cannot be read or built");
		free(file);
		plan_free(want);
		return;
	}
	diag("%s, format 1.4", V->file);
	check_header(file, len);
	clen = (size_t)u64(file + 32);
	content = malloc(clen);
	ok(content != NULL && ZSTD_decompress(content, clen, file + 64, len - 64) == clen,
	   "bytes 32-39: Content_Size %zu is what the frame decompresses to", clen);
	{
		/* The directory, with BLOB's size before the string table's. */
		uint64_t off = 8 + 24 * V->nsect, size;
		int good = 1;
		strs_size = 1;
		for (size_t i = 0; i < V->nstr; i++)
			strs_size += strlen(V->strings[i]) + 1;
		for (size_t i = 0; i < V->nsect; i++) {
			const unsigned char *e = content + 8 + 24 * i;
			off = (off + 7) & ~(uint64_t)7;
			size = V->sections[i].rsize ? 8 + (uint64_t)V->sections[i].rsize * V->sections[i].count :
			       strcmp(V->sections[i].id, "BLOB") == 0 ? REC_BLOB_SIZE : strs_size;
			if (memcmp(e, V->sections[i].id, 4) != 0 || u32(e + 4) != 1 ||
			    u64(e + 8) != off || u64(e + 16) != size ||
			    (V->sections[i].rsize && (u32(content + off) != V->sections[i].rsize ||
			                              u32(content + off + 4) != V->sections[i].count))) {
				diag("    entry %zu: %.4s offset %llu size %llu, want %s %llu %llu", i,
				     (const char *)e, (unsigned long long)u64(e + 8),
				     (unsigned long long)u64(e + 16), V->sections[i].id,
				     (unsigned long long)off, (unsigned long long)size);
				good = 0;
			}
			off += size;
		}
		is_int(u32(content), 35, "content bytes 0-3: Section_Count 35");
		ok(good, "the directory lists the 35 sections of 1.4 in order, all Required, with "
		   "the sizes their records give");
		is_u64(clen, off, "the content ends with the string table");
	}
	check_recorded_records(content);
	is_int(plan_read_file(vector_path(V), NULL, &q, &d), 0, "libplan reads %s", V->file);
	if (q != NULL) {
		char why[256];
		if (!ok(sample_plans_equal(want, q, why, sizeof why), "into the plan the spec describes"))
			diag("    first difference: %s", why);
	}
	is_int(plan_write_memory(want, &written, &wlen, &d), 0, "the recorded plan built in code is written");
	if (written != NULL) {
		unsigned char *w = written;
		wclen = (size_t)u64(w + 32);
		wcontent = malloc(wclen);
		ok(wcontent != NULL && ZSTD_decompress(wcontent, wclen, w + 64, wlen - 64) == wclen &&
		   wclen == clen && memcmp(wcontent, content, clen) == 0,
		   "its content is the recorded vector's content, byte for byte");
	}
	plan_free(q);
	plan_free(want);
	free(file);
	free(content);
	free(written);
	free(wcontent);
}

/* ---------------------------------------------------------------------- */
/* The paced vector (1.7): the recorded vector with start offsets.         */

/* Section ID of CONTENT (a directory of N entries): its bytes and size. */
static const unsigned char *find_section(const unsigned char *c, const char *id, uint64_t *size)
{
	uint32_t n = u32(c);

	for (uint32_t i = 0; i < n; i++) {
		const unsigned char *e = c + 8 + 24 * (size_t)i;
		if (memcmp(e, id, 4) == 0) {
			*size = u64(e + 16);
			return c + u64(e + 8);
		}
	}
	*size = 0;
	return NULL;
}

static void check_paced_vector(void)
{
	plan_t *p = sample_recorded_ex(&(struct sample_rec_opts){ .layers = 2, .offsets = 1 });
	plan_t *q = NULL;
	unsigned char *file = NULL, *old = NULL, *c = NULL;
	void *written = NULL;
	size_t len = 0, wlen = 0, olen = 0, clen = 0;
	struct plan_diag d = { 0 };
	uint64_t size;
	const unsigned char *x;

	V = &vector_1_4;
	if (p == NULL || (file = sample_slurp(vector_path(V), &len)) == NULL || len < 64) {
		tap_skip(1, "the paced vector cannot be built");
		plan_free(p);
		free(file);
		return;
	}
	diag("the paced vector, format 1.7");
	olen = (size_t)u64(file + 32);
	old = malloc(olen);
	if (old == NULL || ZSTD_decompress(old, olen, file + 64, len - 64) != olen) {
		tap_skip(1, "the recorded vector does not decompress");
		goto out;
	}
	is_int(plan_write_memory(p, &written, &wlen, &d), 0, "the plan with offsets is written");
	if (written == NULL)
		goto out;
	unsigned char *w = written;
	is_int(u16(w + 8), 1, "header: major 1");
	is_int(u16(w + 10), 7, "header: minor 7, the first to hold start offsets");
	clen = (size_t)u64(w + 32);
	c = malloc(clen);
	ok(c != NULL && ZSTD_decompress(c, clen, w + 64, wlen - 64) == clen, "it decompresses");
	if (c == NULL)
		goto out;
	is_int(u32(c), 38, "38 sections: the recorded vector's 35, DIST, SBLK and SHAR");
	/* every section of the recorded vector but SREC and BLCH, byte for
	 * byte (at other offsets: DIST, SBLK and SHAR come before STRS) */
	int same = 1;
	for (uint32_t i = 0; i < u32(old); i++) {
		const unsigned char *e = old + 8 + 24 * (size_t)i;
		char id[5] = { 0 };
		uint64_t wsize;
		memcpy(id, e, 4);
		if (strcmp(id, "SREC") == 0 || strcmp(id, "BLCH") == 0)
			continue;
		x = find_section(c, id, &wsize);
		/* TENS and WSRC grew in 1.5: no records, at 1.5's sizes */
		if (strcmp(id, "TENS") == 0 || strcmp(id, "WSRC") == 0) {
			uint32_t want = strcmp(id, "TENS") == 0 ? 168 : 88;
			if (x == NULL || wsize != 8 || u32(x) != want || u32(x + 4) != 0 ||
			    u32(old + u64(e + 8) + 4) != 0) {
				diag("    section %s is not empty at 1.5's size", id);
				same = 0;
			}
			continue;
		}
		if (x == NULL || wsize != u64(e + 16) || memcmp(x, old + u64(e + 8), wsize) != 0) {
			diag("    section %s differs", id);
			same = 0;
		}
	}
	ok(same, "every other section of the recorded vector is there, byte for byte (TENS and "
	   "WSRC empty, at 1.5's record sizes)");
	/* SREC: 24 bytes a record: Recorded_Ns, Start_Ns, Issue_Ns */
	x = find_section(c, "SREC", &size);
	ok(x != NULL && size == 8 + 2 * 24 && u32(x) == 24 && u32(x + 4) == 2,
	   "SREC: two records of 24 bytes");
	if (x != NULL && size == 8 + 2 * 24) {
		ok(u64(x + 8) == 700000 && u64(x + 16) == 15000 && u64(x + 24) == 11000,
		   "SREC 0: 700 us, at +15 us, launched +11 us");
		ok(u64(x + 32) == 5100000 && u64(x + 40) == 0 && u64(x + 48) == 0,
		   "SREC 1: 5.1 ms, the first item of its step: 0 and 0");
	}
	/* BLCH: 32 bytes: Launch_First, Launch_Count, Recorded_Ns, Start_Ns, Issue_Ns */
	x = find_section(c, "BLCH", &size);
	ok(x != NULL && size == 8 + 3 * 32 && u32(x) == 32 && u32(x + 4) == 3,
	   "BLCH: three records of 32 bytes");
	if (x != NULL && size == 8 + 3 * 32) {
		ok(u32(x + 8) == 0 && u32(x + 12) == 1 && u64(x + 16) == 9000 && u64(x + 24) == 0 &&
		   u64(x + 32) == 0, "BLCH 0: launch 0, 9 us, the step's first item");
		ok(u32(x + 40) == 4 && u32(x + 44) == 1 && u64(x + 48) == 41000 &&
		   u64(x + 56) == 730000 && u64(x + 64) == 26000,
		   "BLCH 1: launch 4, 41 us, at +730 us, launched +26 us");
		ok(u32(x + 72) == 9 && u32(x + 76) == 1 && u64(x + 80) == 12000 &&
		   u64(x + 88) == 5150000 && u64(x + 96) == 40000,
		   "BLCH 2: launch 9, 12 us, at +5.15 ms, launched +40 us");
	}
	x = find_section(c, "DIST", &size);
	ok(x != NULL && size == 8 + 16 && u32(x + 8) == 1 && u32(x + 12) == 0,
	   "DIST: world 1, rank 0");
	is_int(plan_read_memory(written, wlen, NULL, &q, &d), 0, "libplan reads it (%s)", d.message);
	if (q != NULL) {
		const struct plan_variant *v = plan_get_variant(q, 0);
		uint64_t st[3] = { 0 }, is[3] = { 0 };
		unsigned major, minor;
		for (uint32_t k = 0; v != NULL && k < v->nitems && k < 3; k++)
			plan_item_offsets(q, &v->items[k], &st[k], &is[k]);
		ok(v != NULL && v->nitems == 3 && st[1] == 15000 && st[2] == 730000 && is[1] == 11000 &&
		   is[2] == 26000, "with the offsets of decode_step's items");
		is_int(plan_variant_offsets(q, 0, NULL), PLAN_OFFSETS_START | PLAN_OFFSETS_ISSUE,
		       "decode_step has both kinds");
		plan_get_format_version(q, &major, &minor);
		ok(major == 1 && minor == 7, "the plan read remembers format 1.7");
	}
out:
	plan_free(p);
	plan_free(q);
	free(file);
	free(old);
	free(c);
	free(written);
}

int main(int argc, char **argv)
{
	unsigned char *file, *content = NULL, *wcontent = NULL;
	size_t len = 0, clen = 0, wlen = 0;
	void *written = NULL;
	plan_t *p = sample_vector(), *old = sample_vector_1_0();
	struct plan_diag d = { 0 };

	if (argc == 3 && strcmp(argv[1], "--write-recorded") == 0) {
		plan_t *r = sample_recorded(2);
		if (r == NULL || plan_write_file(r, argv[2], &d) != 0) {
			fprintf(stderr, "plan-vector: %s\n", d.message);
			return 1;
		}
		plan_free(r);
		plan_free(p);
		plan_free(old);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "--write") == 0) {
		if (p == NULL || plan_write_file(p, argv[2], &d) != 0) {
			fprintf(stderr, "plan-vector: %s\n", d.message);
			return 1;
		}
		plan_free(p);
		plan_free(old);
		return 0;
	}
	if (p == NULL || old == NULL)
		tap_skip_all("the vector plans cannot be built");

	file = check_vector(&vector_1_1, p, &len, &content, &clen);
	is_int(plan_write_memory(p, &written, &wlen, &d), 0, "the vector plan built in code is written");
	if (written != NULL && file != NULL) {
		unsigned char *w = written;
		size_t wclen = (size_t)u64(w + 32);
		wcontent = malloc(wclen);
		ok(wcontent != NULL && ZSTD_decompress(wcontent, wclen, w + 64, wlen - 64) == wclen &&
		   wclen == clen && memcmp(wcontent, content, clen) == 0,
		   "its content is the vector's content, byte for byte");
		ok(memcmp(w, file, 20) == 0 && memcmp(w + 32, file + 32, 28) == 0,
		   "its header is the vector's but for the payload's size and checksum");
		if (ZSTD_versionNumber() == VECTOR_ZSTD_VERSION)
			ok(wlen == len && memcmp(w, file, len) == 0, "with libzstd %u, the whole file is the "
			   "vector, byte for byte", ZSTD_versionNumber());
		else
			tap_skip(1, "libzstd differs from the one that compressed the vector: its "
			         "compressed bytes may differ");
	}
	free(file);
	free(content);
	free(written);
	free(wcontent);
	written = NULL;

	/* Format 1.0: read as it always was; written again, it is 1.1. */
	file = check_vector(&vector_1_0, old, &len, &content, &clen);
	if (file != NULL) {
		plan_t *q = NULL, *r = NULL;
		plan_read_memory(file, len, NULL, &q, &d);
		is_int(q != NULL ? plan_write_memory(q, &written, &wlen, &d) : -1, 0,
		       "the 1.0 vector read is written");
		/* 1.1: the plan holds nothing 1.2 added */
		ok(written != NULL && u16((unsigned char *)written + 10) == 1 &&
		   plan_read_memory(written, wlen, NULL, &r, &d) == 0 &&
		   sample_plans_equal(old, r, (char[256]){ 0 }, 256),
		   "as a format 1.1 file of the same plan");
		ok(q != NULL && plan_get_segment(q, 0)->fingerprint == plan_fingerprint(plan_get_segment(q, 0)),
		   "its fingerprint, hashed by 1.1's rule, is still the one 1.0 stored");
		plan_free(q);
		plan_free(r);
	}
	free(file);
	free(content);
	free(written);
	plan_free(p);
	plan_free(old);
	check_recorded_vector();
	check_paced_vector();
	return tap_done();
}
