/*
 * plan-corrupt.c - the reader against damaged and crafted files.
 *
 *  - Sweeps: every single-byte flip (xor 0xFF and xor 0x01) and every
 *    truncation of a sample plan file is rejected with an error code and a
 *    message; the same for the decompressed content, recompressed with
 *    valid checksums, where a flip may also give a different valid plan.
 *  - Crafted structure errors behind valid checksums: overflowing counts,
 *    indexes and ranges out of bounds, strings without NUL, reserved
 *    fields set, overlapping sections, each with its code.
 *  - Versions: a newer major is refused naming both versions; a newer
 *    minor with an unknown optional section and longer records is read; an
 *    unknown required section is refused. A 1.9 file's CHOI (the Step
 *    mark in a field of its own): its reserved bits, its record size,
 *    and what a 1.8 reader reads of it.
 *  - Limits: sizes and counts over the reader's limits are refused before
 *    anything is allocated for them.
 *
 * The files are taken apart and put together here, per plan-format.md,
 * with libzstd called directly.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "plan.h"
#include "plan-sample.h"
#include "tap.h"

/* The sample holds nothing of 1.2 (weight sources, prompt feeds): it is a
 * format 1.1 plan, and its files are remade as such. */
#define SAMPLE_MINOR 1

#define HEADER 64

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void put32(unsigned char *p, uint32_t v)
{
	for (int k = 0; k < 4; k++)
		p[k] = (unsigned char)(v >> (8 * k));
}

static void put64(unsigned char *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static unsigned char *dup_bytes(const void *p, size_t n)
{
	unsigned char *d = malloc(n ? n : 1);

	if (d == NULL)
		abort();
	memcpy(d, p, n);
	return d;
}

/* ---------------------------------------------------------------------- */
/* Files from content.                                                     */

static void fix_header_crc(unsigned char *file)
{
	put32(file + 60, plan_crc32c(file, 60));
}

static void fix_crcs(unsigned char *file, size_t len)
{
	put32(file + 20, plan_crc32c(file + HEADER, len - HEADER));
	fix_header_crc(file);
}

/* A plan file of version MAJOR.MINOR holding CONTENT, with CHECKSUM_FLAG
 * for the zstd frame's content checksum. */
static unsigned char *make_file_ex(const unsigned char *content, size_t clen, unsigned major,
                                   unsigned minor, int checksum_flag, size_t *len)
{
	size_t bound = ZSTD_compressBound(clen), n;
	unsigned char *f = calloc(1, HEADER + bound);
	ZSTD_CCtx *cc = ZSTD_createCCtx();

	if (f == NULL || cc == NULL)
		abort();
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 1);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, checksum_flag);
	n = ZSTD_compress2(cc, f + HEADER, bound, content, clen);
	ZSTD_freeCCtx(cc);
	if (ZSTD_isError(n))
		abort();
	memcpy(f, "\x89" "BCG\r\n\x1a\n", 8);
	f[8] = (unsigned char)major;
	f[9] = (unsigned char)(major >> 8);
	f[10] = (unsigned char)minor;
	f[11] = (unsigned char)(minor >> 8);
	put32(f + 16, HEADER);
	put64(f + 24, n);
	put64(f + 32, clen);
	*len = HEADER + n;
	fix_crcs(f, *len);
	return f;
}

/* The minor version make_file labels content with: the sample's, or 1.4
 * for the recorded sample's sweep. */
static unsigned content_minor = SAMPLE_MINOR;

static unsigned char *make_file(const unsigned char *content, size_t clen, size_t *len)
{
	return make_file_ex(content, clen, PLAN_FORMAT_MAJOR, content_minor, 1, len);
}

static unsigned char *get_content(const unsigned char *file, size_t *clen)
{
	*clen = (size_t)get64(file + 32);
	unsigned char *c = malloc(*clen);
	if (c == NULL || ZSTD_decompress(c, *clen, file + HEADER, (size_t)get64(file + 24)) != *clen)
		abort();
	return c;
}

/* ---------------------------------------------------------------------- */
/* The content's directory.                                                */

static unsigned char *entry_of(unsigned char *c, const char *id)
{
	uint32_t n = get32(c);

	for (uint32_t i = 0; i < n; i++)
		if (memcmp(c + 8 + 24 * i, id, 4) == 0)
			return c + 8 + 24 * i;
	abort();
}

static unsigned char *sect_of(unsigned char *c, const char *id)
{
	return c + get64(entry_of(c, id) + 8);
}

static unsigned char *record_of(unsigned char *c, const char *id, uint32_t i)
{
	unsigned char *s = sect_of(c, id);

	return s + 8 + (size_t)i * get32(s);
}

/* A section list, to lay content out anew. */
struct section {
	char                 id[4];
	uint32_t             flags;
	const unsigned char *data;
	size_t               size;
};

static int split_content(const unsigned char *c, struct section *s)
{
	int n = (int)get32(c);

	for (int i = 0; i < n; i++) {
		const unsigned char *e = c + 8 + 24 * i;
		memcpy(s[i].id, e, 4);
		s[i].flags = get32(e + 4);
		s[i].data = c + get64(e + 8);
		s[i].size = (size_t)get64(e + 16);
	}
	return n;
}

static unsigned char *join_content(const struct section *s, int n, size_t *clen)
{
	size_t off = 8 + 24 * (size_t)n, total = off;
	unsigned char *c;

	for (int i = 0; i < n; i++)
		total = ((total + 7) & ~(size_t)7) + s[i].size;
	if ((c = calloc(1, total)) == NULL)
		abort();
	put32(c, (uint32_t)n);
	for (int i = 0; i < n; i++) {
		off = (off + 7) & ~(size_t)7;
		memcpy(c + 8 + 24 * i, s[i].id, 4);
		put32(c + 8 + 24 * i + 4, s[i].flags);
		put64(c + 8 + 24 * i + 8, off);
		put64(c + 8 + 24 * i + 16, s[i].size);
		memcpy(c + off, s[i].data, s[i].size);
		off += s[i].size;
	}
	*clen = total;
	return c;
}

/* ---------------------------------------------------------------------- */
/* Reading and expecting.                                                  */

/* Read; a plan read is freed. Returns the code; on failure, checks that
 * no plan came back. */
static int try_read(const void *data, size_t len, const struct plan_limits *lim,
                    struct plan_diag *d)
{
	plan_t *p = (plan_t *)1;
	int err;

	memset(d, 0, sizeof *d);
	err = plan_read_memory(data, len, lim, &p, d);
	if (err != 0 && p != NULL) {
		diag("    a failed read returned a plan");
		return -1;
	}
	plan_free(p);
	return err;
}

static void expect_file(const unsigned char *file, size_t len, const struct plan_limits *lim,
                        int want, const char *substr, const char *what)
{
	struct plan_diag d;
	int err = try_read(file, len, lim, &d);

	if (!ok(err == want && d.code == want && d.message[0] != '\0' &&
	        (substr == NULL || strstr(d.message, substr) != NULL),
	        "%s: %s", what, plan_strerror(want)))
		diag("    got %d (%s) \"%s\", want %d with \"%s\"", err, plan_strerror(err),
		     d.message, want, substr ? substr : "");
}

static void expect_content(const unsigned char *c, size_t clen, int want, const char *substr,
                           const char *what)
{
	size_t len;
	unsigned char *f = make_file(c, clen, &len);

	expect_file(f, len, NULL, want, substr, what);
	free(f);
}

/* ---------------------------------------------------------------------- */
/* Sweeps.                                                                 */

struct tally {
	unsigned count[PLAN_ERR_MAX_CODE + 1];
	unsigned accepted;
	unsigned bad;            /* rejected without a message, or worse */
};

static void tally_read(struct tally *t, const unsigned char *data, size_t len, int may_pass)
{
	struct plan_diag d;
	plan_t *p = NULL;
	int err;

	memset(&d, 0, sizeof d);
	err = plan_read_memory(data, len, NULL, &p, &d);
	if (err == 0) {
		/* Only a content sweep may give another valid plan: then it
		 * must be a plan the writer accepts. */
		void *w = NULL;
		size_t wl;
		if (!may_pass || p == NULL || plan_validate(p, NULL) != 0 ||
		    plan_write_memory(p, &w, &wl, NULL) != 0)
			t->bad++;
		t->accepted++;
		free(w);
		plan_free(p);
		return;
	}
	if (err < 0 || err > PLAN_ERR_MAX_CODE || p != NULL || d.code != err || d.message[0] == '\0')
		t->bad++;
	else
		t->count[err]++;
	plan_free(p);
}

static void tally_report(const struct tally *t, const char *what)
{
	for (int c = 1; c <= PLAN_ERR_MAX_CODE; c++)
		if (t->count[c] > 0)
			diag("%s: %u mutants rejected with %d (%s)", what, t->count[c], c, plan_strerror(c));
	if (t->accepted > 0)
		diag("%s: %u mutants read as other valid plans", what, t->accepted);
}

static void sweep_file(const unsigned char *file, size_t len)
{
	unsigned char *m = dup_bytes(file, len);
	struct tally t;
	static const unsigned char masks[] = { 0xFF, 0x01 };

	for (size_t k = 0; k < 2; k++) {
		memset(&t, 0, sizeof t);
		for (size_t i = 0; i < len; i++) {
			m[i] ^= masks[k];
			tally_read(&t, m, len, 0);
			m[i] ^= masks[k];
		}
		ok(t.bad == 0 && t.accepted == 0, "each of %zu bytes xor 0x%02X: every mutant is "
		   "rejected with a code and a message", len, masks[k]);
		tally_report(&t, masks[k] == 0xFF ? "file xor 0xFF" : "file xor 0x01");
		ok(t.count[PLAN_ERR_CHECKSUM] >= len - HEADER,
		   "every flip in the payload is caught by a checksum (%u checksum failures, "
		   "%zu payload bytes)", t.count[PLAN_ERR_CHECKSUM], len - HEADER);
	}
	memset(&t, 0, sizeof t);
	for (size_t n = 0; n < len; n++) {
		/* A fresh buffer of exactly n bytes, so that ASan sees any
		 * read past the end. */
		unsigned char *cut = dup_bytes(file, n);
		tally_read(&t, cut, n, 0);
		free(cut);
	}
	ok(t.bad == 0 && t.accepted == 0 && t.count[PLAN_ERR_TRUNCATED] == len,
	   "each of %zu truncations is rejected as truncated", len);
	tally_report(&t, "truncated file");
	free(m);
}

static void sweep_content(const unsigned char *content, size_t clen)
{
	unsigned char *c = dup_bytes(content, clen);
	static const unsigned char masks[] = { 0xFF, 0x01 };
	struct tally t;
	size_t len;

	for (size_t k = 0; k < 2; k++) {
		memset(&t, 0, sizeof t);
		for (size_t i = 0; i < clen; i++) {
			c[i] ^= masks[k];
			unsigned char *f = make_file(c, clen, &len);
			tally_read(&t, f, len, 1);
			free(f);
			c[i] ^= masks[k];
		}
		ok(t.bad == 0, "each of %zu content bytes xor 0x%02X behind valid checksums: "
		   "rejected with a code and a message, or a valid plan", clen, masks[k]);
		tally_report(&t, masks[k] == 0xFF ? "content xor 0xFF" : "content xor 0x01");
	}
	memset(&t, 0, sizeof t);
	for (size_t n = 0; n < clen; n++) {
		unsigned char *f = make_file(c, n, &len);
		tally_read(&t, f, len, 0);
		free(f);
	}
	ok(t.bad == 0 && t.accepted == 0, "each of %zu content truncations is rejected", clen);
	tally_report(&t, "truncated content");
	free(c);
}

/* ---------------------------------------------------------------------- */
/* Crafted errors behind valid checksums.                                  */

#define EDIT(what_, want_, substr_, ...)                                        \
	do {                                                                    \
		unsigned char *c = dup_bytes(content, clen);                    \
		__VA_ARGS__;                                                    \
		expect_content(c, clen, want_, substr_, what_);                 \
		free(c);                                                        \
	} while (0)

static void test_structure(const unsigned char *content, size_t clen)
{
	/* Counts. */
	EDIT("a record count of 0xFFFFFFFF", PLAN_ERR_CORRUPT, "do not fill",
	     put32(sect_of(c, "TENS") + 4, 0xFFFFFFFFu));
	EDIT("a record count whose size wraps 32 bits", PLAN_ERR_CORRUPT, "do not fill",
	     put32(sect_of(c, "TENS") + 4, 0x1C71C71Du));
	EDIT("a record count one too many", PLAN_ERR_CORRUPT, "do not fill",
	     put32(sect_of(c, "DIMS") + 4, get32(sect_of(c, "DIMS") + 4) + 1));
	EDIT("a record size shorter than format 1.1's", PLAN_ERR_CORRUPT, "shorter than",
	     put32(sect_of(c, "DIMS"), 16));
	EDIT("a record size longer than format 1.1's in a 1.1 file", PLAN_ERR_CORRUPT, "which defines",
	     put32(sect_of(c, "DIMS"), 48));
	EDIT("EDGE records of 1.0's 8 bytes in a 1.1 file", PLAN_ERR_CORRUPT, "shorter than",
	     put32(sect_of(c, "EDGE"), 8));
	EDIT("two META records", PLAN_ERR_CORRUPT, "do not fill",
	     put32(sect_of(c, "META") + 4, 2));
	EDIT("a directory of 2000 sections", PLAN_ERR_CORRUPT, "more than",
	     put32(c, 2000));
	EDIT("a directory longer than the content", PLAN_ERR_CORRUPT, "the content has",
	     put32(c, (uint32_t)(clen / 24 + 1)));

	/* Indexes and ranges. */
	EDIT("an op input naming tensor 1000", PLAN_ERR_CORRUPT, "section OPER record 0",
	     put32(record_of(c, "IDXS", 0), 1000));
	EDIT("an op's inputs starting at 0xFFFFFFF0", PLAN_ERR_CORRUPT, "outside the",
	     put32(record_of(c, "OPER", 1) + 20, 0xFFFFFFF0u));
	EDIT("an op's input count of 0xFFFFFFFF", PLAN_ERR_CORRUPT, "outside the",
	     put32(record_of(c, "OPER", 1) + 24, 0xFFFFFFFFu));
	EDIT("two ops sharing input entries", PLAN_ERR_CORRUPT, "starts before",
	     put32(record_of(c, "OPER", 1) + 20, get32(record_of(c, "OPER", 0) + 20)));
	EDIT("a segment's nodes outside NODE", PLAN_ERR_CORRUPT, "section SEGS record 1",
	     put32(record_of(c, "SEGS", 1) + 44, 1000));
	EDIT("an item naming segment 77", PLAN_ERR_CORRUPT, "segment 77",
	     put32(record_of(c, "ITEM", 0) + 4, 77));
	EDIT("an item kind of 0x10000", PLAN_ERR_CORRUPT, "unknown item kind",
	     put32(record_of(c, "ITEM", 0), 0x10000));
	EDIT("a tensor at the arena's end", PLAN_ERR_CORRUPT, "section TENS: tensor 1",
	     put64(record_of(c, "TENS", 1) + 8, get64(record_of(c, "META", 0) + 56)));
	EDIT("a dtype of 9", PLAN_ERR_CORRUPT, "section TENS record 0",
	     record_of(c, "TENS", 0)[4] = 9);
	EDIT("a dispatch entry naming variant 3 of 3", PLAN_ERR_CORRUPT, "section DISP record 0",
	     put32(record_of(c, "DISP", 0) + 16, 3));

	/* What format 1.1 added. */
	EDIT("an edge of type 2", PLAN_ERR_CORRUPT, "edge 1 has unknown type 2",
	     record_of(c, "EDGE", 1)[8] = 2);
	EDIT("an edge leaving from port 3", PLAN_ERR_CORRUPT, "unknown port 3",
	     record_of(c, "EDGE", 0)[9] = 3);
	EDIT("an edge arriving at port 7", PLAN_ERR_CORRUPT, "unknown port 7",
	     record_of(c, "EDGE", 0)[10] = 7);
	EDIT("a choice naming variant 9", PLAN_ERR_CORRUPT, "section CHOI record 0",
	     put32(record_of(c, "CHOI", 0), 9));
	EDIT("a choice naming op 99", PLAN_ERR_CORRUPT, "op 99",
	     put32(record_of(c, "CHOI", 1) + 4, 99));
	EDIT("two choices for one variant and op", PLAN_ERR_CORRUPT, "are both for op 1",
	     put32(record_of(c, "CHOI", 1), get32(record_of(c, "CHOI", 0))));
	EDIT("a choice of an implementation none of its candidates", PLAN_ERR_CORRUPT,
	     "none of its 2 candidates",
	     put32(record_of(c, "CHOI", 0) + 8, get32(record_of(c, "DIMS", 0))));
	EDIT("a choice with an empty implementation", PLAN_ERR_CORRUPT, "empty implementation",
	     put32(record_of(c, "CHOI", 2) + 8, 0));
	EDIT("a choice's candidates outside CAND", PLAN_ERR_CORRUPT, "section CHOI record 3",
	     put32(record_of(c, "CHOI", 3) + 20, 1000));
	EDIT("two choices sharing candidates", PLAN_ERR_CORRUPT, "starts before",
	     put32(record_of(c, "CHOI", 1) + 16, 0));
	EDIT("a choice marked close but not tuned", PLAN_ERR_CORRUPT, "close but was not tuned",
	     put32(record_of(c, "CHOI", 1) + 12, 2));
	EDIT("a candidate named twice", PLAN_ERR_CORRUPT, "are both named",
	     put32(record_of(c, "CAND", 3) + 0, get32(record_of(c, "CAND", 2))));
	EDIT("a candidate with an empty name", PLAN_ERR_CORRUPT, "has an empty name",
	     put32(record_of(c, "CAND", 4), 0));
	EDIT("a candidate time of -1 us", PLAN_ERR_CORRUPT, "not a finite number",
	     put64(record_of(c, "CAND", 0) + 8, UINT64_C(0xBFF0000000000000)));
	EDIT("a candidate time of NaN", PLAN_ERR_CORRUPT, "not a finite number",
	     put64(record_of(c, "CAND", 1) + 8, UINT64_C(0x7FF8000000000000)));
	EDIT("a candidate time of infinity", PLAN_ERR_CORRUPT, "not a finite number",
	     put64(record_of(c, "CAND", 1) + 8, UINT64_C(0x7FF0000000000000)));

	/* Strings. */
	EDIT("a string without a terminating NUL", PLAN_ERR_CORRUPT, "no terminating NUL",
	     sect_of(c, "STRS")[get64(entry_of(c, "STRS") + 16) - 1] = 'x');
	EDIT("a string offset outside the table", PLAN_ERR_CORRUPT, "outside the",
	     put32(record_of(c, "DIMS", 0), (uint32_t)get64(entry_of(c, "STRS") + 16)));
	EDIT("a non-string attribute with text", PLAN_ERR_CORRUPT, "has text",
	     put32(record_of(c, "ATTR", 0) + 24, get32(record_of(c, "DIMS", 0))));

	/* Reserved fields. */
	EDIT("the directory's reserved field", PLAN_ERR_RESERVED, "reserved", put32(c + 4, 1));
	EDIT("a section flag bit 1", PLAN_ERR_RESERVED, "reserved flags",
	     put32(entry_of(c, "VARS") + 4, 3));
	EDIT("a dim's reserved field", PLAN_ERR_RESERVED, "section DIMS record 1",
	     put32(record_of(c, "DIMS", 1) + 20, 0x100));
	EDIT("a dim flag bit 3", PLAN_ERR_RESERVED, "reserved flags",
	     put32(record_of(c, "DIMS", 1) + 16, 8));
	EDIT("a tensor's reserved byte", PLAN_ERR_RESERVED, "section TENS record 2",
	     record_of(c, "TENS", 2)[7] = 1);
	EDIT("a tensor axis beyond its rank", PLAN_ERR_RESERVED, "beyond rank",
	     put64(record_of(c, "TENS", 0) + 24 + 16 * 3 + 8, 5));
	EDIT("an op flag bit 4", PLAN_ERR_RESERVED, "section OPER record 2",
	     put32(record_of(c, "OPER", 2) + 8, 0x10));
	EDIT("a parameter's reserved field", PLAN_ERR_RESERVED, "section PARM record 0",
	     put32(record_of(c, "PARM", 0) + 4, 1));
	EDIT("a segment flag bit 1", PLAN_ERR_RESERVED, "section SEGS record 0",
	     put32(record_of(c, "SEGS", 0) + 12, 3));
	EDIT("a breakpoint's reserved field", PLAN_ERR_RESERVED, "section BRKP record 0",
	     put32(record_of(c, "BRKP", 0) + 36, 1));
	EDIT("an edge's reserved byte", PLAN_ERR_RESERVED, "section EDGE record 2",
	     record_of(c, "EDGE", 2)[11] = 1);
	EDIT("a feature bit 1", PLAN_ERR_RESERVED, "unknown features 0x00000002",
	     put32(record_of(c, "META", 0) + 72, 3));
	EDIT("META's reserved field", PLAN_ERR_RESERVED, "section META record 0",
	     put32(record_of(c, "META", 0) + 76, 1));
	EDIT("a choice flag bit 2", PLAN_ERR_RESERVED,
	     "section CHOI record 1: reserved flags 0x00000004 are set",
	     put32(record_of(c, "CHOI", 1) + 12, 5));
	EDIT("a choice flag bit 3", PLAN_ERR_RESERVED,
	     "section CHOI record 1: reserved flags 0x00000008 are set",
	     put32(record_of(c, "CHOI", 1) + 12, 9));
	EDIT("a candidate's reserved field", PLAN_ERR_RESERVED, "section CAND record 2",
	     put32(record_of(c, "CAND", 2) + 4, 1));
	EDIT("a byte after the last section", PLAN_ERR_RESERVED, "after the last section",
	     put64(entry_of(c, "STRS") + 16, get64(entry_of(c, "STRS") + 16) - 1);
	     c[clen - 1] = 'x');
	{
		/* Padding between two sections: where one ends short of the
		 * next one's 8-byte boundary. */
		unsigned char *c = dup_bytes(content, clen);
		uint32_t n = get32(c);
		uint64_t end = 8 + 24 * (uint64_t)n;
		int found = 0;
		for (uint32_t i = 0; i < n && !found; i++) {
			uint64_t off = get64(c + 8 + 24 * i + 8);
			if (off > end) {
				c[end] = 0x5A;
				found = 1;
			}
			end = off + get64(c + 8 + 24 * i + 16);
		}
		if (ok(found, "the sample has padding between sections"))
			expect_content(c, clen, PLAN_ERR_RESERVED, "between sections",
			               "a padding byte between sections");
		free(c);
	}

	/* The directory's layout. */
	EDIT("a section overlapping the one before", PLAN_ERR_CORRUPT, "overlaps the section STAT",
	     put64(entry_of(c, "DIMS") + 8, get64(entry_of(c, "STAT") + 8)));
	EDIT("a section overlapping the directory", PLAN_ERR_CORRUPT, "overlaps the directory",
	     put64(entry_of(c, "META") + 8, 16));
	EDIT("a section running past the content", PLAN_ERR_CORRUPT, "runs past",
	     put64(entry_of(c, "STRS") + 16, get64(entry_of(c, "STRS") + 16) + 100));
	EDIT("a section at an odd offset", PLAN_ERR_CORRUPT, "not a multiple of 8",
	     put64(entry_of(c, "STRS") + 8, get64(entry_of(c, "STRS") + 8) + 1));
	EDIT("a section listed twice", PLAN_ERR_CORRUPT, "listed twice",
	     memcpy(entry_of(c, "DIMS"), "STAT", 4));
	EDIT("a section id of a control byte", PLAN_ERR_CORRUPT, "section id",
	     entry_of(c, "DIMS")[2] = 0x07);
	EDIT("a missing section", PLAN_ERR_CORRUPT, "section CHKS is missing",
	     unsigned char *e = entry_of(c, "CHKS"); memcpy(e, "ZZZZ", 4); put32(e + 4, 0));
	EDIT("an unknown required section", PLAN_ERR_VERSION, "section ZZZZ",
	     memcpy(entry_of(c, "CHKS"), "ZZZZ", 4));
}

static void test_frame(const unsigned char *file, size_t len, const unsigned char *content,
                       size_t clen)
{
	unsigned char *f, *g;
	size_t n, m;

	f = dup_bytes(file, len);
	put32(f + 16, 72);
	fix_header_crc(f);
	expect_file(f, len, NULL, PLAN_ERR_CORRUPT, "header size 72", "a header size of 72");
	memcpy(f, file, len);
	put32(f + 12, 0x80);
	fix_header_crc(f);
	expect_file(f, len, NULL, PLAN_ERR_RESERVED, "header flags", "a header flag set");
	memcpy(f, file, len);
	f[45] = 1;
	fix_header_crc(f);
	expect_file(f, len, NULL, PLAN_ERR_RESERVED, "header byte 45", "a reserved header byte");
	memcpy(f, file, len);
	put64(f + 32, clen + 1);
	fix_header_crc(f);
	expect_file(f, len, NULL, PLAN_ERR_CORRUPT, "the header says", "header and frame content sizes differ");
	free(f);

	f = malloc(len + 3);
	memcpy(f, file, len);
	memcpy(f + len, "abc", 3);
	expect_file(f, len + 3, NULL, PLAN_ERR_CORRUPT, "follow the payload", "bytes after the payload");
	free(f);

	f = make_file_ex(content, clen, PLAN_FORMAT_MAJOR, SAMPLE_MINOR, 0, &n);
	expect_file(f, n, NULL, PLAN_ERR_CORRUPT, "no content checksum", "a zstd frame without checksum");
	free(f);

	/* A second, empty frame after the first. */
	f = make_file(content, clen, &n);
	g = make_file(content, 0, &m);
	f = realloc(f, n + (m - HEADER));
	memcpy(f + n, g + HEADER, m - HEADER);
	n += m - HEADER;
	put64(f + 24, n - HEADER);
	fix_crcs(f, n);
	expect_file(f, n, NULL, PLAN_ERR_CORRUPT, "after its zstd frame", "a payload of two frames");
	free(f);
	free(g);

	f = make_file(content, clen, &n);
	memset(f + HEADER, 0x42, n - HEADER);
	fix_crcs(f, n);
	expect_file(f, n, NULL, PLAN_ERR_CORRUPT, "not a zstd frame", "a payload that is no zstd frame");
	free(f);

	f = make_file(content, clen, &n);
	f[n - 1] ^= 0x10;
	fix_crcs(f, n);
	expect_file(f, n, NULL, PLAN_ERR_CHECKSUM, "content checksum", "a wrong zstd content checksum");
	free(f);

	f = make_file(content, clen, &n);
	f[HEADER + (n - HEADER) / 2] ^= 0x55;
	fix_crcs(f, n);
	{
		struct plan_diag d;
		int err = try_read(f, n, NULL, &d);
		ok(err == PLAN_ERR_DECOMPRESS || err == PLAN_ERR_CHECKSUM || err == PLAN_ERR_CORRUPT,
		   "a damaged zstd block behind a valid payload CRC is refused (%d: %s)", err, d.message);
	}
	free(f);

	f = dup_bytes(file, len);
	memcpy(f, "\x89" "BCG\n\x1a\n", 7);
	expect_file(f, len - 1, NULL, PLAN_ERR_BAD_MAGIC, "copied as text",
	            "a magic number whose CR LF became LF");
	memcpy(f, "PK\x03\x04", 4);
	expect_file(f, len, NULL, PLAN_ERR_BAD_MAGIC, "magic number", "a zip file");
	expect_file(f, 0, NULL, PLAN_ERR_TRUNCATED, "0 bytes", "an empty file");
	free(f);
}

/* ---------------------------------------------------------------------- */
/* Versions.                                                               */

/* Section ID of EXT's K, records of OLD bytes, as a newer minor writes
 * it: each record grown by the fields up to KNOWN bytes, zero, and by 8
 * bytes 0xAB a minor after this reader's adds (which it must skip). The
 * section's new bytes are the caller's to free. */
static void widen_records(struct section *ext, int k, const char *id, size_t old, size_t known)
{
	const size_t wide = known + 8;

	for (int i = 0; i < k; i++) {
		if (memcmp(ext[i].id, id, 4) != 0)
			continue;
		uint32_t count = get32(ext[i].data + 4);
		unsigned char *rec = calloc(1, 8 + (size_t)count * wide);
		put32(rec, (uint32_t)wide);
		put32(rec + 4, count);
		for (uint32_t r = 0; r < count; r++) {
			memcpy(rec + 8 + r * wide, ext[i].data + 8 + r * old, old);
			memset(rec + 8 + r * wide + known, 0xAB, 8);
		}
		ext[i].data = rec;
		ext[i].size = 8 + (size_t)count * wide;
	}
}

static void test_versions(const unsigned char *file, size_t len, const unsigned char *content,
                          size_t clen, const plan_t *sample)
{
	unsigned char *f = dup_bytes(file, len), *c2, *f2;
	struct section s[32], ext[48];
	struct plan_diag d = { 0 };
	plan_t *p = NULL;
	size_t n, c2len;
	unsigned major = 0, minor = 0;
	char why[256];
	int ns;
	static const unsigned char wsrc_empty[8] = { 88, 0, 0, 0, 0, 0, 0, 0 };
	/* 1.5: world 1, rank 0, at 1.8's size (Nccl_Mem 0); no split blocks */
	static const unsigned char dist_one[32] = { 24, 0, 0, 0, 1, 0, 0, 0, 1 };
	static const unsigned char sblk_empty[8] = { 24, 0, 0, 0, 0, 0, 0, 0 };
	static const unsigned char shar_empty[8] = { 16, 0, 0, 0, 0, 0, 0, 0 };

	f[8] = 2;
	fix_header_crc(f);
	expect_file(f, len, NULL, PLAN_ERR_VERSION, "format version 2.1 is newer than this reader's 1.9",
	            "a newer major version");
	f[8] = 7;
	f[10] = 3;
	expect_file(f, len, NULL, PLAN_ERR_VERSION, "format version 7.3 is newer than this reader's 1.9",
	            "a newer major version, header checksum unknown to this reader");
	f[8] = 0;
	f[10] = 9;
	fix_header_crc(f);
	expect_file(f, len, NULL, PLAN_ERR_VERSION, "format version 0.9 is older",
	            "major version 0");
	free(f);

	/* Format 1.10 as a future writer might make it: an optional section
	 * this reader does not know, and TENS and CHOI records 8 bytes longer
	 * than 1.5's and 1.9's. */
	ns = split_content(content, s);
	int k = 0;
	uint32_t nvari = 0, ndisp = 0, nsegs = 0, nnode = 0, nbrkp = 0;
	for (int i = 0; i < ns; i++) {
		if (memcmp(s[i].id, "VARI", 4) == 0)
			nvari = get32(s[i].data + 4);
		if (memcmp(s[i].id, "DISP", 4) == 0)
			ndisp = get32(s[i].data + 4);
		if (memcmp(s[i].id, "SEGS", 4) == 0)
			nsegs = get32(s[i].data + 4);
		if (memcmp(s[i].id, "NODE", 4) == 0)
			nnode = get32(s[i].data + 4);
		if (memcmp(s[i].id, "BRKP", 4) == 0)
			nbrkp = get32(s[i].data + 4);
	}
	/* the sections 1.4 added, for a plan without a recording: no
	 * records but one zero record per variant, segment and breakpoint,
	 * and a launch of NONE per node; SREC and BLCH at 1.7's sizes (and 1.8's) */
	static const struct { const char *id; uint32_t size; } rec14[] = {
		{ "RECD", 40 }, { "MODS", 40 }, { "FUNC", 16 }, { "PINF", 8 }, { "ALOC", 32 },
		{ "LNCH", 152 }, { "PTCH", 16 }, { "VREC", 24 }, { "SREC", 24 }, { "NLCH", 4 },
		{ "BLCH", 32 },
	};
	unsigned char *s14[11];
	size_t s14len[11];
	for (int i = 0; i < 11; i++) {
		uint32_t cnt = strcmp(rec14[i].id, "VREC") == 0 ? nvari :
		               strcmp(rec14[i].id, "SREC") == 0 ? nsegs :
		               strcmp(rec14[i].id, "NLCH") == 0 ? nnode :
		               strcmp(rec14[i].id, "BLCH") == 0 ? nbrkp : 0;
		s14len[i] = 8 + (size_t)cnt * rec14[i].size;
		s14[i] = calloc(1, s14len[i]);
		put32(s14[i], rec14[i].size);
		put32(s14[i] + 4, cnt);
		if (strcmp(rec14[i].id, "NLCH") == 0)
			memset(s14[i] + 8, 0xFF, (size_t)cnt * 4);
	}
	/* the keys 1.3 added: none, one zero record a variant and an entry */
	unsigned char *vkey = calloc(1, 8 + 8 * (size_t)nvari), *dkey = calloc(1, 8 + 8 * (size_t)ndisp);
	put32(vkey, 8);
	put32(vkey + 4, nvari);
	put32(dkey, 8);
	put32(dkey + 4, ndisp);
	for (int i = 0; i < ns; i++) {
		/* a 1.4 file has the sections 1.2 and 1.3 added, empty here */
		if (memcmp(s[i].id, "STRS", 4) == 0) {
			ext[k++] = (struct section){ "WSRC", 0, wsrc_empty, sizeof wsrc_empty };
			ext[k++] = (struct section){ "VKEY", 0, vkey, 8 + 8 * (size_t)nvari };
			ext[k++] = (struct section){ "DKEY", 0, dkey, 8 + 8 * (size_t)ndisp };
			for (int j = 0; j < 11; j++)
				ext[k++] = (struct section){ "", 0, s14[j], s14len[j] };
			for (int j = 0; j < 11; j++)
				memcpy(ext[k - 11 + j].id, rec14[j].id, 4);
			ext[k++] = (struct section){ "BLOB", 0, (const unsigned char *)"", 0 };
			ext[k++] = (struct section){ "DIST", 0, dist_one, sizeof dist_one };
			ext[k++] = (struct section){ "SBLK", 0, sblk_empty, sizeof sblk_empty };
			ext[k++] = (struct section){ "SHAR", 0, shar_empty, sizeof shar_empty };
		}
		ext[k++] = s[i];
		if (memcmp(s[i].id, "VARS", 4) == 0)
			ext[k++] = (struct section){ "XTRA", 0, (const unsigned char *)"future data", 11 };
	}
	/* 1.5's split fields zero: no tensor is split */
	widen_records(ext, k, "TENS", 144, 168);
	/* 1.9's Tune_Flags and Reserved zero: no choice in the step */
	widen_records(ext, k, "CHOI", 24, 32);
	c2 = join_content(ext, k, &c2len);
	f2 = make_file_ex(c2, c2len, 1, 10, 1, &n);
	is_int(plan_read_memory(f2, n, NULL, &p, &d), 0,
	       "format 1.10 with an unknown optional section and longer records is read");
	if (p != NULL) {
		if (!ok(sample_plans_equal(sample, p, why, sizeof why), "and gives the same plan"))
			diag("    first difference: %s", why);
		plan_get_format_version(p, &major, &minor);
		ok(major == 1 && minor == 10, "the plan remembers format %u.%u", major, minor);
		void *w = NULL;
		size_t wl = 0;
		plan_write_memory(p, &w, &wl, NULL);
		ok(w != NULL && wl == len && memcmp(w, file, len) == 0,
		   "written again, it is the format 1.1 file it came from");
		free(w);
		plan_free(p);
	} else {
		tap_skip(3, "the 1.1 file was not read");
	}
	free(f2);

	f2 = make_file_ex(c2, c2len, 1, 1, 1, &n);
	expect_file(f2, n, NULL, PLAN_ERR_CORRUPT, "which defines 144",
	            "the same content labelled 1.1 (records longer than 1.1 defines)");
	free(f2);

	/* The extra section made required. */
	for (int i = 0; i < k; i++)
		if (memcmp(ext[i].id, "XTRA", 4) == 0)
			ext[i].flags = 1;
	free(c2);
	c2 = join_content(ext, k, &c2len);
	f2 = make_file_ex(c2, c2len, 1, 10, 1, &n);
	expect_file(f2, n, NULL, PLAN_ERR_VERSION, "section XTRA of this format 1.10 file is required",
	            "an unknown required section of a newer minor");
	free(f2);
	free(c2);
	for (int i = 0; i < k; i++)
		if (memcmp(ext[i].id, "TENS", 4) == 0 || memcmp(ext[i].id, "CHOI", 4) == 0)
			free((void *)ext[i].data);
	free(vkey);
	free(dkey);
	for (int j = 0; j < 11; j++)
		free(s14[j]);

	/* The sections 1.1 added: a 1.1 file must have them; in a file
	 * labelled 1.0 an id of them is unknown, skipped or, if required,
	 * refused. */
	k = 0;
	for (int i = 0; i < ns; i++)
		if (memcmp(s[i].id, "CAND", 4) != 0)
			ext[k++] = s[i];
	c2 = join_content(ext, k, &c2len);
	f2 = make_file_ex(c2, c2len, 1, 1, 1, &n);
	expect_file(f2, n, NULL, PLAN_ERR_CORRUPT, "section CAND is missing",
	            "a 1.1 file without CAND");
	free(f2);
	free(c2);
	for (int i = 0; i < ns; i++)
		if (memcmp(s[i].id, "CHOI", 4) == 0 || memcmp(s[i].id, "CAND", 4) == 0)
			ok(s[i].flags == 1, "the sample, which has choices, marks %.4s Required", s[i].id);
	c2 = join_content(s, ns, &c2len);
	f2 = make_file_ex(c2, c2len, 1, 0, 1, &n);
	expect_file(f2, n, NULL, PLAN_ERR_VERSION, "section CHOI of this format 1.0 file is required, "
	            "but this reader (format 1.9) does not know it",
	            "a file labelled 1.0 with a required CHOI");
	free(f2);
	free(c2);
}

/* ---------------------------------------------------------------------- */
/* Choices confirmed in the step (format 1.9).                             */

/* CONTENT (a 1.9 file's) with CHOI's records cut to their first 24 bytes,
 * the 1.1 to 1.8 layout; a new buffer. */
static unsigned char *cut_choices(const unsigned char *content, size_t *clen)
{
	struct section s[64];
	int n = split_content(content, s);
	unsigned char *choi = NULL, *c;

	for (int i = 0; i < n; i++) {
		if (memcmp(s[i].id, "CHOI", 4) != 0)
			continue;
		uint32_t size = get32(s[i].data), count = get32(s[i].data + 4);
		if ((choi = calloc(1, 8 + (size_t)count * 24)) == NULL)
			abort();
		put32(choi, 24);
		put32(choi + 4, count);
		for (uint32_t k = 0; k < count; k++)
			memcpy(choi + 8 + (size_t)k * 24, s[i].data + 8 + (size_t)k * size, 24);
		s[i].data = choi;
		s[i].size = 8 + (size_t)count * 24;
	}
	c = join_content(s, n, clen);
	free(choi);
	return c;
}

/* The sample with choice 1 confirmed in the step is a 1.9 file whose CHOI
 * records are 32 bytes: the mark in Tune_Flags at offset 24, Choice_Flags
 * as 1.8 has it. The new field's reserved bits and Reserved are checked;
 * Choice_Flags bit 2 stays reserved; 24-byte records are short for 1.9.
 * Cut to 24 bytes and labelled 1.8, the file is what a 1.8 reader reads:
 * the same plan without the mark. Labelled 1.10, it is read with it. */
static void test_step(const plan_t *sample)
{
	plan_t *p = sample_rich(), *q = NULL;
	const struct plan_choice *ch = sample != NULL ? plan_get_choice(sample, 1) : NULL;
	const uint32_t flags = ch != NULL ? ch->flags : 0, step = flags | PLAN_CHOICE_STEP;
	struct plan_diag d = { 0 };
	unsigned char *f = NULL, *c = NULL, *e = NULL, *cut = NULL, *g = NULL;
	void *data = NULL;
	size_t len = 0, clen = 0, cutlen = 0, n = 0;
	unsigned major = 0, minor = 0;
	char why[256] = "";

	if (!ok(p != NULL && ch != NULL, "step: the sample has a choice 1") ||
	    plan_set_choice(p, ch->variant, ch->op, ch->impl, step, &d) != 0 ||
	    plan_write_memory(p, &data, &len, &d) != 0) {
		diag("    %s", d.message);
		plan_free(p);
		return;
	}
	f = data;
	c = get_content(f, &clen);
	ok(get32(f + 8) == (1u | 9u << 16), "step: the header says 1.9");
	ok(get32(sect_of(c, "CHOI")) == 32, "step: CHOI records of 32 bytes");
	ok(flags == (PLAN_CHOICE_TUNED | PLAN_CHOICE_CLOSE) &&
	   get32(record_of(c, "CHOI", 1) + 12) == flags &&
	   get32(record_of(c, "CHOI", 1) + 24) == 1 && get32(record_of(c, "CHOI", 1) + 28) == 0,
	   "step: choice 1's Choice_Flags 0x3 (Tuned, Close), Tune_Flags 0x1 (Step), Reserved 0");
	ok(get32(record_of(c, "CHOI", 0) + 24) == 0 && get32(record_of(c, "CHOI", 2) + 24) == 0,
	   "step: the other choices' Tune_Flags 0");

#define EDIT_S(what_, want_, substr_, ...)                                      \
	do {                                                                    \
		e = dup_bytes(c, clen);                                         \
		__VA_ARGS__;                                                    \
		g = make_file_ex(e, clen, 1, 9, 1, &n);                         \
		expect_file(g, n, NULL, want_, substr_, "step: " what_);        \
		free(g);                                                        \
		free(e);                                                        \
	} while (0)
	EDIT_S("a Tune_Flags bit 1", PLAN_ERR_RESERVED,
	       "section CHOI record 1: reserved Tune_Flags 0x00000002 are set",
	       put32(record_of(e, "CHOI", 1) + 24, 3));
	EDIT_S("a Tune_Flags bit 31 on a choice without Step", PLAN_ERR_RESERVED,
	       "section CHOI record 2: reserved Tune_Flags 0x80000000 are set",
	       put32(record_of(e, "CHOI", 2) + 24, 0x80000000u));
	EDIT_S("CHOI's Reserved", PLAN_ERR_RESERVED,
	       "section CHOI record 1: Reserved is 0x00000100, not zero",
	       put32(record_of(e, "CHOI", 1) + 28, 0x100));
	EDIT_S("Choice_Flags bit 2 in a 1.9 file", PLAN_ERR_RESERVED,
	       "section CHOI record 1: reserved flags 0x00000004 are set",
	       put32(record_of(e, "CHOI", 1) + 12, 5));
	EDIT_S("Step without Tuned", PLAN_ERR_CORRUPT, "choice 1 is marked step but was not tuned",
	       put32(record_of(e, "CHOI", 1) + 12, 0));
#undef EDIT_S

	/* The 1.8 layout: short in a 1.9 file, the plan less the mark in 1.8. */
	cut = cut_choices(c, &cutlen);
	g = make_file_ex(cut, cutlen, 1, 9, 1, &n);
	expect_file(g, n, NULL, PLAN_ERR_CORRUPT, "section CHOI: records of 24 bytes are shorter "
	            "than the 32 bytes of format 1.9", "step: 24-byte CHOI records in a 1.9 file");
	free(g);
	g = make_file_ex(cut, cutlen, 1, 8, 1, &n);
	is_int(plan_read_memory(g, n, NULL, &q, &d), 0, "step: cut to 24 bytes and labelled 1.8, "
	       "it is read (%s)", q == NULL ? d.message : "");
	if (q != NULL) {
		if (!ok(sample_plans_equal(sample, q, why, sizeof why) &&
		        plan_get_choice(q, 1)->flags == flags,
		        "step: as a 1.8 reader reads the 1.9 file: the sample, choice 1 not in the step"))
			diag("    first difference: %s", why);
	} else {
		tap_skip(1, "not read");
	}
	plan_free(q);
	q = NULL;
	free(g);
	g = make_file_ex(c, clen, 1, 8, 1, &n);
	expect_file(g, n, NULL, PLAN_ERR_CORRUPT, "section CHOI: records of 32 bytes in a format "
	            "1.8 file, which defines 24", "step: 32-byte CHOI records labelled 1.8");
	free(g);

	f[10] = 10;
	fix_header_crc(f);
	is_int(plan_read_memory(f, len, NULL, &q, &d), 0, "step: labelled 1.10, it is read (%s)",
	       q == NULL ? d.message : "");
	if (q != NULL) {
		plan_get_format_version(q, &major, &minor);
		ok(minor == 10 && plan_get_choice(q, 1)->flags == step,
		   "step: as format %u.%u, choice 1 in the step", major, minor);
	} else {
		tap_skip(1, "not read");
	}

	content_minor = 9;
	sweep_content(c, clen);
	content_minor = SAMPLE_MINOR;
	plan_free(q);
	plan_free(p);
	free(cut);
	free(c);
	free(data);
}

/* ---------------------------------------------------------------------- */
/* The keys of format 1.3.                                                 */

/* The sample's content as a 1.3 file, its VKEY records VKEY (one a
 * variant, 8 bytes each) and its DKEY records DKEY (NDKEY of them). */
static void expect_keys(const unsigned char *content, const uint32_t *vkey,
                        const uint32_t *dkey, uint32_t ndkey, int want, const char *substr,
                        const char *what)
{
	struct section s[32], ext[34];
	unsigned char *v, *dk, *c2, *f2;
	uint32_t nvari = 0;
	size_t c2len, n;
	int ns = split_content(content, s), k = 0;

	for (int i = 0; i < ns; i++)
		if (memcmp(s[i].id, "VARI", 4) == 0)
			nvari = get32(s[i].data + 4);
	v = calloc(1, 8 + 8 * (size_t)nvari);
	dk = calloc(1, 8 + 8 * (size_t)ndkey);
	put32(v, 8);
	put32(v + 4, nvari);
	for (uint32_t i = 0; i < 2 * nvari; i++)
		put32(v + 8 + 4 * i, vkey[i]);
	put32(dk, 8);
	put32(dk + 4, ndkey);
	for (uint32_t i = 0; i < 2 * ndkey; i++)
		put32(dk + 8 + 4 * i, dkey[i]);
	static const unsigned char wsrc_empty[8] = { 48, 0, 0, 0, 0, 0, 0, 0 };
	int have_wsrc = 0;
	for (int i = 0; i < ns; i++)
		have_wsrc |= memcmp(s[i].id, "WSRC", 4) == 0;
	for (int i = 0; i < ns; i++) {
		if (memcmp(s[i].id, "STRS", 4) == 0) {
			if (!have_wsrc)
				ext[k++] = (struct section){ "WSRC", 1, wsrc_empty, sizeof wsrc_empty };
			ext[k++] = (struct section){ "VKEY", 1, v, 8 + 8 * (size_t)nvari };
			ext[k++] = (struct section){ "DKEY", 1, dk, 8 + 8 * (size_t)ndkey };
		}
		ext[k++] = s[i];
	}
	c2 = join_content(ext, k, &c2len);
	f2 = make_file_ex(c2, c2len, 1, 3, 1, &n);
	if (want == 0) {
		struct plan_diag d = { 0 };
		plan_t *p = NULL;
		int err = plan_read_memory(f2, n, NULL, &p, &d);
		if (!ok(err == 0, "%s", what))
			diag("    %s", d.message);
		plan_free(p);
	} else {
		expect_file(f2, n, NULL, want, substr, what);
	}
	free(f2);
	free(c2);
	free(v);
	free(dk);
}

/* The sample's variants: 16 breakable, 4 full, 1 eager; its dispatch
 * 1 -> 1, 2-4 -> 4, 5-16 -> 16, 17-64 eager. */
static void test_keys(const unsigned char *content)
{
	static const uint32_t none[6] = { 0 };
	static const uint32_t dnone[8] = { 0 };
	const uint32_t bad_uniform[6] = { 0, 0, 0, 0x2, 0, 0 };
	const uint32_t uniform_4[6] = { 0, 0, 4, PLAN_KEY_UNIFORM, 0, 0 };
	const uint32_t uniform_2[6] = { 0, 0, 2, PLAN_KEY_UNIFORM, 0, 0 };
	const uint32_t too_many[6] = { 0, 0, 5, 0, 0, 0 };
	const uint32_t d_uniform[8] = { 0, PLAN_DISPATCH_UNIFORM, 0, 0, 0, 0, 0, 0 };
	const uint32_t d_bad[8] = { 0, 0, 0, 0x10, 0, 0, 0, 0 };
	const uint32_t d_late_uniform[8] = { 0, 0, 0, PLAN_DISPATCH_UNIFORM, 0, 0, 0, 0 };
	const uint32_t d_req[8] = { 0, 0, 5, 0, 0, 0, 0, 0 };

	expect_keys(content, none, dnone, 4, 0, NULL, "a 1.3 file with empty keys is read");
	expect_keys(content, uniform_4, d_uniform, 4, PLAN_ERR_CORRUPT,
	            "entry 1 sends mixed batches to variant 1, which holds uniform decode batches only",
	            "a general entry to a uniform decode variant");
	expect_keys(content, bad_uniform, dnone, 4, PLAN_ERR_RESERVED,
	            "section VKEY record 1: reserved flags 0x00000002 are set",
	            "a key with a bad uniform flag");
	expect_keys(content, uniform_2, dnone, 4, PLAN_ERR_CORRUPT,
	            "variant 1 is for uniform decode: its 4 tokens make 4 requests, not 2",
	            "a uniform decode key of fewer requests than tokens");
	expect_keys(content, too_many, dnone, 4, PLAN_ERR_CORRUPT,
	            "variant 1 holds 5 requests of 4 tokens", "a key of more requests than tokens");
	expect_keys(content, none, d_bad, 4, PLAN_ERR_RESERVED,
	            "section DKEY record 1: reserved flags 0x00000010 are set",
	            "an entry with a reserved flag");
	expect_keys(content, none, d_late_uniform, 4, PLAN_ERR_CORRUPT,
	            "entry 1, for uniform decode, comes after entry 0",
	            "a uniform decode entry after a general one");
	expect_keys(content, none, d_req, 4, PLAN_ERR_CORRUPT,
	            "entry 1 holds 5 requests of at most 4 tokens",
	            "an entry of more requests than tokens");
	expect_keys(content, none, dnone, 3, PLAN_ERR_CORRUPT,
	            "section DKEY has 3 records, not one for each of the 4 of section DISP",
	            "fewer DKEY records than entries");
}

/* ---------------------------------------------------------------------- */
/* Limits.                                                                 */

static void test_limits(const unsigned char *file, size_t len, const unsigned char *content,
                        size_t clen)
{
	struct plan_limits lim;
	unsigned char *f = dup_bytes(file, len);
	struct plan_diag d;
	plan_t *p = NULL;

	put64(f + 32, UINT64_C(1) << 40);
	fix_header_crc(f);
	expect_file(f, len, NULL, PLAN_ERR_LIMIT, "1099511627776 bytes is over the limit",
	            "a header claiming 1 TiB of content");
	plan_limits_default(&lim);
	lim.max_content_bytes = UINT64_MAX;
	expect_file(f, len, &lim, PLAN_ERR_CORRUPT, "the header says",
	            "1 TiB claimed with no content limit: the frame disagrees before any allocation");
	free(f);

	plan_limits_default(&lim);
	lim.max_content_bytes = clen - 1;
	expect_file(file, len, &lim, PLAN_ERR_LIMIT, "over the limit", "content one byte over the limit");
	expect_file(file, len, &lim, PLAN_ERR_LIMIT, "(max_content_bytes; libplan's callers raise it",
	            "the content limit named, and how to raise it");
	lim.max_content_bytes = clen;
	is_int(plan_read_memory(file, len, &lim, &p, &d), 0, "content exactly at the limit is read");
	plan_free(p);
	plan_limits_default(&lim);
	lim.max_file_bytes = len - 1;
	expect_file(file, len, &lim, PLAN_ERR_LIMIT, "over the limit", "a file one byte over the limit");
	plan_limits_default(&lim);
	lim.max_records = 2;
	expect_file(file, len, &lim, PLAN_ERR_LIMIT, "over the limit of 2", "more records than the limit");

	/* One long string referenced by every attribute: the copies the
	 * builder would make add up to far more than the content. */
	{
		struct section s[32];
		int ns = split_content(content, s);
		size_t big = 4000, c2len, n;
		unsigned char *strs = NULL, *attr = NULL;
		uint32_t at = 0;
		for (int i = 0; i < ns; i++) {
			if (memcmp(s[i].id, "STRS", 4) == 0) {
				strs = calloc(1, s[i].size + big + 1);
				memcpy(strs, s[i].data, s[i].size);
				memset(strs + s[i].size, 'a', big);
				at = (uint32_t)s[i].size;
				s[i].data = strs;
				s[i].size += big + 1;
			}
		}
		for (int i = 0; i < ns; i++) {
			if (memcmp(s[i].id, "ATTR", 4) == 0) {
				attr = dup_bytes(s[i].data, s[i].size);
				for (uint32_t r = 0; r < get32(attr + 4); r++)
					put32(attr + 8 + r * get32(attr), at);
				s[i].data = attr;
			}
		}
		unsigned char *c2 = join_content(s, ns, &c2len);
		unsigned char *f2 = make_file(c2, c2len, &n);
		plan_limits_default(&lim);
		lim.max_content_bytes = c2len * 2;
		expect_file(f2, n, &lim, PLAN_ERR_LIMIT, "strings referenced",
		            "a string referenced more often than the content limit allows copies of");
		free(c2);
		free(f2);
		free(strs);
		free(attr);
	}
}

/* ---------------------------------------------------------------------- */
/* Recorded plans (format 1.4).                                            */

static void expect_recorded(const unsigned char *c, size_t clen, unsigned minor, int want,
                            const char *substr, const char *what)
{
	size_t len;
	unsigned char *f = make_file_ex(c, clen, PLAN_FORMAT_MAJOR, minor, 1, &len);

	expect_file(f, len, NULL, want, substr, what);
	free(f);
}

#define EDIT_R(what_, want_, substr_, ...)                                      \
	do {                                                                    \
		unsigned char *c = dup_bytes(content, clen);                    \
		__VA_ARGS__;                                                    \
		expect_recorded(c, clen, 4, want_, substr_, what_);             \
		free(c);                                                        \
	} while (0)

static uint32_t str_at(unsigned char *c, const char *s)
{
	unsigned char *t = sect_of(c, "STRS");
	uint64_t n = get64(entry_of(c, "STRS") + 16);

	for (uint64_t off = 0; off < n; off += strlen((const char *)t + off) + 1)
		if (strcmp((const char *)t + off, s) == 0)
			return (uint32_t)off;
	abort();
}

static void test_recorded(void)
{
	plan_t *p = sample_recorded(2);
	void *file = NULL;
	size_t len = 0, clen = 0;
	unsigned char *content;

	if (p == NULL || plan_write_memory(p, &file, &len, NULL) != 0) {
		tap_skip(1, "cannot build the recorded sample");
		plan_free(p);
		return;
	}
	content = get_content(file, &clen);
	diag("recorded sample: %zu bytes, %zu of content", len, clen);
	{
		struct plan_diag d;
		ok(try_read(file, len, NULL, &d) == 0, "the recorded sample is read");
	}
	expect_recorded(content, clen, 3, PLAN_ERR_VERSION,
	                "section RECD of this format 1.3 file is required",
	                "a recorded plan labelled 1.3: a 1.3 reader refuses it by RECD");

	/* RECD */
	EDIT_R("the recording's reserved field", PLAN_ERR_RESERVED, "section RECD record 0",
	       put32(record_of(c, "RECD", 0) + 20, 1));
	EDIT_R("a recording flag bit 2", PLAN_ERR_RESERVED, "reserved flags",
	       put32(record_of(c, "RECD", 0) + 16, 7));
	EDIT_R("a step rule of neither nvtx:NAME nor repeat", PLAN_ERR_CORRUPT, "step rule",
	       put32(record_of(c, "RECD", 0) + 4, str_at(c, "memcpy")));
	EDIT_R("a repeat step rule with the NVTX flag", PLAN_ERR_CORRUPT, "disagree",
	       put32(record_of(c, "RECD", 0) + 16, 1));
	EDIT_R("an empty command", PLAN_ERR_CORRUPT, "the command is empty",
	       put32(record_of(c, "RECD", 0), 0));
	EDIT_R("more steps seen by the variants than recorded", PLAN_ERR_CORRUPT,
	       "more than the 8 recorded", put64(record_of(c, "VREC", 0) + 8, 100));

	/* MODS and BLOB */
	EDIT_R("a module flag bit 1", PLAN_ERR_RESERVED, "reserved flags",
	       put32(record_of(c, "MODS", 0) + 8, 3));
	EDIT_R("a module's reserved field", PLAN_ERR_RESERVED, "section MODS record 1",
	       put32(record_of(c, "MODS", 1) + 12, 1));
	EDIT_R("the same module twice", PLAN_ERR_CORRUPT, "the module of module 0 again",
	       put64(record_of(c, "MODS", 1) + 16, get64(record_of(c, "MODS", 0) + 16));
	       put64(record_of(c, "MODS", 1) + 24, 24));
	EDIT_R("an image not at the end of the piece before", PLAN_ERR_CORRUPT, "not 0 where",
	       put64(record_of(c, "MODS", 0) + 32, 8));
	EDIT_R("an image running past BLOB", PLAN_ERR_CORRUPT, "runs past",
	       put64(record_of(c, "MODS", 0) + 24, 100000));
	EDIT_R("a module not kept without a note", PLAN_ERR_CORRUPT, "a note saying why",
	       put32(record_of(c, "MODS", 1) + 4, 0));
	EDIT_R("a kept image with a note", PLAN_ERR_CORRUPT, "a kept image with a note",
	       put32(record_of(c, "MODS", 0) + 4, str_at(c, "memcpy")));
	EDIT_R("a module not kept with an image offset", PLAN_ERR_CORRUPT, "an empty piece",
	       put64(record_of(c, "MODS", 1) + 32, 312));
	EDIT_R("a nonzero BLOB byte between pieces", PLAN_ERR_RESERVED, "BLOB padding byte 20",
	       put64(record_of(c, "MODS", 0) + 24, 20));

	/* FUNC, PINF */
	EDIT_R("a function of module 5", PLAN_ERR_CORRUPT, "module 5",
	       put32(record_of(c, "FUNC", 0), 5));
	EDIT_R("a function without a name", PLAN_ERR_CORRUPT, "section FUNC record 1",
	       put32(record_of(c, "FUNC", 1) + 4, 0));
	EDIT_R("parameters overlapping", PLAN_ERR_CORRUPT, "overlaps or precedes",
	       put32(record_of(c, "PINF", 1), 4));
	EDIT_R("a function's parameters outside PINF", PLAN_ERR_CORRUPT, "outside the",
	       put32(record_of(c, "FUNC", 2) + 12, 99));
	EDIT_R("two functions sharing parameters", PLAN_ERR_CORRUPT, "starts before",
	       put32(record_of(c, "FUNC", 1) + 8, 0));

	/* ALOC */
	EDIT_R("two allocations overlapping", PLAN_ERR_CORRUPT, "overlaps allocation 0",
	       put64(record_of(c, "ALOC", 1), get64(record_of(c, "ALOC", 0)) + 32));
	EDIT_R("an allocation flag bit 2", PLAN_ERR_RESERVED, "reserved flags",
	       put32(record_of(c, "ALOC", 1) + 20, 6));
	EDIT_R("an allocation of 0 bytes", PLAN_ERR_CORRUPT, "section ALOC record 1",
	       put64(record_of(c, "ALOC", 1) + 8, 0));
	EDIT_R("an allocation wrapping the address space", PLAN_ERR_CORRUPT, "do not make a range",
	       put64(record_of(c, "ALOC", 1), UINT64_C(0xFFFFFFFFFFFFF000)));
	EDIT_R("a snapshot dropped, the pieces after it misplaced", PLAN_ERR_CORRUPT, "not 24 where",
	       put32(record_of(c, "ALOC", 0) + 20, 0); put64(record_of(c, "ALOC", 0) + 24, 0));

	/* LNCH, PTCH */
	EDIT_R("a launch of type host", PLAN_ERR_CORRUPT, "not a kernel, a copy or a memset",
	       put32(record_of(c, "LNCH", 3), 4));
	EDIT_R("a launch flag bit 2", PLAN_ERR_RESERVED, "reserved flags",
	       put32(record_of(c, "LNCH", 2) + 48, 5));
	EDIT_R("a launch's reserved field", PLAN_ERR_RESERVED, "section LNCH record 2",
	       put32(record_of(c, "LNCH", 2) + 140, 1));
	EDIT_R("a copy naming a function", PLAN_ERR_RESERVED, "does not use",
	       put32(record_of(c, "LNCH", 0) + 4, 0));
	EDIT_R("a kernel with a copy's size", PLAN_ERR_RESERVED, "does not use",
	       put64(record_of(c, "LNCH", 1) + 96, 8));
	EDIT_R("a kernel of function 9", PLAN_ERR_CORRUPT, "function 9 of 3",
	       put32(record_of(c, "LNCH", 1) + 4, 9));
	EDIT_R("a grid of 0 blocks", PLAN_ERR_CORRUPT, "0 dimension",
	       put32(record_of(c, "LNCH", 2) + 12, 0));
	EDIT_R("a partial cluster", PLAN_ERR_CORRUPT, "cluster",
	       put32(record_of(c, "LNCH", 1) + 32, 2));
	EDIT_R("argument bytes shorter than the parameters", PLAN_ERR_CORRUPT, "do not hold",
	       put32(record_of(c, "LNCH", 4) + 52, 8);
	       put32(record_of(c, "PTCH", 6), 0); put32(record_of(c, "LNCH", 4) + 68, 1));
	EDIT_R("a patch at an unaligned byte", PLAN_ERR_CORRUPT, "not an aligned word",
	       put32(record_of(c, "PTCH", 3), 12));
	EDIT_R("a patch past the argument bytes", PLAN_ERR_CORRUPT, "not an aligned word",
	       put32(record_of(c, "PTCH", 4), 40));
	EDIT_R("patches not ascending", PLAN_ERR_CORRUPT, "not ascending",
	       put32(record_of(c, "PTCH", 3), 0));
	EDIT_R("a patch past its allocation's end", PLAN_ERR_CORRUPT, "outside allocation 0",
	       put64(record_of(c, "PTCH", 4) + 8, 65));
	EDIT_R("a patch of allocation 7", PLAN_ERR_CORRUPT, "allocation 7 of 2",
	       put32(record_of(c, "PTCH", 4) + 4, 7));
	EDIT_R("two launches sharing patches", PLAN_ERR_CORRUPT, "starts before",
	       put32(record_of(c, "LNCH", 2) + 64, 0));
	EDIT_R("a copy past its allocation's end", PLAN_ERR_CORRUPT, "outside allocation 0",
	       put64(record_of(c, "LNCH", 0) + 80, 56));
	EDIT_R("host bytes kept for a copy of another size", PLAN_ERR_CORRUPT, "section LNCH record",
	       put32(record_of(c, "LNCH", 0) + 136, 8));
	EDIT_R("a memset of 3-byte elements", PLAN_ERR_CORRUPT, "element of 3 bytes",
	       put32(record_of(c, "LNCH", 3) + 108, 3));
	EDIT_R("a memset value wider than its element", PLAN_ERR_CORRUPT, "wider than",
	       put32(record_of(c, "LNCH", 3) + 108, 1); put32(record_of(c, "LNCH", 3) + 104, 0x100));
	EDIT_R("a memset of rows overlapping (pitch below the row)", PLAN_ERR_CORRUPT, "pitch",
	       put64(record_of(c, "LNCH", 3) + 120, 2); put64(record_of(c, "LNCH", 3) + 128, 8));

	/* Nodes, segments, breakpoints, variants */
	EDIT_R("a kernel node naming a memset", PLAN_ERR_CORRUPT, "names launch 3, a memset",
	       put32(record_of(c, "NLCH", 0), 3));
	EDIT_R("a node naming launch 99", PLAN_ERR_CORRUPT, "names launch 99",
	       put32(record_of(c, "NLCH", 0), 99));
	EDIT_R("an empty node naming a launch", PLAN_ERR_CORRUPT, "names a launch",
	       put32(record_of(c, "NLCH", 3), 0));
	EDIT_R("a recorded node crediting op 0", PLAN_ERR_CORRUPT, "has an op",
	       put32(record_of(c, "NODE", 0) + 4, 0));
	EDIT_R("a node's grid not its launch's", PLAN_ERR_CORRUPT, "is not its launch's",
	       put32(record_of(c, "NODE", 1) + 12, 7));
	EDIT_R("a node's kernel name not its launch's", PLAN_ERR_CORRUPT, "is not its launch's",
	       put32(record_of(c, "NODE", 1) + 8, get32(record_of(c, "NODE", 0) + 8)));
	EDIT_R("an empty node with a kernel name", PLAN_ERR_CORRUPT, "no kernel",
	       put32(record_of(c, "NODE", 3) + 8, get32(record_of(c, "NODE", 0) + 8)));
	EDIT_R("a recorded fingerprint of another graph", PLAN_ERR_CORRUPT, "fingerprint",
	       record_of(c, "SEGS", 1)[16] ^= 1);
	EDIT_R("a recorded segment with ops", PLAN_ERR_CORRUPT, "in a recorded plan",
	       put32(record_of(c, "SEGS", 0) + 8, 1));
	EDIT_R("a breakpoint of no launches", PLAN_ERR_CORRUPT, "are empty or outside",
	       put32(record_of(c, "BLCH", 2) + 4, 0));
	EDIT_R("a breakpoint's launches past the end", PLAN_ERR_CORRUPT, "outside the",
	       put32(record_of(c, "BLCH", 2), 99));
	EDIT_R("a breakpoint's launches going back", PLAN_ERR_CORRUPT, "before the end",
	       put32(record_of(c, "BLCH", 1), 0));
	EDIT_R("a recorded breakpoint of reason kind", PLAN_ERR_CORRUPT, "section BRKP record 0",
	       put32(record_of(c, "BRKP", 0) + 12, 1));
	EDIT_R("a recorded breakpoint of op 0", PLAN_ERR_CORRUPT, "section BRKP record 0",
	       put32(record_of(c, "BRKP", 0) + 4, 0));
	EDIT_R("a recorded variant numbered 3", PLAN_ERR_CORRUPT, "numbered 3",
	       put64(record_of(c, "VARI", 1), 3));
	EDIT_R("a recorded variant with a break that is full", PLAN_ERR_CORRUPT,
	       "is full, not breakable (1 breakpoint)", put32(record_of(c, "VARI", 1) + 8, 2));
	EDIT_R("a recorded variant that is eager", PLAN_ERR_CORRUPT, "is eager, not breakable",
	       put32(record_of(c, "VARI", 1) + 8, 3));
	EDIT_R("a recorded variant with a capture-size key", PLAN_ERR_CORRUPT, "capture-size key",
	       put32(record_of(c, "VKEY", 0), 1));
	EDIT_R("a variant label outside STRS", PLAN_ERR_CORRUPT, "section VREC record 0",
	       put32(record_of(c, "VREC", 0), 0x7FFFFFFF));

	content_minor = 4;
	sweep_content(content, clen);
	content_minor = SAMPLE_MINOR;
	free(content);
	free(file);
	plan_free(p);
}

/* ---------------------------------------------------------------------- */
/* Tensor-parallel plans (format 1.5).                                     */

/* The vector t/data/tp.plan, a world of 2 ranks whose rank 1 is nested in
 * a RANK section: every flip and truncation of the file, and of its
 * content behind valid checksums (the nested rank's bytes included), is
 * rejected with a code and a message, or is another valid plan. The
 * crafted errors of DIST and RANK are t/unit/plan-dist.c's. */
static void test_tensor_parallel(void)
{
	const char *src = getenv("BCG_SRC_DIR");
	char path[4096];
	size_t len = 0, clen = 0;
	unsigned char *file, *content;

	snprintf(path, sizeof path, "%s/t/data/tp.plan", src ? src : ".");
	if ((file = sample_slurp(path, &len)) == NULL) {
		ok(0, "%s is read", path);
		return;
	}
	content = get_content(file, &clen);
	diag("tensor-parallel vector: %zu bytes, %zu of content", len, clen);
	content_minor = 5;
	sweep_file(file, len);
	sweep_content(content, clen);
	content_minor = SAMPLE_MINOR;
	free(content);
	free(file);
}

int main(void)
{
	plan_t *sample = sample_rich();
	void *file = NULL;
	size_t len = 0, clen = 0;
	unsigned char *content;

	if (sample == NULL || plan_write_memory(sample, &file, &len, NULL) != 0)
		tap_skip_all("cannot build the sample plan");
	content = get_content(file, &clen);
	diag("sample plan: %zu bytes, %zu of content", len, clen);

	test_structure(content, clen);
	test_frame(file, len, content, clen);
	test_versions(file, len, content, clen, sample);
	test_step(sample);
	test_keys(content);
	test_limits(file, len, content, clen);
	sweep_file(file, len);
	sweep_content(content, clen);
	test_recorded();
	test_tensor_parallel();

	free(content);
	free(file);
	plan_free(sample);
	return tap_done();
}
