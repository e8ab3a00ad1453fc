/*
 * nvtx.c - the bcgtool NVTX domain.
 */
#include "config.h"

#include <stdlib.h>

#include "nvtx.h"

#ifdef HAVE_NVTX
#include <pthread.h>

#include <nvtx3/nvToolsExt.h>

struct nvtx {
	nvtxDomainHandle_t domain;
};

/* ARGB, one color per kind, so a timeline reads at a glance. */
static const uint32_t nvtx_colors[] = {
	[NVTX_KIND_STEP]    = 0xff9e9e9eu,  /* grey */
	[NVTX_KIND_SEGMENT] = 0xff43a047u,  /* green: graphs */
	[NVTX_KIND_BREAK]   = 0xfffb8c00u,  /* orange: eager breakpoints */
	[NVTX_KIND_CAPTURE] = 0xff1e88e5u,  /* blue */
	[NVTX_KIND_PHASE]   = 0xff8e24aau,  /* purple */
};

/* NVTX fills its table of entry points on its first call. The ranks of
 * --tp on the host are threads that open the domain at once: the first
 * call is made once, under pthread_once, so that every thread reads the
 * table after it is written. */
static pthread_once_t nvtx_once = PTHREAD_ONCE_INIT;

static void nvtx_init(void)
{
	nvtxInitialize(NULL);
}

struct nvtx *nvtx_open(void)
{
	struct nvtx *nv = calloc(1, sizeof *nv);

	if (nv == NULL)
		return NULL;
	pthread_once(&nvtx_once, nvtx_init);
	nv->domain = nvtxDomainCreateA("bcgtool");
	return nv;
}

void nvtx_close(struct nvtx *nv)
{
	if (nv == NULL)
		return;
	nvtxDomainDestroy(nv->domain);
	free(nv);
}

nvtx_string nvtx_register(struct nvtx *nv, const char *text)
{
	if (nv == NULL)
		return NULL;
	return nvtxDomainRegisterStringA(nv->domain, text);
}

static void nvtx_attr_init(nvtxEventAttributes_t *a, enum nvtx_kind kind)
{
	*a = (nvtxEventAttributes_t){ 0 };
	a->version = NVTX_VERSION;
	a->size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a->colorType = NVTX_COLOR_ARGB;
	a->color = nvtx_colors[kind];
	a->category = (uint32_t)kind + 1;
}

void nvtx_push_registered(struct nvtx *nv, enum nvtx_kind kind, nvtx_string name,
                          uint64_t payload)
{
	nvtxEventAttributes_t a;

	if (nv == NULL)
		return;
	nvtx_attr_init(&a, kind);
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = (nvtxStringHandle_t)name;
	if (payload != 0) {
		a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
		a.payload.ullValue = payload;
	}
	nvtxDomainRangePushEx(nv->domain, &a);
}

void nvtx_push(struct nvtx *nv, enum nvtx_kind kind, const char *text)
{
	nvtxEventAttributes_t a;

	if (nv == NULL)
		return;
	nvtx_attr_init(&a, kind);
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = text;
	nvtxDomainRangePushEx(nv->domain, &a);
}

void nvtx_pop(struct nvtx *nv)
{
	if (nv != NULL)
		nvtxDomainRangePop(nv->domain);
}

#else /* !HAVE_NVTX */

struct nvtx *nvtx_open(void) { return NULL; }
void nvtx_close(struct nvtx *nv) { (void)nv; }
nvtx_string nvtx_register(struct nvtx *nv, const char *text) { (void)nv; (void)text; return NULL; }
void nvtx_push_registered(struct nvtx *nv, enum nvtx_kind kind, nvtx_string name, uint64_t payload)
{
	(void)nv; (void)kind; (void)name; (void)payload;
}
void nvtx_push(struct nvtx *nv, enum nvtx_kind kind, const char *text) { (void)nv; (void)kind; (void)text; }
void nvtx_pop(struct nvtx *nv) { (void)nv; }

#endif
