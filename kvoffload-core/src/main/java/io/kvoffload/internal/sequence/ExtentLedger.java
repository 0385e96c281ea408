package io.kvoffload.internal.sequence;

import io.kvoffload.internal.storage.BlockTable;
import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.GroupLayout;
import io.kvoffload.internal.storage.Manifest;
import io.kvoffload.internal.storage.Store;
import io.kvoffload.internal.storage.UnitLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * Which extents a sequence handle owns, per layer ({@link LayerState}), and when each one may be
 * freed. An extent no manifest names is freed as soon as it is replaced; one the last commit names
 * is <em>superseded</em>: it stays until the next commit (the store frees it then), since a crash
 * before that commit must still find it. Freeing goes through the store, which keeps an extent a
 * fork shares with another sequence until its last holder lets it go ({@link Store#free}).
 */
public final class ExtentLedger {
    private final Store store;
    private final int blockTokens;
    private final LayerState[] layers;
    private final List<long[]> superseded = new ArrayList<>();

    /** The ledger of a new, empty sequence. */
    public ExtentLedger(Store store, int layerCount, int blockTokens) {
        this.store = store;
        this.blockTokens = blockTokens;
        this.layers = new LayerState[layerCount];
        for (int l = 0; l < layerCount; l++) {
            layers[l] = new LayerState(new BlockTable(16));
        }
    }

    /**
     * The ledger of a committed sequence: a reader shares the manifest's immutable block tables, a
     * writer gets its own copies.
     */
    public ExtentLedger(Store store, Manifest m, boolean writable) {
        this.store = store;
        this.blockTokens = m.blockTokens();
        this.layers = new LayerState[m.shape().layers()];
        for (int l = 0; l < layers.length; l++) {
            layers[l] = new LayerState(m.tokenCount(), writable ? m.layers()[l].copy() : m.layers()[l],
                    m.clusters()[l], m.groups()[l], m.units()[l]);
        }
    }

    public LayerState layer(int layer) {
        return layers[layer];
    }

    public int layerCount() {
        return layers.length;
    }

    /** The extents superseded since the last commit (the store frees them once the next one is durable). */
    List<long[]> superseded() {
        return superseded;
    }

    /** Block {@code b} of {@code t} gets a newer copy (or none): its extent goes. */
    void retire(BlockTable t, int b) {
        if (t.committed(b)) {
            superseded.add(new long[] {t.device(b), t.offset(b), t.length(b)});
        } else {
            store.free(t.device(b), t.offset(b), t.length(b));
        }
    }

    /** Retires the layer's blocks whose tokens all lie below {@code laidOut} (a cluster or group layout serves them). */
    public void retireCoveredBlocks(int layer, int laidOut) {
        BlockTable t = layers[layer].blocks;
        for (int b = 0; b < t.size() && (long) (b + 1) * blockTokens <= laidOut; b++) {
            if (t.hasExtent(b)) {
                retire(t, b);
                t.clear(b);
            }
        }
    }

    /**
     * {@code layout} (freshly written) replaces the layer's cluster layout and drops its group
     * layout; the blocks it covers are retired.
     */
    public void installClusters(int layer, ClusterLayout layout) {
        LayerState s = layers[layer];
        dropClusters(s);
        s.clusters = layout;
        s.clustersCommitted = false;
        s.clustersExtendCommitted = false;
        dropGroups(layer);
        dropUnits(s);
        retireCoveredBlocks(layer, layout.clusteredTokens());
    }

    /**
     * {@code grown} extends the layer's cluster layout (Swarm Eq. 9), sharing all its extents; the
     * blocks it now covers are retired.
     */
    public void extendClusters(int layer, ClusterLayout grown) {
        LayerState s = layers[layer];
        ClusterLayout old = s.clusters;
        if (old == null || grown.clusteredTokens() < old.clusteredTokens() || grown.clusterCount() < old.clusterCount()) {
            throw new IllegalStateException("layout of layer " + layer + " does not extend the current one");
        }
        if (s.clustersCommitted) {
            s.clustersExtendCommitted = true;
        }
        s.clusters = grown;
        s.clustersCommitted = false;
        retireCoveredBlocks(layer, grown.clusteredTokens());
    }

    /**
     * {@code layout} (freshly written) replaces the layer's group and cluster layouts; the blocks it
     * covers are retired.
     */
    public void installGroups(int layer, GroupLayout layout) {
        LayerState s = layers[layer];
        dropGroups(layer);
        dropClusters(s);
        dropUnits(s);
        s.groups = layout;
        s.groupsCommitted = false;
        retireCoveredBlocks(layer, layout.groupedTokens());
    }

    /**
     * {@code grown} appends groups to the layer's group layout, sharing all its extents; a close
     * without commit frees only the appended segments. The caller retires the covered blocks once
     * their queued writes are done.
     */
    public void extendGroups(int layer, GroupLayout grown) {
        LayerState s = layers[layer];
        GroupLayout old = s.groups;
        if (old == null || !grown.extendsLayout(old)) {
            throw new IllegalStateException("group layout of layer " + layer + " (" + grown.groupedTokens()
                    + " tokens) does not extend the current one (" + (old == null ? 0 : old.groupedTokens())
                    + " tokens)");
        }
        if (s.groupsCommitted) {
            s.groupsExtendCommitted = true;
        }
        s.groups = grown;
        s.groupsCommitted = false;
    }

    /**
     * {@code layout} (freshly written) becomes the layer's auxiliary unit layout, beside its entry
     * layout; a unit layout it had goes. A new cluster or group layout drops it (its units describe
     * the entries it was written with).
     */
    public void installUnits(int layer, UnitLayout layout) {
        LayerState s = layers[layer];
        dropUnits(s);
        s.units = layout;
        s.unitsCommitted = false;
    }

    /** Forgets the layer's unit layout: its extents are freed now, or after the next commit if one names them. */
    private void dropUnits(LayerState s) {
        UnitLayout old = s.units;
        if (old == null) {
            return;
        }
        for (int i = 0; i < old.segmentCount(); i++) {
            if (s.unitsCommitted) {
                superseded.add(new long[] {old.segmentDevice(i), old.segmentOffset(i), old.segmentLength(i)});
            } else {
                store.free(old.segmentDevice(i), old.segmentOffset(i), old.segmentLength(i));
            }
        }
        s.units = null;
    }

    /**
     * Forgets the layer's cluster layout: its extents are freed now, or after the next commit if
     * one names them (an uncommitted extension shares the committed layout's extents: only the
     * segments it added are this handle's own).
     */
    private void dropClusters(LayerState s) {
        ClusterLayout old = s.clusters;
        if (old == null) {
            return;
        }
        if (s.clustersCommitted) {
            supersede(old, null);
        } else if (s.clustersExtendCommitted) {
            supersede(s.committedClusters, null);
            freeSegments(old, old.segmentsAddedSince(s.committedClusters));
        } else {
            freeSegments(old, null);
        }
        s.clusters = null;
        s.clustersExtendCommitted = false;
    }

    /** Forgets the layer's group layout: its extents are freed now, or after the next commit if one names them. */
    private void dropGroups(int layer) {
        LayerState s = layers[layer];
        GroupLayout old = s.groups;
        if (old == null) {
            return;
        }
        if (s.groupsCommitted) {
            supersedeGroupSegments(old, old.segmentCount());
        } else if (s.groupsExtendCommitted) {
            // The last commit names the shared prefix; only the appended segments are this session's own.
            GroupLayout base = s.committedGroups;
            supersedeGroupSegments(base, base.segmentCount());
            freeGroupSegments(old, base.segmentCount());
        } else {
            freeGroupSegments(old, 0);
        }
        s.groups = null;
        s.groupsExtendCommitted = false;
    }

    /** A commit made everything durable: nothing is superseded any more, everything is committed. */
    void markCommitted() {
        superseded.clear();
        for (LayerState s : layers) {
            s.markCommitted();
        }
    }

    /** A writer's close: frees every extent no commit names; the last commit's stay. */
    public void freeUncommitted() {
        for (LayerState s : layers) {
            BlockTable t = s.blocks;
            for (int b = 0; b < t.size(); b++) {
                if (t.hasExtent(b) && !t.committed(b)) {
                    store.free(t.device(b), t.offset(b), t.length(b));
                }
            }
            if (s.clusters != null && !s.clustersCommitted) {
                freeSegments(s.clusters, s.clustersExtendCommitted ? s.clusters.segmentsAddedSince(s.committedClusters)
                        : null);
            }
            if (s.groups != null && !s.groupsCommitted) {
                freeGroupSegments(s.groups, s.groupsExtendCommitted ? s.committedGroups.segmentCount() : 0);
            }
            if (s.units != null && !s.unitsCommitted) {
                dropUnits(s);
            }
        }
        superseded.clear();
    }

    /** Supersedes segments {@code segments} of {@code c} (all when null). */
    private void supersede(ClusterLayout c, int[] segments) {
        int n = segments == null ? c.segmentCount() : segments.length;
        for (int i = 0; i < n; i++) {
            int s = segments == null ? i : segments[i];
            superseded.add(new long[] {c.segmentDevice(s), c.segmentOffset(s), c.segmentLength(s)});
        }
    }

    /** Frees segments {@code segments} of {@code c} (all when null). */
    private void freeSegments(ClusterLayout c, int[] segments) {
        int n = segments == null ? c.segmentCount() : segments.length;
        for (int i = 0; i < n; i++) {
            int s = segments == null ? i : segments[i];
            store.free(c.segmentDevice(s), c.segmentOffset(s), c.segmentLength(s));
        }
    }

    private void supersedeGroupSegments(GroupLayout g, int end) {
        for (int s = 0; s < end; s++) {
            superseded.add(new long[] {g.segmentDevice(s), g.segmentOffset(s), g.segmentLength(s)});
        }
    }

    /** Frees segments {@code [from, segmentCount)} of {@code g}. */
    private void freeGroupSegments(GroupLayout g, int from) {
        for (int s = from; s < g.segmentCount(); s++) {
            store.free(g.segmentDevice(s), g.segmentOffset(s), g.segmentLength(s));
        }
    }
}
