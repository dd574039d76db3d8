/* SPDX-License-Identifier: Apache-2.0 */
/* fa_cl_probe_local: does a static __local array beyond CL_DEVICE_LOCAL_MEM_SIZE build, launch and
 * keep its data while many work-groups run at once? Prints one line per size on the first device of
 * the first platform (or FA_CL_DEVICE's, as p:d). The planner's NVIDIA budget table rests on it. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
static const char *src =
"__kernel void probe(__global uint *out) {\n"
"  __local uint buf[NWORDS];\n"
"  uint g = get_group_id(0), l = get_local_id(0), n = get_local_size(0);\n"
"  for (uint i = l; i < NWORDS; i += n) buf[i] = (i * 2654435761u) ^ g;\n"
"  barrier(CLK_LOCAL_MEM_FENCE);\n"
"  uint bad = 0;\n"
"  for (int rep = 0; rep < 4; rep++) {\n"
"    for (uint i = l; i < NWORDS; i += n) { uint j = NWORDS - 1 - i; bad += buf[j] != ((j * 2654435761u) ^ g); }\n"
"    barrier(CLK_LOCAL_MEM_FENCE);\n"
"    for (uint i = l; i < NWORDS; i += n) buf[i] ^= 0x5a5a5a5au;\n"
"    barrier(CLK_LOCAL_MEM_FENCE);\n"
"    for (uint i = l; i < NWORDS; i += n) buf[i] ^= 0x5a5a5a5au;\n"
"    barrier(CLK_LOCAL_MEM_FENCE);\n"
"  }\n"
"  out[g * n + l] = bad;\n"
"}\n";
int main(void) {
  cl_platform_id ps[16]; cl_device_id ds[16], d; cl_int e; cl_uint np = 0, nd = 0; int pi = 0, di = 0;
  const char *want = getenv("FA_CL_DEVICE");
  if (want) sscanf(want, "%d:%d", &pi, &di);
  if (clGetPlatformIDs(16, ps, &np) != CL_SUCCESS || (cl_uint)pi >= np ||
      clGetDeviceIDs(ps[pi], CL_DEVICE_TYPE_ALL, 16, ds, &nd) != CL_SUCCESS || (cl_uint)di >= nd) {
    fprintf(stderr, "fa_cl_probe_local: no OpenCL device %d:%d\n", pi, di);
    return 1;
  }
  d = ds[di];
  cl_context c = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
  cl_command_queue q = clCreateCommandQueue(c, d, 0, &e);
  int kib[] = {47, 48, 56, 64, 96, 128, 160, 200, 227};
  size_t groups = 132 * 16, wg = 256;
  cl_mem out = clCreateBuffer(c, 0, groups * wg * 4, NULL, &e);
  for (int t = 0; t < 9; t++) {
    char opt[64]; snprintf(opt, sizeof opt, "-DNWORDS=%d", kib[t] * 256 - (kib[t] == 48 ? 4 : 0));
    cl_program pr = clCreateProgramWithSource(c, 1, &src, NULL, &e);
    e = clBuildProgram(pr, 1, &d, opt, NULL, NULL);
    if (e) { printf("%3d KiB: build failed %d\n", kib[t], e); clReleaseProgram(pr); continue; }
    cl_kernel k = clCreateKernel(pr, "probe", &e);
    cl_ulong lm = 0; clGetKernelWorkGroupInfo(k, d, CL_KERNEL_LOCAL_MEM_SIZE, sizeof lm, &lm, NULL);
    clSetKernelArg(k, 0, sizeof out, &out);
    cl_uint zero = 0xffffffffu; clEnqueueFillBuffer(q, out, &zero, 4, 0, groups * wg * 4, 0, NULL, NULL);
    size_t gs = groups * wg;
    e = clEnqueueNDRangeKernel(q, k, 1, NULL, &gs, &wg, 0, NULL, NULL);
    cl_int fe = clFinish(q);
    unsigned *h = malloc(groups * wg * 4); unsigned long long bad = 0, unwritten = 0;
    cl_int re = clEnqueueReadBuffer(q, out, CL_TRUE, 0, groups * wg * 4, h, 0, NULL, NULL);
    for (size_t i = 0; i < groups * wg; i++) { if (h[i] == 0xffffffffu) unwritten++; else bad += h[i]; }
    printf("%3d KiB: kernel local %llu B, enqueue %d, finish %d, read %d, mismatches %llu, unwritten %llu\n", kib[t],
           (unsigned long long)lm, e, fe, re, bad, unwritten);
    free(h); clReleaseKernel(k); clReleaseProgram(pr);
    if (fe || re) break;
  }
  return 0;
}
