package io.kvoffload.cuda;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.cuda.bindings.Cuda;
import io.kvoffload.cuda.bindings.CudaEvent;
import io.kvoffload.cuda.bindings.CudaStream;
import io.kvoffload.cuda.bindings.DeviceMemory;
import io.kvoffload.cuda.bindings.PinnedHostBuffer;
import io.kvoffload.cuda.bindings.SpinKernel;
import io.kvoffload.internal.dram.DramPool;
import io.kvoffload.internal.dram.DramSlot;
import io.kvoffload.spi.Availability;
import io.kvoffload.spi.DeviceTierOptions;
import io.kvoffload.spi.HostSlots;
import java.lang.foreign.MemorySegment;
import java.util.Locale;

/**
 * GPU benchmark (run by gpu-test.sh): H2D bandwidth of gathered layer views through the layer
 * stream buffer (DRAM slabs page-locked with cudaHostRegister) against a plain cudaMemcpy of the
 * same bytes from cudaHostAlloc memory, and the share of copy time hidden behind a simulated
 * attention kernel when layers are double-buffered. Exit code 2: no GPU; 3: ratio below 80%.
 */
public final class HbmBench {
    public static void main(String[] args) {
        int tokens = args.length > 0 ? Integer.parseInt(args[0]) : 4096;
        int layers = args.length > 1 ? Integer.parseInt(args[1]) : 32;
        System.exit(run(tokens, layers));
    }

    /** Runs the benchmark and prints its figures; returns 0, 2 (no GPU) or 3 (ratio below 80%). */
    static int run(int tokens, int layers) {
        Availability a = CudaProbe.probe(0);
        if (!a.available()) {
            System.err.println("HBM benchmark needs a GPU: " + a.reason());
            return 2;
        }
        System.out.println(a.reason());
        KvShape shape = new KvShape(layers, 32, 8, 128, DType.BF16); // Llama-3-8B
        long viewBytes = ViewLayout.capacityBytes(8, 128, 2, 16, tokens);
        DramPool dram = new DramPool(4 * viewBytes + (64L << 20), Math.max(4096, DramPool.slotSizeFor(viewBytes)));
        HostSlots slots = bytes -> {
            DramSlot s = dram.acquire(bytes);
            return new HostSlots.Lease() {
                public MemorySegment segment() {
                    return s.segment();
                }

                public int slabId() {
                    return s.slabId();
                }

                public void close() {
                    dram.release(s);
                }
            };
        };
        CudaDeviceTier tier = new CudaDeviceTier(new DeviceTierOptions(0, 0), slots, a.reason(), HostPinning.HOST_REGISTER);
        dram.addListener(tier.dramSlabListener());
        int reps = 20;
        GatheredLayer[] g = {tier.gatheredLayer(shape, 16, tokens), tier.gatheredLayer(shape, 16, tokens)};
        try (LayerStreamBuffer buf = tier.layerStreamBuffer(shape, 16, tokens, 2);
                CudaStream kernel = CudaStream.createNonBlocking();
                PinnedHostBuffer plainHost = PinnedHostBuffer.allocate(viewBytes);
                DeviceMemory plainDev = DeviceMemory.allocate(viewBytes);
                SpinKernel spin = SpinKernel.load();
                CudaEvent start = CudaEvent.create(true);
                CudaEvent end = CudaEvent.create(true)) {
            int[] pos = new int[tokens];
            for (int t = 0; t < tokens; t++) {
                pos[t] = t * 3;
            }
            long half = (long) tokens * shape.halfEntryBytes();
            MemorySegment k = java.lang.foreign.Arena.ofAuto().allocate(half);
            for (GatheredLayer x : g) {
                x.set(0, pos, k, k);
            }
            long bytes = g[0].layout().totalBytes();
            System.out.printf(Locale.ROOT, "view: %d tokens, %.1f MiB per layer%n", tokens, bytes / 1048576.0);

            // 1. Gathered views through the stream buffer (cudaMemcpyAsync from registered DRAM slabs).
            for (int w = 0; w < 3; w++) {
                buf.load(g[w % 2]).release(kernel.handle());
            }
            buf.synchronize();
            start.record(buf.copyStream());
            for (int r = 0; r < reps; r++) {
                buf.load(g[r % 2]).release(kernel.handle());
            }
            end.record(buf.copyStream());
            end.synchronize();
            double gathered = reps * bytes / (CudaEvent.elapsedMillis(start, end) / 1e3) / 1e9;

            // 2. Plain pinned cudaMemcpy of the same bytes from cudaHostAlloc memory.
            Cuda.copyToDevice(plainDev, 0, plainHost.segment(), 0, bytes);
            long t0 = System.nanoTime();
            for (int r = 0; r < reps; r++) {
                Cuda.copyToDevice(plainDev, 0, plainHost.segment(), 0, bytes);
            }
            double plain = reps * bytes / ((System.nanoTime() - t0) / 1e9) / 1e9;
            double ratio = gathered / plain;
            System.out.printf(Locale.ROOT, "H2D gathered views (cudaHostRegister'd DRAM, async): %.2f GB/s%n", gathered);
            System.out.printf(Locale.ROOT, "H2D plain cudaMemcpy (cudaHostAlloc): %.2f GB/s%n", plain);
            System.out.printf(Locale.ROOT, "ratio: %.1f%% (target >= 80%%)%n", ratio * 100);

            // 3. Copy time hidden behind compute: per layer a kernel as long as one copy; layer l+1
            // is loaded while layer l's kernel runs.
            float copyMs = CudaEvent.elapsedMillis(start, end) / reps;
            long cycles = 20_000_000L;
            start.record(kernel);
            spin.launch(cycles, kernel);
            end.record(kernel);
            end.synchronize();
            long matched = (long) (cycles * copyMs / CudaEvent.elapsedMillis(start, end));
            start.record(kernel);
            for (int l = 0; l < layers; l++) {
                spin.launch(matched, kernel);
            }
            end.record(kernel);
            end.synchronize();
            float computeMs = CudaEvent.elapsedMillis(start, end);
            start.record(kernel);
            buf.copyStream().waitFor(start);
            GpuLayerView v = buf.load(g[0]);
            for (int l = 0; l < layers; l++) {
                GpuLayerView nextView = l + 1 < layers ? buf.load(g[(l + 1) % 2]) : null;
                v.waitOn(kernel.handle());
                spin.launch(matched, kernel);
                v.release(kernel.handle());
                v = nextView;
            }
            end.record(kernel);
            end.synchronize();
            float pipelined = CudaEvent.elapsedMillis(start, end);
            float copyTotal = copyMs * layers;
            double hidden = Math.max(0, Math.min(1, (computeMs + copyTotal - pipelined) / copyTotal));
            System.out.printf(Locale.ROOT, "%d layers: compute %.2f ms, copies %.2f ms, pipelined %.2f ms: %.0f%% of copy"
                    + " time hidden behind compute%n", layers, computeMs, copyTotal, pipelined, hidden * 100);
            for (GatheredLayer x : g) {
                x.close();
            }
            buf.close();
            if (ratio < 0.8) {
                System.err.println("gathered H2D bandwidth is below 80% of plain pinned cudaMemcpy");
                dram.close();
                tier.close();
                return 3;
            }
        }
        dram.close(); // drains, unregisters, frees
        tier.close();
        return 0;
    }
}
