/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device profiles: what a GPU's OpenCL driver reports, written down so that the planner can plan
 * for it (and the offline compile checks can build what it would build) without the device; and a
 * CPU as PoCL reports it, the device of the test suite.
 * Their traits are completed as a live device's are (fa_cl__traits_complete).
 *
 * Sources: Intel's GPU Occupancy Calculator device tables (oneAPI-samples,
 * Tools/GPU-Occupancy-Calculator: SLM per work-group, max work-group size, sub-group sizes, EUs);
 * cl_intel_subgroup_matrix_multiply_accumulate on the Xe-HPG and Xe-HPC profiles, which have XMX
 * (the extension's specification, Khronos registry; Xe-LP has no matrix engine);
 * AMD ROCm's OpenCL runtime (ROCm/clr: opencl/amdocl/cl_device.cpp answers
 * CL_DEVICE_MAX_WORK_GROUP_SIZE with preferredWorkGroupSize_, which rocclr/device/rocm/
 * rocsettings.cpp sets to 256; kernels may still be compiled for up to 1024) and AMD's ISA guides
 * (64 KiB of LDS per work-group on CDNA2 and RDNA3); NVIDIA's CUDA C Programming Guide (compute
 * capability 9.0: 227 KiB of shared memory per block, 1024 threads per block) and NVIDIA's OpenCL
 * driver (48 KiB CL_DEVICE_LOCAL_MEM_SIZE); the OpenCL 1.2 specification (32 KB minimum local
 * memory) for the mobile-class profile.
 */
#include "devices/devices.h"

#include <string.h>

#define KIB ((size_t)1024)

static const fa_cl__device_profile profiles[] = {
    {"intel-arc-a770", "Intel Arc A770 (Xe-HPG, DG2-512)",
     /* 64 KiB SLM per work-group (128 KiB per Xe-core), 1024 work-items (Occupancy Calculator) */
     {.is_gpu = 1, .vendor = FA_CL_VENDOR_INTEL, .local_mem_size = 64 * KIB, .max_work_group = 1024, .min_subgroup = 8},
     512, /* EUs: 32 Xe-cores x 16 */
     8,   /* sub-group sizes 8, 16, 32: IGC picks per kernel */
     "cl_khr_fp16 cl_khr_subgroups cl_intel_subgroups cl_intel_required_subgroup_size "
     "cl_intel_subgroup_matrix_multiply_accumulate (no cl_khr_fp64)",
     "ocloc", "dg2", "Intel GPU Occupancy Calculator (Xe-HPG / Arc A770)"},
    {"intel-max-1550", "Intel Data Center GPU Max 1550 (Xe-HPC, Ponte Vecchio)",
     /* 128 KiB SLM per work-group, 1024 work-items (Occupancy Calculator, Xe-HPC) */
     {.is_gpu = 1, .vendor = FA_CL_VENDOR_INTEL, .local_mem_size = 128 * KIB, .max_work_group = 1024, .min_subgroup = 16},
     1024, /* EUs of both stacks: 128 Xe-cores x 8 (a stack is one device in FLAT mode: 512) */
     16,   /* sub-group sizes 16, 32 */
     "cl_khr_fp16 cl_khr_fp64 cl_khr_subgroups cl_intel_subgroups cl_intel_required_subgroup_size "
     "cl_intel_subgroup_matrix_multiply_accumulate",
     "ocloc", "pvc", "Intel GPU Occupancy Calculator (Xe-HPC / Data Center GPU Max)"},
    {"intel-xe-lp", "Intel Iris Xe Graphics (Xe-LP, Tiger Lake, 96 EUs)",
     /* 64 KiB SLM per work-group, 512 work-items (Occupancy Calculator, Xe-LP) */
     {.is_gpu = 1, .vendor = FA_CL_VENDOR_INTEL, .local_mem_size = 64 * KIB, .max_work_group = 512, .min_subgroup = 8},
     96, 8, "cl_khr_fp16 cl_khr_subgroups cl_intel_subgroups cl_intel_required_subgroup_size (no cl_khr_fp64)",
     "ocloc", "tgllp", "Intel GPU Occupancy Calculator (Xe-LP / Tiger Lake)"},
    {"amd-rx7900", "AMD Radeon RX 7900 XTX (RDNA3, gfx1100) on ROCm OpenCL",
     /* 64 KiB LDS per work-group (128 KiB per WGP); ROCm's OpenCL reports 256 work-items */
     {.is_gpu = 1, .vendor = FA_CL_VENDOR_AMD, .local_mem_size = 64 * KIB, .max_work_group = 256},
     96, /* CUs (48 WGPs) */
     32, /* wave32: ROCm's OpenCL compiles gfx10+ in wave32 mode (rocsettings.cpp) */
     "cl_khr_fp16 cl_khr_fp64 cl_khr_subgroups cl_amd_device_attribute_query",
     "amdgcn", "gfx1100", "AMD RDNA3 ISA guide (LDS); ROCm/clr cl_device.cpp + rocsettings.cpp (work-group 256)"},
    {"amd-mi250", "AMD Instinct MI250 (CDNA2, gfx90a), one GCD, on ROCm OpenCL",
     /* 64 KiB LDS per CU and per work-group; ROCm's OpenCL reports 256 work-items */
     {.is_gpu = 1, .vendor = FA_CL_VENDOR_AMD, .local_mem_size = 64 * KIB, .max_work_group = 256},
     104, /* CUs per GCD (the MI250 has two, each its own device) */
     64,  /* wave64 */
     "cl_khr_fp16 cl_khr_fp64 cl_khr_subgroups cl_amd_device_attribute_query",
     "amdgcn", "gfx90a", "AMD CDNA2 ISA guide (LDS); ROCm/clr cl_device.cpp + rocsettings.cpp (work-group 256)"},
    {"nvidia-h100", "NVIDIA H100 SXM5 (Hopper, sm_90) on NVIDIA's OpenCL",
     /* reports 48 KiB; statically declared local arrays get up to 227 KiB per block (planner.c) */
     {.is_gpu = 1, .vendor = FA_CL_VENDOR_NVIDIA, .local_mem_size = 48 * KIB, .max_work_group = 1024, .arch_major = 9},
     132, 32, "cl_khr_fp64 cl_nv_device_attribute_query (no cl_khr_fp16)",
     NULL, NULL, "CUDA C Programming Guide, compute capability 9.0; NVIDIA OpenCL CL_DEVICE_LOCAL_MEM_SIZE"},
    {"mobile-32k", "mobile-class GPU: 32 KiB local memory, 256 work-items",
     /* the OpenCL 1.2 minimum local memory (32 KB) and a 256 work-item limit, as on Arm Mali Midgard */
     {.is_gpu = 1, .vendor = FA_CL_VENDOR_OTHER, .local_mem_size = 32 * KIB, .max_work_group = 256},
     8, 16, "", NULL, NULL, "OpenCL 1.2 specification, CL_DEVICE_LOCAL_MEM_SIZE minimum"},
    {"cpu-pocl", "a CPU on PoCL's pthread device (the test suite's device)",
     /* PoCL 3.1 reports 2 MiB of local memory of type CL_GLOBAL (the planner sizes tiles for a cache
      * share instead) and 4096 work-items; compute units are the host's cores (2 on the machine
      * measured); no FA_UNROLL or FA_NATIVE_EXP in its builds (not a GPU) */
     {.is_gpu = 0, .vendor = FA_CL_VENDOR_OTHER, .local_mem_size = 2048 * KIB, .local_mem_is_global = 1, .max_work_group = 4096,
      .is_cpu = 1, .cache_bytes = 480 * 1024 * KIB, .cacheline = 64, .simd_floats = 16, .has_fma = 1},
     2, 16, /* 16 float lanes of AVX-512 */
     "cl_khr_fp64 (no cl_khr_fp16)", NULL, NULL,
     "fa_cl_info on PoCL 3.1 (Debian 12), pthread-skylake-avx512 device"},
};

#define N_PROFILES ((int)(sizeof profiles / sizeof profiles[0]))

int fa_cl__profile_count(void) { return N_PROFILES; }

const fa_cl__device_profile *fa_cl__profile_get(int i) { return i >= 0 && i < N_PROFILES ? &profiles[i] : NULL; }

const fa_cl__device_profile *fa_cl__profile_find(const char *name)
{
    for (int i = 0; name && i < N_PROFILES; i++)
        if (strcmp(profiles[i].name, name) == 0)
            return &profiles[i];
    return NULL;
}

void fa_cl__profile_traits(const fa_cl__device_profile *p, fa_cl__device_traits *out)
{
    *out = p->traits;
    out->extensions = p->extensions;
    out->compute_units = (int)p->compute_units;
    out->target = p->target;
    fa_cl__traits_complete(out);
}
