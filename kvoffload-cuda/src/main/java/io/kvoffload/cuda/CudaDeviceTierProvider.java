package io.kvoffload.cuda;

import io.kvoffload.KvException;
import io.kvoffload.spi.Availability;
import io.kvoffload.spi.DeviceTier;
import io.kvoffload.spi.DeviceTierOptions;
import io.kvoffload.spi.DeviceTierProvider;
import io.kvoffload.spi.HostSlots;

/** Provides the CUDA tier ({@code "cuda"}) wherever {@link CudaProbe} finds a working GPU. */
public final class CudaDeviceTierProvider implements DeviceTierProvider {
    public static final String NAME = "cuda";

    @Override
    public String name() {
        return NAME;
    }

    /** Probes GPU 0: whether there is any GPU; {@link #open} checks the configured index. */
    @Override
    public Availability probe() {
        return CudaProbe.probe(0);
    }

    @Override
    public DeviceTier open(DeviceTierOptions options, HostSlots dram) {
        Availability a = CudaProbe.probe(options.device());
        if (!a.available()) {
            throw new KvException("the CUDA tier cannot open GPU " + options.device() + ": " + a.reason());
        }
        // dram is not needed: the decoder's KvViews already live in DRAM slots this tier page-locks.
        return new CudaDeviceTier(options, a.reason(), HostPinning.HOST_REGISTER);
    }
}
