package io.kvoffload.internal.sequence;

import io.kvoffload.internal.storage.BlockTable;
import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.GroupLayout;
import io.kvoffload.internal.storage.UnitLayout;

/**
 * One layer of a sequence handle: how many tokens' KV it holds, its block table, and its cluster
 * and group layouts, each with what the last commit named of it. An uncommitted layout either
 * replaced the committed one or extended it in place (sharing its extents): which one decides
 * what a replacement or a close frees now and what waits for the next commit.
 */
public final class LayerState {
    /** Tokens whose KV has been appended. */
    int tokens;
    final BlockTable blocks;

    ClusterLayout clusters;
    boolean clustersCommitted;
    /** The cluster layout the last commit named (what an uncommitted extension grew from). */
    ClusterLayout committedClusters;
    /** Whether the uncommitted cluster layout only appended to {@link #committedClusters} (Eq. 9). */
    boolean clustersExtendCommitted;

    GroupLayout groups;
    boolean groupsCommitted;
    /** The group layout the last commit named (what an uncommitted extension grew from). */
    GroupLayout committedGroups;
    /** Whether the uncommitted group layout only appended to {@link #committedGroups}. */
    boolean groupsExtendCommitted;

    /** A strategy's auxiliary unit layout beside the entries (InstInfer's dimension-major K), or null. */
    UnitLayout units;
    boolean unitsCommitted;

    /** An empty layer. */
    LayerState(BlockTable blocks) {
        this.blocks = blocks;
    }

    /** A layer as a manifest names it: everything committed. */
    LayerState(int tokens, BlockTable blocks, ClusterLayout clusters, GroupLayout groups, UnitLayout units) {
        this.tokens = tokens;
        this.blocks = blocks;
        this.clusters = clusters;
        this.groups = groups;
        this.units = units;
        layoutsCommitted();
    }

    public int tokens() {
        return tokens;
    }

    public BlockTable blocks() {
        return blocks;
    }

    /** The cluster layout, or null. */
    public ClusterLayout clusters() {
        return clusters;
    }

    /** The group layout, or null. */
    public GroupLayout groups() {
        return groups;
    }

    /** The auxiliary unit layout, or null. */
    public UnitLayout units() {
        return units;
    }

    /** Clusters of the cluster layout (0 without one). */
    public int clusterCount() {
        return clusters == null ? 0 : clusters.clusterCount();
    }

    /** Groups of the group layout (0 without one). */
    public int groupCount() {
        return groups == null ? 0 : groups.groupCount();
    }

    /** Tokens served by the cluster or group layout (the rest come from blocks). */
    int laidOutTokens() {
        return clusters != null ? clusters.clusteredTokens() : groups != null ? groups.groupedTokens() : 0;
    }

    /** Everything the handle holds is now what the last commit names. */
    void markCommitted() {
        blocks.markAllCommitted();
        layoutsCommitted();
    }

    /** The layouts held now are the ones the last commit names, none an uncommitted extension. */
    private void layoutsCommitted() {
        clustersCommitted = true;
        committedClusters = clusters;
        clustersExtendCommitted = false;
        groupsCommitted = true;
        committedGroups = groups;
        groupsExtendCommitted = false;
        unitsCommitted = true;
    }
}
