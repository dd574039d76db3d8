/* SPDX-License-Identifier: Apache-2.0 */
/* What fa_cl knows of devices by vendor (src/devices/): the traits a device's planning starts from,
 * what a vendor's hardware gives beyond what its OpenCL driver reports, and named device profiles
 * to plan for without the device. Below the kernel families, which read these traits. */
#ifndef FA_CL_DEVICES_H
#define FA_CL_DEVICES_H

#include "fa_cl.h"

#include <stddef.h>

/* GPU vendors whose compilers the planner knows something about. */
typedef enum fa_cl__vendor {
    FA_CL_VENDOR_OTHER = 0,
    FA_CL_VENDOR_NVIDIA = 1,
    FA_CL_VENDOR_AMD = 2,
    FA_CL_VENDOR_INTEL = 3,
} fa_cl__vendor;

/* The device properties the planner's limits come from: queried from a live device (context.c)
 * or read from a named profile (profiles.c). Both go through fa_cl__limits_for_device so that the
 * offline checks plan exactly as the library would on the device. */
typedef struct fa_cl__device_traits {
    int is_gpu;                /* CL_DEVICE_TYPE_GPU */
    fa_cl__vendor vendor;       /* FA_CL_VENDOR_OTHER for CPUs whatever their maker */
    size_t local_mem_size;     /* CL_DEVICE_LOCAL_MEM_SIZE */
    int local_mem_is_global;   /* CL_DEVICE_LOCAL_MEM_TYPE == CL_GLOBAL */
    size_t max_work_group;     /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    int nv_cc_major, nv_cc_minor; /* cl_nv_device_attribute_query; 0 when absent */
    int min_subgroup;          /* Intel: narrowest of CL_DEVICE_SUB_GROUP_SIZES_INTEL; 0 when unknown */
} fa_cl__device_traits;

/* 32-bit registers a work-item of these kernels can hold before the vendor's compiler spills, or 0
 * when unknown (NVIDIA: no offline compiler checks it here; the tiles measured there stay).
 * Intel: IGC gives a hardware thread 128 GRFs (no large-GRF mode); it compiles these kernels SIMD8
 * where the device has 8-wide sub-groups (32-byte GRFs: 128 floats a work-item) and SIMD32 on
 * Xe-HPC, whose narrowest sub-group is 16 (64-byte GRFs: 64). AMD: 256 VGPRs a lane, of which
 * the compiler keeps about a quarter for addresses and loads in flight (clang 19 spills the tiled
 * kernel at d = 256, TM = 4, which the model puts at 228): 192. */
int fa_cl__private_floats(fa_cl__vendor vendor, int min_subgroup);

/* Local memory a work-group really gets on NVIDIA GPUs of compute capability major.minor when the
 * kernel declares it statically: NVIDIA's OpenCL reports 48 KiB, the hardware gives a block more
 * (checked on an H200 up to 200 KiB with scripts/probe_local.c). 0 = no larger value known. */
size_t fa_cl__nvidia_static_local_bytes(int major, int minor);

/* A named device the planner can plan for without having it (profiles.c): what the device's
 * OpenCL driver reports, and which offline compiler builds for it. */
typedef struct fa_cl__device_profile {
    const char *name;            /* "intel-arc-a770" */
    const char *description;     /* "Intel Arc A770 (Xe-HPG, DG2-512)" */
    fa_cl__device_traits traits;  /* what fa_cl__limits_for_device needs */
    unsigned compute_units;      /* CL_DEVICE_MAX_COMPUTE_UNITS */
    int preferred_multiple;      /* SIMD / wave width work-groups should be a multiple of */
    const char *extensions;      /* the CL_DEVICE_EXTENSIONS that matter to fa_cl (none is used) */
    const char *compiler;        /* offline compiler family: "ocloc", "amdgcn" or NULL (none here) */
    const char *target;          /* its target: "dg2", "gfx1100", ... */
    const char *source;          /* where the numbers come from */
} fa_cl__device_profile;

int fa_cl__profile_count(void);
/* Profile i (0 <= i < count), or NULL. */
const fa_cl__device_profile *fa_cl__profile_get(int i);
/* By name, or NULL. */
const fa_cl__device_profile *fa_cl__profile_find(const char *name);
#endif /* FA_CL_DEVICES_H */
