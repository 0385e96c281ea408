package io.kvoffload.internal.ffi;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Anonymous memory mappings for DRAM slabs: {@code mmap(MAP_PRIVATE | MAP_ANONYMOUS)} aligned to
 * the 2 MiB huge-page size and advised {@code MADV_HUGEPAGE}, unmapped when the owning arena
 * closes.
 *
 * <p>Why not {@code Arena.allocate}: glibc serves a large allocation from its heap once an earlier
 * one of that size was freed (the free raises its mmap threshold), so a slab can land on pages that
 * are physically scattered, and those pages are never huge. The slabs are the targets of O_DIRECT
 * reads and, with io_uring, registered buffers; the kernel coalesces a registered buffer made of huge
 * pages into 2 MiB segments, so a 256 KiB read is one segment instead of 64. On this project's
 * virtual disk that doubled the backend's 256 KiB read bandwidth (docs/io-uring.md, "Slab memory").
 * Freed mappings go straight back to the OS, which the elastic pool's shrinking relies on.
 *
 * <p>With transparent huge pages off ({@code never}) the advice is ignored and the slab is plain
 * 4 KiB pages, still page-aligned and freshly mapped.
 */
public final class AnonymousMemory {
    /** The x86-64 and arm64 PMD huge-page size, the alignment that lets THP back a mapping. */
    public static final long HUGE_PAGE = 2L << 20;

    private static final int PROT_READ = 0x1;
    private static final int PROT_WRITE = 0x2;
    private static final int MAP_PRIVATE = 0x02;
    private static final int MAP_ANONYMOUS = 0x20;
    private static final int MADV_HUGEPAGE = 14;
    private static final long MAP_FAILED = -1L;

    private static final Throwable UNAVAILABLE = Libc.unavailableReason();

    private AnonymousMemory() {}

    /** Whether {@link #map} can be used here (native access granted, libc found). */
    public static boolean available() {
        return UNAVAILABLE == null;
    }

    /**
     * Maps {@code bytes} of zeroed memory whose lifetime is {@code arena}'s: closing the arena
     * unmaps it. The start is 2 MiB-aligned and the range advised {@code MADV_HUGEPAGE} when
     * {@code bytes} is at least {@link #HUGE_PAGE}; a smaller mapping is page-aligned. Returns null when the mapping fails or native access is unavailable, so the
     * caller can fall back to {@code arena.allocate}.
     *
     * @param bytes a positive multiple of 4096
     */
    public static MemorySegment map(Arena arena, long bytes) {
        if (bytes <= 0 || bytes % 4096 != 0) {
            throw new IllegalArgumentException("bytes = " + bytes + "; allowed: a positive multiple of 4096");
        }
        if (UNAVAILABLE != null) {
            return null;
        }
        boolean huge = bytes >= HUGE_PAGE;
        try {
            // Over-map by one huge page, then cut the unaligned head and the tail away.
            long span = huge ? bytes + HUGE_PAGE : bytes;
            long raw = Libc.mmapAnonymous(span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
            if (raw == MAP_FAILED) {
                return null;
            }
            long start = raw;
            if (huge) {
                start = (raw + HUGE_PAGE - 1) & -HUGE_PAGE;
                unmap(raw, start - raw);
                unmap(start + bytes, raw + span - (start + bytes));
                // Advice only: refused (THP not built in), the mapping works with 4 KiB pages.
                int ignored = Libc.madvise(start, bytes, MADV_HUGEPAGE);
            }
            long address = start;
            try {
                return MemorySegment.ofAddress(address).reinterpret(bytes, arena, s -> unmap(address, bytes));
            } catch (RuntimeException e) {
                unmap(address, bytes); // the arena was closed: nothing would ever unmap it
                throw e;
            }
        } catch (IllegalStateException e) {
            throw e;
        } catch (Throwable t) {
            return null;
        }
    }

    private static void unmap(long address, long length) {
        if (length <= 0) {
            return;
        }
        try {
            int ignored = Libc.munmap(address, length);
        } catch (Throwable t) {
            throw new IllegalStateException("munmap(0x" + Long.toHexString(address) + ", " + length + ") failed", t);
        }
    }
}
