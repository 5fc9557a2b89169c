# DWCONV_CC_FLAGS_SUPPORTED(VARIABLE, FLAGS)
# Appends to VARIABLE each of FLAGS that the C compiler accepts (with -Werror, so
# that a flag it merely warns about is left out).
AC_DEFUN([DWCONV_CC_FLAGS_SUPPORTED], [
  for dwconv_flag in $2; do
    AC_MSG_CHECKING([whether $CC accepts $dwconv_flag])
    dwconv_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS -Werror $dwconv_flag"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
                      [AC_MSG_RESULT([yes]); $1="$[]$1 $dwconv_flag"],
                      [AC_MSG_RESULT([no])])
    CFLAGS=$dwconv_save_CFLAGS
  done
])

# DWCONV_CHECK_CPU_SIMD
# The cpu path has one file per x86 SIMD flavour, each compiled with its own flags
# and chosen at run time by what the processor supports. A flavour whose flags the
# compiler rejects is not built (and never chosen).
AC_DEFUN([DWCONV_CHECK_CPU_SIMD], [
  AVX2_CFLAGS="-mavx2 -mfma -mf16c"
  AVX512_CFLAGS="-mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c"
  cpu_simd_summary=generic
  dwconv_avx2=no
  dwconv_avx512=no
  AS_CASE([$host_cpu], [x86_64|i?86], [
    dwconv_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS $AVX2_CFLAGS"
    AC_MSG_CHECKING([whether $CC builds AVX2+FMA code])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <immintrin.h>]],
        [[__m256 a = _mm256_set1_ps(1.f); a = _mm256_fmadd_ps(a, a, a); return (int)_mm256_cvtss_f32(a);]])],
        [dwconv_avx2=yes; cpu_simd_summary="$cpu_simd_summary avx2"])
    AC_MSG_RESULT([$dwconv_avx2])
    CFLAGS="$dwconv_save_CFLAGS $AVX512_CFLAGS"
    AC_MSG_CHECKING([whether $CC builds AVX-512 code])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <immintrin.h>]],
        [[__m512 a = _mm512_set1_ps(1.f); a = _mm512_fmadd_ps(a, a, a); return (int)_mm512_reduce_add_ps(a);]])],
        [dwconv_avx512=yes; cpu_simd_summary="$cpu_simd_summary avx512"])
    AC_MSG_RESULT([$dwconv_avx512])
    CFLAGS=$dwconv_save_CFLAGS
  ])
  AC_SUBST([AVX2_CFLAGS])
  AC_SUBST([AVX512_CFLAGS])
  AM_CONDITIONAL([BUILD_AVX2], [test "x$dwconv_avx2" = xyes])
  AM_CONDITIONAL([BUILD_AVX512], [test "x$dwconv_avx512" = xyes])
  AS_IF([test "x$dwconv_avx2" = xyes], [AC_DEFINE([DWCONV_HAVE_AVX2], [1], [AVX2 flavour built])])
  AS_IF([test "x$dwconv_avx512" = xyes], [AC_DEFINE([DWCONV_HAVE_AVX512], [1], [AVX-512 flavour built])])
  DWCONV_CHECK_ONEDNN
])

# DWCONV_CHECK_ONEDNN
# The cpu path's benchmark (make bench-cpu) times oneDNN on the same problems when its
# C API is installed: --with-onednn insists, --without-onednn leaves it out, the
# default uses it when found. Only bench/cpu links it (DNNL_LIBS), never the library.
AC_DEFUN([DWCONV_CHECK_ONEDNN], [
  AC_ARG_WITH([onednn],
    [AS_HELP_STRING([--without-onednn], [do not compare the cpu benchmark with oneDNN (default: when found)])],
    [], [with_onednn=check])
  have_dnnl=no
  AS_IF([test "x$with_onednn" != xno], [
    AC_CHECK_HEADER([dnnl.h], [AC_CHECK_LIB([dnnl], [dnnl_engine_create], [have_dnnl=yes])])
    AS_IF([test "x$with_onednn" = xyes && test "x$have_dnnl" = xno],
          [AC_MSG_ERROR([--with-onednn: dnnl.h and -ldnnl (oneDNN) were not found])])
  ])
  DNNL_LIBS=
  AS_IF([test "x$have_dnnl" = xyes], [
    DNNL_LIBS=-ldnnl
    AC_DEFINE([HAVE_DNNL], [1], [oneDNN is there for the cpu benchmark to compare with])
  ])
  AC_SUBST([DNNL_LIBS])
  AM_CONDITIONAL([HAVE_DNNL], [test "x$have_dnnl" = xyes])
])
