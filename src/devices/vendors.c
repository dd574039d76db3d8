/* SPDX-License-Identifier: Apache-2.0 */
/* What a vendor's hardware gives beyond what its OpenCL driver reports: the local memory a
 * work-group really gets, the registers a work-item holds before the compiler spills. */
#include "devices/devices.h"

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

int fa_cl__private_floats(fa_cl__vendor vendor, int min_subgroup)
{
    switch (vendor) {
    case FA_CL_VENDOR_INTEL: return min_subgroup >= 16 ? 64 : 128;
    case FA_CL_VENDOR_AMD: return 192; /* of 256 VGPRs: a quarter goes to addresses and loads in flight */
    /* of 255 registers. The model's 148 floats at d = 128, TM = 4 took 168 registers on the H200
     * (no spill, measured); at d = 256 TM = 4 (228) does not fit, TM = 2 (138) does: 172 registers,
     * no spill, where the rows kernel spills 5.6 KB (scripts/nv_ptxas_report.sh, a proxy: clang's PTX
     * through ptxas 12.9; docs/portability.md) */
    case FA_CL_VENDOR_NVIDIA: return 200;
    case FA_CL_VENDOR_OTHER: break;
    }
    return 0;
}
