/*
 * has-gpu - exit 0 when a CUDA device can be used, 1 otherwise. The shell
 * tests' CUDA prerequisite asks it; it prints the reason either way.
 */
#include "config.h"

#include <stdio.h>

#include <cuda_runtime_api.h>

int main(void)
{
	int n = 0;
	cudaError_t err = cudaGetDeviceCount(&n);

	if (err != cudaSuccess) {
		printf("no CUDA device: %s\n", cudaGetErrorString(err));
		return 1;
	}
	if (n < 1) {
		printf("no CUDA device\n");
		return 1;
	}
	printf("%d CUDA device(s)\n", n);
	return 0;
}
