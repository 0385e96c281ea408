package io.kvoffload.internal.decode;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * The stored entries a step reads only to complete a page it chose in part, so that the page can enter
 * the hot cache whole. The default strategy ranks parts of a page that fills one aligned read
 * (docs/benchmarks.md, "Ranking parts of a read"); the read brings the whole page whatever part was
 * chosen, so asking for the rest costs no bytes and no request, while the cache, which holds whole
 * pages, would otherwise never admit one. A completing entry is verified like any other, but it is not
 * a row of the view: it stays in the step's staged reads until the cache copies it.
 *
 * <p>Keys are the layout's (a token, or {@code token × shards + group} when head groups are stored
 * apart). Lookups sort the landed keys once per step; nothing is allocated once the arrays have grown.
 */
final class PageCompletion {
    private int[] wanted = new int[256];
    private int wantedCount;
    /** Landed keys and where each lies in the staged reads, packed {@code key << 32 | index}. */
    private long[] landed = new long[256];
    private long[] at = new long[256];
    private int landedCount;
    private boolean sorted = true;

    /** Starts a step: nothing wanted, nothing landed. */
    void clear() {
        wantedCount = 0;
        landedCount = 0;
        sorted = true;
    }

    /** Asks for {@code key} to be read this step. */
    void want(int key) {
        if (wantedCount == wanted.length) {
            wanted = Arrays.copyOf(wanted, wantedCount * 2);
        }
        wanted[wantedCount++] = key;
    }

    int wantedCount() {
        return wantedCount;
    }

    /** The keys wanted, {@link #wantedCount} of them. */
    int[] wanted() {
        return wanted;
    }

    /** Key {@code key} landed, verified, at {@code offset} of the staged reads. */
    void landed(int key, long offset) {
        if (landedCount == landed.length) {
            landed = Arrays.copyOf(landed, landedCount * 2);
            at = Arrays.copyOf(at, landedCount * 2);
        }
        at[landedCount] = offset;
        landed[landedCount] = (long) key << 32 | landedCount;
        landedCount++;
        sorted = false;
    }

    /** Where {@code key} landed this step, or -1 if it did not (it was resident, or never wanted). */
    long offsetOf(int key) {
        if (landedCount == 0) {
            return -1;
        }
        if (!sorted) {
            Arrays.sort(landed, 0, landedCount); // keys are non-negative, so the packed longs sort by key
            sorted = true;
        }
        int lo = 0, hi = landedCount - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            int k = (int) (landed[mid] >>> 32);
            if (k < key) {
                lo = mid + 1;
            } else if (k > key) {
                hi = mid - 1;
            } else {
                return at[(int) landed[mid]];
            }
        }
        return -1;
    }

    /**
     * Copies {@code bytes} of landed key {@code key} from {@code staged} to {@code dst[offset]}.
     *
     * @throws IllegalStateException if the key did not land this step
     */
    void copy(int key, MemorySegment staged, long bytes, MemorySegment dst, long offset) {
        long src = offsetOf(key);
        if (src < 0) {
            throw new IllegalStateException("stored entry key " + key + " was not read to complete a page this step");
        }
        MemorySegment.copy(staged, src, dst, offset, bytes);
    }
}
