/*
 * write.c - the plan writer: the model to content bytes (section directory,
 * record sections, string table), one zstd frame, the checksummed header,
 * and the atomic file write.
 *
 * The same plan always gives the same bytes: every byte of the content is
 * written explicitly or zeroed, strings are stored in the order they are
 * first met, zstd runs single-threaded with fixed parameters, and nothing
 * but meta.created depends on when or where the plan was written.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "format.h"
#include "internal.h"

#define AT(vec, type, i) (&((const type *)(vec).data)[i])

/* ---------------------------------------------------------------------- */
/* Growing byte buffers.                                                   */

struct buf {
	unsigned char *data;
	size_t         len;
	size_t         cap;
};

/* N zeroed bytes at the end of B, or NULL when out of memory. */
static unsigned char *buf_grow(struct buf *b, size_t n)
{
	if (n > SIZE_MAX - b->len)
		return NULL;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n) {
			if (cap > SIZE_MAX / 2)
				return NULL;
			cap *= 2;
		}
		unsigned char *d = realloc(b->data, cap);
		if (d == NULL)
			return NULL;
		b->data = d;
		b->cap = cap;
	}
	unsigned char *p = b->data + b->len;
	memset(p, 0, n);
	b->len += n;
	return p;
}

/* ---------------------------------------------------------------------- */
/* The writer's state. A failure is sticky: once `failed` is set, records  */
/* go to a scratch area and the result is thrown away at the end, so that  */
/* the encoders need no error path of their own.                           */

struct writer {
	struct buf out;          /* the content */
	struct buf strs;         /* the string table */
	uint32_t  *slots;        /* string hash table: offset + 1, 0 = free */
	uint32_t   nslots;
	uint32_t   nstrings;
	int        failed;       /* a plan_error */
	unsigned   minor;        /* the format version written: 1.1 to 1.9 */
	struct buf blob;         /* 1.4: the BLOB section's bytes */
	uint64_t   sect_off[S_COUNT];
	uint64_t   sect_size[S_COUNT];
	unsigned char scratch[256];
};

static void w_fail(struct writer *w, int code)
{
	if (w->failed == 0)
		w->failed = code;
}

/* A zeroed record of SIZE bytes at the end of the content. */
static unsigned char *w_record(struct writer *w, size_t size)
{
	unsigned char *p = w->failed ? NULL : buf_grow(&w->out, size);

	if (p == NULL) {
		w_fail(w, PLAN_ERR_NOMEM);
		memset(w->scratch, 0, sizeof w->scratch);
		return w->scratch;
	}
	return p;
}

static int strs_grow_slots(struct writer *w)
{
	uint32_t n = w->nslots ? w->nslots * 2 : 1024;
	uint32_t *s;

	if (w->nslots >= UINT32_MAX / 4 || (s = calloc(n, sizeof *s)) == NULL)
		return -1;
	for (uint32_t i = 0; i < w->nslots; i++) {
		uint32_t ref = w->slots[i];
		if (ref == 0)
			continue;
		const char *str = (const char *)w->strs.data + ref - 1;
		uint32_t h = (uint32_t)plan_hash64(str, strlen(str), PLAN_HASH64_INIT) & (n - 1);
		while (s[h] != 0)
			h = (h + 1) & (n - 1);
		s[h] = ref;
	}
	free(w->slots);
	w->slots = s;
	w->nslots = n;
	return 0;
}

/* The offset of S in the string table, adding it the first time it is
 * met. The table starts with the empty string at offset 0. */
static uint32_t w_str(struct writer *w, const char *s)
{
	size_t len;
	uint32_t h;

	if (w->failed || s == NULL || s[0] == '\0')
		return 0;
	len = strlen(s);
	if (((uint64_t)w->nstrings + 1) * 2 > w->nslots && strs_grow_slots(w) != 0) {
		w_fail(w, PLAN_ERR_NOMEM);
		return 0;
	}
	h = (uint32_t)plan_hash64(s, len, PLAN_HASH64_INIT) & (w->nslots - 1);
	for (; w->slots[h] != 0; h = (h + 1) & (w->nslots - 1)) {
		const char *t = (const char *)w->strs.data + w->slots[h] - 1;
		if (strcmp(s, t) == 0)
			return w->slots[h] - 1;
	}
	if (w->strs.len + len + 1 > UINT32_MAX - 1) {
		w_fail(w, PLAN_ERR_LIMIT);
		return 0;
	}
	uint32_t off = (uint32_t)w->strs.len;
	unsigned char *p = buf_grow(&w->strs, len + 1);
	if (p == NULL) {
		w_fail(w, PLAN_ERR_NOMEM);
		return 0;
	}
	memcpy(p, s, len);
	w->slots[h] = off + 1;
	w->nstrings++;
	return off;
}

static void w_align(struct writer *w)
{
	size_t pad = (SECT_ALIGN - w->out.len % SECT_ALIGN) % SECT_ALIGN;

	if (pad > 0)
		w_record(w, pad);
}

static void sect_begin(struct writer *w, int sect, uint32_t count)
{
	w_align(w);
	w->sect_off[sect] = w->out.len;
	if (sect != S_STRS && sect != S_BLOB) {
		unsigned char *p = w_record(w, RA_HEADER_SIZE);
		fmt_put32(p + RA_RECORD_SIZE, fmt_sections[sect].size[w->minor]);
		fmt_put32(p + RA_RECORD_COUNT, count);
	}
}

static void sect_end(struct writer *w, int sect)
{
	w->sect_size[sect] = w->out.len - w->sect_off[sect];
}

/* ---------------------------------------------------------------------- */
/* The sections, in the order of enum fmt_section.                         */

static void encode_meta(struct writer *w, const plan_t *plan)
{
	const struct plan_meta *m = &plan->meta;
	const struct plan_layout *l = &plan->layout;
	unsigned char *p;

	sect_begin(w, S_META, 1);
	uint32_t tool = w_str(w, m->tool), script = w_str(w, m->script), device = w_str(w, m->device);
	p = w_record(w, REC_META);
	fmt_put32(p + META_TOOL, tool);
	fmt_put32(p + META_SCRIPT, script);
	fmt_put32(p + META_DEVICE, device);
	fmt_put32(p + META_BACKEND, (uint32_t)m->backend);
	fmt_put64(p + META_SCRIPT_HASH, m->script_hash);
	fmt_puti64(p + META_CREATED, m->created);
	fmt_puti32(p + META_CC_MAJOR, m->cc_major);
	fmt_puti32(p + META_CC_MINOR, m->cc_minor);
	fmt_puti32(p + META_CUDA_RUNTIME, m->cuda_runtime);
	fmt_puti32(p + META_CUDA_DRIVER, m->cuda_driver);
	fmt_puti32(p + META_CUBLAS, m->cublas);
	fmt_put32(p + META_ALIGNMENT, l->alignment);
	fmt_put64(p + META_ARENA_BYTES, l->arena_bytes);
	fmt_put64(p + META_UNSHARED_BYTES, l->unshared_bytes);
	fmt_put32(p + META_FEATURES, m->features);
	sect_end(w, S_META);

	const struct plan_stats *st = &plan->stats;
	sect_begin(w, S_STAT, 1);
	p = w_record(w, REC_STAT);
	fmt_put64(p + STAT_MATERIALIZE_NS, st->materialize_ns);
	fmt_put64(p + STAT_REFERENCE_NS, st->reference_ns);
	fmt_put64(p + STAT_CAPTURE_NS, st->capture_ns);
	fmt_put64(p + STAT_INSTANTIATE_NS, st->instantiate_ns);
	fmt_put64(p + STAT_VERIFY_NS, st->verify_ns);
	fmt_put32(p + STAT_REFERENCE_STEPS, st->reference_steps);
	fmt_put32(p + STAT_VERIFY_EXACT, st->verify_exact);
	fmt_putf64(p + STAT_VERIFY_MAX_ERR, st->verify_max_error);
	sect_end(w, S_STAT);
}

/* Pool cursors as 64-bit counts, so that a sum past UINT32_MAX is seen. */
struct cursors {
	uint64_t idxs, attr, item, node, parm, edge, cand, pinf, ptch, sblk;
};

static uint32_t take(struct writer *w, uint64_t *cursor, uint32_t n)
{
	uint64_t first = *cursor;

	*cursor += n;
	if (*cursor > UINT32_MAX)
		w_fail(w, PLAN_ERR_LIMIT);
	return (uint32_t)first;
}

static void encode_program(struct writer *w, const plan_t *plan, struct cursors *c)
{
	unsigned char *p;

	sect_begin(w, S_DIMS, plan->dims.count);
	for (uint32_t i = 0; i < plan->dims.count; i++) {
		const struct plan_dim *d = AT(plan->dims, struct plan_dim, i);
		uint32_t name = w_str(w, d->name), expr = w_str(w, d->expr);
		p = w_record(w, REC_DIMS);
		fmt_put32(p + DIMS_NAME, name);
		fmt_put32(p + DIMS_EXPR, expr);
		fmt_puti64(p + DIMS_VALUE, d->value);
		fmt_put32(p + DIMS_FLAGS, d->flags);
	}
	sect_end(w, S_DIMS);

	sect_begin(w, S_VARS, plan->vars.count);
	for (uint32_t i = 0; i < plan->vars.count; i++) {
		const struct plan_var *v = AT(plan->vars, struct plan_var, i);
		uint32_t name = w_str(w, v->name);
		p = w_record(w, REC_VARS);
		fmt_put32(p + VARS_NAME, name);
		fmt_puti64(p + VARS_START, v->start);
		fmt_puti64(p + VARS_STEP, v->step);
		fmt_puti64(p + VARS_LIMIT, v->limit);
		fmt_put64(p + VARS_OFFSET, v->offset);
	}
	sect_end(w, S_VARS);

	sect_begin(w, S_TENS, plan->tensors.count);
	for (uint32_t i = 0; i < plan->tensors.count; i++) {
		const struct plan_tensor *t = AT(plan->tensors, struct plan_tensor, i);
		uint32_t name = w_str(w, t->name);
		p = w_record(w, fmt_sections[S_TENS].size[w->minor]);
		fmt_put32(p + TENS_NAME, name);
		p[TENS_DTYPE] = (unsigned char)t->dtype;
		p[TENS_ROLE] = (unsigned char)t->role;
		p[TENS_RANK] = (unsigned char)t->rank;
		fmt_put64(p + TENS_OFFSET, t->offset);
		fmt_put64(p + TENS_BYTES, t->bytes);
		for (int k = 0; k < PLAN_MAX_RANK; k++) {
			unsigned char *a = p + TENS_AXES + k * TENS_AXIS_SIZE;
			fmt_put32(a + AXIS_DIM, t->shape[k].dim);
			fmt_puti64(a + AXIS_LENGTH, t->shape[k].size);
		}
		p[TENS_INIT_KIND] = (unsigned char)t->init.kind;
		p[TENS_FEED_KIND] = (unsigned char)t->feed.kind;
		fmt_put32(p + TENS_FEED_VAR,
		          t->feed.kind == PLAN_FEED_PROMPT ? t->feed.from : t->feed.var);
		fmt_put64(p + TENS_INIT_SEED, t->init.seed);
		fmt_putf64(p + TENS_INIT_SCALE, t->init.scale);
		fmt_putf64(p + TENS_INIT_VALUE, t->init.value);
		fmt_put64(p + TENS_FEED_SEED, t->feed.seed);
		fmt_puti64(p + TENS_FEED_RANGE, t->feed.range);
		fmt_putf64(p + TENS_FEED_SCALE, t->feed.scale);
		/* 1.5: the split; its blocks go to SBLK. An unsplit tensor's
		 * fields are zero, the first block the end of the last range. */
		if (w->minor >= 5) {
			const struct plan_split *sp = &t->split;
			fmt_put32(p + TENS_BLOCK_FIRST, take(w, &c->sblk, sp->nblocks));
			fmt_put32(p + TENS_BLOCK_COUNT, sp->nblocks);
			if (sp->nblocks != 0) {
				fmt_put32(p + TENS_SPLIT_AXIS, sp->axis);
				fmt_puti64(p + TENS_SPLIT_UNIT, sp->unit);
			}
		}
	}
	sect_end(w, S_TENS);
}

/* The split tensors' blocks (1.5), in the order of their tensors. */
static void encode_split_blocks(struct writer *w, const plan_t *plan, struct cursors *c)
{
	sect_begin(w, S_SBLK, (uint32_t)c->sblk);
	for (uint32_t i = 0; i < plan->tensors.count; i++) {
		const struct plan_split *sp = &AT(plan->tensors, struct plan_tensor, i)->split;
		for (uint32_t k = 0; k < sp->nblocks && k < PLAN_MAX_SPLIT_BLOCKS; k++) {
			unsigned char *p = w_record(w, REC_SBLK);
			fmt_puti64(p + SBLK_FULL, sp->block[k].full);
			fmt_puti64(p + SBLK_START, sp->block[k].start);
			fmt_puti64(p + SBLK_LEN, sp->block[k].len);
		}
	}
	sect_end(w, S_SBLK);
}

static void encode_dist(struct writer *w, const plan_t *plan)
{
	unsigned char *p;

	sect_begin(w, S_DIST, 1);
	p = w_record(w, fmt_sections[S_DIST].size[w->minor]);
	fmt_put32(p + DIST_WORLD, plan->dist.world);
	fmt_put32(p + DIST_RANK, plan->dist.rank);
	fmt_puti32(p + DIST_NCCL_VERSION, plan->dist.nccl_version);
	fmt_put32(p + DIST_FLAGS, plan->dist.flags);
	if (w->minor >= 8)
		fmt_put32(p + DIST_NCCL_MEM, plan->dist.nccl_mem);
	sect_end(w, S_DIST);
}

/* The segments that share executables (1.6). */
static void encode_shares(struct writer *w, const plan_t *plan)
{
	unsigned char *p;

	sect_begin(w, S_SHAR, plan->shares.count);
	for (uint32_t i = 0; i < plan->shares.count; i++) {
		const struct plan_share *s = AT(plan->shares, struct plan_share, i);
		p = w_record(w, REC_SHAR);
		fmt_put32(p + SHAR_SEGMENT, s->segment);
		fmt_put32(p + SHAR_EXEC, s->exec);
		fmt_put32(p + SHAR_FLAGS, s->flags);
		fmt_put32(p + SHAR_RESULT, s->result);
	}
	sect_end(w, S_SHAR);
}

static void encode_ops(struct writer *w, const plan_t *plan, struct cursors *c)
{
	unsigned char *p;

	sect_begin(w, S_OPER, plan->ops.count);
	for (uint32_t i = 0; i < plan->ops.count; i++) {
		const struct plan_op *o = AT(plan->ops, struct plan_op, i);
		uint32_t kind = w_str(w, o->kind), name = w_str(w, o->name);
		p = w_record(w, REC_OPER);
		fmt_put32(p + OPER_KIND, kind);
		fmt_put32(p + OPER_NAME, name);
		fmt_put32(p + OPER_FLAGS, o->flags);
		fmt_put32(p + OPER_LINE, o->line);
		fmt_put32(p + OPER_COL, o->col);
		fmt_put32(p + OPER_INPUT_FIRST, take(w, &c->idxs, o->nin));
		fmt_put32(p + OPER_INPUT_COUNT, o->nin);
		fmt_put32(p + OPER_OUTPUT_FIRST, take(w, &c->idxs, o->nout));
		fmt_put32(p + OPER_OUTPUT_COUNT, o->nout);
		fmt_put32(p + OPER_ATTR_FIRST, take(w, &c->attr, o->nattr));
		fmt_put32(p + OPER_ATTR_COUNT, o->nattr);
	}
	sect_end(w, S_OPER);

	sect_begin(w, S_ATTR, (uint32_t)c->attr);
	for (uint32_t i = 0; i < plan->ops.count; i++) {
		const struct plan_op *o = AT(plan->ops, struct plan_op, i);
		for (uint32_t k = 0; k < o->nattr; k++) {
			const struct plan_attr *a = &o->attr[k];
			uint32_t key = w_str(w, a->key), text = w_str(w, a->s);
			p = w_record(w, REC_ATTR);
			fmt_put32(p + ATTR_KEY, key);
			fmt_put32(p + ATTR_TYPE, (uint32_t)a->type);
			fmt_puti64(p + ATTR_INT, a->i);
			fmt_putf64(p + ATTR_FLOAT, a->f);
			fmt_put32(p + ATTR_TEXT, text);
		}
	}
	sect_end(w, S_ATTR);
}

static void put_indexes(struct writer *w, const uint32_t *list, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		fmt_put32(w_record(w, REC_IDXS) + IDXS_INDEX, list[k]);
}

/* IDXS holds the ops' inputs and outputs, then the breakpoints' reads and
 * writes: count the breakpoints' share before writing the section. */
static void encode_indexes(struct writer *w, const plan_t *plan, struct cursors *c)
{
	uint64_t total = c->idxs;

	for (uint32_t i = 0; i < plan->breakpoints.count; i++) {
		const struct plan_breakpoint *b = AT(plan->breakpoints, struct plan_breakpoint, i);
		total += (uint64_t)b->nreads + b->nwrites;
	}
	if (total > UINT32_MAX)
		w_fail(w, PLAN_ERR_LIMIT);
	sect_begin(w, S_IDXS, (uint32_t)total);
	for (uint32_t i = 0; i < plan->ops.count; i++) {
		const struct plan_op *o = AT(plan->ops, struct plan_op, i);
		put_indexes(w, o->in, o->nin);
		put_indexes(w, o->out, o->nout);
	}
	for (uint32_t i = 0; i < plan->breakpoints.count; i++) {
		const struct plan_breakpoint *b = AT(plan->breakpoints, struct plan_breakpoint, i);
		put_indexes(w, b->reads, b->nreads);
		put_indexes(w, b->writes, b->nwrites);
	}
	sect_end(w, S_IDXS);
}

static void encode_variants(struct writer *w, const plan_t *plan, struct cursors *c)
{
	unsigned char *p;

	sect_begin(w, S_VARI, plan->variants.count);
	for (uint32_t i = 0; i < plan->variants.count; i++) {
		const struct plan_variant *v = &AT(plan->variants, struct plan_variant_rec, i)->pub;
		p = w_record(w, REC_VARI);
		fmt_puti64(p + VARI_TOKENS, v->tokens);
		fmt_put32(p + VARI_MODE, (uint32_t)v->mode);
		fmt_put64(p + VARI_PEAK_BYTES, v->peak_bytes);
		fmt_put32(p + VARI_ITEM_FIRST, take(w, &c->item, v->nitems));
		fmt_put32(p + VARI_ITEM_COUNT, v->nitems);
	}
	sect_end(w, S_VARI);

	sect_begin(w, S_ITEM, (uint32_t)c->item);
	for (uint32_t i = 0; i < plan->variants.count; i++) {
		const struct plan_variant *v = &AT(plan->variants, struct plan_variant_rec, i)->pub;
		for (uint32_t k = 0; k < v->nitems; k++) {
			p = w_record(w, REC_ITEM);
			fmt_put32(p + ITEM_KIND, (uint32_t)v->items[k].kind);
			fmt_put32(p + ITEM_INDEX, v->items[k].index);
		}
	}
	sect_end(w, S_ITEM);
}

static void encode_segments(struct writer *w, const plan_t *plan, struct cursors *c)
{
	unsigned char *p;

	sect_begin(w, S_SEGS, plan->segments.count);
	for (uint32_t i = 0; i < plan->segments.count; i++) {
		const struct plan_segment *s = AT(plan->segments, struct plan_segment, i);
		p = w_record(w, REC_SEGS);
		fmt_put32(p + SEGS_VARIANT, s->variant);
		fmt_put32(p + SEGS_OP_FIRST, s->op_first);
		fmt_put32(p + SEGS_OP_COUNT, s->op_count);
		fmt_put32(p + SEGS_FLAGS, s->flags);
		fmt_put64(p + SEGS_FINGERPRINT, s->fingerprint);
		fmt_put64(p + SEGS_CAPTURE_NS, s->capture_ns);
		fmt_put64(p + SEGS_INSTANTIATE_NS, s->instantiate_ns);
		fmt_put32(p + SEGS_NODE_FIRST, take(w, &c->node, s->nnodes));
		fmt_put32(p + SEGS_NODE_COUNT, s->nnodes);
		fmt_put32(p + SEGS_EDGE_FIRST, take(w, &c->edge, s->nedges));
		fmt_put32(p + SEGS_EDGE_COUNT, s->nedges);
	}
	sect_end(w, S_SEGS);

	sect_begin(w, S_NODE, (uint32_t)c->node);
	for (uint32_t i = 0; i < plan->segments.count; i++) {
		const struct plan_segment *s = AT(plan->segments, struct plan_segment, i);
		for (uint32_t k = 0; k < s->nnodes; k++) {
			const struct plan_node *n = &s->nodes[k];
			uint32_t kernel = w_str(w, n->kernel);
			p = w_record(w, REC_NODE);
			fmt_put32(p + NODE_TYPE, (uint32_t)n->type);
			fmt_put32(p + NODE_OP, n->op);
			fmt_put32(p + NODE_KERNEL, kernel);
			for (int d = 0; d < 3; d++) {
				fmt_put32(p + NODE_GRID + 4 * d, n->grid[d]);
				fmt_put32(p + NODE_BLOCK + 4 * d, n->block[d]);
			}
			fmt_put32(p + NODE_SHARED_BYTES, n->shmem);
			fmt_put32(p + NODE_PARAM_FIRST, take(w, &c->parm, n->nparams));
			fmt_put32(p + NODE_PARAM_COUNT, n->nparams);
		}
	}
	sect_end(w, S_NODE);

	sect_begin(w, S_PARM, (uint32_t)c->parm);
	for (uint32_t i = 0; i < plan->segments.count; i++) {
		const struct plan_segment *s = AT(plan->segments, struct plan_segment, i);
		for (uint32_t k = 0; k < s->nnodes; k++)
			for (uint32_t j = 0; j < s->nodes[k].nparams; j++) {
				p = w_record(w, REC_PARM);
				fmt_put32(p + PARM_INDEX, s->nodes[k].params[j].index);
				fmt_put64(p + PARM_OFFSET, s->nodes[k].params[j].offset);
			}
	}
	sect_end(w, S_PARM);

	sect_begin(w, S_EDGE, (uint32_t)c->edge);
	for (uint32_t i = 0; i < plan->segments.count; i++) {
		const struct plan_segment *s = AT(plan->segments, struct plan_segment, i);
		for (uint32_t k = 0; k < s->nedges; k++) {
			p = w_record(w, REC_EDGE);
			fmt_put32(p + EDGE_FROM, s->edges[k].from);
			fmt_put32(p + EDGE_TO, s->edges[k].to);
			p[EDGE_TYPE] = s->edges[k].type;
			p[EDGE_FROM_PORT] = s->edges[k].from_port;
			p[EDGE_TO_PORT] = s->edges[k].to_port;
		}
	}
	sect_end(w, S_EDGE);
}

/* The BLOB offset of a new piece of LEN bytes: the pieces follow one
 * another in the order they are written, each at a multiple of BLOB_ALIGN;
 * an empty piece is at 0 and takes no room. */
static uint64_t w_blob(struct writer *w, const void *data, size_t len)
{
	size_t pad = (BLOB_ALIGN - w->blob.len % BLOB_ALIGN) % BLOB_ALIGN;
	unsigned char *p;
	uint64_t off;

	if (w->failed || len == 0)
		return 0;
	if (pad > 0 && buf_grow(&w->blob, pad) == NULL) {
		w_fail(w, PLAN_ERR_NOMEM);
		return 0;
	}
	off = w->blob.len;
	if ((p = buf_grow(&w->blob, len)) == NULL) {
		w_fail(w, PLAN_ERR_NOMEM);
		return 0;
	}
	memcpy(p, data, len);
	return off;
}

static void put_addr(unsigned char *alloc, unsigned char *offset, const struct plan_addr *a)
{
	fmt_put32(alloc, a->alloc);
	fmt_put64(offset, a->offset);
}

/* Format 1.4: the recording and what it recorded, then the recorded
 * fields of the variants, segments, nodes and breakpoints, then BLOB. */
static void encode_recorded(struct writer *w, const plan_t *plan, struct cursors *c)
{
	unsigned char *p;

	sect_begin(w, S_RECD, plan->recorded ? 1 : 0);
	if (plan->recorded) {
		const struct plan_recording *r = &plan->recording;
		uint32_t cmd = w_str(w, r->command), rule = w_str(w, r->step_rule);
		uint32_t libs = w_str(w, r->libraries);
		p = w_record(w, REC_RECD);
		fmt_put32(p + RECD_COMMAND, cmd);
		fmt_put32(p + RECD_STEP_RULE, rule);
		fmt_put32(p + RECD_LIBRARIES, libs);
		fmt_put32(p + RECD_PID, r->pid);
		fmt_put32(p + RECD_FLAGS, r->flags);
		fmt_put64(p + RECD_WALL_NS, r->wall_ns);
		fmt_put64(p + RECD_STEPS, r->steps);
	}
	sect_end(w, S_RECD);

	sect_begin(w, S_MODS, plan->modules.count);
	for (uint32_t i = 0; i < plan->modules.count; i++) {
		const struct plan_module *m = AT(plan->modules, struct plan_module, i);
		uint32_t name = w_str(w, m->name), note = w_str(w, m->note);
		uint64_t image = (m->flags & PLAN_MODULE_IMAGE) ? w_blob(w, m->image, m->bytes) : 0;
		p = w_record(w, REC_MODS);
		fmt_put32(p + MODS_NAME, name);
		fmt_put32(p + MODS_NOTE, note);
		fmt_put32(p + MODS_FLAGS, m->flags);
		fmt_put64(p + MODS_HASH, m->hash);
		fmt_put64(p + MODS_BYTES, m->bytes);
		fmt_put64(p + MODS_IMAGE, image);
	}
	sect_end(w, S_MODS);

	sect_begin(w, S_FUNC, plan->functions.count);
	for (uint32_t i = 0; i < plan->functions.count; i++) {
		const struct plan_function *f = AT(plan->functions, struct plan_function, i);
		uint32_t name = w_str(w, f->name);
		p = w_record(w, REC_FUNC);
		fmt_put32(p + FUNC_MODULE, f->module);
		fmt_put32(p + FUNC_NAME, name);
		fmt_put32(p + FUNC_PARAM_FIRST, take(w, &c->pinf, f->nparams));
		fmt_put32(p + FUNC_PARAM_COUNT, f->nparams);
	}
	sect_end(w, S_FUNC);

	sect_begin(w, S_PINF, (uint32_t)c->pinf);
	for (uint32_t i = 0; i < plan->functions.count; i++) {
		const struct plan_function *f = AT(plan->functions, struct plan_function, i);
		for (uint32_t k = 0; k < f->nparams; k++) {
			p = w_record(w, REC_PINF);
			fmt_put32(p + PINF_OFFSET, f->params[k].offset);
			fmt_put32(p + PINF_SIZE, f->params[k].size);
		}
	}
	sect_end(w, S_PINF);

	sect_begin(w, S_ALOC, plan->allocs.count);
	for (uint32_t i = 0; i < plan->allocs.count; i++) {
		const struct plan_alloc *a = AT(plan->allocs, struct plan_alloc, i);
		uint64_t data = (a->flags & PLAN_ALLOC_SNAPSHOT) ? w_blob(w, a->data, a->bytes) : 0;
		p = w_record(w, REC_ALOC);
		fmt_put64(p + ALOC_ADDRESS, a->address);
		fmt_put64(p + ALOC_BYTES, a->bytes);
		fmt_put32(p + ALOC_DEVICE, a->device);
		fmt_put32(p + ALOC_FLAGS, a->flags);
		fmt_put64(p + ALOC_DATA, data);
	}
	sect_end(w, S_ALOC);

	sect_begin(w, S_LNCH, plan->launches.count);
	for (uint32_t i = 0; i < plan->launches.count; i++) {
		const struct plan_launch *l = AT(plan->launches, struct plan_launch, i);
		uint64_t args = w_blob(w, l->args, l->nargs);
		uint64_t data = w_blob(w, l->data, l->ndata);
		p = w_record(w, REC_LNCH);
		fmt_put32(p + LNCH_TYPE, (uint32_t)l->type);
		fmt_put32(p + LNCH_FUNCTION, l->function);
		for (int d = 0; d < 3; d++) {
			fmt_put32(p + LNCH_GRID + 4 * d, l->grid[d]);
			fmt_put32(p + LNCH_BLOCK + 4 * d, l->block[d]);
			fmt_put32(p + LNCH_CLUSTER + 4 * d, l->cluster[d]);
		}
		fmt_put32(p + LNCH_SHARED_BYTES, l->shmem);
		fmt_put32(p + LNCH_FLAGS, l->flags);
		fmt_put32(p + LNCH_ARGS_BYTES, l->nargs);
		fmt_put64(p + LNCH_ARGS, args);
		fmt_put32(p + LNCH_PATCH_FIRST, take(w, &c->ptch, l->npatches));
		fmt_put32(p + LNCH_PATCH_COUNT, l->npatches);
		put_addr(p + LNCH_DST_ALLOC, p + LNCH_DST_OFFSET, &l->dst);
		put_addr(p + LNCH_SRC_ALLOC, p + LNCH_SRC_OFFSET, &l->src);
		fmt_put64(p + LNCH_BYTES, l->bytes);
		fmt_put32(p + LNCH_VALUE, l->value);
		fmt_put32(p + LNCH_ELEMENT, l->element);
		fmt_put64(p + LNCH_WIDTH, l->width);
		fmt_put64(p + LNCH_HEIGHT, l->height);
		fmt_put64(p + LNCH_PITCH, l->pitch);
		fmt_put32(p + LNCH_DATA_BYTES, l->ndata);
		fmt_put64(p + LNCH_DATA, data);
	}
	sect_end(w, S_LNCH);

	sect_begin(w, S_PTCH, (uint32_t)c->ptch);
	for (uint32_t i = 0; i < plan->launches.count; i++) {
		const struct plan_launch *l = AT(plan->launches, struct plan_launch, i);
		for (uint32_t k = 0; k < l->npatches; k++) {
			p = w_record(w, REC_PTCH);
			fmt_put32(p + PTCH_BYTE, l->patches[k].byte);
			put_addr(p + PTCH_ALLOC, p + PTCH_OFFSET, &l->patches[k].addr);
		}
	}
	sect_end(w, S_PTCH);

	sect_begin(w, S_VREC, plan->variants.count);
	for (uint32_t i = 0; i < plan->variants.count; i++) {
		const struct plan_variant *v = plan_get_variant(plan, i);
		uint32_t label = w_str(w, v->label);
		p = w_record(w, REC_VREC);
		fmt_put32(p + VREC_LABEL, label);
		fmt_put32(p + VREC_DEVICE, v->device);
		fmt_put64(p + VREC_SEEN, v->seen);
		fmt_put64(p + VREC_RECORDED_NS, v->recorded_ns);
	}
	sect_end(w, S_VREC);

	sect_begin(w, S_SREC, plan->segments.count);
	for (uint32_t i = 0; i < plan->segments.count; i++) {
		const struct plan_segment *s = AT(plan->segments, struct plan_segment, i);
		p = w_record(w, fmt_sections[S_SREC].size[w->minor]);
		fmt_put64(p + SREC_RECORDED_NS, s->recorded_ns);
		if (w->minor >= 7) {
			fmt_put64(p + SREC_START_NS, s->start_ns);
			fmt_put64(p + SREC_ISSUE_NS, s->issue_ns);
		}
	}
	sect_end(w, S_SREC);

	sect_begin(w, S_NLCH, (uint32_t)c->node);
	for (uint32_t i = 0; i < plan->segments.count; i++) {
		const struct plan_segment *s = AT(plan->segments, struct plan_segment, i);
		for (uint32_t k = 0; k < s->nnodes; k++)
			fmt_put32(w_record(w, REC_NLCH) + NLCH_LAUNCH, s->nodes[k].launch);
	}
	sect_end(w, S_NLCH);

	sect_begin(w, S_BLCH, plan->breakpoints.count);
	for (uint32_t i = 0; i < plan->breakpoints.count; i++) {
		const struct plan_breakpoint *b = AT(plan->breakpoints, struct plan_breakpoint, i);
		p = w_record(w, fmt_sections[S_BLCH].size[w->minor]);
		fmt_put32(p + BLCH_LAUNCH_FIRST, b->launch_first);
		fmt_put32(p + BLCH_LAUNCH_COUNT, b->launch_count);
		fmt_put64(p + BLCH_RECORDED_NS, b->recorded_ns);
		if (w->minor >= 7) {
			fmt_put64(p + BLCH_START_NS, b->start_ns);
			fmt_put64(p + BLCH_ISSUE_NS, b->issue_ns);
		}
	}
	sect_end(w, S_BLCH);

	/* The pieces, padded to a whole number of BLOB_ALIGN units. */
	sect_begin(w, S_BLOB, 0);
	if (!w->failed) {
		size_t pad = (BLOB_ALIGN - w->blob.len % BLOB_ALIGN) % BLOB_ALIGN;
		/* A plan without a recording (1.5) has no pieces. */
		if ((p = buf_grow(&w->out, w->blob.len + pad)) == NULL)
			w_fail(w, PLAN_ERR_NOMEM);
		else if (w->blob.len > 0)
			memcpy(p, w->blob.data, w->blob.len);
	}
	sect_end(w, S_BLOB);
}

static void encode_rest(struct writer *w, const plan_t *plan, struct cursors *c)
{
	unsigned char *p;

	sect_begin(w, S_BRKP, plan->breakpoints.count);
	for (uint32_t i = 0; i < plan->breakpoints.count; i++) {
		const struct plan_breakpoint *b = AT(plan->breakpoints, struct plan_breakpoint, i);
		uint32_t name = w_str(w, b->name), detail = w_str(w, b->detail);
		p = w_record(w, REC_BRKP);
		fmt_put32(p + BRKP_VARIANT, b->variant);
		fmt_put32(p + BRKP_OP, b->op);
		fmt_put32(p + BRKP_NAME, name);
		fmt_put32(p + BRKP_REASON, (uint32_t)b->reason);
		fmt_put32(p + BRKP_DETAIL, detail);
		fmt_put32(p + BRKP_READ_FIRST, take(w, &c->idxs, b->nreads));
		fmt_put32(p + BRKP_READ_COUNT, b->nreads);
		fmt_put32(p + BRKP_WRITE_FIRST, take(w, &c->idxs, b->nwrites));
		fmt_put32(p + BRKP_WRITE_COUNT, b->nwrites);
	}
	sect_end(w, S_BRKP);

	sect_begin(w, S_CHKS, plan->checks.count);
	for (uint32_t i = 0; i < plan->checks.count; i++) {
		const struct plan_check *k = AT(plan->checks, struct plan_check, i);
		p = w_record(w, REC_CHKS);
		fmt_put32(p + CHKS_VARIANT, k->variant);
		fmt_put32(p + CHKS_TENSOR, k->tensor);
		fmt_put32(p + CHKS_STEPS, k->steps);
		fmt_put64(p + CHKS_HASH, k->hash);
		fmt_putf64(p + CHKS_SUM, k->sum);
	}
	sect_end(w, S_CHKS);

	sect_begin(w, S_DISP, plan->dispatch.count);
	for (uint32_t i = 0; i < plan->dispatch.count; i++) {
		const struct plan_dispatch *d = AT(plan->dispatch, struct plan_dispatch, i);
		p = w_record(w, REC_DISP);
		fmt_puti64(p + DISP_TOKENS_MIN, d->tokens_min);
		fmt_puti64(p + DISP_TOKENS_MAX, d->tokens_max);
		fmt_put32(p + DISP_VARIANT, d->variant);
	}
	sect_end(w, S_DISP);

	sect_begin(w, S_CHOI, plan->choices.count);
	for (uint32_t i = 0; i < plan->choices.count; i++) {
		const struct plan_choice *ch = AT(plan->choices, struct plan_choice, i);
		uint32_t impl = w_str(w, ch->impl);
		p = w_record(w, fmt_sections[S_CHOI].size[w->minor]);
		fmt_put32(p + CHOI_VARIANT, ch->variant);
		fmt_put32(p + CHOI_OP, ch->op);
		fmt_put32(p + CHOI_IMPL, impl);
		fmt_put32(p + CHOI_FLAGS, ch->flags & FMT_CHOICE_FLAGS);
		fmt_put32(p + CHOI_CAND_FIRST, take(w, &c->cand, ch->ncand));
		fmt_put32(p + CHOI_CAND_COUNT, ch->ncand);
		/* Step is no bit of Choice_Flags in the file: a 1.9 field of its
		 * own, which older readers skip. */
		if (w->minor >= PLAN_FORMAT_MINOR_STEP)
			fmt_put32(p + CHOI_TUNE_FLAGS, ch->flags & PLAN_CHOICE_STEP ? FMT_TUNE_STEP : 0);
	}
	sect_end(w, S_CHOI);

	sect_begin(w, S_CAND, (uint32_t)c->cand);
	for (uint32_t i = 0; i < plan->choices.count; i++) {
		const struct plan_choice *ch = AT(plan->choices, struct plan_choice, i);
		for (uint32_t k = 0; k < ch->ncand; k++) {
			uint32_t impl = w_str(w, ch->cand[k].impl);
			p = w_record(w, REC_CAND);
			fmt_put32(p + CAND_IMPL, impl);
			fmt_putf64(p + CAND_US, ch->cand[k].us);
		}
	}
	sect_end(w, S_CAND);

	if (w->minor >= 2) {
		sect_begin(w, S_WSRC, plan->wsrc.count);
		for (uint32_t i = 0; i < plan->wsrc.count; i++) {
			const struct plan_weight_source *ws = AT(plan->wsrc, struct plan_weight_source, i);
			uint32_t file = w_str(w, ws->file), name = w_str(w, ws->name);
			p = w_record(w, fmt_sections[S_WSRC].size[w->minor]);
			fmt_put32(p + WSRC_TENSOR, ws->tensor);
			fmt_put32(p + WSRC_FILE, file);
			fmt_put32(p + WSRC_NAME, name);
			p[WSRC_DTYPE] = (unsigned char)ws->dtype;
			fmt_put64(p + WSRC_OFFSET, ws->offset);
			fmt_put64(p + WSRC_BYTES, ws->bytes);
			fmt_put64(p + WSRC_HASH, ws->hash);
			fmt_put32(p + WSRC_FLAGS, ws->flags);
			if (w->minor >= 5) {
				fmt_put64(p + WSRC_SLICE_OUTER, ws->slice_outer);
				fmt_put64(p + WSRC_SLICE_FULL, ws->slice_full);
				fmt_put64(p + WSRC_SLICE_INNER, ws->slice_inner);
				fmt_put64(p + WSRC_SLICE_START, ws->slice_start);
				fmt_put64(p + WSRC_SLICE_LEN, ws->slice_len);
			}
		}
		sect_end(w, S_WSRC);
	}

	if (w->minor >= 3) {
		sect_begin(w, S_VKEY, plan->variants.count);
		for (uint32_t i = 0; i < plan->variants.count; i++) {
			const struct plan_variant *v = plan_get_variant(plan, i);
			p = w_record(w, REC_VKEY);
			fmt_put32(p + VKEY_REQUESTS, v->requests);
			fmt_put32(p + VKEY_FLAGS, v->key_flags);
		}
		sect_end(w, S_VKEY);
		sect_begin(w, S_DKEY, plan->dispatch.count);
		for (uint32_t i = 0; i < plan->dispatch.count; i++) {
			const struct plan_dispatch *d = AT(plan->dispatch, struct plan_dispatch, i);
			p = w_record(w, REC_DKEY);
			fmt_put32(p + DKEY_REQUESTS_MAX, d->requests_max);
			fmt_put32(p + DKEY_FLAGS, d->flags);
		}
		sect_end(w, S_DKEY);
	}

	if (w->minor >= 4)
		encode_recorded(w, plan, c);
	if (w->minor >= 5) {
		encode_dist(w, plan);
		encode_split_blocks(w, plan, c);
	}
	if (w->minor >= 6)
		encode_shares(w, plan);

	/* Every string has been met: the table goes last. */
	sect_begin(w, S_STRS, 0);
	if (!w->failed) {
		if ((p = buf_grow(&w->out, w->strs.len)) != NULL)
			memcpy(p, w->strs.data, w->strs.len);
		else
			w_fail(w, PLAN_ERR_NOMEM);
	}
	sect_end(w, S_STRS);
}

/*
 * Whether PLAN holds something a reader of format 1.0 would get wrong by
 * skipping what 1.1 added: a feature, an edge type or port, a choice. Such
 * a plan marks the sections 1.1 added Required, so that a 1.0 reader
 * refuses it by name rather than replaying other kernels or rejecting the
 * fingerprints as corrupt; any other plan stays readable by it.
 */
static int uses_1_1(const plan_t *plan)
{
	if (plan->meta.features != 0 || plan->choices.count != 0)
		return 1;
	for (uint32_t i = 0; i < plan->segments.count; i++) {
		const struct plan_segment *s = AT(plan->segments, struct plan_segment, i);
		for (uint32_t k = 0; k < s->nedges; k++)
			if (s->edges[k].type != 0 || s->edges[k].from_port != 0 || s->edges[k].to_port != 0)
				return 1;
	}
	return 0;
}

/*
 * Whether PLAN needs format 1.2: weights from checkpoint files, a prompt
 * feed or a serving batch feed. Every other plan is written as 1.1, byte for byte as before, so
 * that readers of 1.1 keep reading what they can.
 */
static int uses_1_2(const plan_t *plan)
{
	if (plan->wsrc.count != 0)
		return 1;
	for (uint32_t i = 0; i < plan->tensors.count; i++) {
		const struct plan_tensor *t = AT(plan->tensors, struct plan_tensor, i);
		if (t->feed.kind >= PLAN_FEED_PROMPT || t->init.kind == PLAN_INIT_SAFETENSORS)
			return 1;
	}
	return 0;
}

/* Whether PLAN (or a rank it holds) needs format 1.7: a recorded item
 * with a start offset. */
static int uses_offsets(const plan_t *plan)
{
	for (uint32_t i = 0; i < plan->segments.count; i++) {
		const struct plan_segment *s = AT(plan->segments, struct plan_segment, i);
		if (s->start_ns != 0 || s->issue_ns != 0)
			return 1;
	}
	for (uint32_t i = 0; i < plan->breakpoints.count; i++) {
		const struct plan_breakpoint *b = AT(plan->breakpoints, struct plan_breakpoint, i);
		if (b->start_ns != 0 || b->issue_ns != 0)
			return 1;
	}
	for (uint32_t r = 0; r < plan->nranks; r++)
		if (plan->ranks[r] != NULL && uses_offsets(plan->ranks[r]))
			return 1;
	return 0;
}

/* Whether PLAN needs format 1.9: a choice confirmed in the step, whose
 * mark only 1.9's CHOI records have room for (Tune_Flags). */
static int uses_step(const plan_t *plan)
{
	for (uint32_t i = 0; i < plan->choices.count; i++)
		if (AT(plan->choices, struct plan_choice, i)->flags & PLAN_CHOICE_STEP)
			return 1;
	return 0;
}

int plan__uses_ranks(const plan_t *plan)
{
	if (plan->dist.world > 1)
		return 1;
	for (uint32_t i = 0; i < plan->tensors.count; i++)
		if (AT(plan->tensors, struct plan_tensor, i)->split.nblocks != 0)
			return 1;
	for (uint32_t i = 0; i < plan->wsrc.count; i++)
		if (AT(plan->wsrc, struct plan_weight_source, i)->slice_len != 0)
			return 1;
	return 0;
}

/* The format version PLAN is written as: the oldest that holds it and
 * every rank it holds, whose RANK sections a reader reads at the file's
 * version. Capture-size keys need 1.3, ranks 1.5, shared executables 1.6,
 * recorded start offsets 1.7, collectives in symmetric memory 1.8, choices
 * confirmed in the step 1.9; every plan without them is written as
 * before, byte for byte. */
static unsigned minor_for(const plan_t *plan)
{
	unsigned m = uses_step(plan) ? 9 : plan->dist.nccl_mem != 0 ? 8 :
	             uses_offsets(plan) ? 7 : plan->shares.count > 0 ? 6 :
	             plan__uses_ranks(plan) ? 5 : plan->recorded ? 4 :
	             plan_has_keys(plan) ? 3 : uses_1_2(plan) ? 2 : 1;

	for (uint32_t r = 0; r < plan->nranks; r++)
		if (plan->ranks[r] != NULL && minor_for(plan->ranks[r]) > m)
			m = minor_for(plan->ranks[r]);
	return m;
}

static void writer_free(struct writer *w)
{
	free(w->out.data);
	free(w->strs.data);
	free(w->blob.data);
	free(w->slots);
}

static int encode_content(struct writer *w, const plan_t *plan);

/* The ranks attached to rank 0 (1.5): one RANK section each, in rank
 * order, holding that rank's content as its own writer makes it. Their
 * offsets and sizes go to OFF and SIZE. */
static int encode_ranks(struct writer *w, const plan_t *plan, uint64_t *off, uint64_t *size)
{
	for (uint32_t r = 0; r < plan->nranks; r++) {
		struct writer sub;
		unsigned char *p;
		int err;

		memset(&sub, 0, sizeof sub);
		sub.minor = w->minor;
		err = encode_content(&sub, plan->ranks[r]);
		if (err == 0) {
			w_align(w);
			off[r] = w->out.len;
			size[r] = sub.out.len;
			if (w->failed || (p = buf_grow(&w->out, sub.out.len)) == NULL)
				err = w->failed ? w->failed : PLAN_ERR_NOMEM;
			else
				memcpy(p, sub.out.data, sub.out.len);
		}
		writer_free(&sub);
		if (err != 0)
			return err;
	}
	return PLAN_OK;
}

/* The content of PLAN in W->out. */
static int encode_content(struct writer *w, const plan_t *plan)
{
	struct cursors c = { 0 };
	unsigned char *dir;
	uint64_t *rank_off = NULL, *rank_size = NULL;
	uint32_t nsect = 0, nranks = 0;
	int err = PLAN_OK;

	/* The string table's first byte is the empty string. */
	if (buf_grow(&w->strs, 1) == NULL)
		return PLAN_ERR_NOMEM;
	/* A rank's content is written at the version of its file (set by
	 * encode_ranks), the version rank 0's content picks. */
	if (w->minor == 0)
		w->minor = minor_for(plan);
	for (int s = 0; s < S_COUNT; s++)
		if (fmt_sections[s].since <= w->minor && s != S_RANK)
			nsect++;
	/* plan_validate has seen every rank attached. */
	if (w->minor >= 5 && plan->nranks > 0) {
		nranks = plan->nranks;
		rank_off = calloc(nranks, sizeof *rank_off);
		rank_size = calloc(nranks, sizeof *rank_size);
		if (rank_off == NULL || rank_size == NULL) {
			err = PLAN_ERR_NOMEM;
			goto out;
		}
		nsect += nranks;
	}
	if (buf_grow(&w->out, DIR_HEADER_SIZE + (size_t)nsect * DIR_ENTRY_SIZE) == NULL) {
		err = PLAN_ERR_NOMEM;
		goto out;
	}
	encode_meta(w, plan);
	encode_program(w, plan, &c);
	encode_ops(w, plan, &c);
	encode_indexes(w, plan, &c);
	encode_variants(w, plan, &c);
	encode_segments(w, plan, &c);
	encode_rest(w, plan, &c);
	if (w->failed == 0 && nranks > 0)
		err = encode_ranks(w, plan, rank_off, rank_size);
	if (err == 0 && w->failed)
		err = w->failed;
	if (err != 0)
		goto out;
	dir = w->out.data;
	fmt_put32(dir + DIR_SECTION_COUNT, nsect);
	for (int s = 0, k = 0; s < S_COUNT; s++) {
		/* 1.2's and 1.3's sections are Required in the files that have
		 * them: a reader that skipped weight sources or keys would run
		 * another plan than the one captured. */
		int required = fmt_sections[s].since == 0 || uses_1_1(plan) ||
		               fmt_sections[s].since >= 2;
		/* SHAR is not: a reader that skips it instantiates every
		 * segment on its own, which is the same plan. */
		if (s == S_SHAR)
			required = 0;
		uint32_t n = s == S_RANK ? nranks : 1;
		if (fmt_sections[s].since > w->minor)
			continue;
		for (uint32_t r = 0; r < n; r++, k++) {
			unsigned char *e = dir + DIR_HEADER_SIZE + (size_t)k * DIR_ENTRY_SIZE;
			memcpy(e + ENT_ID, fmt_sections[s].id, 4);
			fmt_put32(e + ENT_FLAGS, required ? SECT_REQUIRED : 0);
			fmt_put64(e + ENT_OFFSET, s == S_RANK ? rank_off[r] : w->sect_off[s]);
			fmt_put64(e + ENT_SIZE, s == S_RANK ? rank_size[r] : w->sect_size[s]);
		}
	}
out:
	free(rank_off);
	free(rank_size);
	return err;
}

/* ---------------------------------------------------------------------- */
/* Compression and the header.                                             */

static int compress_content(const unsigned char *content, size_t len, unsigned minor,
                            void **data, size_t *out_len, struct plan_diag *diag)
{
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	size_t bound = ZSTD_compressBound(len), n;
	unsigned char *out = NULL, *h;
	int err = PLAN_OK;

	if (cctx == NULL || ZSTD_isError(bound) || bound > SIZE_MAX - FMT_HEADER_SIZE ||
	    (out = malloc(FMT_HEADER_SIZE + bound)) == NULL) {
		err = plan__fail(diag, PLAN_ERR_NOMEM, "out of memory compressing %zu bytes", len);
		goto out;
	}
	/* Fixed parameters: the same content always gives the same frame. */
	if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, FMT_ZSTD_LEVEL)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_dictIDFlag, 0))) {
		err = plan__fail(diag, PLAN_ERR_GENERIC, "zstd refused the compression parameters");
		goto out;
	}
	n = ZSTD_compress2(cctx, out + FMT_HEADER_SIZE, bound, content, len);
	if (ZSTD_isError(n)) {
		err = plan__fail(diag, PLAN_ERR_GENERIC, "zstd compression failed: %s",
		                 ZSTD_getErrorName(n));
		goto out;
	}
	h = out;
	memset(h, 0, FMT_HEADER_SIZE);
	memcpy(h + HDR_MAGIC, FMT_MAGIC, FMT_MAGIC_SIZE);
	fmt_put16(h + HDR_MAJOR, PLAN_FORMAT_MAJOR);
	fmt_put16(h + HDR_MINOR, (uint16_t)minor);
	fmt_put32(h + HDR_FLAGS, 0);
	fmt_put32(h + HDR_HEADER_SIZE, FMT_HEADER_SIZE);
	fmt_put32(h + HDR_PAYLOAD_CRC, plan_crc32c(out + FMT_HEADER_SIZE, n));
	fmt_put64(h + HDR_PAYLOAD_SIZE, n);
	fmt_put64(h + HDR_CONTENT_SIZE, len);
	fmt_put32(h + HDR_CRC, plan_crc32c(h, HDR_CRC));
	{
		unsigned char *shrunk = realloc(out, FMT_HEADER_SIZE + n);
		if (shrunk != NULL)
			out = shrunk;
	}
	*data = out;
	*out_len = FMT_HEADER_SIZE + n;
	out = NULL;
out:
	free(out);
	ZSTD_freeCCtx(cctx);
	return err;
}

int plan_write_memory(const plan_t *plan, void **data, size_t *len, struct plan_diag *diag)
{
	struct writer w;
	int err;

	if (plan == NULL || data == NULL || len == NULL)
		return plan__fail(diag, PLAN_ERR_INVALID, "plan_write_memory: NULL argument");
	*data = NULL;
	*len = 0;
	{
		/* One RANK section a rank but 0, after the others of 1.5. */
		uint32_t fixed = 0;
		for (int s = 0; s < S_COUNT; s++)
			fixed += fmt_sections[s].since <= 5 && s != S_RANK;
		if (plan->dist.world - 1 > (uint32_t)DIR_MAX_SECTIONS - fixed)
			return plan__fail(diag, PLAN_ERR_LIMIT, "a world of %u ranks: a plan file holds "
			                  "at most %u (one section each but rank 0, %d sections in "
			                  "all)", plan->dist.world, DIR_MAX_SECTIONS - fixed + 1,
			                  DIR_MAX_SECTIONS);
	}
	if ((err = plan_validate(plan, diag)) != 0)
		return err;
	if (plan->dist.rank != 0)
		return plan__fail(diag, PLAN_ERR_INVALID, "plan_write_memory: the plan is rank %u "
		                  "of a world of %u; a plan file holds rank 0, the other ranks "
		                  "attached to it", plan->dist.rank, plan->dist.world);
	memset(&w, 0, sizeof w);
	err = encode_content(&w, plan);
	if (err == PLAN_ERR_NOMEM)
		plan__fail(diag, err, "out of memory encoding the plan");
	else if (err != 0)
		plan__fail(diag, err, "the plan is too large for the format "
		           "(a pool or the string table passes 4 GiB)");
	else
		err = compress_content(w.out.data, w.out.len, w.minor, data, len, diag);
	writer_free(&w);
	return err;
}

/* ---------------------------------------------------------------------- */
/* Files.                                                                  */

static ssize_t sys_write(void *ctx, int fd, const void *buf, size_t len)
{
	(void)ctx;
	return write(fd, buf, len);
}

static int sys_fsync(void *ctx, int fd)
{
	(void)ctx;
	return fsync(fd);
}

static int sys_rename(void *ctx, const char *from, const char *to)
{
	(void)ctx;
	return rename(from, to);
}

static const struct plan__io sys_io = { sys_write, sys_fsync, sys_rename, NULL };

static int io_fail(struct plan_diag *diag, const char *path, const char *step, int errnum)
{
	return plan__fail(diag, PLAN_ERR_IO, "%s: %s failed: %s", path, step, strerror(errnum));
}

/* Create a new temporary file next to PATH: ".<name>.<pid>.<n>.tmp", with
 * O_EXCL so that an existing file is never reused. open() rather than
 * mkstemp() so that the plan gets the permissions the umask gives every
 * new file, not mkstemp's 0600. */
static int open_temp(const char *dir, const char *base, char **tmp_out)
{
	size_t size = strlen(dir) + strlen(base) + 64;
	char *tmp = malloc(size);
	int fd = -1;

	if (tmp == NULL) {
		errno = ENOMEM;
		return -1;
	}
	for (unsigned n = 0; n < 100; n++) {
		snprintf(tmp, size, "%s/.%s.%ld.%u.tmp", dir, base, (long)getpid(), n);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0) {
		int e = errno;
		free(tmp);
		errno = e;
		return -1;
	}
	*tmp_out = tmp;
	return fd;
}

static int write_all(const struct plan__io *io, int fd, const unsigned char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = io->write(io->ctx, fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = ENOSPC;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Make the rename durable. A file system that cannot sync a directory
 * says EINVAL or ENOTSUP: nothing more can be done there. */
static int sync_dir(const struct plan__io *io, const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc, e;

	if (fd < 0)
		return -1;
	rc = io->fsync(io->ctx, fd);
	e = errno;
	close(fd);
	if (rc != 0 && (e == EINVAL || e == ENOTSUP))
		rc = 0;
	errno = e;
	return rc;
}

int plan__write_file_io(const plan_t *plan, const char *path, const struct plan__io *io,
                        struct plan_diag *diag)
{
	void *data = NULL;
	size_t len = 0;
	char *dir = NULL, *tmp = NULL;
	const char *base, *slash;
	int fd = -1, err;

	if (io == NULL)
		io = &sys_io;
	if (path == NULL || path[0] == '\0')
		return plan__fail(diag, PLAN_ERR_INVALID, "plan_write_file: no path");
	if ((err = plan_write_memory(plan, &data, &len, diag)) != 0)
		return err;
	slash = strrchr(path, '/');
	base = slash ? slash + 1 : path;
	if (base[0] == '\0') {
		err = plan__fail(diag, PLAN_ERR_INVALID, "%s: names a directory, not a file", path);
		goto out;
	}
	dir = slash == NULL ? strdup(".") : slash == path ? strdup("/")
	                    : strndup(path, (size_t)(slash - path));
	if (dir == NULL) {
		err = plan__fail(diag, PLAN_ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((fd = open_temp(dir, base, &tmp)) < 0) {
		err = io_fail(diag, path, "creating a temporary file", errno);
		goto out;
	}
	if (write_all(io, fd, data, len) != 0) {
		err = io_fail(diag, path, "write", errno);
		goto out;
	}
	if (io->fsync(io->ctx, fd) != 0) {
		err = io_fail(diag, path, "fsync", errno);
		goto out;
	}
	{
		int rc = close(fd);
		fd = -1;
		if (rc != 0) {
			err = io_fail(diag, path, "close", errno);
			goto out;
		}
	}
	if (io->rename(io->ctx, tmp, path) != 0) {
		err = io_fail(diag, path, "rename", errno);
		goto out;
	}
	free(tmp);
	tmp = NULL;          /* renamed: nothing to remove any more */
	if (sync_dir(io, dir) != 0)
		err = io_fail(diag, path, "fsync of the directory (the new plan is in place)", errno);
out:
	if (fd >= 0)
		close(fd);
	if (tmp != NULL) {
		unlink(tmp);
		free(tmp);
	}
	free(dir);
	free(data);
	return err;
}

int plan_write_file(const plan_t *plan, const char *path, struct plan_diag *diag)
{
	return plan__write_file_io(plan, path, NULL, diag);
}
