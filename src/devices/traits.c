/* SPDX-License-Identifier: Apache-2.0 */
/* A device's traits: the vendor from what its driver reports, the vendor module's queries and
 * completion (nvidia.c, intel.c, amd.c). */
#include "devices/devices.h"

#include <string.h>

const char *fa_cl__vendor_name(fa_cl__vendor v)
{
    switch (v) {
    case FA_CL_VENDOR_NVIDIA: return "NVIDIA";
    case FA_CL_VENDOR_AMD: return "AMD";
    case FA_CL_VENDOR_INTEL: return "Intel";
    case FA_CL_VENDOR_OTHER: break;
    }
    return "any vendor";
}

/* Vendor tuning is for GPUs: a CPU runs the generic path whoever made it. */
static fa_cl__vendor vendor_of(const fa_cl__device_props *p)
{
    if (fa_cl__contains_nocase(p->vendor, "nvidia"))
        return FA_CL_VENDOR_NVIDIA; /* NVIDIA's OpenCL lists GPUs only */
    if (p->type & CL_DEVICE_TYPE_CPU)
        return FA_CL_VENDOR_OTHER;
    if (fa_cl__contains_nocase(p->vendor, "advanced micro devices") || fa_cl__contains_nocase(p->vendor, "amd"))
        return FA_CL_VENDOR_AMD;
    if (fa_cl__contains_nocase(p->vendor, "intel"))
        return FA_CL_VENDOR_INTEL;
    return FA_CL_VENDOR_OTHER;
}

void fa_cl__device_traits_query(cl_device_id device, const fa_cl__device_props *props, fa_cl__device_traits *out)
{
    memset(out, 0, sizeof *out);
    out->is_gpu = (props->type & CL_DEVICE_TYPE_GPU) != 0;
    out->vendor = vendor_of(props);
    out->local_mem_size = (size_t)props->local_mem_size;
    out->local_mem_is_global = props->local_mem_is_global;
    out->max_work_group = props->max_work_group_size;
    out->extensions = props->extensions;
    out->is_cpu = (props->type & CL_DEVICE_TYPE_CPU) != 0;
    out->cache_bytes = (size_t)props->global_cache_size;
    out->cacheline = (int)props->cacheline_bytes;
    out->compute_units = (int)props->compute_units;
    out->simd_floats = (int)props->native_float_width;
    out->has_fma = props->has_fma;
    /* each vendor's query extension; a device without it keeps 0 */
    fa_cl__nvidia_query(device, props, out);
    fa_cl__intel_query(device, props, out);
    if (out->vendor == FA_CL_VENDOR_AMD && strncmp(props->name, "gfx", 3) == 0)
        out->target = props->name;
    fa_cl__traits_complete(out);
}

void fa_cl__traits_complete(fa_cl__device_traits *t)
{
    t->local_usable = t->local_mem_size;
    t->local_source = "device local memory";
    t->private_floats = 0;
    t->rows_small_dims = 0;
    if (!t->is_gpu)
        return;
    switch (t->vendor) {
    case FA_CL_VENDOR_NVIDIA: fa_cl__nvidia_complete(t); break;
    case FA_CL_VENDOR_INTEL: fa_cl__intel_complete(t); break;
    case FA_CL_VENDOR_AMD: fa_cl__amd_complete(t); break;
    case FA_CL_VENDOR_OTHER: break;
    }
}

int fa_cl__private_floats(fa_cl__vendor vendor, int min_subgroup)
{
    fa_cl__device_traits t;
    memset(&t, 0, sizeof t);
    t.is_gpu = 1;
    t.vendor = vendor;
    t.min_subgroup = min_subgroup;
    fa_cl__traits_complete(&t);
    return t.private_floats;
}
