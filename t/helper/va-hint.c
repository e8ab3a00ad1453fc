/*
 * va-hint.c - which address hints this driver honours in
 * cuMemAddressReserve, for the GPU session's `recorded` stage: replay of a
 * recorded plan (bcgtool/record/rebuild.c) reserves each allocation's
 * recorded range by asking for its address, and only gets it where the
 * driver takes the hint.
 *
 *   va-hint [ADDR...]
 *
 * Reserves 2 MiB anywhere (P), lets it go, then asks for 2 MiB at P + 64
 * MiB, P + 1 GiB, P + 64 GiB, P - 64 GiB and at each ADDR (hex), each with
 * the granularity as the alignment and then with the default, and prints
 * one line for each: "honoured", "offered 0xX" or the driver's error, and
 * what of this process's memory map (/proc/self/maps) overlaps the range.
 * Then the process's large anonymous mappings without access (1 GiB or
 * more), where a driver keeps address space for itself. Exit 0 when no
 * request failed (an address offered elsewhere is no failure), 1 when one
 * did, 3 without a usable device.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

typedef CUresult (*reserve_fn)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
typedef CUresult (*free_fn)(CUdeviceptr, size_t);
typedef CUresult (*gran_fn)(size_t *, const CUmemAllocationProp *,
                            CUmemAllocationGranularity_flags);
typedef CUresult (*name_fn)(CUresult, const char **);

static void *entry(const char *symbol)
{
	enum cudaDriverEntryPointQueryResult q;
	void *fn = NULL;

	if (cudaGetDriverEntryPointByVersion(symbol, &fn, CUDART_VERSION, cudaEnableDefault, &q) !=
	    cudaSuccess || q != cudaDriverEntryPointSuccess)
		return NULL;
	return fn;
}

/* The first mapping of this process over [LO, HI), in words. */
static void overlap(uint64_t lo, uint64_t hi, char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	snprintf(buf, len, "no mapping over it");
	if (f == NULL)
		return;
	while (fgets(line, sizeof line, f) != NULL) {
		unsigned long long a = 0, b = 0;
		char perm[8] = "", path[256] = "";
		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %255[^\n]", &a, &b, perm, path) < 3 ||
		    b <= lo || a >= hi)
			continue;
		snprintf(buf, len, "inside 0x%llx-0x%llx %s %s", a, b, perm,
		         path[0] ? path : "(anonymous)");
		break;
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	reserve_fn reserve;
	free_fn release;
	gran_fn gran;
	name_fn name;
	CUmemAllocationProp prop;
	CUdeviceptr p = 0;
	size_t g = 0, size;
	uint64_t want[16];
	const char *what[16];
	int n = 0, bad = 0;
	CUresult r;

	if (cudaSetDevice(0) != cudaSuccess || cudaFree(NULL) != cudaSuccess) {
		fprintf(stderr, "va-hint: no usable CUDA device\n");
		return 3;
	}
	reserve = (reserve_fn)entry("cuMemAddressReserve");
	release = (free_fn)entry("cuMemAddressFree");
	gran = (gran_fn)entry("cuMemGetAllocationGranularity");
	name = (name_fn)entry("cuGetErrorName");
	if (reserve == NULL || release == NULL || gran == NULL || name == NULL) {
		fprintf(stderr, "va-hint: the driver lacks the virtual memory calls\n");
		return 3;
	}
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	if ((r = gran(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM)) != CUDA_SUCCESS || g == 0) {
		fprintf(stderr, "va-hint: cuMemGetAllocationGranularity failed (%d)\n", (int)r);
		return 3;
	}
	size = g;
	if ((r = reserve(&p, size, g, 0, 0)) != CUDA_SUCCESS) {
		fprintf(stderr, "va-hint: cuMemAddressReserve anywhere failed (%d)\n", (int)r);
		return 3;
	}
	release(p, size);
	printf("va-hint: granularity %zu; anywhere: 0x%llx\n", g, (unsigned long long)p);
	want[n] = p + (UINT64_C(64) << 20), what[n++] = "P + 64 MiB";
	want[n] = p + (UINT64_C(1) << 30), what[n++] = "P + 1 GiB";
	want[n] = p + (UINT64_C(64) << 30), what[n++] = "P + 64 GiB";
	want[n] = p - (UINT64_C(64) << 30), what[n++] = "P - 64 GiB";
	for (int i = 1; i < argc && n < 16; i++) {
		want[n] = strtoull(argv[i], NULL, 16) / g * g;
		what[n++] = argv[i];
	}
	for (int i = 0; i < n; i++) {
		char where[400];
		overlap(want[i], want[i] + size, where, sizeof where);
		for (int k = 0; k < 2; k++) {
			CUdeviceptr q = 0;
			const char *e = NULL;
			r = reserve(&q, size, k == 0 ? g : 0, want[i], 0);
			if (r != CUDA_SUCCESS) {
				name(r, &e);
				printf("va-hint: %-12s 0x%012" PRIx64 " align %-8zu error %s; %s\n", what[i],
				       want[i], k == 0 ? g : 0, e != NULL ? e : "?", where);
				bad++;
				continue;
			}
			if (q == want[i])
				printf("va-hint: %-12s 0x%012" PRIx64 " align %-8zu honoured; %s\n", what[i],
				       want[i], k == 0 ? g : 0, where);
			else
				printf("va-hint: %-12s 0x%012" PRIx64 " align %-8zu offered 0x%llx; %s\n",
				       what[i], want[i], k == 0 ? g : 0, (unsigned long long)q, where);
			release(q, size);
		}
	}
	{
		FILE *f = fopen("/proc/self/maps", "r");
		char line[512];
		while (f != NULL && fgets(line, sizeof line, f) != NULL) {
			unsigned long long a = 0, b = 0;
			char perm[8] = "", path[256] = "";
			if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %255[^\n]", &a, &b, perm, path) >= 3 &&
			    b - a >= (1ull << 30) && strcmp(perm, "---p") == 0 && path[0] == '\0')
				printf("va-hint: kept without access: 0x%llx-0x%llx (%.1f GiB)\n", a, b,
				       (double)(b - a) / (1u << 30));
		}
		if (f != NULL)
			fclose(f);
	}
	return bad ? 1 : 0;
}
