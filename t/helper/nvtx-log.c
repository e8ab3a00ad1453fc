/*
 * nvtx-log.c - an NVTX tool for tests: loaded through NVTX_INJECTION64_PATH,
 * it writes every domain, range push and pop the program makes to the file
 * named by $BCG_NVTX_LOG, one event per line:
 *
 *   domain NAME
 *   push DOMAIN CATEGORY COLOR PAYLOAD MESSAGE
 *   pop DOMAIN
 *
 * COLOR is 8 hex digits (ARGB), PAYLOAD a number or "-", MESSAGE the rest of
 * the line (registered strings resolved). This is what Nsight Systems would
 * see, without Nsight Systems or a GPU.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvtx3/nvToolsExt.h>

struct log_domain {
	char name[128];
};

static FILE *log_file;

/* Registered strings live as long as the process, as a real tool's do; a
 * list keeps them reachable (for leak checkers) without freeing them. */
struct log_string {
	struct log_string *next;
	char               text[];
};
static struct log_string *log_strings;

static const char *domain_name(nvtxDomainHandle_t d)
{
	return d != NULL ? ((const struct log_domain *)(const void *)d)->name : "(default)";
}

static nvtxDomainHandle_t NVTX_API log_domain_create(const char *name)
{
	struct log_domain *d = calloc(1, sizeof *d);

	if (d == NULL)
		return NULL;
	snprintf(d->name, sizeof d->name, "%s", name);
	fprintf(log_file, "domain %s\n", d->name);
	return (nvtxDomainHandle_t)(void *)d;
}

static void NVTX_API log_domain_destroy(nvtxDomainHandle_t d)
{
	free((void *)d);
}

/* A registered string's handle is its own copy of the text. */
static nvtxStringHandle_t NVTX_API log_register(nvtxDomainHandle_t d, const char *s)
{
	size_t n = strlen(s) + 1;
	struct log_string *ls = malloc(sizeof *ls + n);

	(void)d;
	if (ls == NULL)
		return NULL;
	memcpy(ls->text, s, n);
	ls->next = log_strings;
	log_strings = ls;
	return (nvtxStringHandle_t)(void *)ls->text;
}

static int NVTX_API log_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	const char *msg = "";
	char payload[32] = "-";

	if (a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii != NULL)
		msg = a->message.ascii;
	else if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED && a->message.registered != NULL)
		msg = (const char *)(const void *)a->message.registered;
	if (a->payloadType == NVTX_PAYLOAD_TYPE_UNSIGNED_INT64)
		snprintf(payload, sizeof payload, "%" PRIu64, (uint64_t)a->payload.ullValue);
	fprintf(log_file, "push %s %u %08x %s %s\n", domain_name(d), a->category, a->color,
	        payload, msg);
	return 0;
}

static int NVTX_API log_pop(nvtxDomainHandle_t d)
{
	fprintf(log_file, "pop %s\n", domain_name(d));
	return 0;
}

int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table);

int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table)
{
	const NvtxExportTableCallbacks *cb =
		(const NvtxExportTableCallbacks *)get_table(NVTX_ETID_CALLBACKS);
	const char *path = getenv("BCG_NVTX_LOG");
	NvtxFunctionTable table = NULL;
	unsigned int size = 0;

	if (cb == NULL || path == NULL || (log_file = fopen(path, "w")) == NULL)
		return 0;
	setvbuf(log_file, NULL, _IOLBF, 0);
	if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) ||
	    size <= NVTX_CBID_CORE2_DomainDestroy)
		return 0;
	*table[NVTX_CBID_CORE2_DomainCreateA] = (NvtxFunctionPointer)log_domain_create;
	*table[NVTX_CBID_CORE2_DomainDestroy] = (NvtxFunctionPointer)log_domain_destroy;
	*table[NVTX_CBID_CORE2_DomainRegisterStringA] = (NvtxFunctionPointer)log_register;
	*table[NVTX_CBID_CORE2_DomainRangePushEx] = (NvtxFunctionPointer)log_push;
	*table[NVTX_CBID_CORE2_DomainRangePop] = (NvtxFunctionPointer)log_pop;
	return 1;
}
