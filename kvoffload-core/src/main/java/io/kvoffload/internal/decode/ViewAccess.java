package io.kvoffload.internal.decode;

import io.kvoffload.KvView;
import java.lang.foreign.MemorySegment;

/**
 * Lets library kernels outside {@code io.kvoffload} (the attention package, the HBM tier's upload) read a {@link KvView}'s
 * own K/V slices without the per-step scope that {@link KvView#keys(int)} creates for callers who
 * may keep a segment: library code never keeps one, so a decode step stays allocation-free.
 * {@link KvView} installs the accessor when its class initialises, which happens before any view
 * exists to be passed here.
 */
public final class ViewAccess {
    /** What {@link KvView} gives this bridge. */
    public interface Accessor {
        MemorySegment keys(KvView view, int kvHead);

        MemorySegment values(KvView view, int kvHead);

        boolean partialRows(KvView view);

        long headMask(KvView view, int row);

        MemorySegment headMasks(KvView view);
    }

    private static Accessor accessor;

    private ViewAccess() {}

    /** Called once, by {@link KvView}'s static initialiser. */
    public static void install(Accessor a) {
        if (accessor != null) {
            throw new IllegalStateException("ViewAccess is already installed");
        }
        accessor = a;
    }

    /** The view's keys of {@code kvHead} (checked ready); valid until the view closes, never to be kept. */
    public static MemorySegment keys(KvView view, int kvHead) {
        return accessor.keys(view, kvHead);
    }

    /** See {@link #keys}. */
    public static MemorySegment values(KvView view, int kvHead) {
        return accessor.values(view, kvHead);
    }

    /** {@link KvView#partialRows()}. */
    public static boolean partialRows(KvView view) {
        return accessor.partialRows(view);
    }

    /** {@link KvView#headMask(int)} without the index check (the caller checked {@code row} against the row count). */
    public static long headMask(KvView view, int row) {
        return accessor.headMask(view, row);
    }

    /**
     * The view's head masks (checked ready), capacity-long in its DRAM slot: int64 per row, native
     * byte order, bit h = the row holds KV head h. Meaningful for the first
     * {@link KvView#tokenCount()} rows only when {@link #partialRows} (else stale bytes: every row is
     * whole). For the HBM tier's upload, which copies them beside the positions; valid until the
     * view closes, never to be kept.
     */
    public static MemorySegment headMasks(KvView view) {
        return accessor.headMasks(view);
    }
}
