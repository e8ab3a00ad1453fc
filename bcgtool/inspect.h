/*
 * inspect.h - bcgtool inspect's sections, shared by cmd-inspect.c (the
 * summary, the program, the variants' items) and inspect-nodes.c (the
 * segments' nodes, the capture statistics and kernels).
 */
#ifndef BCG_INSPECT_H
#define BCG_INSPECT_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"
#include "table.h"
#include "util.h"

struct inspect {
	const plan_t *plan;
	const char   *path;
	uint32_t      variant;    /* PLAN_NONE: every variant */
	struct style  st;
	int           printed;    /* a section was printed: separate the next */
};

static inline int inspect_wanted(const struct inspect *in, uint32_t variant)
{
	return in->variant == PLAN_NONE || in->variant == variant;
}

/* A section's title, bold, after a blank line when one was printed. */
void inspect_title(struct inspect *in, const char *fmt, ...) BCG_PRINTF(2, 3);

/* "ops 0-6 embed..v_write", "op 8 o": COUNT ops from FIRST. */
void inspect_span(const plan_t *plan, uint32_t first, uint32_t count, char *buf, size_t len);

/* "0-6", "8". */
void inspect_range(uint32_t first, uint32_t count, char *buf, size_t len);

/* --nodes: each wanted variant's segments' nodes. */
void inspect_nodes(struct inspect *in);

/* A tensor-parallel plan's ranks side by side (inspect-ranks.c); nothing
 * for a plan of one rank. */
void inspect_ranks(struct inspect *in);

/* --stats: capture statistics, segments' times, a histogram of kernels. */
void inspect_stats(struct inspect *in);

#endif /* BCG_INSPECT_H */
