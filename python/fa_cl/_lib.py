# SPDX-License-Identifier: Apache-2.0
"""libfa_cl through ctypes, its structs read from fa_cl.h (never copied by hand).

Every struct the header defines (fa_cl_attention_desc, fa_cl_forward_args, fa_cl_backward_args,
fa_cl_plan_info, fa_cl_merge_args) is parsed from the header this package was built with, so a field added to the C
header is a field here without a release of this package. Reading the header rather than
generating a ctypes module at build time keeps the package free of a C toolchain; what guards the
parse is python/tests/test_layout.py, which compares every struct's sizeof and every field's offset
and size with the C compiler's. struct_size, the first member, is set from this layout: the
library reads only that many bytes (the header's extension rule), so a library newer than the
header keeps working; one of another major.minor version is refused at import.
"""
import ctypes
import ctypes.util
import os
import re

_HERE = os.path.dirname(os.path.abspath(__file__))

# the C types a public struct field may have; enums of the header are added as int below
_C_TYPES = {
    "size_t": ctypes.c_size_t,
    "int64_t": ctypes.c_int64,
    "uint64_t": ctypes.c_uint64,
    "int32_t": ctypes.c_int32,
    "uint32_t": ctypes.c_uint32,
    "int16_t": ctypes.c_int16,
    "uint16_t": ctypes.c_uint16,
    "int8_t": ctypes.c_int8,
    "uint8_t": ctypes.c_uint8,
    "int": ctypes.c_int,
    "unsigned": ctypes.c_uint,
    "float": ctypes.c_float,
    "double": ctypes.c_double,
    "cl_int": ctypes.c_int32,
    "cl_uint": ctypes.c_uint32,
    "cl_long": ctypes.c_int64,
    "cl_ulong": ctypes.c_uint64,
    "cl_bool": ctypes.c_uint32,
    "cl_mem": ctypes.c_void_p,
    "cl_event": ctypes.c_void_p,
}


def _strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def header_path():
    """The fa_cl.h the structs come from: FA_CL_HEADER, else the copy made when the package was built."""
    return os.environ.get("FA_CL_HEADER") or os.path.join(_HERE, "fa_cl.h")


def _field_type(struct, field, base, pointer, c_types):
    if pointer:  # const char * is a string (plan_info.kernel); every other pointer an address
        return ctypes.c_char_p if base == "char" and pointer == 1 else ctypes.c_void_p
    if base in c_types:
        return c_types[base]
    raise ImportError("fa_cl: the field %s.%s has the type %s, which this binding does not know"
                      % (struct, field, base))


def _parse_struct(name, body, c_types):
    fields = []
    for decl in body.split(";"):
        decl = " ".join(decl.split())
        if not decl:
            continue
        dm = re.match(r"^((?:const\s+)?(?:unsigned\s+)?[A-Za-z_][A-Za-z0-9_]*)\s+(.*)$", decl)
        if not dm:
            raise ImportError("fa_cl: cannot read the declaration '%s' of %s in %s" % (decl, name, header_path()))
        base = dm.group(1).replace("const ", "")
        for item in dm.group(2).split(","):
            item = re.sub(r"\bconst\b", " ", item).strip()  # `T *const *p`: constness is no part of the layout
            name_part = item.lstrip("* ")
            pointer = item[:len(item) - len(name_part)].count("*")
            am = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+)\])?$", name_part)
            if not am:
                raise ImportError("fa_cl: cannot read the field '%s' of %s in %s" % (item, name, header_path()))
            ctype = _field_type(name, am.group(1), base, pointer, c_types)
            if am.group(2):
                ctype = ctype * int(am.group(2))
            fields.append((am.group(1), ctype))
    return type(name, (ctypes.Structure,), {"_fields_": fields})


def parse_structs(text):
    """Every `typedef struct NAME { ... } NAME;` of the (comment-free) header text, as ctypes Structures
    by name; enum types the header defines are C ints."""
    c_types = dict(_C_TYPES)
    for enum in re.findall(r"typedef\s+enum\s+(\w+)\s*\{", text):
        c_types[enum] = ctypes.c_int
    structs = {}
    for m in re.finditer(r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*(\w+)\s*;", text, flags=re.S):
        if m.group(1) != m.group(3):
            raise ImportError("fa_cl: struct %s is typedef'd as %s in %s" % (m.group(1), m.group(3), header_path()))
        structs[m.group(1)] = _parse_struct(m.group(1), m.group(2), c_types)
    return structs


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

STRUCTS = parse_structs(_HEADER)
for _name in ("fa_cl_attention_desc", "fa_cl_forward_args", "fa_cl_backward_args", "fa_cl_plan_info",
              "fa_cl_merge_args"):
    if _name not in STRUCTS:
        raise ImportError("fa_cl: %s has no struct %s" % (header_path(), _name))
AttentionDesc = STRUCTS["fa_cl_attention_desc"]
ForwardArgs = STRUCTS["fa_cl_forward_args"]
BackwardArgs = STRUCTS["fa_cl_backward_args"]
PlanInfo = STRUCTS["fa_cl_plan_info"]
MergeArgs = STRUCTS["fa_cl_merge_args"]
STATUS = _parse_enum(_HEADER, "fa_cl_status")
DTYPE = _parse_enum(_HEADER, "fa_cl_dtype")
STORAGE = _parse_enum(_HEADER, "fa_cl_storage")
DESCALE = _parse_enum(_HEADER, "fa_cl_descale")
MASK = _parse_enum(_HEADER, "fa_cl_mask_type")
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
    "fa_cl_backward_plan_create": (ctypes.c_int, [_P, ctypes.POINTER(AttentionDesc), ctypes.POINTER(_P)]),
    "fa_cl_backward_plan_get_info_sized": (ctypes.c_int, [_P, ctypes.POINTER(PlanInfo), ctypes.c_size_t]),
    "fa_cl_backward_plan_run": (ctypes.c_int, [_P, ctypes.POINTER(BackwardArgs)]),
    "fa_cl_backward_plan_release": (None, [_P]),
    "fa_cl_merge": (ctypes.c_int, [_P, ctypes.POINTER(MergeArgs)]),
}
for _name, (_res, _args) in _SIGNATURES.items():
    _fn = getattr(lib, _name)
    _fn.restype, _fn.argtypes = _res, _args

LIBRARY_VERSION = lib.fa_cl_version().decode()
if LIBRARY_VERSION.split(".")[:2] != HEADER_VERSION.split(".")[:2]:
    raise ImportError("fa_cl: the library is %s, the header the package was built with %s (major.minor must agree: "
                      "rebuild the package, or set FA_CL_LIBRARY / FA_CL_HEADER)" % (LIBRARY_VERSION, HEADER_VERSION))


class FaClError(RuntimeError):
    """A call fa_cl refused or failed: .status (int), .status_name ("FA_CL_ERROR_...") and the library's message."""

    def __init__(self, status, message):
        self.status = status
        self.status_name = lib.fa_cl_status_string(status).decode()
        self.message = message
        super().__init__("%s: %s" % (self.status_name, message))


def check(status, ctx_ptr=None):
    """Raise FaClError with fa_cl_last_error's message for a failed status."""
    if status:
        raise FaClError(status, lib.fa_cl_last_error(ctx_ptr).decode(errors="replace"))
