package io.kvoffload.spi;

/**
 * Factory for a device (GPU/HBM) tier, found through {@link java.util.ServiceLoader} like
 * {@link IoBackendProvider}. An engine whose class path holds no provider, or whose provider's
 * {@link #probe()} says no, runs without a device tier unless the configuration demands one.
 */
public interface DeviceTierProvider {
    /** Short name, e.g. {@code "cuda"}. */
    String name();

    /** Whether the tier can run here and if not why; cheap, side-effect free, never throws. */
    Availability probe();

    /**
     * Opens the tier. Called after the DRAM tier exists; the returned tier's
     * {@link DeviceTier#dramSlabListener()} is then registered with it.
     *
     * @param options what the configuration says about the tier
     * @param dram slots of the DRAM tier, for staging buffers that the tier's listener has prepared
     *     (page-locked) for DMA
     */
    DeviceTier open(DeviceTierOptions options, HostSlots dram);
}
