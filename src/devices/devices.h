/* SPDX-License-Identifier: Apache-2.0 */
/* What fa_cl knows of devices by vendor (src/devices/): the traits a device's planning starts from
 * (queried from a live device, or written down in a named profile), and what a vendor's hardware
 * gives beyond what its OpenCL driver reports (one file per vendor: nvidia.c, intel.c, amd.c).
 * Below the kernel families, whose needs are stated in these traits. */
#ifndef FA_CL_DEVICES_H
#define FA_CL_DEVICES_H

#include "fa_cl_internal.h"

/* GPU vendors whose devices the families and the planner know something about. */
typedef enum fa_cl__vendor {
    FA_CL_VENDOR_OTHER = 0, /* any vendor, and every CPU */
    FA_CL_VENDOR_NVIDIA = 1,
    FA_CL_VENDOR_AMD = 2,
    FA_CL_VENDOR_INTEL = 3,
} fa_cl__vendor;

/* A device as planning sees it: what the driver reports (the first fields: a profile writes them
 * down), then what the device's vendor module adds (fa_cl__traits_complete). A live device and a
 * profile go through the same completion, so that the offline checks plan exactly as the library
 * would on the device. */
typedef struct fa_cl__device_traits {
    int is_gpu;              /* CL_DEVICE_TYPE_GPU */
    fa_cl__vendor vendor;    /* FA_CL_VENDOR_OTHER for CPUs whatever their maker */
    size_t local_mem_size;   /* CL_DEVICE_LOCAL_MEM_SIZE */
    int local_mem_is_global; /* CL_DEVICE_LOCAL_MEM_TYPE == CL_GLOBAL */
    size_t max_work_group;   /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    int arch_major, arch_minor; /* the vendor's architecture version through its query extension
                                   (NVIDIA: the compute capability); 0 when unknown */
    int min_subgroup;        /* narrowest sub-group size the vendor's query reports (Intel); 0 unknown */
    const char *target;      /* the compiler target the device is, "gfx1100" (AMD: CL_DEVICE_NAME, which ROCm's
                                OpenCL reports as the target, any ":feature" suffix ignored); NULL unknown */
    const char *extensions;  /* CL_DEVICE_EXTENSIONS, space separated; NULL: unknown */
    int is_cpu;              /* CL_DEVICE_TYPE_CPU */
    size_t cache_bytes;      /* CL_DEVICE_GLOBAL_MEM_CACHE_SIZE; 0 unknown */
    int cacheline;           /* CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE; 0 unknown */
    int compute_units;       /* CL_DEVICE_MAX_COMPUTE_UNITS; 0 unknown */
    int simd_floats;         /* CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT; 0 unknown */
    int has_fma;             /* CL_DEVICE_SINGLE_FP_CONFIG has CL_FP_FMA (fused multiply-add in hardware) */
    /* ---- added by the vendor module (fa_cl__traits_complete) ---- */
    size_t local_usable;       /* local memory a work-group really gets (>= local_mem_size) */
    const char *local_source;  /* where local_usable comes from: "device local memory" or the vendor's table */
    int private_floats;        /* 32-bit registers a work-item holds before the compiler spills; 0 unknown */
    int rows_small_dims;       /* the portable rows kernel with 16-key blocks runs faster than the tiled one
                                  up to head_dim 64 (measured on NVIDIA GPUs; kernels/portable.h) */
} fa_cl__device_traits;

/* Fill in the vendor module's part of t from its first fields (idempotent). */
void fa_cl__traits_complete(fa_cl__device_traits *t);

/* A live device's traits, completed: the generic facts of props and the vendor's queries
 * (NVIDIA's compute capability, Intel's sub-group sizes). props (and its extensions) must outlive
 * out. */
void fa_cl__device_traits_query(cl_device_id device, const fa_cl__device_props *props, fa_cl__device_traits *out);

/* "NVIDIA", "AMD", "Intel" or "any vendor". */
const char *fa_cl__vendor_name(fa_cl__vendor v);

/* ---- the vendor modules ------------------------------------------------------------------------ */

/* NVIDIA (nvidia.c): the compute capability (cl_nv_device_attribute_query; 0.0 when absent); the
 * local memory a work-group really gets when the kernel declares it statically: NVIDIA's OpenCL
 * reports 48 KiB, the hardware gives a block more (checked on an H200 up to 200 KiB with
 * scripts/probe_local.c); 0 = no larger value known. */
void fa_cl__nvidia_query(cl_device_id device, const fa_cl__device_props *props, fa_cl__device_traits *out);
size_t fa_cl__nvidia_static_local_bytes(int major, int minor);
void fa_cl__nvidia_complete(fa_cl__device_traits *t);
/* Intel (intel.c): the narrowest of CL_DEVICE_SUB_GROUP_SIZES_INTEL (cl_intel_required_subgroup_size). */
void fa_cl__intel_query(cl_device_id device, const fa_cl__device_props *props, fa_cl__device_traits *out);
void fa_cl__intel_complete(fa_cl__device_traits *t);
/* AMD (amd.c). */
void fa_cl__amd_complete(fa_cl__device_traits *t);

/* 32-bit registers a work-item of these kernels can hold before the vendor's compiler spills, or 0
 * when unknown (each vendor module says how it counts). */
int fa_cl__private_floats(fa_cl__vendor vendor, int min_subgroup);

/* ---- device profiles (profiles.c) ---------------------------------------------------------------- */

/* A named device the planner can plan for without having it: what the device's OpenCL driver
 * reports, and which offline compiler builds for it. */
typedef struct fa_cl__device_profile {
    const char *name;            /* "intel-arc-a770" */
    const char *description;     /* "Intel Arc A770 (Xe-HPG, DG2-512)" */
    fa_cl__device_traits traits; /* the driver's part (fa_cl__profile_traits completes it) */
    unsigned compute_units;      /* CL_DEVICE_MAX_COMPUTE_UNITS */
    int preferred_multiple;      /* SIMD / wave width work-groups should be a multiple of */
    const char *extensions;      /* the CL_DEVICE_EXTENSIONS that matter to fa_cl */
    const char *compiler;        /* offline compiler family: "ocloc", "amdgcn" or NULL (none here) */
    const char *target;          /* its target: "dg2", "gfx1100", ... */
    const char *source;          /* where the numbers come from */
} fa_cl__device_profile;

int fa_cl__profile_count(void);
/* Profile i (0 <= i < count), or NULL. */
const fa_cl__device_profile *fa_cl__profile_get(int i);
/* By name, or NULL. */
const fa_cl__device_profile *fa_cl__profile_find(const char *name);
/* The profile's traits as the library would complete them on that device. */
void fa_cl__profile_traits(const fa_cl__device_profile *p, fa_cl__device_traits *out);

/* ---- finding a device (discover.c) ---------------------------------------------------------- */

/* The device fa_cl_context_create_default takes: FA_CL_DEVICE's (p:d or a name substring), else the
 * first GPU, else the first device. FA_CL_ERROR_NO_DEVICE with the reason recorded otherwise. */
fa_cl_status fa_cl__default_device(cl_platform_id *platform, cl_device_id *device);

/* Why clGetPlatformIDs found no platform (err, or CL_SUCCESS with count platforms) and what to
 * install or register (ICD loader, drivers, an unregistered NVIDIA library): lines joined by '\n',
 * no final newline, truncated to size. The library's FA_CL_ERROR_NO_DEVICE message and fa_cl_info
 * both print it. */
void fa_cl__no_platform_message(cl_int err, cl_uint count, char *buf, size_t size);

#endif /* FA_CL_DEVICES_H */
