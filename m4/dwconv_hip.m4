# DWCONV_CHECK_HIP
# --with-hip[=DIR]: build the dwconv_hip module with hipcc from the same kernel
# source as CUDA. Default: build it when hipcc is found ($ROCM_PATH, PATH, /opt/rocm);
# an explicit request that fails is an error. HIP_ARCHS lists the AMD targets, each
# passed as --offload-arch (hipcc alone would silently target gfx803).
AC_DEFUN([DWCONV_CHECK_HIP], [
  AC_ARG_WITH([hip],
    [AS_HELP_STRING([--with-hip@<:@=DIR@:>@],
                    [build the HIP module with the ROCm in DIR (default: if hipcc is found)])],
    [], [with_hip=guess])
  AC_ARG_VAR([HIPCC], [the HIP compiler])
  AC_ARG_VAR([HIP_ARCHS], [AMD GPU targets (default: "gfx908 gfx90a gfx940 gfx1030")])
  AC_ARG_VAR([HIPCCFLAGS], [extra flags for hipcc])
  : ${HIP_ARCHS="gfx908 gfx90a gfx940 gfx1030"}
  build_hip=no
  hip_summary="no (--without-hip)"
  dnl A module is a shared object: without shared libraries there is none to build.
  AS_IF([test "x$with_hip" != xno && test "x$enable_shared" = xno], [
    AS_IF([test "x$with_hip" != xguess],
          [AC_MSG_ERROR([--with-hip needs shared libraries: the module is a shared object (drop --disable-shared)])])
    AC_MSG_WARN([--disable-shared: the HIP module will not be built])
    with_hip=no
    hip_summary="no: modules need shared libraries (--disable-shared)"
  ])
  AS_IF([test "x$with_hip" != xno], [
    AS_CASE([$with_hip],
      [yes|guess], [hip_candidates="${ROCM_PATH:+$ROCM_PATH/bin} `echo $PATH | tr ':' ' '` /opt/rocm/bin"],
      [hip_candidates="$with_hip/bin"])
    AS_IF([test -z "$HIPCC"], [
      for dir in $hip_candidates; do
        AS_IF([test -x "$dir/hipcc"], [HIPCC="$dir/hipcc"; break])
      done])
    AC_MSG_CHECKING([for hipcc])
    AS_IF([test -n "$HIPCC" && test -x "$HIPCC"], [
      AC_MSG_RESULT([$HIPCC])
      HIP_OFFLOAD=
      for arch in $HIP_ARCHS; do HIP_OFFLOAD="$HIP_OFFLOAD --offload-arch=$arch"; done
      AS_IF([test -z "$HIP_OFFLOAD"], [AC_MSG_ERROR([HIP_ARCHS is empty])])
      AC_MSG_CHECKING([whether hipcc builds for $HIP_ARCHS])
      cat > conftest.hip <<_DWEOF
#include <hip/hip_runtime.h>
__global__ void k(float *p) { *p = 1.f; }
int main(void) { int n = 0; return hipGetDeviceCount(&n) == hipSuccess ? 0 : 0; }
_DWEOF
      AS_IF([$HIPCC $HIP_OFFLOAD -c conftest.hip -o conftest.$OBJEXT >&AS_MESSAGE_LOG_FD 2>&1],
            [AC_MSG_RESULT([yes]); build_hip=yes],
            [AC_MSG_RESULT([no]); hip_summary="no: $HIPCC cannot build for $HIP_ARCHS (see config.log)"])
      rm -f conftest.hip conftest.$OBJEXT
      hip_root=`dirname "$HIPCC"`; hip_root=`dirname "$hip_root"`
      HIP_LDFLAGS=
      for dir in "$hip_root/lib" "$hip_root/lib64"; do
        AS_IF([test -e "$dir/libamdhip64.so"], [HIP_LDFLAGS="-L$dir"; break])
      done
    ], [
      AC_MSG_RESULT([no])
      hip_summary="no: hipcc not found (try --with-hip=DIR)"
    ])
    AS_IF([test "x$build_hip" = xno && test "x$with_hip" != xguess],
          [AC_MSG_ERROR([--with-hip was given but the HIP module cannot be built: $hip_summary])])
    AS_IF([test "x$build_hip" = xno], [AC_MSG_WARN([the HIP module will not be built: $hip_summary])])
  ])
  AS_IF([test "x$build_hip" = xyes], [
    HIP_LIBS="-lamdhip64"
    hip_summary="yes ($HIPCC, targets: $HIP_ARCHS)"
    AC_DEFINE([DWCONV_BUILT_HIP], [1], [the HIP module is built])
  ], [AC_DEFINE([DWCONV_BUILT_HIP], [0], [the HIP module is built])])
  AC_SUBST([HIP_OFFLOAD])
  AC_SUBST([HIP_LDFLAGS])
  AC_SUBST([HIP_LIBS])
  AM_CONDITIONAL([BUILD_HIP], [test "x$build_hip" = xyes])
])
