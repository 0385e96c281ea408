package io.kvoffload.internal.storage;

import io.kvoffload.KvShape;
import io.kvoffload.Placement;
import java.lang.foreign.MemorySegment;

/**
 * Head sharding's arithmetic (InstInfer, "Scale to CSD array": each device serves {@code n_head / n}
 * heads): how many head groups a layer is cut into, which device holds a unit's head group, and
 * how a token-major entry ({@code [K of every head | V of every head]}) maps to head-group
 * <em>shards</em> ({@code [K of the group's heads | V of the group's heads]}, the heads contiguous
 * in both). Independent of the strategy: any layout that stores units of tokens can shard them.
 */
public final class HeadShards {
    private HeadShards() {}

    /**
     * KV heads {@code [from, from + count)} as mask bits (bit h for KV head h), the form per-head
     * plans and views use; {@code count} of 64 or more is every bit.
     */
    public static long headBits(int from, int count) {
        return (count >= Long.SIZE ? -1L : (1L << count) - 1) << from;
    }

    /** The KV heads of head group {@code group} of {@code perGroup} consecutive heads, as mask bits. */
    public static long groupBits(int group, int perGroup) {
        return headBits(group * perGroup, perGroup);
    }

    /**
     * Head groups for {@code placement} over {@code devices} SSDs: 1 for token striping, else the
     * largest divisor of the KV head count not above the device count (so every group has the same
     * heads and every shard the same size).
     */
    public static int shards(Placement placement, KvShape shape, int devices) {
        if (placement == Placement.TOKEN_STRIPED || devices <= 1) {
            return 1;
        }
        int heads = shape.kvHeads();
        for (int s = Math.min(heads, devices); s > 1; s--) {
            if (heads % s == 0) {
                return s;
            }
        }
        return 1;
    }

    /**
     * The device of head group {@code shard} of a unit whose head group 0 is on device
     * {@code rotation}: the groups of one unit on distinct devices {@code ⌊N/S⌋} apart, so that with
     * fewer groups than devices the units (rotated one device further each) still cover every device.
     */
    public static int device(int rotation, int shard, int shards, int devices) {
        return (int) ((rotation + (long) shard * (devices / shards)) % devices);
    }

    /**
     * The rotation (device of head group 0) of the unit at rotation step {@code step} of {@code layer}
     * when no replica moves it: {@code (layer + step) mod N}, so consecutive steps (by default
     * consecutive units, and the first units of consecutive layers) start one device further.
     */
    public static int rotation(int layer, long step, int devices) {
        return (int) Math.floorMod(layer + step, (long) devices);
    }

    /** The head group KV head {@code head} of {@code kvHeads} is in, with {@code shards} groups. */
    public static int shardOfHead(int head, int kvHeads, int shards) {
        return head / (kvHeads / shards);
    }

    /**
     * Each unit's rotation (the device of its head group 0): unit {@code u} of {@code layer} starts
     * at {@code (layer + step(u)) mod N} (the plan's {@link ClusterPlan#rotationStep}: {@code u}, or one
     * step for a packed run of units), unless a token it shares with an earlier unit (Swarm's replicas)
     * already has a copy at that rotation — then the next rotation free for all its shared tokens,
     * or the one with fewest collisions. Copies at different rotations hold each head group on
     * different devices, so one failed device leaves every head group of the token a copy.
     *
     * @param members each unit's tokens
     * @param tokens tokens of the layer (ids below it)
     * @param step each unit's rotation step
     */
    public static int[] rotations(int layer, int[][] members, int tokens, int devices,
            java.util.function.IntToLongFunction step) {
        int[] rotation = new int[members.length];
        int[] copies = new int[tokens];
        for (int[] m : members) {
            for (int t : m) {
                copies[t]++;
            }
        }
        // Rotations taken per replicated token (a bit each; beyond 64 devices collisions are not avoided).
        long[] taken = new long[tokens];
        for (int u = 0; u < members.length; u++) {
            int start = rotation(layer, step.applyAsLong(u), devices);
            int best = start;
            int bestCollisions = Integer.MAX_VALUE;
            for (int i = 0; i < Math.min(devices, 64) && bestCollisions > 0; i++) {
                int r = (start + i) % devices;
                int collisions = 0;
                for (int t : members[u]) {
                    if (copies[t] > 1 && r < 64 && (taken[t] & (1L << r)) != 0) {
                        collisions++;
                    }
                }
                if (collisions < bestCollisions) {
                    best = r;
                    bestCollisions = collisions;
                }
            }
            rotation[u] = best;
            for (int t : members[u]) {
                if (copies[t] > 1 && best < 64) {
                    taken[t] |= 1L << best;
                }
            }
        }
        return rotation;
    }

    /**
     * Copies shard {@code shard} of {@code shards} of the token-major entry at {@code src[at]} (of
     * {@code entryBytes}) to {@code dst[dstAt]}: its heads' K, then their V.
     */
    public static void extract(MemorySegment src, long at, int entryBytes, int shard, int shards, MemorySegment dst,
            long dstAt) {
        long part = entryBytes / 2 / shards; // one shard's K (or V) bytes
        MemorySegment.copy(src, at + shard * part, dst, dstAt, part);
        MemorySegment.copy(src, at + entryBytes / 2 + shard * part, dst, dstAt + part, part);
    }

    /**
     * Copies shard {@code shard} of {@code shards} of {@code tokens} tokens from their K rows at
     * {@code keys[k0]} and V rows at {@code values[v0]} ({@code half} bytes a token, token after
     * token) to {@code dst[dstAt]} as {@code [K of the group's heads of every token | their V]}: a
     * KVSwap group's shard. With one shard it is the group's {@code [K of G | V of G]}.
     */
    public static void extractGroup(MemorySegment keys, long k0, MemorySegment values, long v0, int half, int tokens,
            int shard, int shards, MemorySegment dst, long dstAt) {
        long part = half / shards;
        long vAt = dstAt + tokens * part;
        for (int i = 0; i < tokens; i++) {
            MemorySegment.copy(keys, k0 + (long) i * half + shard * part, dst, dstAt + i * part, part);
            MemorySegment.copy(values, v0 + (long) i * half + shard * part, dst, vAt + i * part, part);
        }
    }
}
