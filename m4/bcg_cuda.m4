# bcg_cuda.m4 - find the CUDA toolkit, cuBLAS and the NVTX v3 headers.
#
# BCG_CUDA
#   --with-cuda[=DIR] takes four states:
#     no     build the host backend only;
#     guess  (the default) look in $CUDA_HOME, $CUDA_PATH and /usr/local/cuda;
#            if nothing usable is found, warn and build without CUDA;
#     yes    as guess, but a missing piece stops configure;
#     DIR    look in DIR only; a missing piece stops configure.
#   --with-nvcc-gencode=FLAGS replaces the default architecture list
#   (sm_90 code plus compute_90 PTX, so newer GPUs can JIT it).
#
#   Sets and substitutes NVCC, NVCCFLAGS, CUDA_HOME, CUDA_CPPFLAGS,
#   CUDA_LDFLAGS, CUDA_LIBS, BCG_NVCC_GENCODE; defines HAVE_CUDA; and
#   evaluates AM_CONDITIONAL([HAVE_CUDA]) in every case.

AC_DEFUN([BCG_CUDA], [
AC_ARG_WITH([cuda],
  [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
    [build the CUDA backend, with the toolkit in DIR @<:@default: guess@:>@])],
  [], [with_cuda=guess])
AC_ARG_WITH([nvcc-gencode],
  [AS_HELP_STRING([--with-nvcc-gencode=FLAGS],
    [nvcc -gencode flags @<:@default: sm_90 code plus compute_90 PTX@:>@])],
  [BCG_NVCC_GENCODE="$withval"],
  [BCG_NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90"])
AC_ARG_VAR([NVCC], [the CUDA compiler driver])
AC_ARG_VAR([NVCCFLAGS], [extra flags for nvcc])

bcg_have_cuda=no
bcg_cuda_why=
AS_CASE([$with_cuda],
  [no], [bcg_cuda_dirs=],
  [guess|yes], [bcg_cuda_dirs="${CUDA_HOME} ${CUDA_PATH} /usr/local/cuda"],
  [bcg_cuda_dirs="$with_cuda"])

# The toolkit found goes to a variable of our own first: CUDA_HOME may come
# from the environment, and must not stand for a directory not searched.
bcg_cuda_home=
AS_IF([test "x$with_cuda" != xno], [
  for bcg_dir in $bcg_cuda_dirs; do
    AS_IF([test -x "$bcg_dir/bin/nvcc"], [bcg_cuda_home="$bcg_dir"; break])
  done
  AS_IF([test -z "$bcg_cuda_home"],
    [bcg_cuda_why="no nvcc found in: $bcg_cuda_dirs"],
    [bcg_have_cuda=yes])
])
CUDA_HOME=$bcg_cuda_home

AS_IF([test "x$bcg_have_cuda" = xyes], [
  AS_IF([test -z "$NVCC"], [NVCC="$CUDA_HOME/bin/nvcc"])
  bcg_cuda_libdir="$CUDA_HOME/lib64"
  AS_IF([test -d "$bcg_cuda_libdir"], [], [bcg_cuda_libdir="$CUDA_HOME/lib"])
  CUDA_CPPFLAGS="-I$CUDA_HOME/include"
  # The run-time path lets bcgtool start without LD_LIBRARY_PATH. Only the
  # real libraries are named: the driver stub in lib64/stubs must never be
  # found at run time, so bcgtool reaches the driver through cudart.
  CUDA_LDFLAGS="-L$bcg_cuda_libdir -Wl,-rpath,$bcg_cuda_libdir"
  CUDA_LIBS="-lcublasLt -lcudart -lstdc++"

  AC_MSG_CHECKING([whether $NVCC compiles a kernel])
  cat > conftest.cu <<'EOF'
__global__ void bcg_probe(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) *(x + i) = 2.0f * *(x + i);
}
int main(void) { bcg_probe<<<1, 32>>>(0, 0); return 0; }
EOF
  AS_IF([$NVCC $BCG_NVCC_GENCODE $NVCCFLAGS -c conftest.cu -o conftest.$OBJEXT >&AS_MESSAGE_LOG_FD 2>&1],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no]); bcg_have_cuda=no; bcg_cuda_why="$NVCC cannot compile a kernel (see config.log)"])
  # bcgtool/ops/cuda-wgmma.cu is Hopper's wgmma, which only sm_90a code
  # has: it is built for that architecture alone where nvcc knows it, else
  # with the others' and without its kernel (its implementations are then
  # never usable).
  AC_MSG_CHECKING([whether $NVCC compiles for sm_90a])
  AS_IF([$NVCC -gencode=arch=compute_90a,code=sm_90a $NVCCFLAGS -c conftest.cu -o conftest.$OBJEXT >&AS_MESSAGE_LOG_FD 2>&1],
    [AC_MSG_RESULT([yes]); BCG_NVCC_WGMMA="-gencode=arch=compute_90a,code=sm_90a"],
    [AC_MSG_RESULT([no]); BCG_NVCC_WGMMA="$BCG_NVCC_GENCODE -DBCG_NO_SM90A"])
  rm -f conftest.cu conftest.$OBJEXT
])

AS_IF([test "x$bcg_have_cuda" = xyes], [
  bcg_save_CPPFLAGS=$CPPFLAGS bcg_save_LDFLAGS=$LDFLAGS bcg_save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"
  LDFLAGS="$LDFLAGS $CUDA_LDFLAGS"
  AC_CHECK_HEADERS([cuda_runtime_api.h cublasLt.h nvtx3/nvToolsExt.h], [],
    [bcg_have_cuda=no; bcg_cuda_why="header $ac_header missing"; break])
  AS_IF([test "x$bcg_have_cuda" = xyes], [
    AC_CHECK_LIB([cudart], [cudaGetDeviceCount], [],
      [bcg_have_cuda=no; bcg_cuda_why="libcudart missing"])])
  AS_IF([test "x$bcg_have_cuda" = xyes], [
    AC_CHECK_LIB([cublasLt], [cublasLtCreate], [],
      [bcg_have_cuda=no; bcg_cuda_why="libcublasLt missing"], [-lcudart])])
  CPPFLAGS=$bcg_save_CPPFLAGS LDFLAGS=$bcg_save_LDFLAGS LIBS=$bcg_save_LIBS
])

AS_IF([test "x$bcg_have_cuda" = xno && test "x$with_cuda" != xno], [
  AS_IF([test "x$with_cuda" = xguess],
    [AC_MSG_WARN([CUDA not usable ($bcg_cuda_why): building the host backend only])],
    [AC_MSG_ERROR([--with-cuda=$with_cuda given but CUDA is not usable: $bcg_cuda_why])])
])

AS_IF([test "x$bcg_have_cuda" = xyes], [
  AC_DEFINE([HAVE_CUDA], [1], [Define to 1 to build the CUDA backend.])
], [
  CUDA_HOME= CUDA_CPPFLAGS= CUDA_LDFLAGS= CUDA_LIBS= BCG_NVCC_GENCODE= BCG_NVCC_WGMMA=
])

# NVTX v3 is header-only and the host backend emits ranges too, so a build
# without CUDA still looks for the headers: in the toolkit when there is
# one, else on the default path, else in /usr/local/cuda/include.
bcg_have_nvtx=no
NVTX_CPPFLAGS=
for bcg_nvtx_flags in "$CUDA_CPPFLAGS" "" "-I/usr/local/cuda/include"; do
  AC_MSG_CHECKING([for nvtx3/nvToolsExt.h${bcg_nvtx_flags:+ with $bcg_nvtx_flags}])
  bcg_save_CPPFLAGS=$CPPFLAGS
  CPPFLAGS="$CPPFLAGS $bcg_nvtx_flags"
  AC_PREPROC_IFELSE([AC_LANG_SOURCE([[#include <nvtx3/nvToolsExt.h>]])],
    [bcg_have_nvtx=yes], [])
  CPPFLAGS=$bcg_save_CPPFLAGS
  AC_MSG_RESULT([$bcg_have_nvtx])
  AS_IF([test "x$bcg_have_nvtx" = xyes], [NVTX_CPPFLAGS=$bcg_nvtx_flags; break])
done
AS_IF([test "x$bcg_have_nvtx" = xyes],
  [AC_DEFINE([HAVE_NVTX], [1], [Define to 1 if the NVTX v3 headers are available.])],
  [AC_MSG_WARN([NVTX v3 headers not found: replay emits no NVTX ranges])])

AC_SUBST([CUDA_HOME])
AC_SUBST([CUDA_CPPFLAGS])
AC_SUBST([CUDA_LDFLAGS])
AC_SUBST([CUDA_LIBS])
AC_SUBST([NVTX_CPPFLAGS])
AC_SUBST([BCG_NVCC_GENCODE])
AC_SUBST([BCG_NVCC_WGMMA])
AM_CONDITIONAL([HAVE_CUDA], [test "x$bcg_have_cuda" = xyes])
AM_CONDITIONAL([HAVE_NVTX], [test "x$bcg_have_nvtx" = xyes])
])
