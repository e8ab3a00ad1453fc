/*
 * host-dist.c - the tensor-parallel kinds on the host: all_reduce and
 * all_gather through the rank's communicator (dist/comm.h), and
 * vocab_embedding.
 *
 * The collectives are the only host kernels that can fail (a rank that
 * never arrives, a group aborted): the host backend calls
 * host_collective() and reports its error as the step's fault. Reached
 * through the kernel table instead (the unit tests), a failed collective
 * leaves NaN in out, never a plausible result.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/comm.h"
#include "host-kernels.h"
#include "host.h"

static int host_fail(char *msg, size_t len, const char *what)
{
	if (msg != NULL && len > 0)
		snprintf(msg, len, "%s", what);
	return -1;
}

static int host_all_reduce(const struct op_call *call, char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *out = &call->out[0];
	int64_t n = host_numel(out);

	if (out->data != x->data)
		memcpy(out->data, x->data, (size_t)n * host_dtype_size(out->dtype));
	if (call->comm == NULL || call->comm->world == 1)
		return 0;
	call->comm->current = call->name;
	return dist_all_reduce(call->comm, out->data, (uint64_t)n, out->dtype, NULL, msg, len);
}

/* out[r, k*C + j] = rank k's x[r, j]: gather the ranks' x one after the
 * other, then lay their columns side by side. */
static int host_all_gather(const struct op_call *call, char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *out = &call->out[0];
	int64_t rows = host_rows(x), C = host_cols(x);
	int world = call->comm != NULL ? call->comm->world : 1;
	size_t es = host_dtype_size(x->dtype);
	unsigned char *all;
	int rc;

	if (host_cols(out) != (int64_t)world * C) {
		char m[160];
		snprintf(m, sizeof m, "all_gather: out has %lld columns; %d ranks of %lld need %lld",
		         (long long)host_cols(out), world, (long long)C, (long long)world * C);
		return host_fail(msg, len, m);
	}
	if (world > 1)
		call->comm->current = call->name;
	if (world == 1 || rows == 1) {
		if (world == 1) {
			memmove(out->data, x->data, (size_t)(rows * C) * es);
			return 0;
		}
		return dist_all_gather(call->comm, x->data, out->data, (uint64_t)C, x->dtype, NULL,
		                       msg, len);
	}
	all = malloc((size_t)world * (size_t)(rows * C) * es);
	if (all == NULL)
		return host_fail(msg, len, "all_gather: out of memory");
	rc = dist_all_gather(call->comm, x->data, all, (uint64_t)(rows * C), x->dtype, NULL, msg,
	                     len);
	if (rc == 0)
		for (int k = 0; k < world; k++)
			for (int64_t r = 0; r < rows; r++)
				memcpy((unsigned char *)out->data + (size_t)(r * world * C + k * C) * es,
				       all + (size_t)((int64_t)k * rows * C + r * C) * es, (size_t)C * es);
	free(all);
	return rc;
}

int host_collective(const struct op_call *call, char *msg, size_t len)
{
	switch (call->kind->id) {
	case OP_ALL_REDUCE:
		return host_all_reduce(call, msg, len);
	case OP_ALL_GATHER:
		return host_all_gather(call, msg, len);
	default:
		return host_fail(msg, len, "not a collective");
	}
}

static void host_run_collective(const struct op_call *call)
{
	const struct op_tensor *out = &call->out[0];
	char msg[256];

	if (host_collective(call, msg, sizeof msg) != 0)
		for (int64_t i = 0; i < host_numel(out); i++)
			host_put(out, i, NAN);
}

void host_run_all_reduce(const struct op_call *call)
{
	host_run_collective(call);
}

void host_run_all_gather(const struct op_call *call)
{
	host_run_collective(call);
}

/* out[t] = table[ids[t] - vocab_start] inside the share, else zeros. */
void host_run_vocab_embedding(const struct op_call *call)
{
	const struct op_tensor *table = &call->in[0], *ids = &call->in[1];
	const struct op_tensor *out = &call->out[0];
	int64_t V = host_rows(table), H = host_cols(out), T = host_numel(ids);
	int64_t start = call->attr[VEMB_VOCAB_START].i;

	for (int64_t t = 0; t < T; t++) {
		int64_t id = (int64_t)host_get_i32(ids, t) - start;
		if (id >= 0 && id < V)
			host_copy_elems(out, t * H, table, id * H, H);
		else
			for (int64_t j = 0; j < H; j++)
				host_put(out, t * H + j, 0.0f);
	}
}
