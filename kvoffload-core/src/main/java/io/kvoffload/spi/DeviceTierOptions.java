package io.kvoffload.spi;

/**
 * What the configuration says about the device tier.
 *
 * @param device index of the GPU to use (0-based, as the driver numbers them)
 * @param hotCacheBytes byte budget of the HBM hot cache; 0 turns it off
 */
public record DeviceTierOptions(int device, long hotCacheBytes) {
    public DeviceTierOptions {
        if (device < 0) {
            throw new IllegalArgumentException("device = " + device + "; allowed: 0 or more");
        }
        if (hotCacheBytes < 0) {
            throw new IllegalArgumentException("hotCacheBytes = " + hotCacheBytes + "; allowed: 0 or more");
        }
    }
}
