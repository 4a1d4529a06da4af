/* pyjax_ffi.h -- the C ABI of pyjax's foreign function interface (jax.ffi).
 *
 * A target registered with pyjax.ffi.register_ffi_target is a C function
 *
 *     int32_t my_target(PyjaxFfiCallFrame *frame);
 *
 * called once per ffi_call execution (eagerly, inside jit, or per batch element under
 * vmap_method="sequential"), with the Python GIL released.  It reads frame->args, writes
 * every frame->rets buffer and returns PYJAX_FFI_OK (0), or returns a status code
 * (PYJAX_FFI_INVALID_ARGUMENT, ...) after writing a NUL-terminated message of at most
 * frame->error_size bytes into frame->error (pyjax_ffi_error does both); pyjax then
 * raises JaxRuntimeError("<CODE NAME>: <message>").
 *
 * Buffers: `dims` are the logical dimensions (rank entries; rank 0 is a scalar with one
 * element); `layout` is the memory order, major to minor (row-major: 0, 1, ..., rank-1;
 * it differs only when ffi_call was given input_layouts/output_layouts).  Argument
 * buffers are read-only; with input_output_aliases an aliased argument and its result
 * share one buffer, which holds the argument's values on entry.
 *
 * Attributes are ffi_call's keyword arguments, sorted by name: Python int/bool and NumPy
 * integer scalars are PYJAX_FFI_ATTR_INT (`i64`; `dtype` says which type it came from),
 * float and NumPy floating scalars PYJAX_FFI_ATTR_FLOAT (`f64`), str PYJAX_FFI_ATTR_STRING
 * (`data` -> `size` bytes, NUL-terminated), NumPy arrays PYJAX_FFI_ATTR_ARRAY (`data` ->
 * `size` C-contiguous elements of `dtype`).
 */
#ifndef PYJAX_FFI_H_
#define PYJAX_FFI_H_

#include <stdint.h>
#include <stdio.h>
#include <stdarg.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PYJAX_FFI_API_VERSION 1

typedef enum {
  PYJAX_FFI_BOOL = 1, PYJAX_FFI_S8 = 2, PYJAX_FFI_S16 = 3, PYJAX_FFI_S32 = 4,
  PYJAX_FFI_S64 = 5, PYJAX_FFI_U8 = 6, PYJAX_FFI_U16 = 7, PYJAX_FFI_U32 = 8,
  PYJAX_FFI_U64 = 9, PYJAX_FFI_F16 = 10, PYJAX_FFI_F32 = 11, PYJAX_FFI_F64 = 12,
  PYJAX_FFI_BF16 = 13, PYJAX_FFI_C64 = 14, PYJAX_FFI_C128 = 15
} PyjaxFfiDataType;

typedef enum {
  PYJAX_FFI_ATTR_INT = 1, PYJAX_FFI_ATTR_FLOAT = 2, PYJAX_FFI_ATTR_STRING = 3,
  PYJAX_FFI_ATTR_ARRAY = 4
} PyjaxFfiAttrKind;

/* status codes (absl's numbering, as XLA's FFI error codes) */
enum {
  PYJAX_FFI_OK = 0, PYJAX_FFI_CANCELLED = 1, PYJAX_FFI_UNKNOWN = 2,
  PYJAX_FFI_INVALID_ARGUMENT = 3, PYJAX_FFI_NOT_FOUND = 5, PYJAX_FFI_OUT_OF_RANGE = 11,
  PYJAX_FFI_UNIMPLEMENTED = 12, PYJAX_FFI_INTERNAL = 13
};

typedef struct {
  void *data;
  int32_t dtype;           /* PyjaxFfiDataType */
  int32_t rank;
  const int64_t *dims;     /* logical dimensions */
  const int64_t *layout;   /* memory order, major to minor */
} PyjaxFfiBuffer;

typedef struct {
  const char *name;
  int32_t kind;            /* PyjaxFfiAttrKind */
  int32_t dtype;           /* PyjaxFfiDataType of the value (0 for strings) */
  int64_t i64;             /* PYJAX_FFI_ATTR_INT */
  double f64;              /* PYJAX_FFI_ATTR_FLOAT */
  const void *data;        /* PYJAX_FFI_ATTR_STRING / PYJAX_FFI_ATTR_ARRAY */
  int64_t size;            /* bytes of a string, elements of an array */
} PyjaxFfiAttr;

typedef struct {
  int32_t api_version;     /* PYJAX_FFI_API_VERSION */
  int32_t num_args;
  int32_t num_rets;
  int32_t num_attrs;
  const PyjaxFfiBuffer *args;
  PyjaxFfiBuffer *rets;
  const PyjaxFfiAttr *attrs;
  char *error;
  int64_t error_size;
} PyjaxFfiCallFrame;

typedef int32_t (*PyjaxFfiHandler)(PyjaxFfiCallFrame *frame);

/* The number of elements of a buffer. */
static inline int64_t pyjax_ffi_size(const PyjaxFfiBuffer *b) {
  int64_t n = 1;
  for (int32_t i = 0; i < b->rank; i++) n *= b->dims[i];
  return n;
}

/* The attribute called `name`, or NULL. */
static inline const PyjaxFfiAttr *pyjax_ffi_attr(const PyjaxFfiCallFrame *f, const char *name) {
  for (int32_t i = 0; i < f->num_attrs; i++)
    if (strcmp(f->attrs[i].name, name) == 0) return &f->attrs[i];
  return NULL;
}

/* Write a printf-style message into frame->error and return `code`. */
static inline int32_t pyjax_ffi_error(PyjaxFfiCallFrame *f, int32_t code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (f->error && f->error_size > 0) vsnprintf(f->error, (size_t)f->error_size, fmt, ap);
  va_end(ap);
  return code;
}

#ifdef __cplusplus
}
#endif

#endif  /* PYJAX_FFI_H_ */
