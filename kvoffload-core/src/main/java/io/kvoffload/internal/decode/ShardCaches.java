package io.kvoffload.internal.decode;

import io.kvoffload.internal.cache.CostEffectiveness;
import io.kvoffload.internal.elastic.ElasticDramPool;
import io.kvoffload.internal.storage.ClusterLayout;

/**
 * The hot-cluster cache of a head-sharded layer ({@link io.kvoffload.Placement#HEAD_SHARDED}): one
 * {@link HotClusterCache} per head group, each over the layout's units and holding that group's
 * stored shards (its heads' K, then V, as the layout stores them). A per-head step reads some groups
 * of a page and not others, so each group's cache sees the pages whose shard of that group the step
 * holds whole, and a shard it holds is left out of later reads of that group (Eq. 8 per key). The
 * layer's cache budget is split equally over the groups.
 */
final class ShardCaches implements AutoCloseable {
    private final HotClusterCache[] caches;

    /**
     * @param shardBytes bytes of one stored shard
     * @param budgetBytes the layer's cache budget, split equally over the {@code layout.shards()} groups
     * @throws io.kvoffload.KvDramExhaustedException when the pool cannot supply the budget (none is held then)
     */
    ShardCaches(ElasticDramPool pool, ClusterLayout layout, int shardBytes, long budgetBytes, boolean lru,
            CostEffectiveness score) {
        int shards = layout.shards();
        this.caches = new HotClusterCache[shards];
        try {
            for (int g = 0; g < shards; g++) {
                caches[g] = new HotClusterCache(pool, layout, shardBytes, budgetBytes / shards, lru, score);
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    int shards() {
        return caches.length;
    }

    /** Head group {@code shard}'s cache. */
    HotClusterCache of(int shard) {
        return caches[shard];
    }

    /** Resizes every group's cache to its share of {@code budgetBytes}; returns the bytes held. */
    long resize(long budgetBytes) {
        for (HotClusterCache c : caches) {
            c.resize(budgetBytes / caches.length);
        }
        return heldBytes();
    }

    long heldBytes() {
        long held = 0;
        for (HotClusterCache c : caches) {
            held += c.heldBytes();
        }
        return held;
    }

    /** Adds the groups' hits, misses and cached bytes to {@code g}. */
    void addGauges(DecodeCounters.Gauges g, int shardBytes) {
        for (HotClusterCache c : caches) {
            g.cacheHits += c.policy().hits();
            g.cacheMisses += c.policy().misses();
            g.cacheBytes += (long) c.usedSlots() * shardBytes;
        }
    }

    @Override
    public void close() {
        for (HotClusterCache c : caches) {
            if (c != null) {
                c.close();
            }
        }
    }
}
