/* SPDX-License-Identifier: Apache-2.0 */
/* NVIDIA devices: the compute capability through cl_nv_device_attribute_query, the local memory a
 * work-group really gets, registers before a spill, and the portable kernels' measured preference. */
#include "devices/devices.h"

#ifndef CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV
#define CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV 0x4000 /* cl_nv_device_attribute_query */
#define CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV 0x4001
#endif

void fa_cl__nvidia_query(cl_device_id device, const fa_cl__device_props *props, fa_cl__device_traits *out)
{
    if (!fa_cl__has_extension(props->extensions, "cl_nv_device_attribute_query"))
        return;
    cl_uint major = 0, minor = 0;
    if (clGetDeviceInfo(device, CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, sizeof major, &major, NULL) == CL_SUCCESS &&
        clGetDeviceInfo(device, CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV, sizeof minor, &minor, NULL) == CL_SUCCESS) {
        out->arch_major = (int)major;
        out->arch_minor = (int)minor;
    }
}

size_t fa_cl__nvidia_static_local_bytes(int major, int minor)
{
    /* per-block shared memory maxima from NVIDIA's CUDA C Programming Guide (compute capabilities
     * table), less 1 KiB the driver reserves per block since 8.0 */
    if (major == 7 && minor == 0) return 96 * 1024;
    if (major == 7 && minor == 5) return 64 * 1024;
    if (major == 8 && minor == 0) return 163 * 1024;
    if (major == 8) return 99 * 1024;   /* 8.6, 8.7, 8.9 */
    if (major == 9) return 227 * 1024;  /* Hopper */
    if (major >= 10) return 227 * 1024; /* Blackwell datacenter parts; consumer parts may have less */
    return 0;
}

void fa_cl__nvidia_complete(fa_cl__device_traits *t)
{
    const size_t local = fa_cl__nvidia_static_local_bytes(t->arch_major, t->arch_minor);
    if (local > t->local_usable) {
        t->local_usable = local;
        t->local_source = "NVIDIA static local memory (compute capability table)";
    }
    /* of 255 registers. The model's 148 floats at d = 128, TM = 4 took 168 registers on the H200
     * (no spill, measured); at d = 256 TM = 4 (228) does not fit, TM = 2 (138) does: 172 registers,
     * no spill, where the rows kernel spills 5.6 KB (scripts/nv_ptxas_report.sh, a proxy: clang's PTX
     * through ptxas 12.9; docs/portability.md) */
    t->private_floats = 200;
    /* two rows per work-item fit the registers at head_dim <= 64: faster than the tiled kernel on
     * an H200 (commit b47bb15) */
    t->rows_small_dims = 1;
}
