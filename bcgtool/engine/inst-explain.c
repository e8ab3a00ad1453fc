/*
 * inst-explain.c - the first difference between a segment as recorded in a
 * plan and as rebuilt, in words: what `bcgtool instantiate` prints for a
 * drift, for script plans (instantiate.c) and recorded ones
 * (record/rebuild.c) alike.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "instantiate.h"

static void shape3(const uint32_t *v, char *buf, size_t len)
{
	snprintf(buf, len, "[%u,%u,%u]", v[0], v[1], v[2]);
}

void instantiate_explain(const struct plan_segment *want, const struct plan_segment *got,
                         char *buf, size_t len)
{
	char a[48], b[48];

	buf[0] = '\0';
	if (want->nnodes != got->nnodes) {
		snprintf(buf, len, "node count %u, rebuilt %u", want->nnodes, got->nnodes);
		return;
	}
	for (uint32_t i = 0; i < want->nnodes; i++) {
		const struct plan_node *w = &want->nodes[i], *g = &got->nodes[i];
		if (w->type != g->type) {
			snprintf(buf, len, "node %u: type %s, rebuilt %s", i,
			         plan_node_type_name(w->type), plan_node_type_name(g->type));
			return;
		}
		if (strcmp(w->kernel, g->kernel) != 0) {
			snprintf(buf, len, "node %u: kernel %s, rebuilt %s", i, w->kernel, g->kernel);
			return;
		}
		if (memcmp(w->grid, g->grid, sizeof w->grid) != 0) {
			shape3(w->grid, a, sizeof a);
			shape3(g->grid, b, sizeof b);
			snprintf(buf, len, "node %u (%s): grid %s, rebuilt %s", i, w->kernel, a, b);
			return;
		}
		if (memcmp(w->block, g->block, sizeof w->block) != 0) {
			shape3(w->block, a, sizeof a);
			shape3(g->block, b, sizeof b);
			snprintf(buf, len, "node %u (%s): block %s, rebuilt %s", i, w->kernel, a, b);
			return;
		}
		if (w->shmem != g->shmem) {
			snprintf(buf, len, "node %u (%s): shared memory %u, rebuilt %u", i, w->kernel,
			         w->shmem, g->shmem);
			return;
		}
		if (w->nparams != g->nparams) {
			snprintf(buf, len, "node %u (%s): %u arena operands, rebuilt %u", i, w->kernel,
			         w->nparams, g->nparams);
			return;
		}
		for (uint32_t p = 0; p < w->nparams; p++)
			if (w->params[p].index != g->params[p].index ||
			    w->params[p].offset != g->params[p].offset) {
				snprintf(buf, len, "node %u (%s): parameter word %u points at arena "
				         "offset %" PRIu64 ", rebuilt word %u at %" PRIu64, i, w->kernel,
				         w->params[p].index, w->params[p].offset, g->params[p].index,
				         g->params[p].offset);
				return;
			}
	}
	if (want->nedges != got->nedges) {
		snprintf(buf, len, "edge count %u, rebuilt %u", want->nedges, got->nedges);
		return;
	}
	for (uint32_t i = 0; i < want->nedges; i++) {
		const struct plan_edge *w = &want->edges[i], *g = &got->edges[i];
		if (w->from != g->from || w->to != g->to) {
			snprintf(buf, len, "edge %u: %u->%u, rebuilt %u->%u", i, w->from, w->to,
			         g->from, g->to);
			return;
		}
		/* A programmatic edge that came back plain (or the reverse) is
		 * a graph that overlaps its kernels differently. */
		if (w->type != g->type || w->from_port != g->from_port || w->to_port != g->to_port) {
			snprintf(buf, len, "edge %u (%u->%u): %s, ports %u->%u; rebuilt %s, "
			         "ports %u->%u", i, w->from, w->to,
			         w->type == PLAN_EDGE_PROGRAMMATIC ? "programmatic" : "default",
			         w->from_port, w->to_port,
			         g->type == PLAN_EDGE_PROGRAMMATIC ? "programmatic" : "default",
			         g->from_port, g->to_port);
			return;
		}
	}
	if (want->fingerprint != got->fingerprint)
		snprintf(buf, len, "fingerprint %016" PRIx64 ", rebuilt %016" PRIx64,
		         want->fingerprint, got->fingerprint);
}
