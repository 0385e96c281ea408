#!/usr/bin/env bash
# Regenerates the FFM bindings in src/main/java/io/kvoffload/iouring/bindings from the liburing 2.3
# and glibc headers, where jextract exists.
#
# jextract is NOT available on the machines this project is built on: it is in neither Debian nor
# Maven Central (get it from https://jdk.java.net/jextract/, build 22 or later). The classes in the
# bindings package were therefore written by hand in the shape this command produces: a header class
# (liburing_h, libc_h) with one nested holder per function (DESC/ADDR/HANDLE) and a static wrapper
# with the C name, and one class per struct with its GroupLayout, <field>$offset()/<field>$layout()
# and get/set accessors over a MemorySegment. Deliberate differences from raw jextract output:
#   * C_POINTER has no target layout (pointers read from structs are zero-length segments that the
#     caller reinterprets with a size it knows);
#   * only the members, functions and constants the backend uses, plus the ones the layout test checks;
#   * struct classes carry literal offsets checked against gcc by LayoutTest;
#   * the hand-written SubmissionQueue, CompletionQueue, IoUringRing, Posix, Liburing and
#     RegisteredBuffers (ports of liburing's static inline functions and the safe layer over them)
#     are not generated and must be kept when regenerating.
# After regenerating, run: ./mvnw -pl kvoffload-io-uring test -Dtest=LayoutTest
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
JEXTRACT="${JEXTRACT:-jextract}"
if ! command -v "$JEXTRACT" >/dev/null 2>&1; then
  echo "jextract.sh: jextract is not installed here (not in Debian or Maven Central; see" \
       "https://jdk.java.net/jextract/); the bindings are maintained by hand in its output shape." >&2
  exit 2
fi
[[ -f /usr/include/liburing.h ]] || { echo "jextract.sh: install liburing-dev (liburing 2.3)" >&2; exit 2; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# liburing: exported functions (the static inline ones have no symbol in liburing.so.2), structs
# and the constants of liburing/io_uring.h that the backend uses.
"$JEXTRACT" --output "$out" \
  --target-package io.kvoffload.iouring.bindings \
  --header-class-name liburing_h \
  --library :liburing.so.2 \
  --include-function io_uring_queue_init_params \
  --include-function io_uring_queue_init \
  --include-function io_uring_queue_exit \
  --include-function io_uring_get_sqe \
  --include-function io_uring_submit \
  --include-function io_uring_submit_and_wait \
  --include-function io_uring_wait_cqes \
  --include-function __io_uring_get_cqe \
  --include-function io_uring_peek_batch_cqe \
  --include-function io_uring_register_files \
  --include-function io_uring_unregister_files \
  --include-function io_uring_register_buffers \
  --include-function io_uring_register_buffers_sparse \
  --include-function io_uring_register_buffers_update_tag \
  --include-function io_uring_unregister_buffers \
  --include-struct io_uring \
  --include-struct io_uring_sq \
  --include-struct io_uring_cq \
  --include-struct io_uring_sqe \
  --include-struct io_uring_cqe \
  --include-struct io_uring_params \
  --include-struct io_sqring_offsets \
  --include-struct io_cqring_offsets \
  --include-struct iovec \
  --include-constant IORING_OP_NOP --include-constant IORING_OP_READV --include-constant IORING_OP_WRITEV \
  --include-constant IORING_OP_FSYNC --include-constant IORING_OP_READ_FIXED \
  --include-constant IORING_OP_WRITE_FIXED --include-constant IORING_OP_READ --include-constant IORING_OP_WRITE \
  --include-constant IOSQE_FIXED_FILE --include-constant IOSQE_IO_DRAIN --include-constant IOSQE_IO_LINK \
  --include-constant IOSQE_ASYNC \
  --include-constant IORING_SETUP_IOPOLL --include-constant IORING_SETUP_SQPOLL \
  --include-constant IORING_SETUP_CQSIZE --include-constant IORING_SETUP_CLAMP \
  --include-constant IORING_SETUP_SUBMIT_ALL --include-constant IORING_SETUP_COOP_TASKRUN \
  --include-constant IORING_SETUP_TASKRUN_FLAG --include-constant IORING_SETUP_SQE128 \
  --include-constant IORING_SETUP_CQE32 --include-constant IORING_SETUP_SINGLE_ISSUER \
  --include-constant IORING_SETUP_DEFER_TASKRUN \
  --include-constant IORING_SQ_NEED_WAKEUP --include-constant IORING_SQ_CQ_OVERFLOW \
  --include-constant IORING_SQ_TASKRUN \
  --include-constant IORING_FEAT_SINGLE_MMAP --include-constant IORING_FEAT_NODROP \
  --include-constant IORING_FEAT_SUBMIT_STABLE --include-constant IORING_FEAT_RW_CUR_POS \
  --include-constant IORING_FEAT_EXT_ARG --include-constant IORING_FEAT_NATIVE_WORKERS \
  --include-constant IORING_FEAT_RSRC_TAGS \
  /usr/include/liburing.h

# glibc: open(2) with O_DIRECT, close, fdatasync, strerror, getrlimit.
cat > "$out/libc.h" <<'H'
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>
#include <string.h>
#include <sys/resource.h>
H
"$JEXTRACT" --output "$out" \
  --target-package io.kvoffload.iouring.bindings \
  --header-class-name libc_h \
  --include-function open --include-function close --include-function fdatasync \
  --include-function strerror --include-function getrlimit \
  --include-struct rlimit \
  --include-constant O_RDONLY --include-constant O_WRONLY --include-constant O_RDWR \
  --include-constant O_DIRECT --include-constant O_CLOEXEC --include-constant RLIMIT_MEMLOCK \
  "$out/libc.h"

echo "generated into $out/io/kvoffload/iouring/bindings; compare with"
echo "  $here/src/main/java/io/kvoffload/iouring/bindings and merge (see the notes at the top of this script)"
diff -ru "$out/io/kvoffload/iouring/bindings" "$here/src/main/java/io/kvoffload/iouring/bindings" || true
