/*
 * schedule.c - split a variant's ops into segments and breakpoints.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"
#include "schedule.h"

int schedule_graph_safe(const plan_t *program, uint32_t op, int mode)
{
	const struct plan_op *o = plan_get_op(program, op);
	const struct op_kind *k = o ? op_kind_find(o->kind) : NULL;

	return k != NULL && mode == PLAN_MODE_FULL && k->capture == OP_CAPTURE_SAFE_FORM;
}

/* Decide one op: 0 captured, 1 breakpoint (reason and detail filled), -1 it
 * cannot run in MODE (detail says why). */
static int schedule_decide(const struct plan_op *o, const struct op_kind *k, int mode,
                           int *reason, char *detail, size_t len)
{
	if (mode == PLAN_MODE_EAGER) {
		*reason = PLAN_BREAK_MODE;
		snprintf(detail, len, "the variant's mode is eager");
		return 1;
	}
	if (o->flags & PLAN_OP_EAGER) {
		if (mode == PLAN_MODE_FULL) {
			snprintf(detail, len, "it is marked eager: true, and full mode has no breaks");
			return -1;
		}
		*reason = PLAN_BREAK_FORCED;
		snprintf(detail, len, "marked eager: true in the script");
		return 1;
	}
	switch (k->capture) {
	case OP_CAPTURE_ALWAYS:
		return 0;
	case OP_CAPTURE_SAFE_FORM:
		if (mode == PLAN_MODE_FULL)
			return 0;
		*reason = PLAN_BREAK_KIND;
		snprintf(detail, len, "%s", k->capture_why ? k->capture_why : "not capturable");
		return 1;
	default:
		if (mode == PLAN_MODE_FULL) {
			snprintf(detail, len, "%s has no graph-safe form (%s)", k->name,
			         k->capture_why ? k->capture_why : "not capturable");
			return -1;
		}
		*reason = PLAN_BREAK_KIND;
		snprintf(detail, len, "%s", k->capture_why ? k->capture_why : "not capturable");
		return 1;
	}
}

int schedule_build(const plan_t *program, int mode, struct schedule *out,
                   uint32_t *op_out, char *msg, size_t len)
{
	uint32_t nops = plan_count_ops(program);
	struct sched_item *items = NULL;
	uint32_t n = 0;

	memset(out, 0, sizeof *out);
	if (nops > 0 && (items = calloc((size_t)nops, sizeof *items)) == NULL) {
		snprintf(msg, len, "out of memory");
		return -1;
	}
	for (uint32_t i = 0; i < nops; i++) {
		const struct plan_op *o = plan_get_op(program, i);
		const struct op_kind *k = op_kind_find(o->kind);
		char detail[sizeof items->detail];
		int reason = 0, d;

		if (k == NULL) {
			snprintf(msg, len, "op %u: unknown op kind '%s'", i, o->kind);
			goto fail;
		}
		d = schedule_decide(o, k, mode, &reason, detail, sizeof detail);
		if (d < 0) {
			char name[128];
			plan_op_label(program, i, name, sizeof name);
			snprintf(msg, len, "op '%s' cannot run in %s mode: %s", name,
			         plan_mode_name(mode), detail);
			if (op_out != NULL)
				*op_out = i;
			goto fail;
		}
		if (d == 0) {
			if (n > 0 && items[n - 1].kind == PLAN_ITEM_SEGMENT) {
				items[n - 1].op_count++;
			} else {
				items[n].kind = PLAN_ITEM_SEGMENT;
				items[n].op_first = i;
				items[n].op_count = 1;
				n++;
			}
		} else {
			items[n].kind = PLAN_ITEM_BREAK;
			items[n].op_first = i;
			items[n].op_count = 1;
			items[n].reason = reason;
			memcpy(items[n].detail, detail, sizeof detail);
			n++;
		}
	}
	out->mode = mode;
	out->nitems = n;
	out->items = items;
	return 0;
fail:
	free(items);
	return -1;
}

void schedule_release(struct schedule *sched)
{
	free(sched->items);
	memset(sched, 0, sizeof *sched);
}
