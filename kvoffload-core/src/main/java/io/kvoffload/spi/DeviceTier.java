package io.kvoffload.spi;

/**
 * An open device tier (HBM on a GPU). The engine holds it for its lifetime and closes it after
 * the DRAM tier: by then every slab has been handed to {@link DramSlabListener#slabFreed}, so the
 * tier has drained its copies and released its hold on host memory, and only device memory is
 * left to free.
 *
 * <p>Implementations expose their own API (the CUDA module's {@code CudaDeviceTier}); reach it
 * with {@link #unwrap(Class)}.
 */
public interface DeviceTier extends AutoCloseable {
    /** The provider's name. */
    String name();

    /** One line for logs: the device, its memory, the hot-cache budget. */
    String describe();

    /** Told about every DRAM slab (to page-lock it), or null when the tier needs none. */
    DramSlabListener dramSlabListener();

    /** This tier as {@code type}. */
    default <T> T unwrap(Class<T> type) {
        if (!type.isInstance(this)) {
            throw new IllegalArgumentException("device tier " + name() + " (" + getClass().getName()
                    + ") is not a " + type.getName());
        }
        return type.cast(this);
    }

    /** Frees device memory and streams. Never throws; failures are logged. */
    @Override
    void close();
}
