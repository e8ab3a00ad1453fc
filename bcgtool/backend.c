/*
 * backend.c - the backends this build has, and what they share.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "backend.h"

extern const struct backend_ops backend_host;
#ifdef HAVE_CUDA
extern const struct backend_ops backend_cuda;
#endif

const struct backend_ops *const backend_table[] = {
#ifdef HAVE_CUDA
	&backend_cuda,
#endif
	&backend_host,
	NULL
};

const struct backend_ops *backend_find(const char *name)
{
	for (const struct backend_ops *const *b = backend_table; *b != NULL; b++)
		if (strcmp((*b)->name, name) == 0)
			return *b;
	return NULL;
}

void backend_capture_release(struct backend_capture *cap)
{
	if (cap == NULL)
		return;
	for (uint32_t i = 0; i < cap->nnodes; i++) {
		free((char *)cap->nodes[i].kernel);
		free((struct plan_param *)cap->nodes[i].params);
	}
	free(cap->nodes);
	free(cap->edges);
	free(cap->keys);
	memset(cap, 0, sizeof *cap);
}
