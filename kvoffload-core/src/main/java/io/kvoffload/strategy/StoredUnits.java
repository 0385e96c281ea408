package io.kvoffload.strategy;

/**
 * A layer's auxiliary unit layout as {@link UnitLayouts#write} stored it, as the strategy that wrote
 * it sees it again when it opens the layer ({@link LayerContext#units()}), also after a restart.
 *
 * @param owner the strategy that wrote it ({@link SelectionStrategy#name()})
 * @param version the owner's format version
 * @param params the owner's settings, as it stored them
 * @param unitCount units in the layout
 * @param unitBytes data bytes of one unit
 * @param memoryBytes DRAM the layout's tables take (device, offset and checksum of every unit)
 */
public record StoredUnits(String owner, int version, byte[] params, int unitCount, int unitBytes, long memoryBytes) {}
