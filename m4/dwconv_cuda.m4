# DWCONV_CHECK_CUDA
# --with-cuda[=DIR]: build the dwconv_cuda module. Default (no option): build it when
# nvcc is found ($CUDA_HOME, PATH, /usr/local/cuda); a toolkit that is missing then
# only warns. --with-cuda or --with-cuda=DIR that cannot be satisfied is an error;
# --without-cuda skips it. CUDA_ARCHS picks the compute capabilities (machine code
# for each, plus PTX for the newest so that later GPUs can JIT it); the default runs on
# Turing to Hopper. Each one is test-compiled with nvcc, so that an architecture this
# toolkit cannot build (too old for it, or dropped by it) stops configure with its
# name instead of failing in the middle of make.
AC_DEFUN([DWCONV_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
                    [build the CUDA module with the toolkit in DIR (default: if nvcc is found)])],
    [], [with_cuda=guess])
  AC_ARG_VAR([NVCC], [the CUDA compiler])
  AC_ARG_VAR([CUDA_ARCHS], [CUDA compute capabilities to build for (default: "75 80 86 89 90")])
  AC_ARG_VAR([NVCCFLAGS], [extra flags for nvcc])
  cuda_archs_default="75 80 86 89 90"
  cuda_archs_given=${CUDA_ARCHS+yes}
  : ${CUDA_ARCHS="$cuda_archs_default"}
  build_cuda=no
  cuda_summary="no (--without-cuda)"
  dnl A module is a shared object: without shared libraries there is none to build.
  AS_IF([test "x$with_cuda" != xno && test "x$enable_shared" = xno], [
    AS_IF([test "x$with_cuda" != xguess],
          [AC_MSG_ERROR([--with-cuda needs shared libraries: the module is a shared object (drop --disable-shared)])])
    AC_MSG_WARN([--disable-shared: the CUDA module will not be built])
    with_cuda=no
    cuda_summary="no: modules need shared libraries (--disable-shared)"
  ])
  AS_IF([test "x$with_cuda" != xno], [
    cuda_candidates=
    AS_CASE([$with_cuda],
      [yes|guess], [cuda_candidates="${CUDA_HOME:+$CUDA_HOME/bin} `echo $PATH | tr ':' ' '` /usr/local/cuda/bin /opt/cuda/bin"],
      [cuda_candidates="$with_cuda/bin"])
    AS_IF([test -z "$NVCC"], [
      for dir in $cuda_candidates; do
        AS_IF([test -x "$dir/nvcc"], [NVCC="$dir/nvcc"; break])
      done])
    AC_MSG_CHECKING([for nvcc])
    AS_IF([test -n "$NVCC" && test -x "$NVCC"], [
      AC_MSG_RESULT([$NVCC])
      CUDA_HOME=`dirname "$NVCC"`; CUDA_HOME=`dirname "$CUDA_HOME"`
      AC_MSG_CHECKING([for the static CUDA runtime])
      cuda_libdir=
      for dir in "$CUDA_HOME/lib64" "$CUDA_HOME/lib" "$CUDA_HOME/targets/x86_64-linux/lib" "$CUDA_HOME/targets/sbsa-linux/lib"; do
        AS_IF([test -f "$dir/libcudart_static.a"], [cuda_libdir=$dir; break])
      done
      AC_MSG_RESULT([${cuda_libdir:-not found}])
      AS_IF([test -n "$cuda_libdir"], [build_cuda=yes], [
        cuda_summary="no: libcudart_static.a not found under $CUDA_HOME"])
    ], [
      AC_MSG_RESULT([no])
      cuda_summary="no: nvcc not found (try --with-cuda=DIR)"
    ])
    AS_IF([test "x$build_cuda" = xno && test "x$with_cuda" != xguess],
          [AC_MSG_ERROR([--with-cuda was given but the CUDA module cannot be built: $cuda_summary])])
    AS_IF([test "x$build_cuda" = xno], [AC_MSG_WARN([the CUDA module will not be built: $cuda_summary])])
  ])
  AS_IF([test "x$build_cuda" = xyes], [
    NVCC_GENCODE=
    cuda_last=
    for arch in $CUDA_ARCHS; do
      dnl digits, with the a (architecture-specific) or f (family) suffix nvcc knows
      AS_CASE([`echo "$arch" | sed 's/[[af]]$//'`], [''|*[[!0-9]]*],
              [AC_MSG_ERROR([CUDA_ARCHS: '$arch' is not a compute capability as nvcc writes it (e.g. 90 for 9.0, or 90a)])])
      NVCC_GENCODE="$NVCC_GENCODE -gencode=arch=compute_$arch,code=sm_$arch"
      cuda_last=$arch
    done
    AS_IF([test -z "$cuda_last"], [AC_MSG_ERROR([CUDA_ARCHS is empty])])
    DWCONV_CUDA_TRY_ARCHS
    AS_IF([test -n "$cuda_bad_archs"], [
      cuda_why="$NVCC cannot build for compute capability $cuda_bad_archs (CUDA_ARCHS=\"$CUDA_ARCHS\"): $cuda_bad_reason"
      AS_IF([test "x$with_cuda" = xguess && test "x$cuda_archs_given" != xyes], [
        AC_MSG_WARN([the CUDA module will not be built: $cuda_why; set CUDA_ARCHS to what this toolkit supports])
        build_cuda=no
        cuda_summary="no: $cuda_why"
      ], [AC_MSG_ERROR([$cuda_why; set CUDA_ARCHS to what this toolkit supports])])
    ])
  ])
  AS_IF([test "x$build_cuda" = xyes], [
    NVCC_GENCODE="$NVCC_GENCODE -gencode=arch=compute_$cuda_last,code=compute_$cuda_last"
    CUDA_LDFLAGS="-L$cuda_libdir"
    CUDA_LIBS="-lcudart_static -lrt -ldl -lpthread"
    cuda_summary="yes ($NVCC, sm: $CUDA_ARCHS, PTX: $cuda_last)"
    AC_DEFINE([DWCONV_BUILT_CUDA], [1], [the CUDA module is built])
  ], [AC_DEFINE([DWCONV_BUILT_CUDA], [0], [the CUDA module is built])])
  AC_SUBST([CUDA_HOME])
  AC_SUBST([NVCC_GENCODE])
  AC_SUBST([CUDA_LDFLAGS])
  AC_SUBST([CUDA_LIBS])
  AM_CONDITIONAL([BUILD_CUDA], [test "x$build_cuda" = xyes])
])

# DWCONV_CUDA_TRY_ARCHS: compiles a tiny kernel for every architecture in CUDA_ARCHS
# (one nvcc call; one per architecture only when that fails, to name the culprits).
# Sets cuda_bad_archs (empty when all build) and cuda_bad_reason (nvcc's first error).
AC_DEFUN([DWCONV_CUDA_TRY_ARCHS], [
  AC_MSG_CHECKING([whether $NVCC builds for CUDA_ARCHS=$CUDA_ARCHS])
  cuda_bad_archs=
  cuda_bad_reason=
  cat > conftest.cu <<'_DWCONV_EOF'
__global__ void dwconv_probe(float *p) { p[[threadIdx.x]] += 1.0f; }
_DWCONV_EOF
  AS_IF([$NVCC -c $NVCC_GENCODE conftest.cu -o conftest.o >conftest.err 2>&1], [
    AC_MSG_RESULT([yes])
  ], [
    for arch in $CUDA_ARCHS; do
      AS_IF([$NVCC -c -gencode=arch=compute_$arch,code=sm_$arch conftest.cu -o conftest.o >conftest.err 2>&1], [], [
        cuda_bad_archs="${cuda_bad_archs:+$cuda_bad_archs }$arch"
        AS_IF([test -z "$cuda_bad_reason"],
              [cuda_bad_reason=`grep -i -m1 'error\|unsupported' conftest.err | tr -d '\r'`])
        cat conftest.err >&AS_MESSAGE_LOG_FD
      ])
    done
    AS_IF([test -z "$cuda_bad_archs"], [cuda_bad_archs="(together)"; cuda_bad_reason=`head -n1 conftest.err`])
    AC_MSG_RESULT([no: $cuda_bad_archs])
  ])
  rm -f conftest.cu conftest.o conftest.err
])
