/*
 * stash.c - tensors kept beside the arena and compared where they lie.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "stash.h"
#include "util.h"

/* BCG_TEST_SPARE_BYTES (stash.h): the most bytes kept in the backend's
 * memory; UINT64_MAX when unset. A malformed value is a usage error, so
 * that a test cannot pass by staging nothing. */
static int stash_spare_limit(uint64_t *limit, struct engine_error *err)
{
	const char *v = getenv("BCG_TEST_SPARE_BYTES");
	char *end;

	*limit = UINT64_MAX;
	if (v == NULL || v[0] == '\0')
		return 0;
	errno = 0;
	*limit = strtoull(v, &end, 10);
	if (*end != '\0' || errno != 0 || v[0] == '-')
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE,
		                   "BCG_TEST_SPARE_BYTES: '%s' is not a byte count", v);
	return 0;
}

/* Where a pooled item's room starts: every item at a multiple of this,
 * as an allocation of its own would be. */
#define STASH_POOL_ALIGN 256u

/* Keep tensor T in item IT: in the backend's memory when it has room
 * (within *SPARE bytes; from POOL first, when not NULL), else in host
 * memory. */
static int stash_keep(struct engine *e, uint32_t t, int64_t tokens, uint64_t *spare,
                      struct stash_pool *pool, struct stash_item *it, struct engine_error *err)
{
	const struct plan_tensor *pt = plan_get_tensor(e->plan, t);
	uint64_t bytes = plan_tensor_bytes(e->plan, t, tokens);
	uint64_t room = (bytes + STASH_POOL_ALIGN - 1) / STASH_POOL_ALIGN * STASH_POOL_ALIGN;
	const void *src = engine_tensor_at(e, t, tokens);
	char h[32];

	it->tensor = t;
	it->count = plan_tensor_numel(e->plan, t, tokens);
	if (bytes <= *spare) {
		if (pool != NULL && pool->base != NULL && room <= pool->bytes - pool->used) {
			it->data = (unsigned char *)pool->base + pool->used;
			it->pooled = 1;
			pool->used += room;
		} else if (e->be->spare_alloc(e->b, bytes, &it->data, err->msg,
		                              sizeof err->msg) != 0) {
			return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "keeping '%s': %s",
			                   pt->name, err->msg);
		}
		if (it->data != NULL) {
			it->on_backend = 1;
			*spare -= bytes;
			if (e->be->copy(e->b, it->data, src, (size_t)bytes, err->msg,
			                sizeof err->msg) != 0)
				return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "keeping '%s': %s",
				                   pt->name, err->msg);
			return 0;
		}
	}
	if (bytes > SIZE_MAX || (it->data = malloc(bytes ? (size_t)bytes : 1)) == NULL)
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE,
		                   "out of memory keeping '%s' (%s) in host memory", pt->name,
		                   bcg_human_bytes(bytes, h, sizeof h));
	return engine_read_tensor(e, t, tokens, it->data, err);
}

int stash_pool_init(struct engine *e, uint64_t bytes, struct stash_pool *p,
                    struct engine_error *err)
{
	memset(p, 0, sizeof *p);
	if (bytes == 0)
		return 0;
	if (e->be->spare_alloc(e->b, bytes, &p->base, err->msg, sizeof err->msg) != 0)
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "keeping tensors: %s", err->msg);
	p->bytes = p->base != NULL ? bytes : 0;
	return 0;
}

void stash_pool_release(struct engine *e, struct stash_pool *p)
{
	if (p->base != NULL)
		e->be->spare_free(e->b, p->base);
	memset(p, 0, sizeof *p);
}

int stash_take(struct engine *e, const uint32_t *which, uint32_t n, int64_t tokens,
               struct stash *s, struct engine_error *err)
{
	return stash_take_pooled(e, which, n, tokens, NULL, s, err);
}

int stash_take_pooled(struct engine *e, const uint32_t *which, uint32_t n, int64_t tokens,
                      struct stash_pool *pool, struct stash *s, struct engine_error *err)
{
	uint64_t spare;

	memset(s, 0, sizeof *s);
	s->tokens = tokens;
	if (stash_spare_limit(&spare, err) != 0)
		return -1;
	if ((s->item = calloc(n ? n : 1, sizeof *s->item)) == NULL)
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
	for (; s->n < n; s->n++)
		if (stash_keep(e, which[s->n], tokens, &spare, pool, &s->item[s->n], err) != 0) {
			s->n++;
			return -1;
		}
	return 0;
}

int stash_take_results(struct engine *e, int64_t tokens, struct stash *s,
                       struct engine_error *err)
{
	uint32_t nt = plan_count_tensors(e->plan), n = 0;
	uint32_t *which = calloc(nt ? nt : 1, sizeof *which);
	int rc;

	if (which == NULL) {
		memset(s, 0, sizeof *s);
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
	}
	for (uint32_t t = 0; t < nt; t++) {
		int role = plan_get_tensor(e->plan, t)->role;
		if (role == PLAN_ROLE_OUTPUT || role == PLAN_ROLE_STATE)
			which[n++] = t;
	}
	rc = stash_take(e, which, n, tokens, s, err);
	free(which);
	return rc;
}

void stash_release(struct engine *e, struct stash *s)
{
	for (uint32_t k = 0; s->item != NULL && k < s->n; k++) {
		if (s->item[k].pooled)
			continue;
		if (s->item[k].on_backend)
			e->be->spare_free(e->b, s->item[k].data);
		else
			free(s->item[k].data);
	}
	free(s->item);
	memset(s, 0, sizeof *s);
}

/* Item K of S into host memory at *OUT (malloc'd; the caller frees it):
 * the kept copy (KEPT), or what the arena holds now. */
static int stash_to_host(struct engine *e, const struct stash *s, uint32_t k, int kept,
                         void **out, struct engine_error *err)
{
	const struct stash_item *it = &s->item[k];
	const struct plan_tensor *pt = plan_get_tensor(e->plan, it->tensor);
	uint64_t bytes = plan_tensor_bytes(e->plan, it->tensor, s->tokens);
	void *p;
	char h[32];

	*out = NULL;
	if (bytes > SIZE_MAX || (p = malloc(bytes ? (size_t)bytes : 1)) == NULL)
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE,
		                   "out of memory reading '%s' (%s) to compare it", pt->name,
		                   bcg_human_bytes(bytes, h, sizeof h));
	if (!kept) {
		if (engine_read_tensor(e, it->tensor, s->tokens, p, err) != 0) {
			free(p);
			return -1;
		}
	} else if (!it->on_backend) {
		memcpy(p, it->data, (size_t)bytes);
	} else if (e->be->read(e->b, p, it->data, (size_t)bytes, err->msg, sizeof err->msg) != 0) {
		free(p);
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "reading the kept '%s': %s",
		                   pt->name, err->msg);
	}
	*out = p;
	return 0;
}

/* The item of S that keeps tensor T, or S->n. */
static uint32_t stash_find(const struct stash *s, uint32_t t)
{
	uint32_t k = 0;

	while (k < s->n && s->item[k].tensor != t)
		k++;
	return k;
}

/* stash_compare's comparison of the bytes, the verify_result of verify.h
 * as it stands. */
static int stash_compare_bytes(struct engine *e, const struct stash *s, uint32_t k,
                               int stash_is_ref, int tolerant, struct verify_result *r,
                               struct engine_error *err)
{
	const struct stash_item *it = &s->item[k];
	const struct plan_tensor *pt = plan_get_tensor(e->plan, it->tensor);
	const void *arena = engine_tensor_at(e, it->tensor, s->tokens);
	void *now;

	if (it->on_backend) {
		if (e->be->compare(e->b, pt->dtype, stash_is_ref ? arena : it->data,
		                   stash_is_ref ? it->data : arena, it->count, tolerant, r,
		                   err->msg, sizeof err->msg) != 0)
			return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "comparing '%s': %s",
			                   pt->name, err->msg);
		return 0;
	}
	if (stash_to_host(e, s, k, 0, &now, err) != 0)
		return -1;
	verify_compare(pt->dtype, stash_is_ref ? now : it->data, stash_is_ref ? it->data : now,
	               it->count, tolerant, r);
	free(now);
	return 0;
}

/* The tensor whose rows op OP's argmax picked from, when OP writes the
 * index T as an argmax (argmax's input; rmsnorm_matmul_argmax's logits,
 * its other output); else UINT32_MAX. */
static uint32_t stash_argmax_values(const struct plan_op *op, uint32_t t)
{
	const struct op_kind *kind = op_kind_find(op->kind);

	if (kind == NULL)
		return UINT32_MAX;
	if (kind->id == OP_ARGMAX && op->nin >= 1 && op->nout >= 1 && op->out[0] == t)
		return op->in[0];
	if (kind->id == OP_RMSNORM_MATMUL_ARGMAX && op->nout >= 2 && op->out[1] == t)
		return op->out[0];
	return UINT32_MAX;
}

/*
 * R, the failed tolerant comparison of item K of S, an i32 tensor: passed
 * as near-ties (verify.h) when the last op to write it is an argmax whose
 * values S keeps too, no later op writes them, they pass their own bound,
 * and every differing row is a tie by verify_argmax_ties; R's relative
 * error is then the values'.
 */
static int stash_argmax_ties(struct engine *e, const struct stash *s, uint32_t k,
                             int stash_is_ref, struct verify_result *r,
                             struct engine_error *err)
{
	uint32_t t = s->item[k].tensor, nops = plan_count_ops(e->plan), kx;
	uint32_t writer = UINT32_MAX, values = UINT32_MAX;
	struct verify_result rx;
	void *idx[2] = { NULL, NULL }, *x[2] = { NULL, NULL };
	uint64_t ties;
	double gap;
	int rc = -1;

	for (uint32_t i = 0; i < nops; i++) {
		const struct plan_op *op = plan_get_op(e->plan, i);
		for (uint32_t o = 0; o < op->nout; o++)
			if (op->out[o] == t)
				writer = i;
	}
	if (writer == UINT32_MAX ||
	    (values = stash_argmax_values(plan_get_op(e->plan, writer), t)) == UINT32_MAX ||
	    (kx = stash_find(s, values)) == s->n)
		return 0;
	for (uint32_t i = writer + 1; i < nops; i++) {
		const struct plan_op *op = plan_get_op(e->plan, i);
		for (uint32_t o = 0; o < op->nout; o++)
			if (op->out[o] == values)
				return 0;       /* not what the argmax saw */
	}
	const struct plan_tensor *px = plan_get_tensor(e->plan, values);
	uint64_t rows = s->item[k].count, cols = rows ? s->item[kx].count / rows : 0;
	if (cols == 0 || rows * cols != s->item[kx].count)
		return 0;
	if (stash_compare_bytes(e, s, kx, stash_is_ref, 1, &rx, err) != 0)
		return -1;
	if (!rx.pass)
		return 0;
	/* [0] what the replay got, [1] the reference */
	for (int side = 0; side < 2; side++) {
		int kept = side == 0 ? !stash_is_ref : stash_is_ref;
		if (stash_to_host(e, s, k, kept, &idx[side], err) != 0 ||
		    stash_to_host(e, s, kx, kept, &x[side], err) != 0)
			goto out;
	}
	if (verify_argmax_ties(px->dtype, x[0], x[1], cols, idx[0], idx[1], rows, &ties, &gap)) {
		/* an index's difference has no relative error of its own: the
		 * input's is what bounds it */
		r->pass = 1;
		r->rel_error = rx.rel_error;
		r->ties = ties;
	}
	rc = 0;
out:
	for (int side = 0; side < 2; side++) {
		free(idx[side]);
		free(x[side]);
	}
	return rc;
}

int stash_compare(struct engine *e, const struct stash *s, uint32_t k, int stash_is_ref,
                  int tolerant, struct verify_result *r, struct engine_error *err)
{
	if (stash_compare_bytes(e, s, k, stash_is_ref, tolerant, r, err) != 0)
		return -1;
	if (!r->pass && tolerant &&
	    plan_get_tensor(e->plan, s->item[k].tensor)->dtype == PLAN_DTYPE_I32)
		return stash_argmax_ties(e, s, k, stash_is_ref, r, err);
	return 0;
}

int stash_check(struct engine *e, const struct stash *s, int tolerant, struct stash_verdict *v,
                struct engine_error *err)
{
	memset(v, 0, sizeof *v);
	v->pass = 1;
	v->exact = 1;
	for (uint32_t k = 0; k < s->n; k++) {
		const struct plan_tensor *pt = plan_get_tensor(e->plan, s->item[k].tensor);
		struct verify_result r;
		if (stash_compare(e, s, k, 0, tolerant, &r, err) != 0)
			return -1;
		if (!r.exact)
			v->exact = 0;
		if (r.rel_error > v->error || r.rel_error != r.rel_error)
			v->error = r.rel_error;
		v->ties += r.ties;
		if (!r.pass && v->pass) {
			v->pass = 0;
			snprintf(v->detail, sizeof v->detail,
			         "'%s' differs from the eager run in %llu of %llu elements "
			         "(relative error %.3g)", pt->name, (unsigned long long)r.mismatches,
			         (unsigned long long)r.count, r.rel_error);
		}
	}
	return 0;
}

void stash_verdict_text(const struct stash_verdict *v, char *buf, size_t len)
{
	if (!v->pass)
		snprintf(buf, len, "FAILED: %s", v->detail);
	else if (v->exact)
		snprintf(buf, len, "bit-exact with eager");
	else if (v->ties > 0)
		snprintf(buf, len, "within bounds of eager (relative error %.2g; %llu argmax row%s "
		         "near-tied)", v->error, (unsigned long long)v->ties, v->ties == 1 ? "" : "s");
	else
		snprintf(buf, len, "within bounds of eager (relative error %.2g)", v->error);
}

void stash_verdict_json(struct plan_json *j, const struct stash_verdict *v)
{
	plan_json_object_begin(j);
	plan_json_key(j, "pass");
	plan_json_bool(j, v->pass);
	plan_json_key(j, "bit_exact");
	plan_json_bool(j, v->exact);
	plan_json_key(j, "rel_error");
	plan_json_double(j, v->error);
	plan_json_key(j, "argmax_ties");
	plan_json_uint(j, v->ties);
	plan_json_key(j, "detail");
	plan_json_string(j, v->detail);
	plan_json_object_end(j);
}
