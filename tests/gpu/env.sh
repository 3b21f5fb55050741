# Sourced by the GPU scripts: unpack the carried Debian packages (.deps/debs)
# under /tmp, find CUDA and the NCCL of the PyTorch wheel, and set what the
# build and LTTng need.  Nothing is installed into /.  On a Debian machine:
#   mkdir -p .deps/debs && cd .deps/debs && apt-get download lttng-tools \
#     liblttng-ctl0 liblttng-ctl-dev liblttng-ust1 liblttng-ust-common1 \
#     liblttng-ust-ctl5 liblttng-ust-dev liburcu8 liburcu-dev libpopt0 \
#     libnuma1 libkmod2 babeltrace2 libbabeltrace2-0 libbabeltrace2-dev \
#     libglib2.0-0 libdw1 libelf1 libunwind8 libxml2 libicu72 libinih1 libinih-dev \
#     libmicrohttpd12 libmicrohttpd-dev
# Without .deps/debs the host's own LTTng, babeltrace2 and libinih are used.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
export CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc)")")}
NCCL_PKG=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])')
export NCCL_HOME="$NCCL_PKG"
export NCCL_LIBDIR="$NCCL_PKG/lib"
if [ ! -d "$NG_ROOT/.deps/debs" ]; then
	ngmake() { make CUDA_HOME="$CUDA_HOME" NCCL_HOME="$NCCL_HOME" "$@"; }
	lt() { "$@"; }
	LTTNG_CONSUMERD64_BIN=$(ls /usr/lib/*/lttng/libexec/lttng-consumerd 2>/dev/null | head -n 1)
	export LTTNG_CONSUMERD64_BIN
	return 0 2>/dev/null || exit 0
fi
DEPS=/tmp/ngdeps
STAMP="$DEPS/.complete-$(ls "$NG_ROOT"/.deps/debs | md5sum | cut -c1-8)"
if [ ! -f "$STAMP" ]; then
	mkdir -p "$DEPS"
	for d in "$NG_ROOT"/.deps/debs/*.deb; do dpkg -x "$d" "$DEPS"; done
	touch "$STAMP"
fi
DEPLIB="$DEPS/usr/lib/x86_64-linux-gnu"
# Build with the carried headers and static/dev libraries.  DT_RPATH (not
# RUNPATH) so the carried libraries' own dependencies are found as well,
# without LD_LIBRARY_PATH in the training processes.
ngmake() {
	make CUDA_HOME="$CUDA_HOME" NCCL_HOME="$NCCL_HOME" INIH_LIB="$DEPLIB/libinih.a" \
		CFLAGS="-I$DEPS/usr/include -I$DEPS/usr/include/x86_64-linux-gnu -Wno-error" \
		LDFLAGS="-L$DEPLIB -Wl,-rpath,$DEPLIB -Wl,--disable-new-dtags" "$@"
}
export PKG_CONFIG_SYSROOT_DIR="$DEPS" PKG_CONFIG_PATH="$DEPLIB/pkgconfig"
# Only LTTng and babeltrace2 commands get the carried libraries.
lt() { LD_LIBRARY_PATH="$DEPLIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }
export LTTNG_SESSION_CONFIG_XSD_PATH="$DEPS/usr/share/xml/lttng"
export BABELTRACE_PLUGIN_PATH="$DEPLIB/babeltrace2/plugins"
export LIBBABELTRACE2_PLUGIN_PROVIDER_DIR="$DEPLIB/babeltrace2/plugin-providers"
export LTTNG_CONSUMERD64_BIN="$DEPLIB/lttng/libexec/lttng-consumerd"
export PATH="$DEPS/usr/bin:$PATH"
