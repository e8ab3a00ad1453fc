/*
 * memplan.c - place tensors in one arena, reusing activation space.
 *
 * Activations are placed greedily, largest first, each at the lowest
 * aligned offset where it overlaps no placed activation whose lifetime
 * overlaps its own. Persistent tensors and var mirrors come first, packed.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memplan.h"

#define ALIGN_UP(x) (((x) + (MEMPLAN_ALIGNMENT - 1)) & ~(uint64_t)(MEMPLAN_ALIGNMENT - 1))

void memplan_liveness(const plan_t *program, uint32_t *first, uint32_t *last)
{
	uint32_t nt = plan_count_tensors(program), nops = plan_count_ops(program);

	for (uint32_t t = 0; t < nt; t++)
		first[t] = last[t] = PLAN_NONE;
	for (uint32_t i = 0; i < nops; i++) {
		const struct plan_op *o = plan_get_op(program, i);
		for (uint32_t k = 0; k < o->nin + o->nout; k++) {
			uint32_t t = k < o->nin ? o->in[k] : o->out[k - o->nin];
			if (first[t] == PLAN_NONE)
				first[t] = i;
			last[t] = i;
		}
	}
}

struct slot {
	uint32_t tensor;
	uint64_t bytes;
	uint64_t offset;
};

static int by_size_desc(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->tensor < y->tensor ? -1 : x->tensor > y->tensor;
}

static int lifetimes_overlap(const uint32_t *first, const uint32_t *last, uint32_t a, uint32_t b)
{
	return first[a] <= last[b] && first[b] <= last[a];
}

/* Place the activations in SLOTS (sorted) from BASE; returns the end. */
static uint64_t place_activations(struct slot *slots, uint32_t n, const uint32_t *first,
                                  const uint32_t *last, uint64_t base)
{
	uint64_t end = base;

	for (uint32_t i = 0; i < n; i++) {
		uint64_t off = base;
		int moved = 1;
		/* Slide past every conflicting placed slot until none overlaps:
		 * each pass moves off forward, so this ends. */
		while (moved) {
			moved = 0;
			for (uint32_t j = 0; j < i; j++) {
				if (!lifetimes_overlap(first, last, slots[i].tensor, slots[j].tensor))
					continue;
				if (off < slots[j].offset + slots[j].bytes && slots[j].offset < off + slots[i].bytes) {
					off = ALIGN_UP(slots[j].offset + slots[j].bytes);
					moved = 1;
				}
			}
		}
		slots[i].offset = off;
		if (off + slots[i].bytes > end)
			end = off + slots[i].bytes;
	}
	return ALIGN_UP(end);
}

static int memplan_collect(const plan_t *program, int64_t tokens, const uint32_t *first,
                           struct slot *slots, uint32_t *n, uint64_t *unshared)
{
	uint32_t nt = plan_count_tensors(program);

	*n = 0;
	for (uint32_t t = 0; t < nt; t++) {
		const struct plan_tensor *pt = plan_get_tensor(program, t);
		uint64_t bytes = plan_tensor_bytes(program, t, tokens);
		if (bytes == UINT64_MAX || bytes > (UINT64_C(1) << 48))
			return -1;
		*unshared += ALIGN_UP(bytes);
		if (pt->role == PLAN_ROLE_ACTIVATION && first[t] != PLAN_NONE) {
			slots[*n].tensor = t;
			slots[*n].bytes = ALIGN_UP(bytes);
			slots[*n].offset = 0;
			(*n)++;
		}
	}
	qsort(slots, *n, sizeof *slots, by_size_desc);
	return 0;
}

int memplan_place(plan_t *program, const int64_t *tokens, uint32_t n,
                  struct memplan *out, char *msg, size_t len)
{
	uint32_t nt = plan_count_tensors(program), nv = plan_count_vars(program);
	uint32_t *first = NULL, *last = NULL, nslots;
	struct slot *slots = NULL;
	int64_t max_tokens = 0;
	uint64_t off = 0, unshared = 0, persistent;
	int rc = -1;

	memset(out, 0, sizeof *out);
	for (uint32_t i = 0; i < n; i++)
		if (tokens[i] > max_tokens)
			max_tokens = tokens[i];
	first = malloc(sizeof *first * (nt ? nt : 1));
	last = malloc(sizeof *last * (nt ? nt : 1));
	slots = malloc(sizeof *slots * (nt ? nt : 1));
	out->peak_bytes = calloc(n ? n : 1, sizeof *out->peak_bytes);
	if (first == NULL || last == NULL || slots == NULL || out->peak_bytes == NULL) {
		snprintf(msg, len, "out of memory planning the arena");
		goto out;
	}
	out->nvariants = n;
	memplan_liveness(program, first, last);

	/* Persistent tensors, then the var mirrors (4 bytes each). */
	for (uint32_t t = 0; t < nt; t++) {
		const struct plan_tensor *pt = plan_get_tensor(program, t);
		if (pt->role == PLAN_ROLE_ACTIVATION)
			continue;
		uint64_t bytes = plan_tensor_bytes(program, t, max_tokens);
		if (bytes == UINT64_MAX || bytes > (UINT64_C(1) << 48)) {
			snprintf(msg, len, "tensor '%s' is too large to place", pt->name);
			goto out;
		}
		plan_set_tensor_placement(program, t, off, bytes, NULL);
		off = ALIGN_UP(off + bytes);
	}
	for (uint32_t v = 0; v < nv; v++) {
		plan_set_var_offset(program, v, off, NULL);
		off = ALIGN_UP(off + 4);
	}
	persistent = off;

	/* Each variant alone, for its peak; then the largest, for real. */
	for (uint32_t i = 0; i < n; i++) {
		uint64_t ignored = 0;
		if (memplan_collect(program, tokens[i], first, slots, &nslots, &ignored) != 0) {
			snprintf(msg, len, "a tensor is too large to place at %lld tokens",
			         (long long)tokens[i]);
			goto out;
		}
		out->peak_bytes[i] = place_activations(slots, nslots, first, last, persistent);
	}
	if (memplan_collect(program, max_tokens, first, slots, &nslots, &unshared) != 0) {
		snprintf(msg, len, "a tensor is too large to place");
		goto out;
	}
	out->arena_bytes = place_activations(slots, nslots, first, last, persistent);
	for (uint32_t i = 0; i < nslots; i++)
		plan_set_tensor_placement(program, slots[i].tensor, slots[i].offset,
		                          plan_tensor_bytes(program, slots[i].tensor, max_tokens), NULL);
	/* Activations nothing touches still get a place: at the start of the
	 * activation area, zero-sized for liveness purposes. */
	for (uint32_t t = 0; t < nt; t++) {
		const struct plan_tensor *pt = plan_get_tensor(program, t);
		if (pt->role == PLAN_ROLE_ACTIVATION && first[t] == PLAN_NONE)
			plan_set_tensor_placement(program, t, persistent, 0, NULL);
	}
	/* Without reuse: every tensor (counted by memplan_collect) plus the
	 * var mirrors. */
	unshared += (uint64_t)nv * ALIGN_UP(4);
	out->persistent_bytes = persistent;
	out->unshared_bytes = unshared;
	{
		struct plan_layout layout = {
			.arena_bytes = out->arena_bytes,
			.unshared_bytes = out->unshared_bytes,
			.alignment = MEMPLAN_ALIGNMENT,
		};
		plan_set_layout(program, &layout, NULL);
	}
	rc = 0;
out:
	free(first);
	free(last);
	free(slots);
	if (rc != 0)
		memplan_release(out);
	return rc;
}

void memplan_release(struct memplan *mp)
{
	free(mp->peak_bytes);
	memset(mp, 0, sizeof *mp);
}

/* The activations of SLOTS, largest first, placed past OFF by their live
 * ranges (FIRST, LAST) into OFFSET; the end of the region. */
static uint64_t place_slots(struct slot *slots, uint32_t nslots, const uint32_t *first,
                            const uint32_t *last, uint64_t off, uint64_t *offset)
{
	uint64_t end;

	qsort(slots, nslots, sizeof *slots, by_size_desc);
	end = place_activations(slots, nslots, first, last, off);
	for (uint32_t i = 0; i < nslots; i++)
		offset[slots[i].tensor] = slots[i].offset;
	return end;
}

/* What a placement does with a tensor (struct place_rule). */
enum place_how { PLACE_SKIP, PLACE_FIXED, PLACE_SLOT, PLACE_FAIL };

/* A placement: which tensors it places and how. HOW is asked of each
 * tensor with its bytes at the placement's token count and the first op
 * touching it; PLACE_FAIL has written its sentence to MSG. */
struct place_rule {
	const char *what;              /* "planning WHAT", when memory runs out */
	enum place_how (*how)(const struct place_rule *r, const plan_t *program, uint32_t t,
	                      uint64_t bytes, uint32_t first, char *msg, size_t len);
	int64_t planned;               /* memplan_place_above's */
	const unsigned char *in;       /* memplan_place_subset's */
};

/* The tensors RULE takes, at TOKENS tokens, from BASE: the fixed ones
 * packed in tensor order, then the activations sharing space by liveness.
 * OFFSET[t] UINT64_MAX for the others; *END the end. */
static int place_by_rule(const plan_t *program, const struct place_rule *rule, int64_t tokens,
                         uint64_t base, uint64_t *offset, uint64_t *end, char *msg, size_t len)
{
	uint32_t nt = plan_count_tensors(program), nslots = 0;
	uint32_t *first = malloc(sizeof *first * (nt ? nt : 1));
	uint32_t *last = malloc(sizeof *last * (nt ? nt : 1));
	struct slot *slots = malloc(sizeof *slots * (nt ? nt : 1));
	uint64_t off = ALIGN_UP(base);
	int rc = -1;

	if (first == NULL || last == NULL || slots == NULL) {
		snprintf(msg, len, "out of memory planning %s", rule->what);
		goto out;
	}
	memplan_liveness(program, first, last);
	for (uint32_t t = 0; t < nt; t++) {
		const struct plan_tensor *pt = plan_get_tensor(program, t);
		uint64_t bytes = plan_tensor_bytes(program, t, tokens);
		enum place_how how = rule->how(rule, program, t, bytes, first[t], msg, len);

		offset[t] = UINT64_MAX;
		if (how == PLACE_SKIP)
			continue;
		if (bytes == UINT64_MAX || bytes > (UINT64_C(1) << 48)) {
			snprintf(msg, len, "tensor '%s' is too large to place at %lld tokens", pt->name,
			         (long long)tokens);
			goto out;
		}
		if (how == PLACE_FAIL)
			goto out;
		if (how == PLACE_SLOT) {
			slots[nslots++] = (struct slot){ .tensor = t, .bytes = ALIGN_UP(bytes) };
			continue;
		}
		offset[t] = off;
		off = ALIGN_UP(off + bytes);
	}
	*end = place_slots(slots, nslots, first, last, off, offset);
	rc = 0;
out:
	free(first);
	free(last);
	free(slots);
	return rc;
}

/* Above the arena: what grows past its size at r->planned tokens. */
static enum place_how place_above_how(const struct place_rule *r, const plan_t *program,
                                      uint32_t t, uint64_t bytes, uint32_t first, char *msg,
                                      size_t len)
{
	const struct plan_tensor *pt = plan_get_tensor(program, t);

	if (bytes == plan_tensor_bytes(program, t, r->planned) || first == PLAN_NONE)
		return PLACE_SKIP;
	if (pt->role == PLAN_ROLE_WEIGHT || pt->role == PLAN_ROLE_STATE) {
		snprintf(msg, len, "%s '%s' grows with the token count: its contents carry "
		         "from step to step in the arena, planned for %lld tokens, so no step "
		         "can run above them", pt->role == PLAN_ROLE_WEIGHT ? "weight" : "state",
		         pt->name, (long long)r->planned);
		return PLACE_FAIL;
	}
	return pt->role == PLAN_ROLE_ACTIVATION ? PLACE_SLOT : PLACE_FIXED;
}

int memplan_place_above(const plan_t *program, int64_t planned, int64_t tokens, uint64_t base,
                        uint64_t *offset, uint64_t *end, char *msg, size_t len)
{
	const struct place_rule rule = {
		.what = "the room for eager steps", .how = place_above_how, .planned = planned,
	};

	return place_by_rule(program, &rule, tokens, base, offset, end, msg, len);
}

/* A region of the tensors r->in marks. */
static enum place_how place_subset_how(const struct place_rule *r, const plan_t *program,
                                       uint32_t t, uint64_t bytes, uint32_t first, char *msg,
                                       size_t len)
{
	(void)bytes;
	(void)msg;
	(void)len;
	if (!r->in[t])
		return PLACE_SKIP;
	return plan_get_tensor(program, t)->role == PLAN_ROLE_ACTIVATION && first != PLAN_NONE
	       ? PLACE_SLOT : PLACE_FIXED;
}

int memplan_place_subset(const plan_t *program, int64_t tokens, const unsigned char *in,
                         uint64_t *offset, uint64_t *end, char *msg, size_t len)
{
	const struct place_rule rule = { .what = "a region", .how = place_subset_how, .in = in };

	return place_by_rule(program, &rule, tokens, 0, offset, end, msg, len);
}
