# SPDX-License-Identifier: Apache-2.0
"""libfa_cl through ctypes, its structs read from fa_cl.h (never copied by hand).

The structs a caller fills (fa_cl_attention_desc, fa_cl_forward_args, fa_cl_plan_info) are parsed
from the header this package was built with, so a field added to the C header is a field here.
Their first member, struct_size, is set from that layout: the library reads only that many bytes
(the header's extension rule), so a library newer than the header keeps working; one of another
major.minor version is refused at import.
"""
import ctypes
import ctypes.util
import os
import re

_HERE = os.path.dirname(os.path.abspath(__file__))

_C_TYPES = {
    "size_t": ctypes.c_size_t,
    "int64_t": ctypes.c_int64,
    "int": ctypes.c_int,
    "float": ctypes.c_float,
    "cl_uint": ctypes.c_uint32,
    "fa_cl_dtype": ctypes.c_int,
    "fa_cl_mask_type": ctypes.c_int,
    "fa_cl_storage": ctypes.c_int,
    "cl_mem": ctypes.c_void_p,
}


def _strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def header_path():
    """The fa_cl.h the structs come from: FA_CL_HEADER, else the copy made when the package was built."""
    return os.environ.get("FA_CL_HEADER") or os.path.join(_HERE, "fa_cl.h")


def _parse_struct(text, name):
    m = re.search(r"typedef\s+struct\s+%s\s*\{(.*?)\}\s*%s\s*;" % (name, name), text, flags=re.S)
    if not m:
        raise ImportError("fa_cl: %s has no struct %s" % (header_path(), name))
    fields = []
    for decl in m.group(1).split(";"):
        decl = " ".join(decl.split())
        if not decl:
            continue
        dm = re.match(r"^((?:const\s+)?[A-Za-z_][A-Za-z0-9_]*)\s+(.*)$", decl)
        if not dm:
            raise ImportError("fa_cl: cannot read the declaration '%s' of %s in %s" % (decl, name, header_path()))
        base = dm.group(1).replace("const ", "")
        for item in dm.group(2).split(","):
            item = item.strip()
            pointer = item.startswith("*")
            item = item.lstrip("* ")
            am = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+)\])?$", item)
            if not am:
                raise ImportError("fa_cl: cannot read the field '%s' of %s in %s" % (item, name, header_path()))
            if pointer:
                ctype = ctypes.c_void_p
            elif base in _C_TYPES:
                ctype = _C_TYPES[base]
            else:
                raise ImportError("fa_cl: the field %s.%s has the type %s, which this binding does not know"
                                  % (name, am.group(1), base))
            if am.group(2):
                ctype = ctype * int(am.group(2))
            fields.append((am.group(1), ctype))
    return type(name, (ctypes.Structure,), {"_fields_": fields})


def _parse_enum(text, name):
    m = re.search(r"typedef\s+enum\s+%s\s*\{(.*?)\}\s*%s\s*;" % (name, name), text, flags=re.S)
    if not m:
        raise ImportError("fa_cl: %s has no enum %s" % (header_path(), name))
    values = {}
    for item in m.group(1).split(","):
        em = re.match(r"^\s*([A-Z0-9_]+)\s*=\s*(\d+)\s*$", item)
        if em:
            values[em.group(1)] = int(em.group(2))
    return values


def _load_library():
    """FA_CL_LIBRARY, else the copy made when the package was built, else the system's libfa_cl."""
    tried = []
    candidates = [os.environ.get("FA_CL_LIBRARY"), os.path.join(_HERE, "libfa_cl.so"), ctypes.util.find_library("fa_cl")]
    for c in candidates:
        if not c:
            continue
        if os.sep in c and not os.path.exists(c):
            tried.append("%s (missing)" % c)
            continue
        try:
            return ctypes.CDLL(c)
        except OSError as e:
            tried.append("%s (%s)" % (c, e))
    raise ImportError("fa_cl: libfa_cl not found; set FA_CL_LIBRARY to libfa_cl.so, or rebuild the package after "
                      "building the library (tried: %s)" % (", ".join(tried) or "nothing"))


with open(header_path()) as _f:
    _HEADER = _strip_comments(_f.read())

AttentionDesc = _parse_struct(_HEADER, "fa_cl_attention_desc")
ForwardArgs = _parse_struct(_HEADER, "fa_cl_forward_args")
BackwardArgs = _parse_struct(_HEADER, "fa_cl_backward_args")
PlanInfo = _parse_struct(_HEADER, "fa_cl_plan_info")
STATUS = _parse_enum(_HEADER, "fa_cl_status")
DTYPE = _parse_enum(_HEADER, "fa_cl_dtype")
HEADER_VERSION = re.search(r'#define\s+FA_CL_VERSION_STRING\s+"([^"]+)"', _HEADER).group(1)

lib = _load_library()
_P = ctypes.c_void_p
_SIGNATURES = {
    "fa_cl_version": (ctypes.c_char_p, []),
    "fa_cl_status_string": (ctypes.c_char_p, [ctypes.c_int]),
    "fa_cl_last_error": (ctypes.c_char_p, [_P]),
    "fa_cl_context_create": (ctypes.c_int, [_P, _P, _P, ctypes.POINTER(_P)]),
    "fa_cl_context_create_default": (ctypes.c_int, [ctypes.POINTER(_P)]),
    "fa_cl_context_release": (None, [_P]),
    "fa_cl_context_cl_context": (_P, [_P]),
    "fa_cl_context_queue": (_P, [_P]),
    "fa_cl_context_device": (_P, [_P]),
    "fa_cl_attention_desc_init_sized": (None, [ctypes.POINTER(AttentionDesc), ctypes.c_size_t, ctypes.c_int64,
                                               ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                               ctypes.c_int]),
    "fa_cl_attention_desc_validate": (ctypes.c_int, [ctypes.POINTER(AttentionDesc), ctypes.c_char_p, ctypes.c_size_t]),
    "fa_cl_plan_create": (ctypes.c_int, [_P, ctypes.POINTER(AttentionDesc), ctypes.POINTER(_P)]),
    "fa_cl_plan_get_info_sized": (ctypes.c_int, [_P, ctypes.POINTER(PlanInfo), ctypes.c_size_t]),
    "fa_cl_plan_run": (ctypes.c_int, [_P, ctypes.POINTER(ForwardArgs)]),
    "fa_cl_plan_release": (None, [_P]),
    "fa_cl_attention_backward": (ctypes.c_int, [_P, ctypes.POINTER(AttentionDesc), ctypes.POINTER(BackwardArgs)]),
}
for _name, (_res, _args) in _SIGNATURES.items():
    _fn = getattr(lib, _name)
    _fn.restype, _fn.argtypes = _res, _args

LIBRARY_VERSION = lib.fa_cl_version().decode()
if LIBRARY_VERSION.split(".")[:2] != HEADER_VERSION.split(".")[:2]:
    raise ImportError("fa_cl: the library is %s, the header the package was built with %s (major.minor must agree: "
                      "rebuild the package, or set FA_CL_LIBRARY / FA_CL_HEADER)" % (LIBRARY_VERSION, HEADER_VERSION))
