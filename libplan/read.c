/*
 * read.c - the plan reader: header, checksums and limits first, then the
 * zstd payload, then the section directory and every record, then the
 * model built through the builder and checked by plan_validate().
 *
 * The input is hostile until proven otherwise. Sizes are checked against
 * the limits before anything is allocated for them; every count, offset
 * and index is compared, by subtraction or division, with what is really
 * there before it is used; every pool entry and every string byte is
 * handed to the builder a bounded number of times, so that a small file
 * cannot make the reader allocate gigabytes.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "format.h"
#include "internal.h"

/* How a reader's limit is raised, for the messages: libplan's defaults
 * (plan_limits_default) serve bcgtool's commands, which have no option
 * for them. */
#define LIMIT_HOW "libplan's callers raise it in struct plan_limits; bcgtool uses the default"

struct header {
	unsigned major;
	unsigned minor;
	uint64_t payload_size;
	uint64_t content_size;
};

/* A section of the content, as the directory gives it. */
struct sect {
	int                  present;
	const unsigned char *data;
	uint64_t             size;
	const unsigned char *rec;      /* record arrays: the first record */
	uint32_t             rsize;
	uint32_t             count;
};

/* The pools, decoded once into the model's own structures. */
struct pools {
	uint32_t          *idxs;
	struct plan_attr  *attrs;
	struct plan_param *params;
	struct plan_node  *nodes;
	struct plan_edge  *edges;
	struct plan_item  *items;
	struct plan_candidate *cands;
	struct plan_param_info *pinfs;   /* 1.4 */
	struct plan_patch *patches;      /* 1.4 */
	uint32_t          *item_first;   /* per variant */
	uint32_t          *item_count;
};

struct reader {
	const unsigned char      *c;        /* the content */
	size_t                    clen;
	unsigned                  major;
	unsigned                  minor;
	const struct plan_limits *lim;
	struct sect               s[S_COUNT];
	uint64_t                  str_bytes; /* string bytes handed to the builder */
	uint64_t                  blob_end;  /* 1.4: the end of the last BLOB piece */
	struct pools              p;
	plan_t                   *plan;
	struct plan_diag          d;
	/* 1.5: the RANK sections, in directory order, and whether this
	 * content is itself a rank's, inside a RANK section (ranks nest
	 * once). */
	const unsigned char     **rank_data;
	uint64_t                 *rank_size;
	uint32_t                  nrank_sect;
	int                       nested;
};

#define FAIL(r, code, ...) plan__fail(&(r)->d, code, __VA_ARGS__)

/* A failure in record REC of section SECT. */
__attribute__((format(printf, 5, 6)))
static int rec_fail(struct reader *r, int code, int sect, uint32_t rec, const char *fmt, ...)
{
	char msg[PLAN_DIAG_MESSAGE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return FAIL(r, code, "section %s record %u: %s", fmt_sections[sect].id, rec, msg);
}

/* What a builder call returned for record REC of SECT: its complaint about
 * the record becomes a corrupt section naming the record. */
static int built(struct reader *r, int err, int sect, uint32_t rec)
{
	char msg[PLAN_DIAG_MESSAGE_MAX];

	if (err == PLAN_OK || err == PLAN_ERR_NOMEM)
		return err;
	memcpy(msg, r->d.message, sizeof msg);
	return rec_fail(r, PLAN_ERR_CORRUPT, sect, rec, "%s", msg);
}

/* ---------------------------------------------------------------------- */
/* The header and the payload.                                             */

static int check_header(const unsigned char *d, size_t len, const struct plan_limits *lim,
                        struct header *h, struct plan_diag *diag)
{
	uint32_t crc, want, v;
	uint64_t avail;

	if (len < FMT_MAGIC_SIZE) {
		if (len == 0 || memcmp(d, FMT_MAGIC, len) == 0)
			return plan__fail(diag, PLAN_ERR_TRUNCATED, "the file is %zu bytes, shorter "
			                  "than the %d-byte header", len, FMT_HEADER_SIZE);
		return plan__fail(diag, PLAN_ERR_BAD_MAGIC, "the file does not start with the "
		                  "plan magic number");
	}
	if (memcmp(d, FMT_MAGIC, FMT_MAGIC_SIZE) != 0) {
		if (memcmp(d, FMT_MAGIC, 4) == 0)
			return plan__fail(diag, PLAN_ERR_BAD_MAGIC, "the magic number's line-ending "
			                  "bytes are damaged: was the file copied as text?");
		return plan__fail(diag, PLAN_ERR_BAD_MAGIC, "the file does not start with the "
		                  "plan magic number");
	}
	if (len < FMT_HEADER_SIZE)
		return plan__fail(diag, PLAN_ERR_TRUNCATED, "the file is %zu bytes, shorter than "
		                  "the %d-byte header", len, FMT_HEADER_SIZE);
	h->major = fmt_get16(d + HDR_MAJOR);
	h->minor = fmt_get16(d + HDR_MINOR);
	if (h->major != PLAN_FORMAT_MAJOR)
		return plan__fail(diag, PLAN_ERR_VERSION, "format version %u.%u is %s than this "
		                  "reader's %d.%d", h->major, h->minor,
		                  h->major > PLAN_FORMAT_MAJOR ? "newer" : "older",
		                  PLAN_FORMAT_MAJOR, PLAN_FORMAT_MINOR);
	crc = fmt_get32(d + HDR_CRC);
	want = plan_crc32c(d, HDR_CRC);
	if (crc != want)
		return plan__fail(diag, PLAN_ERR_CHECKSUM, "header checksum 0x%08x does not match "
		                  "the header's bytes (0x%08x)", crc, want);
	if ((v = fmt_get32(d + HDR_HEADER_SIZE)) != FMT_HEADER_SIZE)
		return plan__fail(diag, PLAN_ERR_CORRUPT, "header size %u, not %d", v, FMT_HEADER_SIZE);
	if ((v = fmt_get32(d + HDR_FLAGS)) != 0)
		return plan__fail(diag, PLAN_ERR_RESERVED, "header flags 0x%08x: reserved bits are set", v);
	for (unsigned i = 0; i < HDR_RESERVED_SIZE; i++)
		if (d[HDR_RESERVED + i] != 0)
			return plan__fail(diag, PLAN_ERR_RESERVED, "header byte %u is reserved but not zero",
			                  HDR_RESERVED + i);
	h->payload_size = fmt_get64(d + HDR_PAYLOAD_SIZE);
	h->content_size = fmt_get64(d + HDR_CONTENT_SIZE);
	avail = len - FMT_HEADER_SIZE;
	if (h->payload_size > avail)
		return plan__fail(diag, PLAN_ERR_TRUNCATED, "the payload of %llu bytes needs %llu "
		                  "more than the file holds", (unsigned long long)h->payload_size,
		                  (unsigned long long)(h->payload_size - avail));
	if (h->payload_size < avail)
		return plan__fail(diag, PLAN_ERR_CORRUPT, "%llu bytes follow the payload",
		                  (unsigned long long)(avail - h->payload_size));
	if (h->content_size > lim->max_content_bytes || h->content_size > SIZE_MAX)
		return plan__fail(diag, PLAN_ERR_LIMIT, "the content of %llu bytes is over the "
		                  "limit of %llu (max_content_bytes; " LIMIT_HOW ")",
		                  (unsigned long long)h->content_size,
		                  (unsigned long long)lim->max_content_bytes);
	if (h->content_size < DIR_HEADER_SIZE)
		return plan__fail(diag, PLAN_ERR_CORRUPT, "the content of %llu bytes cannot hold "
		                  "a section directory", (unsigned long long)h->content_size);
	crc = fmt_get32(d + HDR_PAYLOAD_CRC);
	want = plan_crc32c(d + FMT_HEADER_SIZE, (size_t)h->payload_size);
	if (crc != want)
		return plan__fail(diag, PLAN_ERR_CHECKSUM, "payload checksum 0x%08x does not match "
		                  "the payload's bytes (0x%08x)", crc, want);
	return PLAN_OK;
}

/* The payload must be one zstd frame with a content checksum, no
 * dictionary, and the header's content size in its own header. */
static int decompress(const unsigned char *p, size_t n, size_t content_size,
                      unsigned char **out, struct plan_diag *diag)
{
	unsigned long long fcs;
	unsigned char *buf = NULL;
	ZSTD_DCtx *dctx = NULL;
	size_t got;
	int err = PLAN_OK;

	*out = NULL;
	if (n < 5 || fmt_get32(p) != FMT_ZSTD_MAGIC)
		return plan__fail(diag, PLAN_ERR_CORRUPT, "the payload is not a zstd frame");
	if (!(p[4] & 0x04))
		return plan__fail(diag, PLAN_ERR_CORRUPT, "the zstd frame has no content checksum");
	if (p[4] & 0x03)
		return plan__fail(diag, PLAN_ERR_CORRUPT, "the zstd frame names a dictionary");
	fcs = ZSTD_getFrameContentSize(p, n);
	if (fcs == ZSTD_CONTENTSIZE_ERROR)
		return plan__fail(diag, PLAN_ERR_DECOMPRESS, "the zstd frame header is invalid");
	if (fcs == ZSTD_CONTENTSIZE_UNKNOWN)
		return plan__fail(diag, PLAN_ERR_CORRUPT, "the zstd frame does not state its "
		                  "content size");
	if (fcs != content_size)
		return plan__fail(diag, PLAN_ERR_CORRUPT, "the zstd frame holds %llu bytes, the "
		                  "header says %zu", fcs, content_size);
	got = ZSTD_findFrameCompressedSize(p, n);
	if (ZSTD_isError(got))
		return plan__fail(diag, PLAN_ERR_DECOMPRESS, "zstd: %s", ZSTD_getErrorName(got));
	if (got != n)
		return plan__fail(diag, PLAN_ERR_CORRUPT, "the payload holds %zu bytes after its "
		                  "zstd frame", n - got);
	if ((buf = malloc(content_size)) == NULL || (dctx = ZSTD_createDCtx()) == NULL) {
		err = plan__fail(diag, PLAN_ERR_NOMEM, "out of memory for %zu bytes of content",
		                 content_size);
		goto out;
	}
	got = ZSTD_decompressDCtx(dctx, buf, content_size, p, n);
	if (ZSTD_isError(got)) {
		if (ZSTD_getErrorCode(got) == ZSTD_error_checksum_wrong)
			err = plan__fail(diag, PLAN_ERR_CHECKSUM, "the zstd content checksum fails");
		else
			err = plan__fail(diag, PLAN_ERR_DECOMPRESS, "zstd: %s", ZSTD_getErrorName(got));
		goto out;
	}
	if (got != content_size) {
		err = plan__fail(diag, PLAN_ERR_CORRUPT, "the zstd frame gave %zu bytes, not %zu",
		                 got, content_size);
		goto out;
	}
	*out = buf;
	buf = NULL;
out:
	free(buf);
	ZSTD_freeDCtx(dctx);
	return err;
}

/* ---------------------------------------------------------------------- */
/* The section directory.                                                  */

static void id_text(const unsigned char *p, char out[5])
{
	memcpy(out, p, 4);
	out[4] = '\0';
}

/* Whether files of this reader's minor version have section S: a file
 * of an older minor lacks the sections added after it. */
static int sect_in_file(const struct reader *r, int s)
{
	return fmt_sections[s].since <= r->minor;
}

/* The section ID names in this file, or -1. An id that a later minor
 * version defines is unknown in a file of an earlier one. */
static int find_known(const struct reader *r, const unsigned char *id)
{
	for (int s = 0; s < S_COUNT; s++)
		if (memcmp(fmt_sections[s].id, id, 4) == 0)
			return sect_in_file(r, s) ? s : -1;
	return -1;
}

static int check_zero(struct reader *r, uint64_t from, uint64_t to, const char *where)
{
	for (uint64_t i = from; i < to; i++)
		if (r->c[i] != 0)
			return FAIL(r, PLAN_ERR_RESERVED, "padding byte %llu %s is not zero",
			            (unsigned long long)i, where);
	return PLAN_OK;
}

static int read_record_header(struct reader *r, int s)
{
	struct sect *x = &r->s[s];
	unsigned m = r->minor < PLAN_FORMAT_MINOR ? r->minor : PLAN_FORMAT_MINOR;
	uint32_t known = fmt_sections[s].size[m];
	uint64_t body;
	const char *id = fmt_sections[s].id;

	if (s == S_STRS || s == S_BLOB || s == S_RANK || !sect_in_file(r, s))
		return PLAN_OK;
	if (x->size < RA_HEADER_SIZE)
		return FAIL(r, PLAN_ERR_CORRUPT, "section %s of %llu bytes has no room for its "
		            "record header", id, (unsigned long long)x->size);
	x->rsize = fmt_get32(x->data + RA_RECORD_SIZE);
	x->count = fmt_get32(x->data + RA_RECORD_COUNT);
	x->rec = x->data + RA_HEADER_SIZE;
	if (x->rsize < known)
		return FAIL(r, PLAN_ERR_CORRUPT, "section %s: records of %u bytes are shorter than "
		            "the %u bytes of format %d.%u", id, x->rsize, known,
		            PLAN_FORMAT_MAJOR, m);
	if (r->minor <= PLAN_FORMAT_MINOR && x->rsize != known)
		return FAIL(r, PLAN_ERR_CORRUPT, "section %s: records of %u bytes in a format %u.%u "
		            "file, which defines %u", id, x->rsize, r->major, r->minor, known);
	body = x->size - RA_HEADER_SIZE;
	if (x->count > body / x->rsize || body - (uint64_t)x->count * x->rsize != 0)
		return FAIL(r, PLAN_ERR_CORRUPT, "section %s: %u records of %u bytes do not fill "
		            "its %llu bytes", id, x->count, x->rsize, (unsigned long long)body);
	if (x->count > r->lim->max_records)
		return FAIL(r, PLAN_ERR_LIMIT, "section %s: %u records, over the limit of %u "
		            "(max_records; " LIMIT_HOW ")", id, x->count, r->lim->max_records);
	if ((s == S_META || s == S_STAT || s == S_DIST) && x->count != 1)
		return FAIL(r, PLAN_ERR_CORRUPT, "section %s has %u records, not 1", id, x->count);
	return PLAN_OK;
}

static int read_directory(struct reader *r)
{
	uint32_t n = fmt_get32(r->c + DIR_SECTION_COUNT), v;
	uint64_t end, prev_end;
	char prev[16] = "directory", id[5];
	int err;

	if ((v = fmt_get32(r->c + DIR_RESERVED)) != 0)
		return FAIL(r, PLAN_ERR_RESERVED, "the directory's reserved field is 0x%08x", v);
	if (n > DIR_MAX_SECTIONS)
		return FAIL(r, PLAN_ERR_CORRUPT, "the directory lists %u sections, more than %d",
		            n, DIR_MAX_SECTIONS);
	end = DIR_HEADER_SIZE + (uint64_t)n * DIR_ENTRY_SIZE;
	if (end > r->clen)
		return FAIL(r, PLAN_ERR_CORRUPT, "the directory of %u sections needs %llu bytes, "
		            "the content has %zu", n, (unsigned long long)end, r->clen);
	prev_end = end;
	for (uint32_t i = 0; i < n; i++) {
		const unsigned char *e = r->c + DIR_HEADER_SIZE + (size_t)i * DIR_ENTRY_SIZE;
		uint32_t flags = fmt_get32(e + ENT_FLAGS);
		uint64_t off = fmt_get64(e + ENT_OFFSET), size = fmt_get64(e + ENT_SIZE);
		int known;

		for (int k = 0; k < 4; k++)
			if (e[ENT_ID + k] < 0x21 || e[ENT_ID + k] > 0x7e)
				return FAIL(r, PLAN_ERR_CORRUPT, "directory entry %u: the section id has "
				            "byte 0x%02x", i, e[ENT_ID + k]);
		id_text(e + ENT_ID, id);
		if (flags & ~SECT_REQUIRED)
			return FAIL(r, PLAN_ERR_RESERVED, "section %s: reserved flags 0x%08x are set",
			            id, flags & ~SECT_REQUIRED);
		if (off % SECT_ALIGN != 0)
			return FAIL(r, PLAN_ERR_CORRUPT, "section %s: offset %llu is not a multiple of %d",
			            id, (unsigned long long)off, SECT_ALIGN);
		if (off < prev_end)
			return FAIL(r, PLAN_ERR_CORRUPT, "section %s at offset %llu overlaps the %s, "
			            "which ends at %llu", id, (unsigned long long)off,
			            prev, (unsigned long long)prev_end);
		if (off > r->clen || size > r->clen - off)
			return FAIL(r, PLAN_ERR_CORRUPT, "section %s [%llu, +%llu) runs past the "
			            "%zu-byte content", id, (unsigned long long)off,
			            (unsigned long long)size, r->clen);
		if ((err = check_zero(r, prev_end, off, "between sections")) != 0)
			return err;
		known = find_known(r, e + ENT_ID);
		/* RANK (1.5) is listed once for each rank attached. */
		for (uint32_t j = 0; j < i && known != S_RANK; j++)
			if (memcmp(r->c + DIR_HEADER_SIZE + (size_t)j * DIR_ENTRY_SIZE + ENT_ID,
			           e + ENT_ID, 4) == 0)
				return FAIL(r, PLAN_ERR_CORRUPT, "section %s is listed twice", id);
		if (known < 0 && (flags & SECT_REQUIRED))
			return FAIL(r, PLAN_ERR_VERSION, "section %s of this format %u.%u file is "
			            "required, but this reader (format %d.%d) does not know it",
			            id, r->major, r->minor, PLAN_FORMAT_MAJOR, PLAN_FORMAT_MINOR);
		if (known == S_RANK) {
			if (r->rank_data == NULL &&
			    ((r->rank_data = calloc(n, sizeof *r->rank_data)) == NULL ||
			     (r->rank_size = calloc(n, sizeof *r->rank_size)) == NULL))
				return FAIL(r, PLAN_ERR_NOMEM, "out of memory reading the plan");
			r->rank_data[r->nrank_sect] = r->c + off;
			r->rank_size[r->nrank_sect++] = size;
		} else if (known >= 0) {
			r->s[known].present = 1;
			r->s[known].data = r->c + off;
			r->s[known].size = size;
		}
		prev_end = off + size;
		snprintf(prev, sizeof prev, "section %s", id);
	}
	if ((err = check_zero(r, prev_end, r->clen, "after the last section")) != 0)
		return err;
	for (int s = 0; s < S_COUNT; s++) {
		if (!sect_in_file(r, s) || s == S_RANK)
			continue;
		if (!r->s[s].present)
			return FAIL(r, PLAN_ERR_CORRUPT, "section %s is missing", fmt_sections[s].id);
		if ((err = read_record_header(r, s)) != 0)
			return err;
	}
	return PLAN_OK;
}

/* ---------------------------------------------------------------------- */
/* Field helpers.                                                          */

static const unsigned char *rec_at(const struct reader *r, int s, uint32_t i)
{
	return r->s[s].rec + (size_t)i * r->s[s].rsize;
}

/* The string at REF in the string table. The bytes handed to the builder
 * are counted: references may share a string, and each is a copy. */
static int get_str(struct reader *r, int s, uint32_t i, const char *field, uint32_t ref,
                   const char **out)
{
	const struct sect *t = &r->s[S_STRS];
	const unsigned char *nul;

	if (ref >= t->size)
		return rec_fail(r, PLAN_ERR_CORRUPT, s, i, "%s: string offset %u is outside the "
		                "%llu-byte string table", field, ref, (unsigned long long)t->size);
	nul = memchr(t->data + ref, 0, (size_t)(t->size - ref));
	if (nul == NULL)
		return rec_fail(r, PLAN_ERR_CORRUPT, s, i, "%s: the string at offset %u has no "
		                "terminating NUL", field, ref);
	r->str_bytes += (uint64_t)(nul - (t->data + ref)) + 1;
	if (r->str_bytes > r->lim->max_content_bytes)
		return rec_fail(r, PLAN_ERR_LIMIT, s, i, "the strings referenced so far add up to "
		                "more than the content limit of %llu bytes (max_content_bytes; "
		                LIMIT_HOW ")", (unsigned long long)r->lim->max_content_bytes);
	*out = (const char *)t->data + ref;
	return PLAN_OK;
}

/* A (First, Count) range of POOL: inside it, and after every range taken
 * from it before (*CURSOR), so that no pool entry is used twice. */
static int get_range(struct reader *r, int s, uint32_t i, const char *field, int pool,
                     uint32_t first, uint32_t count, uint32_t *cursor)
{
	uint32_t n = r->s[pool].count;

	if (first > n || count > n - first)
		return rec_fail(r, PLAN_ERR_CORRUPT, s, i, "%s [%u, +%u) is outside the %u "
		                "records of section %s", field, first, count, n, fmt_sections[pool].id);
	if (first < *cursor)
		return rec_fail(r, PLAN_ERR_CORRUPT, s, i, "%s [%u, +%u) starts before the end "
		                "(%u) of the previous range of section %s", field, first, count,
		                *cursor, fmt_sections[pool].id);
	*cursor = first + count;
	return PLAN_OK;
}

static int zero32(struct reader *r, int s, uint32_t i, const unsigned char *p, const char *field)
{
	uint32_t v = fmt_get32(p);

	if (v != 0)
		return rec_fail(r, PLAN_ERR_RESERVED, s, i, "%s is 0x%08x, not zero", field, v);
	return PLAN_OK;
}

/* An enumeration stored as u32: small enough for an int. Whether the
 * value is known is for the builder and plan_validate() to say. */
static int get_enum(struct reader *r, int s, uint32_t i, const char *field, uint32_t v, int *out)
{
	if (v > 0xFFFF)
		return rec_fail(r, PLAN_ERR_CORRUPT, s, i, "unknown %s %u", field, v);
	*out = (int)v;
	return PLAN_OK;
}

static void *alloc_array(uint32_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

/* ---------------------------------------------------------------------- */
/* The pools.                                                              */

static int read_pools(struct reader *r)
{
	struct pools *p = &r->p;
	uint32_t cursor = 0;
	int err;

	p->idxs = alloc_array(r->s[S_IDXS].count, sizeof *p->idxs);
	p->attrs = alloc_array(r->s[S_ATTR].count, sizeof *p->attrs);
	p->params = alloc_array(r->s[S_PARM].count, sizeof *p->params);
	p->nodes = alloc_array(r->s[S_NODE].count, sizeof *p->nodes);
	p->edges = alloc_array(r->s[S_EDGE].count, sizeof *p->edges);
	p->items = alloc_array(r->s[S_ITEM].count, sizeof *p->items);
	p->cands = alloc_array(r->s[S_CAND].count, sizeof *p->cands);
	p->pinfs = alloc_array(r->s[S_PINF].count, sizeof *p->pinfs);
	p->patches = alloc_array(r->s[S_PTCH].count, sizeof *p->patches);
	p->item_first = alloc_array(r->s[S_VARI].count, sizeof *p->item_first);
	p->item_count = alloc_array(r->s[S_VARI].count, sizeof *p->item_count);
	if (!p->idxs || !p->attrs || !p->params || !p->nodes || !p->edges || !p->items ||
	    !p->cands || !p->pinfs || !p->patches || !p->item_first || !p->item_count)
		return FAIL(r, PLAN_ERR_NOMEM, "out of memory reading the plan");

	for (uint32_t i = 0; i < r->s[S_IDXS].count; i++)
		p->idxs[i] = fmt_get32(rec_at(r, S_IDXS, i) + IDXS_INDEX);

	for (uint32_t i = 0; i < r->s[S_ATTR].count; i++) {
		const unsigned char *q = rec_at(r, S_ATTR, i);
		struct plan_attr *a = &p->attrs[i];
		if ((err = get_str(r, S_ATTR, i, "Key", fmt_get32(q + ATTR_KEY), &a->key)) != 0 ||
		    (err = get_enum(r, S_ATTR, i, "attribute type", fmt_get32(q + ATTR_TYPE), &a->type)) != 0 ||
		    (err = get_str(r, S_ATTR, i, "Text", fmt_get32(q + ATTR_TEXT), &a->s)) != 0 ||
		    (err = zero32(r, S_ATTR, i, q + ATTR_RESERVED, "Reserved")) != 0)
			return err;
		a->i = fmt_geti64(q + ATTR_INT);
		a->f = fmt_getf64(q + ATTR_FLOAT);
		if (a->type != PLAN_ATTR_STR && a->s[0] != '\0')
			return rec_fail(r, PLAN_ERR_CORRUPT, S_ATTR, i, "attribute of type %d has text",
			                a->type);
	}

	for (uint32_t i = 0; i < r->s[S_PARM].count; i++) {
		const unsigned char *q = rec_at(r, S_PARM, i);
		if ((err = zero32(r, S_PARM, i, q + PARM_RESERVED, "Reserved")) != 0)
			return err;
		p->params[i].index = fmt_get32(q + PARM_INDEX);
		p->params[i].offset = fmt_get64(q + PARM_OFFSET);
	}

	for (uint32_t i = 0; i < r->s[S_NODE].count; i++) {
		const unsigned char *q = rec_at(r, S_NODE, i);
		struct plan_node *n = &p->nodes[i];
		uint32_t first = fmt_get32(q + NODE_PARAM_FIRST);
		if ((err = get_enum(r, S_NODE, i, "node type", fmt_get32(q + NODE_TYPE), &n->type)) != 0 ||
		    (err = get_str(r, S_NODE, i, "Kernel", fmt_get32(q + NODE_KERNEL), &n->kernel)) != 0)
			return err;
		n->op = fmt_get32(q + NODE_OP);
		for (int k = 0; k < 3; k++) {
			n->grid[k] = fmt_get32(q + NODE_GRID + 4 * k);
			n->block[k] = fmt_get32(q + NODE_BLOCK + 4 * k);
		}
		n->shmem = fmt_get32(q + NODE_SHARED_BYTES);
		n->nparams = fmt_get32(q + NODE_PARAM_COUNT);
		if ((err = get_range(r, S_NODE, i, "Params", S_PARM, first, n->nparams, &cursor)) != 0)
			return err;
		n->params = n->nparams ? p->params + first : NULL;
		n->launch = PLAN_NONE;
	}

	/* 1.4: each node's launch. */
	if (sect_in_file(r, S_NLCH)) {
		if (r->s[S_NLCH].count != r->s[S_NODE].count)
			return FAIL(r, PLAN_ERR_CORRUPT, "section NLCH has %u records, not one for each "
			            "of the %u of section NODE", r->s[S_NLCH].count, r->s[S_NODE].count);
		for (uint32_t i = 0; i < r->s[S_NLCH].count; i++)
			p->nodes[i].launch = fmt_get32(rec_at(r, S_NLCH, i) + NLCH_LAUNCH);
	}
	for (uint32_t i = 0; i < r->s[S_PINF].count; i++) {
		const unsigned char *q = rec_at(r, S_PINF, i);
		p->pinfs[i].offset = fmt_get32(q + PINF_OFFSET);
		p->pinfs[i].size = fmt_get32(q + PINF_SIZE);
	}
	for (uint32_t i = 0; i < r->s[S_PTCH].count; i++) {
		const unsigned char *q = rec_at(r, S_PTCH, i);
		p->patches[i].byte = fmt_get32(q + PTCH_BYTE);
		p->patches[i].addr.alloc = fmt_get32(q + PTCH_ALLOC);
		p->patches[i].addr.offset = fmt_get64(q + PTCH_OFFSET);
	}

	/* Edges of a 1.0 file have no type or ports: they are the default. */
	for (uint32_t i = 0; i < r->s[S_EDGE].count; i++) {
		const unsigned char *q = rec_at(r, S_EDGE, i);
		p->edges[i].from = fmt_get32(q + EDGE_FROM);
		p->edges[i].to = fmt_get32(q + EDGE_TO);
		if (r->s[S_EDGE].rsize < REC_EDGE)
			continue;
		if (q[EDGE_RESERVED] != 0)
			return rec_fail(r, PLAN_ERR_RESERVED, S_EDGE, i, "Reserved is 0x%02x, not zero",
			                q[EDGE_RESERVED]);
		p->edges[i].type = q[EDGE_TYPE];
		p->edges[i].from_port = q[EDGE_FROM_PORT];
		p->edges[i].to_port = q[EDGE_TO_PORT];
	}

	for (uint32_t i = 0; i < r->s[S_CAND].count; i++) {
		const unsigned char *q = rec_at(r, S_CAND, i);
		if ((err = get_str(r, S_CAND, i, "Impl", fmt_get32(q + CAND_IMPL), &p->cands[i].impl)) != 0 ||
		    (err = zero32(r, S_CAND, i, q + CAND_RESERVED, "Reserved")) != 0)
			return err;
		p->cands[i].us = fmt_getf64(q + CAND_US);
	}

	for (uint32_t i = 0; i < r->s[S_ITEM].count; i++) {
		const unsigned char *q = rec_at(r, S_ITEM, i);
		if ((err = get_enum(r, S_ITEM, i, "item kind", fmt_get32(q + ITEM_KIND),
		                    &p->items[i].kind)) != 0)
			return err;
		p->items[i].index = fmt_get32(q + ITEM_INDEX);
	}
	return PLAN_OK;
}

static void free_pools(struct pools *p)
{
	free(p->idxs);
	free(p->attrs);
	free(p->params);
	free(p->nodes);
	free(p->edges);
	free(p->items);
	free(p->cands);
	free(p->pinfs);
	free(p->patches);
	free(p->item_first);
	free(p->item_count);
}

/* ---------------------------------------------------------------------- */
/* The model, section by section.                                          */

static int build_meta(struct reader *r)
{
	const unsigned char *q = rec_at(r, S_META, 0);
	struct plan_meta m = { 0 };
	struct plan_layout l = { 0 };
	struct plan_stats st = { 0 };
	int err;

	if ((err = get_str(r, S_META, 0, "Tool", fmt_get32(q + META_TOOL), &m.tool)) != 0 ||
	    (err = get_str(r, S_META, 0, "Script", fmt_get32(q + META_SCRIPT), &m.script)) != 0 ||
	    (err = get_str(r, S_META, 0, "Device", fmt_get32(q + META_DEVICE), &m.device)) != 0 ||
	    (err = get_enum(r, S_META, 0, "backend", fmt_get32(q + META_BACKEND), &m.backend)) != 0)
		return err;
	m.script_hash = fmt_get64(q + META_SCRIPT_HASH);
	m.created = fmt_geti64(q + META_CREATED);
	m.cc_major = fmt_geti32(q + META_CC_MAJOR);
	m.cc_minor = fmt_geti32(q + META_CC_MINOR);
	m.cuda_runtime = fmt_geti32(q + META_CUDA_RUNTIME);
	m.cuda_driver = fmt_geti32(q + META_CUDA_DRIVER);
	m.cublas = fmt_geti32(q + META_CUBLAS);
	l.alignment = fmt_get32(q + META_ALIGNMENT);
	l.arena_bytes = fmt_get64(q + META_ARENA_BYTES);
	l.unshared_bytes = fmt_get64(q + META_UNSHARED_BYTES);
	/* A 1.0 file's META ends before the features: it has none. */
	if (r->s[S_META].rsize >= REC_META) {
		if ((err = zero32(r, S_META, 0, q + META_RESERVED, "Reserved")) != 0)
			return err;
		m.features = fmt_get32(q + META_FEATURES);
		if (m.features & ~(uint32_t)FMT_FEATURES)
			return rec_fail(r, PLAN_ERR_RESERVED, S_META, 0, "unknown features 0x%08x are set",
			                m.features & ~(uint32_t)FMT_FEATURES);
	}
	if ((err = built(r, plan_set_meta(r->plan, &m, &r->d), S_META, 0)) != 0 ||
	    (err = built(r, plan_set_layout(r->plan, &l, &r->d), S_META, 0)) != 0)
		return err;

	q = rec_at(r, S_STAT, 0);
	st.materialize_ns = fmt_get64(q + STAT_MATERIALIZE_NS);
	st.reference_ns = fmt_get64(q + STAT_REFERENCE_NS);
	st.capture_ns = fmt_get64(q + STAT_CAPTURE_NS);
	st.instantiate_ns = fmt_get64(q + STAT_INSTANTIATE_NS);
	st.verify_ns = fmt_get64(q + STAT_VERIFY_NS);
	st.reference_steps = fmt_get32(q + STAT_REFERENCE_STEPS);
	st.verify_exact = fmt_get32(q + STAT_VERIFY_EXACT);
	st.verify_max_error = fmt_getf64(q + STAT_VERIFY_MAX_ERR);
	return built(r, plan_set_stats(r->plan, &st, &r->d), S_STAT, 0);
}

static int build_dims_vars(struct reader *r)
{
	int err;

	for (uint32_t i = 0; i < r->s[S_DIMS].count; i++) {
		const unsigned char *q = rec_at(r, S_DIMS, i);
		struct plan_dim d = { 0 };
		if ((err = get_str(r, S_DIMS, i, "Name", fmt_get32(q + DIMS_NAME), &d.name)) != 0 ||
		    (err = get_str(r, S_DIMS, i, "Expr", fmt_get32(q + DIMS_EXPR), &d.expr)) != 0 ||
		    (err = zero32(r, S_DIMS, i, q + DIMS_RESERVED, "Reserved")) != 0)
			return err;
		d.value = fmt_geti64(q + DIMS_VALUE);
		d.flags = fmt_get32(q + DIMS_FLAGS);
		if (d.flags & ~(uint32_t)FMT_DIM_FLAGS)
			return rec_fail(r, PLAN_ERR_RESERVED, S_DIMS, i, "reserved flags 0x%08x are set",
			                d.flags & ~(uint32_t)FMT_DIM_FLAGS);
		if ((err = built(r, plan_add_dim(r->plan, &d, NULL, &r->d), S_DIMS, i)) != 0)
			return err;
	}
	for (uint32_t i = 0; i < r->s[S_VARS].count; i++) {
		const unsigned char *q = rec_at(r, S_VARS, i);
		struct plan_var v = { 0 };
		if ((err = get_str(r, S_VARS, i, "Name", fmt_get32(q + VARS_NAME), &v.name)) != 0 ||
		    (err = zero32(r, S_VARS, i, q + VARS_RESERVED, "Reserved")) != 0)
			return err;
		v.start = fmt_geti64(q + VARS_START);
		v.step = fmt_geti64(q + VARS_STEP);
		v.limit = fmt_geti64(q + VARS_LIMIT);
		v.offset = fmt_get64(q + VARS_OFFSET);
		if ((err = built(r, plan_add_var(r->plan, &v, NULL, &r->d), S_VARS, i)) != 0)
			return err;
	}
	return PLAN_OK;
}

/* Tensor I's split (1.5) from the fields of its record Q and its blocks
 * in SBLK. A tensor of no blocks has axis and unit zero. */
static int read_split(struct reader *r, uint32_t i, const unsigned char *q, uint32_t *cursor,
                      struct plan_split *sp)
{
	uint32_t first = fmt_get32(q + TENS_BLOCK_FIRST), n = fmt_get32(q + TENS_BLOCK_COUNT);
	int err;

	if (!sect_in_file(r, S_SBLK))
		return PLAN_OK;
	if ((err = zero32(r, S_TENS, i, q + TENS_RESERVED3, "Reserved")) != 0 ||
	    (err = get_range(r, S_TENS, i, "Blocks", S_SBLK, first, n, cursor)) != 0)
		return err;
	sp->axis = fmt_get32(q + TENS_SPLIT_AXIS);
	sp->unit = fmt_geti64(q + TENS_SPLIT_UNIT);
	if (n == 0) {
		if (sp->axis != 0 || sp->unit != 0)
			return rec_fail(r, PLAN_ERR_RESERVED, S_TENS, i, "a tensor of no split blocks "
			                "has split axis %u and unit %lld, not 0 and 0", sp->axis,
			                (long long)sp->unit);
		return PLAN_OK;
	}
	if (n > PLAN_MAX_SPLIT_BLOCKS)
		return rec_fail(r, PLAN_ERR_CORRUPT, S_TENS, i, "a split of %u blocks, more than %d",
		                n, PLAN_MAX_SPLIT_BLOCKS);
	sp->nblocks = n;
	for (uint32_t k = 0; k < n; k++) {
		const unsigned char *b = rec_at(r, S_SBLK, first + k);
		sp->block[k].full = fmt_geti64(b + SBLK_FULL);
		sp->block[k].start = fmt_geti64(b + SBLK_START);
		sp->block[k].len = fmt_geti64(b + SBLK_LEN);
	}
	return PLAN_OK;
}

static int build_tensors(struct reader *r)
{
	uint32_t sblk_cursor = 0;
	int err;

	for (uint32_t i = 0; i < r->s[S_TENS].count; i++) {
		const unsigned char *q = rec_at(r, S_TENS, i);
		struct plan_tensor t = { 0 };
		if ((err = get_str(r, S_TENS, i, "Name", fmt_get32(q + TENS_NAME), &t.name)) != 0)
			return err;
		if (q[TENS_RESERVED1] != 0 || q[TENS_RESERVED2] != 0 || q[TENS_RESERVED2 + 1] != 0)
			return rec_fail(r, PLAN_ERR_RESERVED, S_TENS, i, "a reserved byte is not zero");
		t.dtype = q[TENS_DTYPE];
		t.role = q[TENS_ROLE];
		t.rank = q[TENS_RANK];
		t.offset = fmt_get64(q + TENS_OFFSET);
		t.bytes = fmt_get64(q + TENS_BYTES);
		for (uint32_t k = 0; k < PLAN_MAX_RANK; k++) {
			const unsigned char *a = q + TENS_AXES + k * TENS_AXIS_SIZE;
			if ((err = zero32(r, S_TENS, i, a + AXIS_RESERVED, "axis Reserved")) != 0)
				return err;
			t.shape[k].dim = fmt_get32(a + AXIS_DIM);
			t.shape[k].size = fmt_geti64(a + AXIS_LENGTH);
			/* The model clears unused axes: a set one would be lost. */
			if (k >= t.rank && t.rank >= 1 && (t.shape[k].dim != PLAN_NONE || t.shape[k].size != 0))
				return rec_fail(r, PLAN_ERR_RESERVED, S_TENS, i, "axis %u beyond rank %u "
				                "is not (0xFFFFFFFF, 0)", k, t.rank);
		}
		t.init.kind = q[TENS_INIT_KIND];
		t.feed.kind = q[TENS_FEED_KIND];
		t.feed.var = fmt_get32(q + TENS_FEED_VAR);
		t.feed.from = PLAN_NONE;
		/* A prompt feed keeps the tensor it feeds back in Feed_Var. */
		if (t.feed.kind == PLAN_FEED_PROMPT) {
			t.feed.from = t.feed.var;
			t.feed.var = PLAN_NONE;
		}
		t.init.seed = fmt_get64(q + TENS_INIT_SEED);
		t.init.scale = fmt_getf64(q + TENS_INIT_SCALE);
		t.init.value = fmt_getf64(q + TENS_INIT_VALUE);
		t.feed.seed = fmt_get64(q + TENS_FEED_SEED);
		t.feed.range = fmt_geti64(q + TENS_FEED_RANGE);
		t.feed.scale = fmt_getf64(q + TENS_FEED_SCALE);
		if ((err = read_split(r, i, q, &sblk_cursor, &t.split)) != 0 ||
		    (err = built(r, plan_add_tensor(r->plan, &t, NULL, &r->d), S_TENS, i)) != 0)
			return err;
	}
	return PLAN_OK;
}

static int build_ops(struct reader *r, uint32_t *idx_cursor)
{
	uint32_t attr_cursor = 0;
	int err;

	for (uint32_t i = 0; i < r->s[S_OPER].count; i++) {
		const unsigned char *q = rec_at(r, S_OPER, i);
		struct plan_op o = { 0 };
		uint32_t in = fmt_get32(q + OPER_INPUT_FIRST), out = fmt_get32(q + OPER_OUTPUT_FIRST);
		uint32_t attr = fmt_get32(q + OPER_ATTR_FIRST);
		if ((err = get_str(r, S_OPER, i, "Kind", fmt_get32(q + OPER_KIND), &o.kind)) != 0 ||
		    (err = get_str(r, S_OPER, i, "Name", fmt_get32(q + OPER_NAME), &o.name)) != 0 ||
		    (err = zero32(r, S_OPER, i, q + OPER_RESERVED, "Reserved")) != 0)
			return err;
		o.flags = fmt_get32(q + OPER_FLAGS);
		if (o.flags & ~(uint32_t)FMT_OP_FLAGS)
			return rec_fail(r, PLAN_ERR_RESERVED, S_OPER, i, "reserved flags 0x%08x are set",
			                o.flags & ~(uint32_t)FMT_OP_FLAGS);
		o.line = fmt_get32(q + OPER_LINE);
		o.col = fmt_get32(q + OPER_COL);
		o.nin = fmt_get32(q + OPER_INPUT_COUNT);
		o.nout = fmt_get32(q + OPER_OUTPUT_COUNT);
		o.nattr = fmt_get32(q + OPER_ATTR_COUNT);
		if ((err = get_range(r, S_OPER, i, "Inputs", S_IDXS, in, o.nin, idx_cursor)) != 0 ||
		    (err = get_range(r, S_OPER, i, "Outputs", S_IDXS, out, o.nout, idx_cursor)) != 0 ||
		    (err = get_range(r, S_OPER, i, "Attrs", S_ATTR, attr, o.nattr, &attr_cursor)) != 0)
			return err;
		o.in = r->p.idxs + in;
		o.out = r->p.idxs + out;
		o.attr = r->p.attrs + attr;
		if ((err = built(r, plan_add_op(r->plan, &o, NULL, &r->d), S_OPER, i)) != 0)
			return err;
	}
	return PLAN_OK;
}

/* Variant I's key from its VKEY record (1.3); none in older files. */
static int read_key(struct reader *r, uint32_t i, struct plan_variant *v)
{
	const unsigned char *k;

	if (!sect_in_file(r, S_VKEY))
		return PLAN_OK;
	k = rec_at(r, S_VKEY, i);
	v->requests = fmt_get32(k + VKEY_REQUESTS);
	v->key_flags = fmt_get32(k + VKEY_FLAGS);
	if (v->key_flags & ~(uint32_t)FMT_KEY_FLAGS)
		return rec_fail(r, PLAN_ERR_RESERVED, S_VKEY, i, "reserved flags 0x%08x are set",
		                v->key_flags & ~(uint32_t)FMT_KEY_FLAGS);
	return PLAN_OK;
}

/* Section A of 1.4 has one record for each of section B. */
static int same_count(struct reader *r, int a, int b)
{
	if (sect_in_file(r, a) && r->s[a].count != r->s[b].count)
		return FAIL(r, PLAN_ERR_CORRUPT, "section %s has %u records, not one for each of "
		            "the %u of section %s", fmt_sections[a].id, r->s[a].count, r->s[b].count,
		            fmt_sections[b].id);
	return PLAN_OK;
}

/* Variant I's recorded fields from its VREC record (1.4). */
static int read_vrec(struct reader *r, uint32_t i, struct plan_variant *v)
{
	const unsigned char *k;

	if (!sect_in_file(r, S_VREC))
		return PLAN_OK;
	k = rec_at(r, S_VREC, i);
	v->device = fmt_get32(k + VREC_DEVICE);
	v->seen = fmt_get64(k + VREC_SEEN);
	v->recorded_ns = fmt_get64(k + VREC_RECORDED_NS);
	return get_str(r, S_VREC, i, "Label", fmt_get32(k + VREC_LABEL), &v->label);
}

/* The nodes of segment I as the model holds them against their NODE and
 * NLCH records from FIRST: a recorded plan's model takes a kernel node's
 * name and shape from its launch and clears them in other nodes, and a
 * script plan's has no launches, so a record that says otherwise would
 * be lost. */
static int check_nodes(struct reader *r, uint32_t i, uint32_t first, const struct plan_segment *s)
{
	const struct plan_segment *m = plan_get_segment(r->plan, plan_count_segments(r->plan) - 1);

	for (uint32_t k = 0; k < s->nnodes; k++) {
		const struct plan_node *f = &s->nodes[k], *n = &m->nodes[k];
		if (!r->plan->recorded) {
			if (f->launch != PLAN_NONE)
				return rec_fail(r, PLAN_ERR_CORRUPT, S_NLCH, first + k, "a launch (%u) in "
				                "a plan without a recording", f->launch);
			continue;
		}
		if (strcmp(f->kernel, n->kernel) != 0 || memcmp(f->grid, n->grid, sizeof f->grid) ||
		    memcmp(f->block, n->block, sizeof f->block) || f->shmem != n->shmem)
			return rec_fail(r, PLAN_ERR_CORRUPT, S_NODE, first + k, "segment %u node %u: "
			                "the kernel, grid, block or shared memory is not %s", i, k,
			                n->type == PLAN_NODE_KERNEL ? "its launch's" :
			                "\"\" and 0 (no kernel)");
	}
	return PLAN_OK;
}

/* A piece of BLOB (1.4) of LEN bytes at OFF: pieces follow one another in
 * the order the records are read, each at the first multiple of
 * BLOB_ALIGN after the one before, with zero bytes between; an empty
 * piece is at 0. */
static int get_blob(struct reader *r, int s, uint32_t i, const char *field, uint64_t off,
                    uint64_t len, const void **out)
{
	const struct sect *b = &r->s[S_BLOB];
	uint64_t at = (r->blob_end + BLOB_ALIGN - 1) / BLOB_ALIGN * BLOB_ALIGN;

	*out = NULL;
	if (len == 0) {
		if (off != 0)
			return rec_fail(r, PLAN_ERR_CORRUPT, s, i, "%s: an empty piece at offset %llu, "
			                "not 0", field, (unsigned long long)off);
		return PLAN_OK;
	}
	if (off != at)
		return rec_fail(r, PLAN_ERR_CORRUPT, s, i, "%s at BLOB offset %llu, not %llu where "
		                "the piece before it ends", field, (unsigned long long)off,
		                (unsigned long long)at);
	if (at > b->size || len > b->size - at)
		return rec_fail(r, PLAN_ERR_CORRUPT, s, i, "%s [%llu, +%llu) runs past the "
		                "%llu-byte BLOB section", field, (unsigned long long)off,
		                (unsigned long long)len, (unsigned long long)b->size);
	if (len > SIZE_MAX)
		return rec_fail(r, PLAN_ERR_LIMIT, s, i, "%s of %llu bytes", field,
		                (unsigned long long)len);
	for (uint64_t k = r->blob_end; k < at; k++)
		if (b->data[k] != 0)
			return rec_fail(r, PLAN_ERR_RESERVED, s, i, "%s: BLOB padding byte %llu is not "
			                "zero", field, (unsigned long long)k);
	r->blob_end = at + len;
	*out = b->data + at;
	return PLAN_OK;
}

static int reserved_flags(struct reader *r, int s, uint32_t i, uint32_t flags, uint32_t known)
{
	if (flags & ~known)
		return rec_fail(r, PLAN_ERR_RESERVED, s, i, "reserved flags 0x%08x are set",
		                flags & ~known);
	return PLAN_OK;
}

static int same_addr(const struct plan_addr *a, const struct plan_addr *b)
{
	return a->alloc == b->alloc && a->offset == b->offset;
}

/* Whether the model's launch M is the one read, F: the model clears what
 * the launch's type does not use, which a file must have cleared too. */
static int same_launch(const struct plan_launch *f, const struct plan_launch *m)
{
	return f->function == m->function && !memcmp(f->grid, m->grid, sizeof f->grid) &&
	       !memcmp(f->block, m->block, sizeof f->block) &&
	       !memcmp(f->cluster, m->cluster, sizeof f->cluster) && f->shmem == m->shmem &&
	       f->flags == m->flags && same_addr(&f->dst, &m->dst) &&
	       same_addr(&f->src, &m->src) && f->bytes == m->bytes && f->value == m->value &&
	       f->element == m->element && f->width == m->width && f->height == m->height &&
	       f->pitch == m->pitch;
}

/* The recording and what it recorded (1.4), before the segments and
 * breakpoints that name them. */
static int build_recorded(struct reader *r)
{
	uint32_t pinf_cursor = 0, ptch_cursor = 0, index;
	int err;

	if (!sect_in_file(r, S_RECD))
		return PLAN_OK;
	if (r->s[S_RECD].count > 1)
		return FAIL(r, PLAN_ERR_CORRUPT, "section RECD has %u records, not 0 or 1",
		            r->s[S_RECD].count);
	if (r->s[S_RECD].count == 1) {
		const unsigned char *q = rec_at(r, S_RECD, 0);
		struct plan_recording rec = { 0 };
		if ((err = get_str(r, S_RECD, 0, "Command", fmt_get32(q + RECD_COMMAND), &rec.command)) != 0 ||
		    (err = get_str(r, S_RECD, 0, "Step_Rule", fmt_get32(q + RECD_STEP_RULE), &rec.step_rule)) != 0 ||
		    (err = get_str(r, S_RECD, 0, "Libraries", fmt_get32(q + RECD_LIBRARIES), &rec.libraries)) != 0 ||
		    (err = zero32(r, S_RECD, 0, q + RECD_RESERVED, "Reserved")) != 0)
			return err;
		rec.pid = fmt_get32(q + RECD_PID);
		rec.flags = fmt_get32(q + RECD_FLAGS);
		rec.wall_ns = fmt_get64(q + RECD_WALL_NS);
		rec.steps = fmt_get64(q + RECD_STEPS);
		if ((err = reserved_flags(r, S_RECD, 0, rec.flags, FMT_RECORD_FLAGS)) != 0 ||
		    (err = built(r, plan_set_recording(r->plan, &rec, &r->d), S_RECD, 0)) != 0)
			return err;
	}

	for (uint32_t i = 0; i < r->s[S_MODS].count; i++) {
		const unsigned char *q = rec_at(r, S_MODS, i);
		struct plan_module m = { 0 };
		if ((err = get_str(r, S_MODS, i, "Name", fmt_get32(q + MODS_NAME), &m.name)) != 0 ||
		    (err = get_str(r, S_MODS, i, "Note", fmt_get32(q + MODS_NOTE), &m.note)) != 0 ||
		    (err = zero32(r, S_MODS, i, q + MODS_RESERVED, "Reserved")) != 0)
			return err;
		m.flags = fmt_get32(q + MODS_FLAGS);
		m.hash = fmt_get64(q + MODS_HASH);
		m.bytes = fmt_get64(q + MODS_BYTES);
		if ((err = reserved_flags(r, S_MODS, i, m.flags, FMT_MODULE_FLAGS)) != 0 ||
		    (err = get_blob(r, S_MODS, i, "Image", fmt_get64(q + MODS_IMAGE),
		                    (m.flags & PLAN_MODULE_IMAGE) ? m.bytes : 0, &m.image)) != 0)
			return err;
		if ((m.flags & PLAN_MODULE_IMAGE) && m.note[0] != '\0')
			return rec_fail(r, PLAN_ERR_CORRUPT, S_MODS, i, "a kept image with a note");
		if ((err = built(r, plan_add_module(r->plan, &m, &index, &r->d), S_MODS, i)) != 0)
			return err;
		if (index != i)
			return rec_fail(r, PLAN_ERR_CORRUPT, S_MODS, i, "the module of module %u again "
			                "(hash %016llx, %llu bytes)", index, (unsigned long long)m.hash,
			                (unsigned long long)m.bytes);
	}

	for (uint32_t i = 0; i < r->s[S_FUNC].count; i++) {
		const unsigned char *q = rec_at(r, S_FUNC, i);
		struct plan_function f = { 0 };
		uint32_t first = fmt_get32(q + FUNC_PARAM_FIRST);
		if ((err = get_str(r, S_FUNC, i, "Name", fmt_get32(q + FUNC_NAME), &f.name)) != 0)
			return err;
		f.module = fmt_get32(q + FUNC_MODULE);
		f.nparams = fmt_get32(q + FUNC_PARAM_COUNT);
		if ((err = get_range(r, S_FUNC, i, "Params", S_PINF, first, f.nparams,
		                     &pinf_cursor)) != 0)
			return err;
		f.params = r->p.pinfs + first;
		if ((err = built(r, plan_add_function(r->plan, &f, NULL, &r->d), S_FUNC, i)) != 0)
			return err;
	}

	for (uint32_t i = 0; i < r->s[S_ALOC].count; i++) {
		const unsigned char *q = rec_at(r, S_ALOC, i);
		struct plan_alloc a = { 0 };
		a.address = fmt_get64(q + ALOC_ADDRESS);
		a.bytes = fmt_get64(q + ALOC_BYTES);
		a.device = fmt_get32(q + ALOC_DEVICE);
		a.flags = fmt_get32(q + ALOC_FLAGS);
		if ((err = reserved_flags(r, S_ALOC, i, a.flags, FMT_ALLOC_FLAGS)) != 0 ||
		    (err = get_blob(r, S_ALOC, i, "Data", fmt_get64(q + ALOC_DATA),
		                    (a.flags & PLAN_ALLOC_SNAPSHOT) ? a.bytes : 0, &a.data)) != 0 ||
		    (err = built(r, plan_add_alloc(r->plan, &a, NULL, &r->d), S_ALOC, i)) != 0)
			return err;
	}

	for (uint32_t i = 0; i < r->s[S_LNCH].count; i++) {
		const unsigned char *q = rec_at(r, S_LNCH, i);
		struct plan_launch l = { 0 };
		const void *args, *data;
		uint32_t first = fmt_get32(q + LNCH_PATCH_FIRST);
		if ((err = get_enum(r, S_LNCH, i, "launch type", fmt_get32(q + LNCH_TYPE), &l.type)) != 0 ||
		    (err = zero32(r, S_LNCH, i, q + LNCH_RESERVED, "Reserved")) != 0)
			return err;
		l.function = fmt_get32(q + LNCH_FUNCTION);
		for (int d = 0; d < 3; d++) {
			l.grid[d] = fmt_get32(q + LNCH_GRID + 4 * d);
			l.block[d] = fmt_get32(q + LNCH_BLOCK + 4 * d);
			l.cluster[d] = fmt_get32(q + LNCH_CLUSTER + 4 * d);
		}
		l.shmem = fmt_get32(q + LNCH_SHARED_BYTES);
		l.flags = fmt_get32(q + LNCH_FLAGS);
		l.nargs = fmt_get32(q + LNCH_ARGS_BYTES);
		l.npatches = fmt_get32(q + LNCH_PATCH_COUNT);
		l.dst.alloc = fmt_get32(q + LNCH_DST_ALLOC);
		l.dst.offset = fmt_get64(q + LNCH_DST_OFFSET);
		l.src.alloc = fmt_get32(q + LNCH_SRC_ALLOC);
		l.src.offset = fmt_get64(q + LNCH_SRC_OFFSET);
		l.bytes = fmt_get64(q + LNCH_BYTES);
		l.value = fmt_get32(q + LNCH_VALUE);
		l.element = fmt_get32(q + LNCH_ELEMENT);
		l.width = fmt_get64(q + LNCH_WIDTH);
		l.height = fmt_get64(q + LNCH_HEIGHT);
		l.pitch = fmt_get64(q + LNCH_PITCH);
		l.ndata = fmt_get32(q + LNCH_DATA_BYTES);
		if ((err = reserved_flags(r, S_LNCH, i, l.flags, FMT_LAUNCH_FLAGS)) != 0 ||
		    (err = get_range(r, S_LNCH, i, "Patches", S_PTCH, first, l.npatches,
		                     &ptch_cursor)) != 0 ||
		    (err = get_blob(r, S_LNCH, i, "Args", fmt_get64(q + LNCH_ARGS), l.nargs, &args)) != 0 ||
		    (err = get_blob(r, S_LNCH, i, "Data", fmt_get64(q + LNCH_DATA), l.ndata, &data)) != 0)
			return err;
		l.args = args;
		l.data = data;
		l.patches = r->p.patches + first;
		if ((err = built(r, plan_add_launch(r->plan, &l, NULL, &r->d), S_LNCH, i)) != 0)
			return err;
		if (!same_launch(&l, plan_get_launch(r->plan, i)))
			return rec_fail(r, PLAN_ERR_RESERVED, S_LNCH, i, "a field a %s does not use is "
			                "not zero (NONE for an allocation or function)",
			                plan_node_type_name(l.type));
	}
	{
		const struct sect *b = &r->s[S_BLOB];
		uint64_t end = (r->blob_end + BLOB_ALIGN - 1) / BLOB_ALIGN * BLOB_ALIGN;
		if (b->size != end)
			return FAIL(r, PLAN_ERR_CORRUPT, "section BLOB is %llu bytes; its pieces take "
			            "%llu", (unsigned long long)b->size, (unsigned long long)end);
		if ((err = check_zero(r, (uint64_t)(b->data - r->c) + r->blob_end,
		                      (uint64_t)(b->data - r->c) + end, "after the last BLOB piece")) != 0)
			return err;
	}
	return PLAN_OK;
}

static int build_captures(struct reader *r, uint32_t *idx_cursor)
{
	uint32_t item_cursor = 0, node_cursor = 0, edge_cursor = 0;
	int err;

	if (sect_in_file(r, S_VKEY) && r->s[S_VKEY].count != r->s[S_VARI].count)
		return FAIL(r, PLAN_ERR_CORRUPT, "section VKEY has %u records, not one for each of "
		            "the %u of section VARI", r->s[S_VKEY].count, r->s[S_VARI].count);
	if ((err = same_count(r, S_VREC, S_VARI)) != 0 || (err = same_count(r, S_SREC, S_SEGS)) != 0 ||
	    (err = same_count(r, S_BLCH, S_BRKP)) != 0)
		return err;
	for (uint32_t i = 0; i < r->s[S_VARI].count; i++) {
		const unsigned char *q = rec_at(r, S_VARI, i);
		struct plan_variant v = { 0 };
		uint32_t first = fmt_get32(q + VARI_ITEM_FIRST), count = fmt_get32(q + VARI_ITEM_COUNT);
		if ((err = get_enum(r, S_VARI, i, "mode", fmt_get32(q + VARI_MODE), &v.mode)) != 0 ||
		    (err = zero32(r, S_VARI, i, q + VARI_RESERVED, "Reserved")) != 0 ||
		    (err = get_range(r, S_VARI, i, "Items", S_ITEM, first, count, &item_cursor)) != 0)
			return err;
		v.tokens = fmt_geti64(q + VARI_TOKENS);
		v.peak_bytes = fmt_get64(q + VARI_PEAK_BYTES);
		if ((err = read_key(r, i, &v)) != 0 || (err = read_vrec(r, i, &v)) != 0)
			return err;
		r->p.item_first[i] = first;
		r->p.item_count[i] = count;
		if ((err = built(r, plan_add_variant(r->plan, &v, NULL, &r->d), S_VARI, i)) != 0)
			return err;
	}
	for (uint32_t i = 0; i < r->s[S_SEGS].count; i++) {
		const unsigned char *q = rec_at(r, S_SEGS, i);
		struct plan_segment s = { 0 };
		uint32_t nf = fmt_get32(q + SEGS_NODE_FIRST), ef = fmt_get32(q + SEGS_EDGE_FIRST);
		s.variant = fmt_get32(q + SEGS_VARIANT);
		s.op_first = fmt_get32(q + SEGS_OP_FIRST);
		s.op_count = fmt_get32(q + SEGS_OP_COUNT);
		s.flags = fmt_get32(q + SEGS_FLAGS);
		s.fingerprint = fmt_get64(q + SEGS_FINGERPRINT);
		s.capture_ns = fmt_get64(q + SEGS_CAPTURE_NS);
		s.instantiate_ns = fmt_get64(q + SEGS_INSTANTIATE_NS);
		s.nnodes = fmt_get32(q + SEGS_NODE_COUNT);
		s.nedges = fmt_get32(q + SEGS_EDGE_COUNT);
		if (s.flags & ~(uint32_t)FMT_SEG_FLAGS)
			return rec_fail(r, PLAN_ERR_RESERVED, S_SEGS, i, "reserved flags 0x%08x are set",
			                s.flags & ~(uint32_t)FMT_SEG_FLAGS);
		if ((err = get_range(r, S_SEGS, i, "Nodes", S_NODE, nf, s.nnodes, &node_cursor)) != 0 ||
		    (err = get_range(r, S_SEGS, i, "Edges", S_EDGE, ef, s.nedges, &edge_cursor)) != 0)
			return err;
		s.nodes = r->p.nodes + nf;
		s.edges = r->p.edges + ef;
		if (sect_in_file(r, S_SREC)) {
			const unsigned char *k = rec_at(r, S_SREC, i);
			s.recorded_ns = fmt_get64(k + SREC_RECORDED_NS);
			if (r->minor >= 7) {
				s.start_ns = fmt_get64(k + SREC_START_NS);
				s.issue_ns = fmt_get64(k + SREC_ISSUE_NS);
			}
		}
		if ((err = built(r, plan_add_segment(r->plan, &s, NULL, &r->d), S_SEGS, i)) != 0 ||
		    (err = check_nodes(r, i, nf, &s)) != 0)
			return err;
	}
	for (uint32_t i = 0; i < r->s[S_BRKP].count; i++) {
		const unsigned char *q = rec_at(r, S_BRKP, i);
		struct plan_breakpoint b = { 0 };
		uint32_t rf = fmt_get32(q + BRKP_READ_FIRST), wf = fmt_get32(q + BRKP_WRITE_FIRST);
		if ((err = get_str(r, S_BRKP, i, "Name", fmt_get32(q + BRKP_NAME), &b.name)) != 0 ||
		    (err = get_str(r, S_BRKP, i, "Detail", fmt_get32(q + BRKP_DETAIL), &b.detail)) != 0 ||
		    (err = get_enum(r, S_BRKP, i, "reason", fmt_get32(q + BRKP_REASON), &b.reason)) != 0 ||
		    (err = zero32(r, S_BRKP, i, q + BRKP_RESERVED, "Reserved")) != 0)
			return err;
		b.variant = fmt_get32(q + BRKP_VARIANT);
		b.op = fmt_get32(q + BRKP_OP);
		b.nreads = fmt_get32(q + BRKP_READ_COUNT);
		b.nwrites = fmt_get32(q + BRKP_WRITE_COUNT);
		if ((err = get_range(r, S_BRKP, i, "Reads", S_IDXS, rf, b.nreads, idx_cursor)) != 0 ||
		    (err = get_range(r, S_BRKP, i, "Writes", S_IDXS, wf, b.nwrites, idx_cursor)) != 0)
			return err;
		b.reads = r->p.idxs + rf;
		b.writes = r->p.idxs + wf;
		if (sect_in_file(r, S_BLCH)) {
			const unsigned char *k = rec_at(r, S_BLCH, i);
			b.launch_first = fmt_get32(k + BLCH_LAUNCH_FIRST);
			b.launch_count = fmt_get32(k + BLCH_LAUNCH_COUNT);
			b.recorded_ns = fmt_get64(k + BLCH_RECORDED_NS);
			if (r->minor >= 7) {
				b.start_ns = fmt_get64(k + BLCH_START_NS);
				b.issue_ns = fmt_get64(k + BLCH_ISSUE_NS);
			}
		}
		if ((err = built(r, plan_add_breakpoint(r->plan, &b, NULL, &r->d), S_BRKP, i)) != 0)
			return err;
	}
	/* The items in the file's order, which adding the segments and
	 * breakpoints one by one need not have given. */
	for (uint32_t i = 0; i < r->s[S_VARI].count; i++)
		if ((err = built(r, plan__variant_set_items(r->plan, i, r->p.items + r->p.item_first[i],
		                                            r->p.item_count[i], &r->d), S_VARI, i)) != 0)
			return err;
	return PLAN_OK;
}

static int build_checks(struct reader *r)
{
	int err;

	for (uint32_t i = 0; i < r->s[S_CHKS].count; i++) {
		const unsigned char *q = rec_at(r, S_CHKS, i);
		struct plan_check c = { 0 };
		if ((err = zero32(r, S_CHKS, i, q + CHKS_RESERVED, "Reserved")) != 0)
			return err;
		c.variant = fmt_get32(q + CHKS_VARIANT);
		c.tensor = fmt_get32(q + CHKS_TENSOR);
		c.steps = fmt_get32(q + CHKS_STEPS);
		c.hash = fmt_get64(q + CHKS_HASH);
		c.sum = fmt_getf64(q + CHKS_SUM);
		if ((err = built(r, plan_add_check(r->plan, &c, NULL, &r->d), S_CHKS, i)) != 0)
			return err;
	}
	if (sect_in_file(r, S_DKEY) && r->s[S_DKEY].count != r->s[S_DISP].count)
		return FAIL(r, PLAN_ERR_CORRUPT, "section DKEY has %u records, not one for each of "
		            "the %u of section DISP", r->s[S_DKEY].count, r->s[S_DISP].count);
	for (uint32_t i = 0; i < r->s[S_DISP].count; i++) {
		const unsigned char *q = rec_at(r, S_DISP, i);
		struct plan_dispatch d = { 0 };
		if ((err = zero32(r, S_DISP, i, q + DISP_RESERVED, "Reserved")) != 0)
			return err;
		d.tokens_min = fmt_geti64(q + DISP_TOKENS_MIN);
		d.tokens_max = fmt_geti64(q + DISP_TOKENS_MAX);
		d.variant = fmt_get32(q + DISP_VARIANT);
		if (sect_in_file(r, S_DKEY)) {
			const unsigned char *k = rec_at(r, S_DKEY, i);
			d.requests_max = fmt_get32(k + DKEY_REQUESTS_MAX);
			d.flags = fmt_get32(k + DKEY_FLAGS);
			if (d.flags & ~(uint32_t)FMT_DISPATCH_FLAGS)
				return rec_fail(r, PLAN_ERR_RESERVED, S_DKEY, i, "reserved flags 0x%08x "
				                "are set", d.flags & ~(uint32_t)FMT_DISPATCH_FLAGS);
		}
		if ((err = built(r, plan_add_dispatch(r->plan, &d, NULL, &r->d), S_DISP, i)) != 0)
			return err;
	}
	return PLAN_OK;
}

/* Implementation choices: none in a 1.0 file. */
static int build_choices(struct reader *r)
{
	uint32_t cursor = 0;
	int err;

	for (uint32_t i = 0; i < r->s[S_CHOI].count; i++) {
		const unsigned char *q = rec_at(r, S_CHOI, i);
		struct plan_choice c = { 0 };
		uint32_t first = fmt_get32(q + CHOI_CAND_FIRST);
		if ((err = get_str(r, S_CHOI, i, "Impl", fmt_get32(q + CHOI_IMPL), &c.impl)) != 0)
			return err;
		c.variant = fmt_get32(q + CHOI_VARIANT);
		c.op = fmt_get32(q + CHOI_OP);
		c.flags = fmt_get32(q + CHOI_FLAGS);
		c.ncand = fmt_get32(q + CHOI_CAND_COUNT);
		if (c.flags & ~(uint32_t)FMT_CHOICE_FLAGS)
			return rec_fail(r, PLAN_ERR_RESERVED, S_CHOI, i, "reserved flags 0x%08x are set",
			                c.flags & ~(uint32_t)FMT_CHOICE_FLAGS);
		/* 1.9: the Step mark, in a field of its own (absent before). */
		if (r->minor >= PLAN_FORMAT_MINOR_STEP) {
			uint32_t tune = fmt_get32(q + CHOI_TUNE_FLAGS);
			if (tune & ~FMT_TUNE_FLAGS)
				return rec_fail(r, PLAN_ERR_RESERVED, S_CHOI, i, "reserved Tune_Flags "
				                "0x%08x are set", tune & ~FMT_TUNE_FLAGS);
			if ((err = zero32(r, S_CHOI, i, q + CHOI_RESERVED, "Reserved")) != 0)
				return err;
			if (tune & FMT_TUNE_STEP)
				c.flags |= PLAN_CHOICE_STEP;
		}
		if ((err = get_range(r, S_CHOI, i, "Candidates", S_CAND, first, c.ncand, &cursor)) != 0)
			return err;
		c.cand = r->p.cands + first;
		if ((err = built(r, plan_add_choice(r->plan, &c, NULL, &r->d), S_CHOI, i)) != 0)
			return err;
	}
	return PLAN_OK;
}

/* Weight sources: none before 1.2. */
static int build_weight_sources(struct reader *r)
{
	int err;

	for (uint32_t i = 0; i < r->s[S_WSRC].count; i++) {
		const unsigned char *q = rec_at(r, S_WSRC, i);
		struct plan_weight_source w = { 0 };
		if ((err = get_str(r, S_WSRC, i, "File", fmt_get32(q + WSRC_FILE), &w.file)) != 0 ||
		    (err = get_str(r, S_WSRC, i, "Name", fmt_get32(q + WSRC_NAME), &w.name)) != 0 ||
		    (err = zero32(r, S_WSRC, i, q + WSRC_RESERVED2, "Reserved")) != 0)
			return err;
		if (q[WSRC_RESERVED1] != 0 || q[WSRC_RESERVED1 + 1] != 0 || q[WSRC_RESERVED1 + 2] != 0)
			return rec_fail(r, PLAN_ERR_RESERVED, S_WSRC, i, "a reserved byte is not zero");
		w.tensor = fmt_get32(q + WSRC_TENSOR);
		w.dtype = q[WSRC_DTYPE];
		w.offset = fmt_get64(q + WSRC_OFFSET);
		w.bytes = fmt_get64(q + WSRC_BYTES);
		w.hash = fmt_get64(q + WSRC_HASH);
		w.flags = fmt_get32(q + WSRC_FLAGS);
		if (sect_in_file(r, S_DIST)) {
			w.slice_outer = fmt_get64(q + WSRC_SLICE_OUTER);
			w.slice_full = fmt_get64(q + WSRC_SLICE_FULL);
			w.slice_inner = fmt_get64(q + WSRC_SLICE_INNER);
			w.slice_start = fmt_get64(q + WSRC_SLICE_START);
			w.slice_len = fmt_get64(q + WSRC_SLICE_LEN);
		}
		if (w.flags & ~(uint32_t)FMT_WSRC_FLAGS)
			return rec_fail(r, PLAN_ERR_RESERVED, S_WSRC, i, "reserved flags 0x%08x are set",
			                w.flags & ~(uint32_t)FMT_WSRC_FLAGS);
		if ((err = built(r, plan_add_weight_source(r->plan, &w, NULL, &r->d), S_WSRC, i)) != 0)
			return err;
	}
	return PLAN_OK;
}

/* The world and rank (1.5); a file of an older minor has world 1. */
static int build_dist(struct reader *r)
{
	const unsigned char *q;
	struct plan_dist d = { 0 };
	int err;

	if (!sect_in_file(r, S_DIST))
		return PLAN_OK;
	q = rec_at(r, S_DIST, 0);
	d.world = fmt_get32(q + DIST_WORLD);
	d.rank = fmt_get32(q + DIST_RANK);
	d.nccl_version = fmt_geti32(q + DIST_NCCL_VERSION);
	d.flags = fmt_get32(q + DIST_FLAGS);
	if ((err = reserved_flags(r, S_DIST, 0, d.flags, FMT_DIST_FLAGS)) != 0)
		return err;
	if (r->minor >= 8) {
		d.nccl_mem = fmt_get32(q + DIST_NCCL_MEM);
		if (fmt_get32(q + DIST_RESERVED) != 0)
			return rec_fail(r, PLAN_ERR_RESERVED, S_DIST, 0, "Reserved is not zero");
		if (d.nccl_mem > PLAN_NCCL_MEM_SYMMETRIC)
			return rec_fail(r, PLAN_ERR_CORRUPT, S_DIST, 0, "Nccl_Mem %u: 0 (default) or "
			                "1 (symmetric)", d.nccl_mem);
	}
	return built(r, plan_set_dist(r->plan, &d, &r->d), S_DIST, 0);
}

/* The segments that share executables (1.6); none in older files. */
static int build_shares(struct reader *r)
{
	int err;

	if (!sect_in_file(r, S_SHAR))
		return PLAN_OK;
	for (uint32_t i = 0; i < r->s[S_SHAR].count; i++) {
		const unsigned char *q = rec_at(r, S_SHAR, i);
		struct plan_share s = {
			.segment = fmt_get32(q + SHAR_SEGMENT),
			.exec = fmt_get32(q + SHAR_EXEC),
			.flags = fmt_get32(q + SHAR_FLAGS),
			.result = fmt_get32(q + SHAR_RESULT),
		};
		if ((err = reserved_flags(r, S_SHAR, i, s.flags, FMT_SHARE_FLAGS)) != 0 ||
		    (err = built(r, plan_add_share(r->plan, &s, NULL, &r->d), S_SHAR, i)) != 0)
			return err;
	}
	return PLAN_OK;
}

static int read_content(struct reader *r);

/* The plan of RANK section K, read as a content of the file's version
 * with this reader's limits, its strings counted with this file's. */
static int read_rank(struct reader *r, uint32_t k, plan_t **out)
{
	struct reader *sub = calloc(1, sizeof *sub);
	int err;

	*out = NULL;
	if (sub == NULL)
		return FAIL(r, PLAN_ERR_NOMEM, "out of memory reading the plan");
	sub->c = r->rank_data[k];
	sub->clen = (size_t)r->rank_size[k];
	sub->major = r->major;
	sub->minor = r->minor;
	sub->lim = r->lim;
	sub->str_bytes = r->str_bytes;
	sub->nested = 1;
	if (sub->clen < DIR_HEADER_SIZE)
		err = plan__fail(&sub->d, PLAN_ERR_CORRUPT, "%zu bytes cannot hold a section "
		                 "directory", sub->clen);
	else
		err = read_content(sub);
	r->str_bytes = sub->str_bytes;
	if (err != 0) {
		FAIL(r, err, "section RANK %u (of %u): %s", k, r->nrank_sect, sub->d.message);
		plan_free(sub->plan);
	} else {
		*out = sub->plan;
	}
	free_pools(&sub->p);
	free(sub->rank_data);
	free(sub->rank_size);
	free(sub);
	return err;
}

/*
 * The ranks attached to rank 0 (1.5): one RANK section for each of ranks
 * 1 .. world-1, counted before any is read, so that a world of billions
 * costs nothing. A rank's own plan holds none (ranks nest once), and only
 * rank 0 holds any.
 */
static int build_ranks(struct reader *r)
{
	const struct plan_dist *d = plan_get_dist(r->plan);
	uint32_t *holder = NULL;
	int err = PLAN_OK;

	if (r->nested) {
		if (d->rank == 0)
			return FAIL(r, PLAN_ERR_CORRUPT, "it holds rank 0 of a world of %u, which is the "
			            "file's own plan: RANK sections hold the other ranks", d->world);
		if (r->nrank_sect > 0)
			return FAIL(r, PLAN_ERR_CORRUPT, "the plan of rank %u holds %u RANK section%s: "
			            "ranks nest once, in rank 0's plan", d->rank, r->nrank_sect,
			            r->nrank_sect == 1 ? "" : "s");
		return PLAN_OK;
	}
	if (d->rank != 0)
		return FAIL(r, PLAN_ERR_CORRUPT, "the file's plan is rank %u of a world of %u, not "
		            "rank 0: a file holds rank 0, and the other ranks in its RANK sections",
		            d->rank, d->world);
	if (r->nrank_sect != d->world - 1)
		return FAIL(r, PLAN_ERR_CORRUPT, "a world of %u has %u RANK section%s, not %u: "
		            "one for each rank but 0%s", d->world, r->nrank_sect,
		            r->nrank_sect == 1 ? "" : "s", d->world - 1,
		            r->nrank_sect < d->world - 1 ? " (ranks are missing)" : "");
	if (r->nrank_sect == 0)
		return PLAN_OK;
	if ((holder = malloc((size_t)d->world * sizeof *holder)) == NULL)
		return FAIL(r, PLAN_ERR_NOMEM, "out of memory reading the plan");
	for (uint32_t i = 0; i < d->world; i++)
		holder[i] = PLAN_NONE;
	for (uint32_t k = 0; k < r->nrank_sect && err == PLAN_OK; k++) {
		plan_t *rp;
		const struct plan_dist *rd;
		if ((err = read_rank(r, k, &rp)) != 0)
			break;
		rd = plan_get_dist(rp);
		if (rd->world != d->world)
			err = FAIL(r, PLAN_ERR_CORRUPT, "section RANK %u holds rank %u of a world of "
			           "%u; the file's world is %u", k, rd->rank, rd->world, d->world);
		else if (rd->rank == 0 || rd->rank >= d->world)
			err = FAIL(r, PLAN_ERR_CORRUPT, "section RANK %u holds rank %u, not one of "
			           "1..%u of a world of %u", k, rd->rank, d->world - 1, d->world);
		else if (holder[rd->rank] != PLAN_NONE)
			err = FAIL(r, PLAN_ERR_CORRUPT, "section RANK %u holds rank %u, as section "
			           "RANK %u does: a rank is held once", k, rd->rank, holder[rd->rank]);
		if (err != 0) {
			plan_free(rp);
			break;
		}
		holder[rd->rank] = k;
		if ((err = plan_add_rank(r->plan, rp, &r->d)) != 0 && err != PLAN_ERR_NOMEM) {
			char msg[PLAN_DIAG_MESSAGE_MAX];
			memcpy(msg, r->d.message, sizeof msg);
			err = FAIL(r, PLAN_ERR_CORRUPT, "section RANK %u: %s", k, msg);
		}
	}
	free(holder);
	return err;
}

static int read_content(struct reader *r)
{
	uint32_t idx_cursor = 0;
	int err;

	if ((err = read_directory(r)) != 0 || (err = read_pools(r)) != 0)
		return err;
	if ((r->plan = plan_new()) == NULL)
		return FAIL(r, PLAN_ERR_NOMEM, "out of memory reading the plan");
	r->plan->format_major = r->major;
	r->plan->format_minor = r->minor;
	if ((err = build_meta(r)) != 0 ||
	    (err = build_dims_vars(r)) != 0 ||
	    (err = build_tensors(r)) != 0 ||
	    (err = build_ops(r, &idx_cursor)) != 0 ||
	    (err = build_recorded(r)) != 0 ||
	    (err = build_captures(r, &idx_cursor)) != 0 ||
	    (err = build_checks(r)) != 0 ||
	    (err = build_choices(r)) != 0 ||
	    (err = build_weight_sources(r)) != 0 ||
	    (err = build_dist(r)) != 0 ||
	    (err = build_shares(r)) != 0 ||
	    (err = build_ranks(r)) != 0)
		return err;
	if ((err = plan_validate(r->plan, &r->d)) != 0 && err != PLAN_ERR_NOMEM) {
		char msg[PLAN_DIAG_MESSAGE_MAX];
		memcpy(msg, r->d.message, sizeof msg);
		return FAIL(r, PLAN_ERR_CORRUPT, "%s", msg);
	}
	return err;
}

/* ---------------------------------------------------------------------- */
/* Entry points.                                                           */

int plan_read_memory(const void *data, size_t len, const struct plan_limits *limits,
                     plan_t **out, struct plan_diag *diag)
{
	struct plan_limits def;
	struct reader *r = NULL;
	struct header h = { 0 };
	unsigned char *content = NULL;
	int err;

	if (out != NULL)
		*out = NULL;
	if (out == NULL || (data == NULL && len > 0))
		return plan__fail(diag, PLAN_ERR_INVALID, "plan_read_memory: NULL argument");
	if (limits == NULL) {
		plan_limits_default(&def);
		limits = &def;
	}
	if (len > limits->max_file_bytes)
		return plan__fail(diag, PLAN_ERR_LIMIT, "the file of %zu bytes is over the limit "
		                  "of %llu (max_file_bytes; " LIMIT_HOW ")", len,
		                  (unsigned long long)limits->max_file_bytes);
	if ((err = check_header(data, len, limits, &h, diag)) != 0)
		return err;
	if ((err = decompress((const unsigned char *)data + FMT_HEADER_SIZE, (size_t)h.payload_size,
	                      (size_t)h.content_size, &content, diag)) != 0)
		return err;
	if ((r = calloc(1, sizeof *r)) == NULL) {
		free(content);
		return plan__fail(diag, PLAN_ERR_NOMEM, "out of memory reading the plan");
	}
	r->c = content;
	r->clen = (size_t)h.content_size;
	r->major = h.major;
	r->minor = h.minor;
	r->lim = limits;
	err = read_content(r);
	if (err != 0) {
		plan_free(r->plan);
		if (diag != NULL)
			*diag = r->d;
	} else {
		*out = r->plan;
	}
	free_pools(&r->p);
	free(r->rank_data);
	free(r->rank_size);
	free(r);
	free(content);
	return err;
}

int plan_read_file(const char *path, const struct plan_limits *limits, plan_t **out,
                   struct plan_diag *diag)
{
	struct plan_limits def;
	unsigned char *buf = NULL;
	size_t len = 0, cap, max;
	struct stat st;
	int fd = -1, err;

	if (out != NULL)
		*out = NULL;
	if (path == NULL || out == NULL)
		return plan__fail(diag, PLAN_ERR_INVALID, "plan_read_file: NULL argument");
	if (limits == NULL) {
		plan_limits_default(&def);
		limits = &def;
	}
	max = limits->max_file_bytes < SIZE_MAX - 1 ? (size_t)limits->max_file_bytes : SIZE_MAX - 1;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		err = plan__fail(diag, PLAN_ERR_IO, "%s: open failed: %s", path, strerror(errno));
		goto out;
	}
	if (fstat(fd, &st) != 0) {
		err = plan__fail(diag, PLAN_ERR_IO, "%s: stat failed: %s", path, strerror(errno));
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		err = plan__fail(diag, PLAN_ERR_IO, "%s: is a directory", path);
		goto out;
	}
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > limits->max_file_bytes) {
		err = plan__fail(diag, PLAN_ERR_LIMIT, "%s: the file of %llu bytes is over the limit "
		                 "of %llu (max_file_bytes; " LIMIT_HOW ")", path,
		                 (unsigned long long)st.st_size,
		                 (unsigned long long)limits->max_file_bytes);
		goto out;
	}
	/* Room for one byte more than expected, to see the end without a
	 * second buffer; pipes and growing files grow it, up to the limit. */
	cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 65536;
	if (cap > max + 1)
		cap = max + 1;
	if ((buf = malloc(cap)) == NULL) {
		err = plan__fail(diag, PLAN_ERR_NOMEM, "%s: out of memory for %zu bytes", path, cap);
		goto out;
	}
	for (;;) {
		if (len == cap) {
			unsigned char *nb;
			if (cap > max) {
				err = plan__fail(diag, PLAN_ERR_LIMIT, "%s: the file is over the limit of "
				                 "%llu bytes", path,
				                 (unsigned long long)limits->max_file_bytes);
				goto out;
			}
			cap = cap > (max + 1) / 2 ? max + 1 : cap * 2;
			if ((nb = realloc(buf, cap)) == NULL) {
				err = plan__fail(diag, PLAN_ERR_NOMEM, "%s: out of memory for %zu bytes",
				                 path, cap);
				goto out;
			}
			buf = nb;
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = plan__fail(diag, PLAN_ERR_IO, "%s: read failed: %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	fd = -1;
	err = plan_read_memory(buf, len, limits, out, diag);
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return err;
}
