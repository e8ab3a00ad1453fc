/*
 * serve/dispatch.h - which captured variant runs a batch, and how much it
 * pads; and the statistics of the choices, as vLLM's dispatcher keeps them.
 *
 * A captured size holds a batch when it has at least the batch's tokens
 * and requests (a size of 0 requests holds any number) and, when the size
 * is for uniform decode only, the batch is uniform decode. The batch runs
 * on the smallest size (by tokens, then requests) that holds it, padded up
 * to it, in the mode the policy asks for:
 *  - full_and_breakable (vLLM's FULL_AND_PIECEWISE): a uniform decode
 *    batch on a full variant, else on a breakable one; any other batch on
 *    a breakable variant;
 *  - breakable: breakable variants only;
 *  - full: full variants only;
 *  - eager: never a variant.
 * A batch that no variant of the wanted mode holds runs eagerly, unpadded.
 */
#ifndef BCG_SERVE_DISPATCH_H
#define BCG_SERVE_DISPATCH_H

#include <stdint.h>

#include "plan.h"
#include "serve/batch.h"

enum serve_policy {
	SERVE_POLICY_FULL_AND_BREAKABLE,
	SERVE_POLICY_BREAKABLE,
	SERVE_POLICY_FULL,
	SERVE_POLICY_EAGER,
};
#define SERVE_NPOLICIES 4

/* "full_and_breakable", "breakable", "full", "eager". */
const char *serve_policy_name(int policy);
/* The policy named NAME, or -1. */
int serve_policy_parse(const char *name);

/* One captured variant. */
struct serve_size {
	struct serve_batch_key key;   /* requests 0: any number */
	int                    mode;  /* PLAN_MODE_BREAKABLE or PLAN_MODE_FULL */
	uint32_t               variant;
};

/* Where a batch runs. */
struct serve_pick {
	struct serve_batch_key padded;  /* the size it is padded to (eager: itself) */
	int                    mode;    /* PLAN_MODE_* */
	uint32_t               variant; /* PLAN_NONE: eager */
};

/* One line of the statistics: the steps that ran UNPADDED tokens padded to
 * PADDED in MODE. */
struct serve_dispatch_row {
	uint32_t unpadded;
	uint32_t padded;
	int      mode;
	uint64_t count;
};

struct serve_dispatch {
	int                        policy;
	uint32_t                   nsizes;
	struct serve_size         *sizes;       /* ascending tokens, then requests */
	uint32_t                   nrows;
	uint32_t                   rows_cap;
	struct serve_dispatch_row *rows;        /* sorted: padded, unpadded, mode */
	uint64_t                   steps;
	uint64_t                   mode_steps[4];   /* by PLAN_MODE_* (1..3) */
	uint64_t                   unpadded_tokens;
	uint64_t                   padded_tokens;
};

/* Copy the N captured SIZES; -1 out of memory. */
int serve_dispatch_init(struct serve_dispatch *d, const struct serve_size *sizes, uint32_t n,
                        int policy);
void serve_dispatch_release(struct serve_dispatch *d);

/* Where KEY runs under d's policy. */
void serve_dispatch_pick(const struct serve_dispatch *d, const struct serve_batch_key *key,
                         struct serve_pick *pick);

/* Count a step that ran KEY as PICK says. -1 out of memory. */
int serve_dispatch_record(struct serve_dispatch *d, const struct serve_batch_key *key,
                          const struct serve_pick *pick);

/*
 * The plan's dispatch table (plan-format.md, DISP and DKEY) that gives,
 * by plan_dispatch_lookup_key(), what serve_dispatch_pick gives under d's
 * policy, for every batch of up to the largest size's tokens: first the
 * uniform decode entries (one run of token counts a variant), then the
 * entries for any batch, one a size of the mode mixed batches run in, in
 * d's order, each starting above the sizes before it that hold as many
 * requests. *OUT (malloc'd, *N entries) names each size's variant field.
 * -1 out of memory.
 */
int serve_dispatch_table(const struct serve_dispatch *d, struct plan_dispatch **out,
                         uint32_t *n);

/* Padding waste: padded tokens that were not the batch's, over all padded
 * tokens (0 when nothing ran). */
double serve_dispatch_waste(const struct serve_dispatch *d);

#endif /* BCG_SERVE_DISPATCH_H */
