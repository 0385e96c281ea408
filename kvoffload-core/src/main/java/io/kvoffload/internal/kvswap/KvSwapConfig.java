package io.kvoffload.internal.kvswap;

import com.fasterxml.jackson.jr.ob.JSON;
import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The runtime settings KVSwap's offline tuning records (§3.5, Fig. 4a {@code config.json}): group
 * size G, adapter rank r (compression ratio σ), selected groups M, reuse-buffer slots C, plus what
 * they were tuned for (model shape, context, batch, DRAM budget, device) and what the tuner
 * predicted. {@link #toJson()} / {@link #fromJson(String)} give the file form; the loader checks every
 * field, recomputes the memory from the settings, and rejects a file whose memory exceeds its budget.
 *
 * @param shape the model
 * @param maxContext tokens per sequence tuned for
 * @param batchSize sequences tuned for
 * @param dramBudgetBytes the DRAM budget the settings respect
 * @param groupSize G
 * @param rank r
 * @param compressedKDtype element type of the compressed K cache
 * @param budgetTokens MG, the tokens selected per step (the paper's Const, default 400)
 * @param groups M = ⌈budgetTokens / G⌉
 * @param reuseSlots C in groups per layer and sequence, at least M
 * @param reusePolicy replacement policy of the reuse buffer
 * @param rollingGroups rolling-buffer capacity in groups
 * @param memory the DRAM these settings take ({@link MemoryFootprint#of})
 * @param predicted what the tuner measured and modelled for the chosen settings
 * @param device the I/O model the timings use
 * @param search every configuration the tuner evaluated, in order (may be empty)
 */
public record KvSwapConfig(KvShape shape, int maxContext, int batchSize, long dramBudgetBytes, int groupSize, int rank,
        DType compressedKDtype, int budgetTokens, int groups, int reuseSlots, ReuseBuffer.Policy reusePolicy,
        int rollingGroups, MemoryFootprint memory, Prediction predicted, FetchCostModel device, List<Candidate> search) {

    /** Identifies the file. */
    public static final String FORMAT = "kvoffload-kvswap-config";
    public static final int VERSION = 1;

    /**
     * Measured and modelled figures of one configuration.
     *
     * @param attentionMassRecall mean attention-mass recall of the selection plus the rolling
     *     buffer on the calibration queries, 0..1
     * @param reuseRate reuse-buffer hits / requested groups over the calibration steps, 0..1
     * @param ioSecondsPerLayer modelled time to read one layer's missed groups for the batch
     * @param computeSecondsPerLayer the given compute time of one layer for the batch
     * @param tokensPerSecond modelled decoding throughput of the batch
     * @param ioHidden whether {@code (1 − α) × io ≤ compute}
     */
    public record Prediction(double attentionMassRecall, double reuseRate, double ioSecondsPerLayer,
            double computeSecondsPerLayer, double tokensPerSecond, boolean ioHidden) {
        public Prediction {
            Checks.inRange("attentionMassRecall", attentionMassRecall, 0, 1);
            Checks.inRange("reuseRate", reuseRate, 0, 1);
            Checks.inRange("ioSecondsPerLayer", ioSecondsPerLayer, 0, 1e9);
            Checks.inRange("computeSecondsPerLayer", computeSecondsPerLayer, 0, 1e9);
            Checks.inRange("tokensPerSecond", tokensPerSecond, 0, 1e18);
        }
    }

    /**
     * One configuration the tuner evaluated.
     *
     * @param memoryBytes {@link MemoryFootprint#totalBytes()} of the configuration
     */
    public record Candidate(int groupSize, int rank, int groups, int reuseSlots, long memoryBytes, Prediction predicted) {
        public Candidate {
            Checks.inRange("groupSize", groupSize, 1, 4096);
            Checks.inRange("rank", rank, 1, 1 << 24);
            Checks.inRange("groups", groups, 0, 1 << 20);
            Checks.inRange("reuseSlots", reuseSlots, 0, 1 << 20);
            Checks.inRange("memoryBytes", memoryBytes, 0, Long.MAX_VALUE);
            Checks.notNull("predicted", predicted);
        }
    }

    public KvSwapConfig {
        Checks.notNull("shape", shape);
        Checks.inRange("maxContext", maxContext, 1, 1 << 30);
        Checks.inRange("batchSize", batchSize, 1, 65536);
        Checks.positive("dramBudgetBytes", dramBudgetBytes);
        Checks.inRange("groupSize", groupSize, 1, 4096);
        Checks.inRange("rank", rank, 1, shape.elementsPerToken());
        Checks.notNull("compressedKDtype", compressedKDtype);
        Checks.inRange("budgetTokens", budgetTokens, 1, 1 << 24);
        int m = GroupPredictor.groupsFor(budgetTokens, groupSize);
        if (groups != m) {
            throw new IllegalArgumentException("groups = " + groups + " must be ⌈budgetTokens / groupSize⌉ = " + m);
        }
        Checks.inRange("reuseSlots", reuseSlots, groups, 1 << 20);
        Checks.notNull("reusePolicy", reusePolicy);
        Checks.inRange("rollingGroups", rollingGroups, 1, 1024);
        Checks.notNull("memory", memory);
        MemoryFootprint expected = MemoryFootprint.of(shape, maxContext, batchSize, rank, compressedKDtype, groupSize,
                reuseSlots, rollingGroups);
        if (!memory.equals(expected)) {
            throw new IllegalArgumentException("memory = " + memory + " does not match the settings; expected " + expected);
        }
        if (memory.totalBytes() > dramBudgetBytes) {
            throw new IllegalArgumentException("memory.totalBytes() = " + memory.totalBytes()
                    + " exceeds dramBudgetBytes = " + dramBudgetBytes);
        }
        Checks.notNull("predicted", predicted);
        Checks.notNull("device", device);
        search = List.copyOf(Checks.notNull("search", search));
    }

    /** σ = kvHeads·headDim / r. */
    public double compressionRatio() {
        return shape.elementsPerToken() / (double) rank;
    }

    // ---------------------------------------------------------------- JSON

    /** The file form: pretty-printed JSON, keys in a fixed order. */
    public String toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("format", FORMAT);
        m.put("version", VERSION);
        Map<String, Object> model = new LinkedHashMap<>();
        model.put("layers", shape.layers());
        model.put("queryHeads", shape.queryHeads());
        model.put("kvHeads", shape.kvHeads());
        model.put("headDim", shape.headDim());
        model.put("dtype", shape.dtype().name());
        m.put("model", model);
        m.put("maxContext", maxContext);
        m.put("batchSize", batchSize);
        m.put("dramBudgetBytes", dramBudgetBytes);
        m.put("groupSize", groupSize);
        m.put("rank", rank);
        m.put("compressionRatio", compressionRatio());
        m.put("compressedKDtype", compressedKDtype.name());
        m.put("budgetTokens", budgetTokens);
        m.put("groups", groups);
        m.put("reuseSlots", reuseSlots);
        m.put("reusePolicy", reusePolicy.name());
        m.put("rollingGroups", rollingGroups);
        Map<String, Object> mem = new LinkedHashMap<>();
        mem.put("compressedKBytes", memory.compressedKBytes());
        mem.put("reuseBufferBytes", memory.reuseBufferBytes());
        mem.put("rollingBufferBytes", memory.rollingBufferBytes());
        mem.put("adapterBytes", memory.adapterBytes());
        mem.put("totalBytes", memory.totalBytes());
        m.put("memory", mem);
        m.put("predicted", predictionMap(predicted));
        Map<String, Object> dev = new LinkedHashMap<>();
        dev.put("bandwidthBytesPerSecond", device.bandwidthBytesPerSecond());
        dev.put("iops", device.iops());
        dev.put("readAlignment", device.readAlignment());
        m.put("device", dev);
        List<Object> s = new ArrayList<>();
        for (Candidate c : search) {
            Map<String, Object> cm = new LinkedHashMap<>();
            cm.put("groupSize", c.groupSize());
            cm.put("rank", c.rank());
            cm.put("groups", c.groups());
            cm.put("reuseSlots", c.reuseSlots());
            cm.put("memoryBytes", c.memoryBytes());
            cm.put("predicted", predictionMap(c.predicted()));
            s.add(cm);
        }
        m.put("search", s);
        try {
            return JSON.std.with(JSON.Feature.PRETTY_PRINT_OUTPUT).asString(m);
        } catch (IOException e) {
            throw new IllegalStateException("JSON serialisation of a map of numbers and strings failed", e);
        }
    }

    private static Map<String, Object> predictionMap(Prediction p) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("attentionMassRecall", p.attentionMassRecall());
        m.put("reuseRate", p.reuseRate());
        m.put("ioSecondsPerLayer", p.ioSecondsPerLayer());
        m.put("computeSecondsPerLayer", p.computeSecondsPerLayer());
        m.put("tokensPerSecond", p.tokensPerSecond());
        m.put("ioHidden", p.ioHidden());
        return m;
    }

    /** Writes {@link #toJson()} to {@code file} (UTF-8). */
    public void write(Path file) throws IOException {
        Checks.notNull("file", file);
        Files.writeString(file, toJson(), StandardCharsets.UTF_8);
    }

    /** Reads a file written by {@link #write(Path)}. */
    public static KvSwapConfig read(Path file) throws IOException {
        Checks.notNull("file", file);
        return fromJson(Files.readString(file, StandardCharsets.UTF_8));
    }

    private static final Set<String> KEYS = new TreeSet<>(List.of("format", "version", "model", "maxContext", "batchSize",
            "dramBudgetBytes", "groupSize", "rank", "compressionRatio", "compressedKDtype", "budgetTokens", "groups",
            "reuseSlots", "reusePolicy", "rollingGroups", "memory", "predicted", "device", "search"));

    /**
     * Parses {@link #toJson()}'s form. Unknown keys, missing keys, wrong types, out-of-range values,
     * a memory block that does not match the settings and memory over the budget are all rejected.
     *
     * @throws IllegalArgumentException naming the offending key
     */
    public static KvSwapConfig fromJson(String json) {
        Checks.notNull("json", json);
        Map<String, Object> m;
        try {
            m = JSON.std.mapFrom(json);
        } catch (IOException e) {
            throw new IllegalArgumentException("not valid JSON: " + e.getMessage(), e);
        }
        if (m == null) {
            throw new IllegalArgumentException("not a KVSwap configuration: the JSON is null");
        }
        for (String k : m.keySet()) {
            if (!KEYS.contains(k)) {
                throw new IllegalArgumentException("unknown key '" + k + "'; allowed keys: " + KEYS);
            }
        }
        String format = string(m, "format");
        if (!FORMAT.equals(format)) {
            throw new IllegalArgumentException("format = '" + format + "' is not a KVSwap configuration; allowed: " + FORMAT);
        }
        int version = integer(m, "version");
        if (version != VERSION) {
            throw new IllegalArgumentException("version = " + version + " is not supported; allowed: " + VERSION);
        }
        Map<String, Object> model = object(m, "model");
        KvShape shape = new KvShape(integer(model, "layers"), integer(model, "queryHeads"), integer(model, "kvHeads"),
                integer(model, "headDim"), dtype(model, "dtype"));
        Map<String, Object> mem = object(m, "memory");
        MemoryFootprint memory = new MemoryFootprint(longValue(mem, "compressedKBytes"), longValue(mem, "reuseBufferBytes"),
                longValue(mem, "rollingBufferBytes"), longValue(mem, "adapterBytes"));
        if (longValue(mem, "totalBytes") != memory.totalBytes()) {
            throw new IllegalArgumentException("memory.totalBytes = " + longValue(mem, "totalBytes")
                    + " is not the sum of its parts = " + memory.totalBytes());
        }
        Map<String, Object> dev = object(m, "device");
        FetchCostModel device = new FetchCostModel(number(dev, "bandwidthBytesPerSecond"), number(dev, "iops"),
                integer(dev, "readAlignment"));
        List<Candidate> search = new ArrayList<>();
        Object s = m.get("search");
        if (!(s instanceof List<?> list)) {
            throw new IllegalArgumentException("search = " + s + " must be a list of candidates");
        }
        for (Object o : list) {
            if (!(o instanceof Map<?, ?>)) {
                throw new IllegalArgumentException("search holds " + o + "; allowed: objects");
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> c = (Map<String, Object>) o;
            search.add(new Candidate(integer(c, "groupSize"), integer(c, "rank"), integer(c, "groups"),
                    integer(c, "reuseSlots"), longValue(c, "memoryBytes"), prediction(object(c, "predicted"))));
        }
        String policy = string(m, "reusePolicy");
        ReuseBuffer.Policy reusePolicy;
        try {
            reusePolicy = ReuseBuffer.Policy.valueOf(policy);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("reusePolicy = '" + policy + "' is not a policy; allowed: "
                    + List.of(ReuseBuffer.Policy.values()), e);
        }
        KvSwapConfig config = new KvSwapConfig(shape, integer(m, "maxContext"), integer(m, "batchSize"),
                longValue(m, "dramBudgetBytes"), integer(m, "groupSize"), integer(m, "rank"), dtype(m, "compressedKDtype"),
                integer(m, "budgetTokens"), integer(m, "groups"), integer(m, "reuseSlots"), reusePolicy,
                integer(m, "rollingGroups"), memory, prediction(object(m, "predicted")), device, search);
        double sigma = number(m, "compressionRatio");
        if (Math.abs(sigma - config.compressionRatio()) > 1e-9 * config.compressionRatio()) {
            throw new IllegalArgumentException("compressionRatio = " + sigma + " does not match kvHeads × headDim / rank = "
                    + config.compressionRatio());
        }
        return config;
    }

    private static Prediction prediction(Map<String, Object> p) {
        Object hidden = p.get("ioHidden");
        if (!(hidden instanceof Boolean b)) {
            throw new IllegalArgumentException("ioHidden = " + hidden + " must be true or false");
        }
        return new Prediction(number(p, "attentionMassRecall"), number(p, "reuseRate"), number(p, "ioSecondsPerLayer"),
                number(p, "computeSecondsPerLayer"), number(p, "tokensPerSecond"), b);
    }

    private static Object required(Map<String, Object> m, String key) {
        Object v = m.get(key);
        if (v == null) {
            throw new IllegalArgumentException("missing key '" + key + "'");
        }
        return v;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> object(Map<String, Object> m, String key) {
        Object v = required(m, key);
        if (!(v instanceof Map<?, ?>)) {
            throw new IllegalArgumentException(key + " = " + v + " must be an object");
        }
        return (Map<String, Object>) v;
    }

    private static String string(Map<String, Object> m, String key) {
        Object v = required(m, key);
        if (!(v instanceof String str)) {
            throw new IllegalArgumentException(key + " = " + v + " must be a string");
        }
        return str;
    }

    private static double number(Map<String, Object> m, String key) {
        Object v = required(m, key);
        if (!(v instanceof Number n)) {
            throw new IllegalArgumentException(key + " = " + v + " must be a number");
        }
        return n.doubleValue();
    }

    private static long longValue(Map<String, Object> m, String key) {
        Object v = required(m, key);
        if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte) {
            return ((Number) v).longValue();
        }
        if (v instanceof java.math.BigInteger big && big.bitLength() < 64) {
            return big.longValue();
        }
        throw new IllegalArgumentException(key + " = " + v + " must be an integer; allowed: " + Long.MIN_VALUE + ".."
                + Long.MAX_VALUE);
    }

    private static int integer(Map<String, Object> m, String key) {
        long v = longValue(m, key);
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(key + " = " + v + " is out of range; allowed: " + Integer.MIN_VALUE + ".."
                    + Integer.MAX_VALUE);
        }
        return (int) v;
    }

    private static DType dtype(Map<String, Object> m, String key) {
        String s = string(m, key);
        try {
            return DType.valueOf(s);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(key + " = '" + s + "' is not an element type; allowed: "
                    + List.of(DType.values()), e);
        }
    }
}
