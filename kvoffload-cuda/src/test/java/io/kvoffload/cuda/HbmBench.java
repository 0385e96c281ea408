package io.kvoffload.cuda;

import io.kvoffload.DType;
import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.DecodeOptions;
import io.kvoffload.KvConfig;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.cuda.bindings.Cuda;
import io.kvoffload.cuda.bindings.CudaEvent;
import io.kvoffload.cuda.bindings.CudaStream;
import io.kvoffload.cuda.bindings.DeviceMemory;
import io.kvoffload.cuda.bindings.PinnedHostBuffer;
import io.kvoffload.cuda.bindings.SpinKernel;
import io.kvoffload.spi.Availability;
import io.kvoffload.testing.TestEngines;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * GPU benchmark (run by gpu-test.sh): H2D bandwidth of KvViews gathered by a real {@link KvDecoder}
 * (from SSD files into DRAM slabs page-locked with cudaHostRegister) and uploaded through the layer
 * stream buffer, against a plain cudaMemcpy of the same bytes from cudaHostAlloc memory; and the
 * share of copy time hidden behind a simulated attention kernel when layers are double-buffered.
 * Figures are logged at info (gpu-test.sh enables it). Exit code 2: no GPU; 3: ratio below 80%.
 */
public final class HbmBench {
    private static final Logger LOG = LoggerFactory.getLogger(HbmBench.class);

    /** {@code v} with {@code digits} decimals, in the root locale (a dot, whatever the machine's locale). */
    private static String fixed(int digits, double v) {
        return String.format(Locale.ROOT, "%." + digits + "f", v);
    }

    public static void main(String[] args) {
        int tokens = args.length > 0 ? Integer.parseInt(args[0]) : 4096;
        int layers = args.length > 1 ? Integer.parseInt(args[1]) : 32;
        System.exit(run(tokens, layers));
    }

    /**
     * Runs the benchmark and logs its figures; returns 0, 2 (no GPU) or 3 (ratio below 80%).
     *
     * @param tokens tokens per gathered view
     * @param layers layers of the pipelined run (two stored layers' views are loaded in turn)
     */
    static int run(int tokens, int layers) {
        Availability a = CudaProbe.probe(0);
        if (!a.available()) {
            LOG.error("HBM benchmark needs a GPU: {}", a.reason());
            return 2;
        }
        LOG.info("{}", a.reason());
        Path root;
        try {
            root = Files.createTempDirectory("kvoffload-hbm-bench");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        try {
            return run(tokens, layers, root);
        } finally {
            TestEngines.deleteRecursively(root);
        }
    }

    private static int run(int tokens, int layers, Path root) {
        // Llama-3-8B's KV heads; two stored layers, whose views alternate through the buffer.
        KvShape shape = new KvShape(2, 32, 8, 128, DType.BF16);
        int stored = 3 * tokens; // a view gathers every third token: a sparse selection
        long data = 2L * stored * shape.entryBytes();
        KvConfig config = DecodedViews.config(root).gpu(KvConfig.Gpu.ON).gpuCacheBudgetBytes(0)
                .deviceCapacityBytes(Math.max(1L << 30, 4 * data)).dramBudgetBytes(Math.max(1L << 30, 4 * data))
                .build();
        long t0 = System.nanoTime();
        try (KvEngine e = TestEngines.open(config)) {
            DecodedViews.store(e, "bench", shape, stored);
        }
        LOG.info("stored and clustered 2 layers × {} tokens ({} MiB) in {} s", stored, data >> 20,
                fixed(1, (System.nanoTime() - t0) / 1e9));
        int[] pos = new int[tokens];
        for (int t = 0; t < tokens; t++) {
            pos[t] = t * 3;
        }
        int reps = 20;
        try (KvEngine e = TestEngines.open(config);
                KvSequence s = e.openSequence("bench");
                KvDecoder d = s.decoder(DecodeOptions.builder().strategy(Swarm.defaults()).pipelineDepth(2).build())) {
            CudaDeviceTier tier = e.deviceTier().orElseThrow().unwrap(CudaDeviceTier.class);
            // Both views stay open (and their DRAM slots untouched) for the whole run.
            KvView[] g = {d.prefetch(0, pos, tokens).await(), d.prefetch(1, pos, tokens).await()};
            long bytes = ViewUpload.plan(g[0], shape, 16, tokens).bytes();
            try (LayerStreamBuffer buf = tier.layerStreamBuffer(shape, 16, tokens, 2);
                    CudaStream kernel = CudaStream.createNonBlocking();
                    PinnedHostBuffer plainHost = PinnedHostBuffer.allocate(bytes);
                    DeviceMemory plainDev = DeviceMemory.allocate(bytes);
                    SpinKernel spin = SpinKernel.load();
                    CudaEvent start = CudaEvent.create(true);
                    CudaEvent end = CudaEvent.create(true)) {
                LOG.info("view: {} tokens, {} MiB per layer (valid rows, positions, block table), {} pinned DRAM"
                        + " slabs", tokens, fixed(1, bytes / 1048576.0), tier.pinnedSlabs());

                // 1. KvViews through the stream buffer (cudaMemcpy2DAsync + 2 cudaMemcpyAsync from
                // registered slabs) against 2. a plain cudaMemcpyAsync of the same bytes from
                // cudaHostAlloc memory: both on the copy stream and timed by its events, in alternating
                // rounds, medians compared (like with like; a first run timed the plain copy by the wall
                // clock around synchronous copies and put the views at 101.5% of it).
                int calls = 0;
                for (int w = 0; w < 3; w++) {
                    GpuLayerView v = buf.load(g[w % 2]);
                    calls = v.copyCalls();
                    v.release(kernel.handle());
                }
                buf.synchronize();
                Cuda.copyToDeviceAsync(plainDev, 0, plainHost.segment(), 0, bytes, buf.copyStream());
                int rounds = 7;
                float[] viewMs = new float[rounds];
                float[] plainMs = new float[rounds];
                for (int round = 0; round < rounds; round++) {
                    start.record(buf.copyStream());
                    for (int r = 0; r < reps; r++) {
                        buf.load(g[r % 2]).release(kernel.handle());
                    }
                    end.record(buf.copyStream());
                    end.synchronize();
                    viewMs[round] = CudaEvent.elapsedMillis(start, end) / reps;
                    start.record(buf.copyStream());
                    for (int r = 0; r < reps; r++) {
                        Cuda.copyToDeviceAsync(plainDev, 0, plainHost.segment(), 0, bytes, buf.copyStream());
                    }
                    end.record(buf.copyStream());
                    end.synchronize();
                    plainMs[round] = CudaEvent.elapsedMillis(start, end) / reps;
                }
                float copyMs = median(viewMs);
                double gathered = bytes / (copyMs / 1e3) / 1e9;
                double plain = bytes / (median(plainMs) / 1e3) / 1e9;
                double ratio = gathered / plain;
                LOG.info("H2D KvViews (decoder-gathered, cudaHostRegister'd DRAM, {} async copies per view): {} GB/s"
                        + " (median of {} rounds of {} views)", calls, fixed(2, gathered), rounds, reps);
                LOG.info("H2D plain cudaMemcpyAsync (cudaHostAlloc, same stream and rounds): {} GB/s", fixed(2, plain));
                LOG.info("ratio: {}% (target >= 80%)", fixed(1, ratio * 100));

                // 3. Copy time hidden behind compute: per layer a kernel as long as one copy; layer l+1
                // is loaded while layer l's kernel runs.
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
                // What overlap can give at most: the serial sum down to the longer of the two.
                double serial = computeMs + copyTotal;
                double ideal = Math.max(computeMs, copyTotal);
                double achieved = (serial - pipelined) / (serial - ideal);
                LOG.info("{} layers: compute {} ms, copies {} ms, pipelined {} ms: {}% of copy time hidden behind"
                        + " compute; {}% of the overlap possible (serial {} ms, ideal {} ms)", layers,
                        fixed(2, computeMs), fixed(2, copyTotal), fixed(2, pipelined), fixed(0, hidden * 100),
                        fixed(0, achieved * 100), fixed(2, serial), fixed(2, ideal));
                buf.synchronize(); // the copies have read the views: they may be closed
                if (ratio < 0.8) {
                    LOG.error("KvView H2D bandwidth is below 80% of a plain pinned cudaMemcpyAsync");
                    return 3;
                }
            } finally {
                for (KvView x : g) {
                    x.close();
                }
            }
        }
        return 0;
    }

    private static float median(float[] xs) {
        float[] c = xs.clone();
        Arrays.sort(c);
        return c[c.length / 2];
    }
}
