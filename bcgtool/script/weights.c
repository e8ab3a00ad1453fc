/*
 * weights.c - tensors initialized from safetensors checkpoints, and the
 * prompt feed's feedback tensor.
 *
 * A weight's init names a file (resolved against the script's directory:
 * a safetensors file, or the index of a sharded checkpoint) and one or
 * more checkpoint tensors. Several tensors are stacked along the first
 * axis, in order, into row blocks of the script's tensor: the q, k and v
 * projections of a checkpoint fill one [q|k|v, H] weight with no copy at
 * run time, each block read straight into its place. In a family, "{l}"
 * in a name stands for the member's index. Everything that can be checked
 * without reading the data is checked here, at the init's position:
 * files, names, dtypes and shapes.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "model/safetensors.h"

void weights_release(struct sp *p)
{
	for (uint32_t i = 0; i < p->nckpts; i++)
		st_checkpoint_close(p->ckpts[i]);
	free(p->ckpts);
	p->ckpts = NULL;
	p->nckpts = 0;
}

/* The checkpoint at FILE (as the script writes it), opened once. */
static int weights_open(struct sp *p, yaml_node_t *node, const char *file,
                        struct st_checkpoint **out)
{
	const char *slash = strrchr(p->path, '/');
	char joined[PATH_MAX], real[PATH_MAX], msg[512];
	struct st_checkpoint **grown;

	if (file[0] == '/' || slash == NULL)
		snprintf(joined, sizeof joined, "%s", file);
	else
		snprintf(joined, sizeof joined, "%.*s/%s", (int)(slash - p->path), p->path, file);
	if (realpath(joined, real) == NULL)
		return sp_error(p, node, "%s: cannot open: %s", joined, strerror(errno));
	for (uint32_t i = 0; i < p->nckpts; i++)
		if (strcmp(p->ckpts[i]->path, real) == 0) {
			*out = p->ckpts[i];
			return 0;
		}
	if ((grown = realloc(p->ckpts, (p->nckpts + 1) * sizeof *grown)) == NULL)
		return sp_error(p, node, "out of memory");
	p->ckpts = grown;
	if (st_checkpoint_open(real, &p->ckpts[p->nckpts], msg, sizeof msg) != 0)
		return sp_error(p, node, "%s", msg);
	*out = p->ckpts[p->nckpts++];
	return 0;
}

/* NAME with every "{l}" replaced by MEMBER. */
static int weights_expand(struct sp *p, yaml_node_t *node, const char *name, int64_t member,
                          int family, const char *tensor, char *out, size_t len)
{
	size_t n = 0;

	for (const char *s = name; *s != '\0';) {
		if (strncmp(s, "{l}", 3) == 0) {
			if (!family)
				return sp_error(p, node, "'{l}' in checkpoint name '%.64s' stands for the "
				                "member of a family, and tensor '%s' has no count", name,
				                tensor);
			n += (size_t)snprintf(out + n, n < len ? len - n : 0, "%lld", (long long)member);
			s += 3;
		} else {
			if (n + 1 < len)
				out[n] = *s;
			n++;
			s++;
		}
	}
	if (n >= len)
		return sp_error(p, node, "checkpoint name '%.64s' is too long", name);
	out[n] = '\0';
	return 0;
}

static void weights_shape_text(const int64_t *shape, int rank, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "[");

	for (int i = 0; i < rank && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
	if (n < len)
		snprintf(buf + n, len - n, "]");
}

/* Member M of W: every block. */
static int weights_member(struct sp *p, const struct weight_decl *w, struct st_checkpoint *ck,
                          yaml_node_t *const *names, uint32_t nnames, uint32_t m)
{
	uint32_t ti = w->first + m;
	const struct plan_tensor *pt = plan_get_tensor(p->plan, ti);
	int64_t want[PLAN_MAX_RANK], rows = 0, row_elems = 1;
	char expanded[1024], a[128], b[128];

	for (uint32_t i = 0; i < pt->rank; i++) {
		want[i] = plan_axis_size(p->plan, &pt->shape[i], 1);
		if (i > 0)
			row_elems *= want[i];
	}
	for (uint32_t k = 0; k < nnames; k++) {
		const struct st_file *f;
		const struct st_tensor *st;
		const char *name = walk_scalar(p, names[k], "a checkpoint tensor name");
		char msg[600];
		struct plan_diag diag;

		if (name == NULL ||
		    weights_expand(p, names[k], name, m, w->family, w->tensor, expanded,
		                   sizeof expanded) != 0)
			return -1;
		if (st_checkpoint_find(ck, expanded, &f, &st, msg, sizeof msg) != 0)
			return sp_error(p, names[k], "%s", msg);
		if (st->dtype == 0)
			return sp_error(p, names[k], "%s: tensor '%s' is %s; weights load from F32, "
			                "F16 or BF16", f->path, expanded, st->dtype_name);
		weights_shape_text(st->shape, st->rank, a, sizeof a);
		/* A checkpoint tensor of higher rank fills the tensor with its
		 * leading axes flattened into rows: fused experts [E, 2I, H] into
		 * [E*2I, H]. */
		int64_t got[ST_MAX_RANK];
		int lead = st->rank - (int)pt->rank;
		if (lead < 0 || pt->rank < 1) {
			weights_shape_text(want, (int)pt->rank, b, sizeof b);
			return sp_error(p, names[k], "%s: tensor '%s' has shape %s; tensor '%s' is %s",
			                f->path, expanded, a, pt->name, b);
		}
		got[0] = 1;
		for (int i = 0; i <= lead; i++)
			got[0] *= st->shape[i];
		for (uint32_t i = 1; i < pt->rank; i++)
			got[i] = st->shape[lead + (int)i];
		for (uint32_t i = 1; i < pt->rank; i++)
			if (got[i] != want[i]) {
				weights_shape_text(want, (int)pt->rank, b, sizeof b);
				return sp_error(p, names[k], "%s: tensor '%s' has shape %s; tensor '%s' is %s",
				                f->path, expanded, a, pt->name, b);
			}
		if (nnames == 1 && got[0] != want[0]) {
			weights_shape_text(want, (int)pt->rank, b, sizeof b);
			return sp_error(p, names[k], "%s: tensor '%s' has shape %s; tensor '%s' is %s",
			                f->path, expanded, a, pt->name, b);
		}
		if (rows + got[0] > want[0]) {
			weights_shape_text(want, (int)pt->rank, b, sizeof b);
			return sp_error(p, names[k], "%s: tensor '%s' %s overflows tensor '%s' %s: the "
			                "blocks before it take %lld of its %lld rows", f->path, expanded,
			                a, pt->name, b, (long long)rows, (long long)want[0]);
		}
		struct plan_weight_source ws = {
			.tensor = ti,
			.offset = (uint64_t)(rows * row_elems) * plan_dtype_size(pt->dtype),
			.file = f->path, .name = expanded, .dtype = st->dtype,
			.bytes = st->end - st->begin,
		};
		if (plan_add_weight_source(p->plan, &ws, NULL, &diag) != 0)
			return sp_error(p, names[k], "%s", diag.message);
		rows += got[0];
	}
	if (rows != want[0]) {
		weights_shape_text(want, (int)pt->rank, b, sizeof b);
		return sp_error(p, w->names_node, "the checkpoint tensors stacked into tensor '%s' %s "
		                "have %lld rows in all; it has %lld", pt->name, b, (long long)rows,
		                (long long)want[0]);
	}
	return 0;
}

int weights_add(struct sp *p, const struct weight_decl *w)
{
	yaml_node_t *names[1024];
	uint32_t nnames = 0;
	struct st_checkpoint *ck = NULL;
	const char *file = walk_scalar(p, w->file_node, "a file name");

	if (file == NULL)
		return -1;
	if (w->names_node->type == YAML_SCALAR_NODE) {
		names[nnames++] = w->names_node;
	} else if (w->names_node->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *it = w->names_node->data.sequence.items.start;
		     it < w->names_node->data.sequence.items.top; it++) {
			if (nnames == sizeof names / sizeof names[0])
				return sp_error(p, w->names_node, "more than %zu checkpoint tensors in "
				                "one weight", sizeof names / sizeof names[0]);
			names[nnames++] = walk_node(p, *it);
		}
		if (nnames == 0)
			return sp_error(p, w->names_node, "the list of checkpoint tensors is empty");
	} else {
		return sp_error(p, w->names_node, "expected a scalar or a sequence for the "
		                "checkpoint tensor of tensor '%s', found %s", w->tensor,
		                walk_type_name(w->names_node->type));
	}
	if (weights_open(p, w->file_node, file, &ck) != 0)
		return -1;
	for (uint32_t m = 0; m < w->count; m++)
		if (weights_member(p, w, ck, names, nnames, m) != 0)
			return -1;
	return 0;
}

int weights_prompt(struct sp *p)
{
	const char *name;
	const struct sym *sym;
	const struct plan_tensor *t, *from;
	uint32_t fi;

	if (p->prompt_node == NULL)
		return 0;
	if ((name = walk_scalar(p, p->prompt_from, "a tensor name")) == NULL)
		return -1;
	sym = symtab_find(&p->names, name);
	if (sym == NULL || sym->kind != SYM_TENSOR)
		return sp_error(p, p->prompt_from, "undefined tensor '%.64s'", name);
	if (p->tensors[sym->index].family)
		return sp_error(p, p->prompt_from, "'%s' is a family; a prompt feed takes back one "
		                "tensor", name);
	fi = p->tensors[sym->index].first;
	from = plan_get_tensor(p->plan, fi);
	t = plan_get_tensor(p->plan, p->prompt_tensor);
	if (from->dtype != PLAN_DTYPE_I32 || from->rank != 1 ||
	    from->shape[0].dim != p->token_dim)
		return sp_error(p, p->prompt_from, "the feedback of a prompt feed must be an i32 "
		                "tensor of shape [%s], as argmax writes it; '%s' is not",
		                plan_get_dim(p->plan, p->token_dim)->name, name);
	if (from->role != PLAN_ROLE_OUTPUT)
		return sp_error(p, p->prompt_from, "the feedback of a prompt feed must be an output "
		                "(it is read back after each step); '%s' is %s %s", name,
		                from->role == PLAN_ROLE_ACTIVATION ? "an" : "a",
		                plan_role_name(from->role));
	struct plan_feed feed = t->feed;
	struct plan_diag diag;
	feed.from = fi;
	if (plan_set_tensor_feed(p->plan, p->prompt_tensor, &feed, &diag) != 0)
		return sp_error(p, p->prompt_from, "%s", diag.message);
	return 0;
}
