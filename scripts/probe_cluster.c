/* SPDX-License-Identifier: Apache-2.0 */
/* fa_cl_probe_cluster: does NVIDIA's OpenCL launch a kernel whose PTX declares a cluster
 * (.reqnctapercluster 2, 1, 1) in clusters, and can a work-group then read the other's local
 * memory (mapa, ld.shared::cluster)? TMA multicast (issue 18) needs both. Builds a small kernel
 * from source, takes the driver's PTX, declares the cluster before the entry's body, builds that
 * binary and launches 8 work-groups; prints, per work-group, its cluster rank, the cluster's size,
 * the cluster id and the word the other work-group wrote (or -1). First device of the first
 * platform, or FA_CL_DEVICE's (p:d). Built as build/scripts/fa_cl_probe_cluster */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *src =
    "__kernel void probe(__global int *out) {\n"
    "  __local uint word[1];\n"
    "  uint rank, n, cid;\n"
    "  asm volatile(\"mov.u32 %0, %%cluster_ctarank;\" : \"=r\"(rank));\n"
    "  asm volatile(\"mov.u32 %0, %%cluster_nctarank;\" : \"=r\"(n));\n"
    "  asm volatile(\"mov.u32 %0, %%clusterid.x;\" : \"=r\"(cid));\n"
    "  const uint g = get_group_id(0);\n"
    "  if (get_local_id(0) == 0) word[0] = 1000 + g;\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  asm volatile(\"barrier.cluster.arrive.release;\\n\\tbarrier.cluster.wait.acquire;\" ::: \"memory\");\n"
    "  int peer = -1;\n"
    "  if (n == 2 && get_local_id(0) == 0) {\n"
    "    uint v;\n"
    "    asm volatile(\"{ .reg .u64 p; .reg .u32 s, r; cvta.to.shared.u64 p, %1; cvt.u32.u64 s, p;\\n\\t\"\n"
    "                 \"mapa.shared::cluster.u32 r, s, %2; ld.shared::cluster.u32 %0, [r]; }\"\n"
    "                 : \"=r\"(v) : \"l\"((ulong)word), \"r\"(rank ^ 1u) : \"memory\");\n"
    "    peer = (int)v;\n"
    "  }\n"
    "  asm volatile(\"barrier.cluster.arrive.release;\\n\\tbarrier.cluster.wait.acquire;\" ::: \"memory\");\n"
    "  if (get_local_id(0) == 0) {\n"
    "    out[4 * g] = (int)rank; out[4 * g + 1] = (int)n; out[4 * g + 2] = (int)cid; out[4 * g + 3] = peer;\n"
    "  }\n"
    "}\n";

static int run(cl_context c, cl_device_id d, cl_command_queue q, cl_program p, const char *what)
{
    cl_int e = clBuildProgram(p, 1, &d, "", NULL, NULL);
    if (e != CL_SUCCESS) {
        char log[4096] = "";
        clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        printf("%s: build failed (%d): %s\n", what, e, log);
        return 1;
    }
    cl_kernel k = clCreateKernel(p, "probe", &e);
    int host[32];
    memset(host, 0x7f, sizeof host);
    cl_mem out = clCreateBuffer(c, CL_MEM_COPY_HOST_PTR, sizeof host, host, &e);
    clSetKernelArg(k, 0, sizeof out, &out);
    size_t global = 8 * 64, local = 64;
    e = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL);
    cl_int f = clFinish(q);
    cl_int r = clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL);
    printf("%s: enqueue %d, finish %d, read %d\n", what, e, f, r);
    for (int g = 0; g < 8 && r == CL_SUCCESS; g++)
        printf("  group %d: rank %d of %d, cluster %d, the other's word %d\n", g, host[4 * g], host[4 * g + 1],
               host[4 * g + 2], host[4 * g + 3]);
    clReleaseMemObject(out);
    clReleaseKernel(k);
    return r != CL_SUCCESS;
}

int main(void)
{
    cl_platform_id ps[16];
    cl_device_id ds[16];
    cl_uint np = 0, nd = 0;
    int pi = 0, di = 0;
    const char *want = getenv("FA_CL_DEVICE");
    if (want)
        sscanf(want, "%d:%d", &pi, &di);
    if (clGetPlatformIDs(16, ps, &np) != CL_SUCCESS || (cl_uint)pi >= np ||
        clGetDeviceIDs(ps[pi], CL_DEVICE_TYPE_ALL, 16, ds, &nd) != CL_SUCCESS || (cl_uint)di >= nd) {
        fprintf(stderr, "fa_cl_probe_cluster: no OpenCL device %d:%d\n", pi, di);
        return 1;
    }
    cl_device_id d = ds[di];
    cl_int e;
    cl_context c = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
    cl_command_queue q = clCreateCommandQueue(c, d, 0, &e);
    cl_program p = clCreateProgramWithSource(c, 1, &src, NULL, &e);
    if (run(c, d, q, p, "as built (no cluster declared)"))
        return 1;
    size_t len = 0;
    clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL);
    char *ptx = malloc(len + 64), *patched = malloc(len + 128);
    clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof ptx, &ptx, NULL);
    ptx[len] = '\0';
    /* the cluster before the entry's body: the first line that is "{" after ".entry" */
    const char *entry = strstr(ptx, ".entry"), *body = entry ? strstr(entry, "\n{") : NULL;
    if (!body) {
        printf("no .entry body in the PTX\n");
        return 1;
    }
    const size_t head = (size_t)(body - ptx) + 1;
    memcpy(patched, ptx, head);
    size_t n = head + (size_t)sprintf(patched + head, ".reqnctapercluster 2, 1, 1\n");
    memcpy(patched + n, ptx + head, strlen(ptx + head) + 1);
    n += strlen(ptx + head);
    const unsigned char *bin = (const unsigned char *)patched;
    const size_t bin_len = n + 1;
    cl_int status;
    cl_program p2 = clCreateProgramWithBinary(c, 1, &d, &bin_len, &bin, &status, &e);
    if (e != CL_SUCCESS) {
        printf("clCreateProgramWithBinary: %d (status %d)\n", e, status);
        return 1;
    }
    return run(c, d, q, p2, ".reqnctapercluster 2, 1, 1");
}
