package io.kvoffload.internal.kvswap;

import io.kvoffload.internal.storage.GroupState;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.LayerKv;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;
import org.ejml.data.DMatrixRMaj;
import org.ejml.dense.row.factory.DecompositionFactory_DDRM;
import org.ejml.interfaces.decomposition.SingularValueDecomposition_F64;

/**
 * KVSwap's low-rank K adapter (§3.2, joint-head compression): the first {@code r} right singular
 * vectors of a matrix of calibration keys whose rows are tokens and whose columns are all KV heads
 * concatenated ({@code kvHeads × headDim}, post-RoPE, head after head like an entry's K). It is the
 * matrix {@code A ∈ R^{(Hkv·d) × r}}: a key compresses to {@code k·A} ({@link CompressedKCache}), and
 * KV head {@code h}'s query projects through its {@code d × r} block {@code A_h} (Eq. 1,
 * {@link GroupPredictor}). The compression ratio is {@code σ = Hkv·d / r}; the paper's default is
 * {@code r = headDim}.
 *
 * <h2>How the SVD is computed</h2>
 * The right singular vectors of the token matrix {@code K} are those of its Gram matrix
 * {@code KᵀK = V S² Vᵀ}, which is only {@code (Hkv·d)²} however many tokens are calibrated. The
 * calibration therefore streams key rows into the Gram matrix (double precision) and runs EJML's SVD
 * on it; the singular values of {@code K} are the square roots of the Gram matrix's. Like the
 * paper's artifact, keys are not centred: the adapter approximates dot products, and the mean key
 * direction is exactly what the first component should capture.
 *
 * <h2>Large token counts</h2>
 * Accumulating the Gram matrix costs {@code O(N·(Hkv·d)²)}: 8.6 G multiply-adds for 8 192 rows of
 * Llama-3-8B's 1 024 columns. {@link #fit(LayerKv, int, int, long)} therefore samples at most
 * {@code maxRows} tokens uniformly without replacement (seeded, in position order), which is plenty
 * for an {@code r}-dimensional subspace of a 1 024-dimensional space ({@link #DEFAULT_MAX_ROWS}).
 *
 * <p>Instances are immutable. {@link #encode()} / {@link #decode(byte[])} give the byte form the
 * engine persists (format in {@link #encode()}).
 */
public final class LowRankAdapter implements GroupState {
    /** Default cap on calibration rows (tokens) sampled from one layer. */
    public static final int DEFAULT_MAX_ROWS = 8192;

    static final int MAGIC = 0x4B565341; // "KVSA"
    static final int VERSION = 1;
    static final int HEADER_BYTES = 32;
    /** Largest projection accepted, so every byte count stays an int. */
    static final long MAX_ELEMENTS = (Integer.MAX_VALUE - 64L) / 4 / 2;

    private final int kvHeads;
    private final int headDim;
    private final int rank;
    private final int calibrationRows;
    private final float[] projection; // (kvHeads·headDim) × rank, row-major
    private final float[] singularValues; // the kept ones, descending
    private final double totalEnergy; // Σ of all squared singular values

    private LowRankAdapter(int kvHeads, int headDim, int rank, int calibrationRows, float[] projection,
            float[] singularValues, double totalEnergy) {
        this.kvHeads = kvHeads;
        this.headDim = headDim;
        this.rank = rank;
        this.calibrationRows = calibrationRows;
        this.projection = projection;
        this.singularValues = singularValues;
        this.totalEnergy = totalEnergy;
    }

    // ---------------------------------------------------------------- building

    /**
     * Fits an adapter to keys held in one array.
     *
     * @param keys {@code tokens × kvHeads × headDim} floats, token-major (the engine's K layout)
     * @param tokens rows, at least 1
     * @param rank 1..kvHeads·headDim
     */
    public static LowRankAdapter fit(float[] keys, int tokens, int kvHeads, int headDim, int rank) {
        Calibration c = calibration(kvHeads, headDim);
        Checks.notNull("keys", keys);
        Checks.positive("tokens", tokens);
        c.add(keys, 0, tokens);
        return c.fit(rank);
    }

    /**
     * Fits an adapter to one layer's keys, sampling at most {@code maxRows} tokens uniformly
     * without replacement when the layer has more.
     *
     * @param rank 1..kvHeads·headDim
     * @param maxRows 1..2^30
     * @param seed seed of the row sample
     */
    public static LowRankAdapter fit(LayerKv layer, int rank, int maxRows, long seed) {
        Checks.notNull("layer", layer);
        Checks.inRange("maxRows", maxRows, 1, 1 << 30);
        Calibration c = calibration(layer.kvHeads(), layer.headDim());
        Checks.inRange("rank", rank, 1, c.columns);
        c.addSampled(layer, maxRows, seed);
        return c.fit(rank);
    }

    /** An empty calibration for keys of this shape: add rows from any number of sources, then fit. */
    public static Calibration calibration(int kvHeads, int headDim) {
        Checks.inRange("kvHeads", kvHeads, 1, 1024);
        Checks.inRange("headDim", headDim, 1, 16384);
        long columns = (long) kvHeads * headDim;
        if (columns > 16384) {
            throw new IllegalArgumentException("kvHeads × headDim = " + columns
                    + " is out of range; allowed: 1..16384 (the Gram matrix is columns² doubles)");
        }
        return new Calibration(kvHeads, headDim);
    }

    /**
     * Wraps an explicit projection matrix (tests, or an adapter computed elsewhere).
     *
     * @param projection {@code (kvHeads·headDim) × rank} floats, row-major, finite; copied
     */
    public static LowRankAdapter of(int kvHeads, int headDim, int rank, float[] projection) {
        Checks.inRange("kvHeads", kvHeads, 1, 1024);
        Checks.inRange("headDim", headDim, 1, 16384);
        int columns = kvHeads * headDim;
        Checks.inRange("rank", rank, 1, columns);
        Checks.notNull("projection", projection);
        if ((long) columns * rank > MAX_ELEMENTS) {
            throw new IllegalArgumentException("kvHeads × headDim × rank = " + (long) columns * rank
                    + " is out of range; allowed: up to " + MAX_ELEMENTS);
        }
        if (projection.length != columns * rank) {
            throw new IllegalArgumentException("projection.length = " + projection.length
                    + " must be kvHeads × headDim × rank = " + columns * rank);
        }
        for (int i = 0; i < projection.length; i++) {
            if (!Float.isFinite(projection[i])) {
                throw new IllegalArgumentException("projection[" + i + "] = " + projection[i] + "; allowed: finite values");
            }
        }
        float[] sv = new float[rank];
        return new LowRankAdapter(kvHeads, headDim, rank, 0, projection.clone(), sv, 0);
    }

    /** This adapter with only its first {@code rank} components (a higher compression ratio). */
    public LowRankAdapter truncate(int rank) {
        Checks.inRange("rank", rank, 1, this.rank);
        if (rank == this.rank) {
            return this;
        }
        int rows = inputDim();
        float[] p = new float[rows * rank];
        for (int i = 0; i < rows; i++) {
            System.arraycopy(projection, i * this.rank, p, i * rank, rank);
        }
        return new LowRankAdapter(kvHeads, headDim, rank, calibrationRows, p,
                Arrays.copyOf(singularValues, rank), totalEnergy);
    }

    // ---------------------------------------------------------------- accessors

    public int kvHeads() { return kvHeads; }
    public int headDim() { return headDim; }
    /** r: the dimension of a compressed key. */
    public int rank() { return rank; }
    /** {@code kvHeads × headDim}: the dimension of an uncompressed key. */
    public int inputDim() { return kvHeads * headDim; }
    /** Tokens the adapter was calibrated on (0 for {@link #of}). */
    public int calibrationRows() { return calibrationRows; }

    /** σ = kvHeads·headDim / r. */
    public double compressionRatio() {
        return inputDim() / (double) rank;
    }

    /** Element {@code (row, col)} of A. */
    public float at(int row, int col) {
        Checks.index("row", row, inputDim());
        Checks.index("col", col, rank);
        return projection[row * rank + col];
    }

    /** A copy of A, {@code (kvHeads·headDim) × rank}, row-major. */
    public float[] projection() {
        return projection.clone();
    }

    /** The kept singular values of the calibration matrix, descending (zeros for {@link #of}). */
    public float[] singularValues() {
        return singularValues.clone();
    }

    /**
     * The share of the calibration keys' energy ({@code Σσ²}) the kept components hold: how much
     * of {@code ‖K‖²} survives the projection. NaN for {@link #of}.
     */
    public double retainedEnergy() {
        if (totalEnergy == 0) {
            return Double.NaN;
        }
        double kept = 0;
        for (float s : singularValues) {
            kept += (double) s * s;
        }
        return Math.min(1.0, kept / totalEnergy);
    }

    /** DRAM the matrix takes: {@code 4 × kvHeads·headDim × r} bytes. */
    /** The adapter's keys ({@code kvHeads × headDim} elements) must divide an entry's K and V. */
    @Override
    public void checkEntryBytes(int entryBytes) {
        if (entryBytes % (2 * inputDim()) != 0) {
            throw new IllegalArgumentException("adapter keys of " + inputDim() + " elements do not fit entries of "
                    + entryBytes + " bytes (K and V of kvHeads × headDim elements)");
        }
    }

    @Override
    public long bytes() {
        return 4L * projection.length;
    }

    // ---------------------------------------------------------------- projection

    /**
     * Compresses one key: {@code dst[dstOffset + j] = Σ_i key[keyOffset + i] · A[i][j]} for the
     * {@code kvHeads × headDim} elements of one token.
     */
    public void project(float[] key, int keyOffset, float[] dst, int dstOffset) {
        int n = inputDim();
        int r = rank;
        Arrays.fill(dst, dstOffset, dstOffset + r, 0f);
        for (int i = 0; i < n; i++) {
            float k = key[keyOffset + i];
            if (k != 0f) {
                axpy(k, projection, i * r, dst, dstOffset, r);
            }
        }
    }

    /**
     * Adds {@code scale × q_h · A_h} to {@code dst[dstOffset .. + r)}: KV head {@code h}'s
     * {@code headDim}-element query through its {@code d × r} block of A (Eq. 1's low-rank query).
     */
    public void accumulateHead(int kvHead, float[] q, int qOffset, float scale, float[] dst, int dstOffset) {
        int r = rank;
        int row0 = kvHead * headDim;
        for (int i = 0; i < headDim; i++) {
            float v = scale * q[qOffset + i];
            if (v != 0f) {
                axpy(v, projection, (row0 + i) * r, dst, dstOffset, r);
            }
        }
    }

    /** {@code y += a·x}: a loop C2 vectorises (no reduction). */
    static void axpy(float a, float[] x, int xOffset, float[] y, int yOffset, int n) {
        for (int j = 0; j < n; j++) {
            y[yOffset + j] += a * x[xOffset + j];
        }
    }

    // ---------------------------------------------------------------- bytes

    /**
     * The persistent form, little-endian:
     * <pre>
     * offset size field
     *      0    4 magic 0x4B565341 ("KVSA")
     *      4    4 version = 1
     *      8    4 kvHeads            1..1024
     *     12    4 headDim            1..16384
     *     16    4 rank               1..kvHeads·headDim
     *     20    4 calibrationRows    ≥ 0
     *     24    8 totalEnergy        f64, Σ of all squared singular values, ≥ 0
     *     32      A: (kvHeads·headDim) × rank f32, row-major
     *        4·r  kept singular values, f32, descending, ≥ 0
     *          4  CRC32C of every byte above
     * </pre>
     */
    @Override
    public byte[] encode() {
        int size = HEADER_BYTES + 4 * projection.length + 4 * rank + 4;
        ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(MAGIC).putInt(VERSION).putInt(kvHeads).putInt(headDim).putInt(rank).putInt(calibrationRows);
        b.putDouble(totalEnergy);
        for (float v : projection) {
            b.putFloat(v);
        }
        for (float v : singularValues) {
            b.putFloat(v);
        }
        CRC32C crc = new CRC32C();
        crc.update(b.array(), 0, size - 4);
        b.putInt((int) crc.getValue());
        return b.array();
    }

    /**
     * Reads {@link #encode()}'s form back, checking everything: length, magic, version, ranges,
     * checksum, finite values and descending singular values.
     *
     * @throws IllegalArgumentException naming what is wrong
     */
    public static LowRankAdapter decode(byte[] bytes) {
        Checks.notNull("bytes", bytes);
        if (bytes.length < HEADER_BYTES + 4) {
            throw new IllegalArgumentException("bytes.length = " + bytes.length
                    + " is too short for a low-rank adapter; allowed: at least " + (HEADER_BYTES + 4));
        }
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        int magic = b.getInt();
        if (magic != MAGIC) {
            throw new IllegalArgumentException("magic = 0x" + Integer.toHexString(magic)
                    + " is not a low-rank adapter; allowed: 0x" + Integer.toHexString(MAGIC));
        }
        int version = b.getInt();
        if (version != VERSION) {
            throw new IllegalArgumentException("version = " + version + " is not supported; allowed: " + VERSION);
        }
        int kvHeads = Checks.inRange("kvHeads", b.getInt(), 1, 1024);
        int headDim = Checks.inRange("headDim", b.getInt(), 1, 16384);
        long columns = (long) kvHeads * headDim;
        int rank = b.getInt();
        if (rank < 1 || rank > columns) {
            throw new IllegalArgumentException("rank = " + rank + " is out of range; allowed: 1.." + columns);
        }
        if (columns * rank > MAX_ELEMENTS) {
            throw new IllegalArgumentException("kvHeads × headDim × rank = " + columns * rank
                    + " is out of range; allowed: up to " + MAX_ELEMENTS);
        }
        long expected = HEADER_BYTES + 4 * (columns * rank) + 4L * rank + 4;
        if (bytes.length != expected) {
            throw new IllegalArgumentException("bytes.length = " + bytes.length + " does not match the header (kvHeads = "
                    + kvHeads + ", headDim = " + headDim + ", rank = " + rank + "); allowed: exactly " + expected);
        }
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, bytes.length - 4);
        int stored = ByteBuffer.wrap(bytes, bytes.length - 4, 4).order(ByteOrder.LITTLE_ENDIAN).getInt();
        if (stored != (int) crc.getValue()) {
            throw new IllegalArgumentException("checksum mismatch: stored 0x" + Integer.toHexString(stored)
                    + ", computed 0x" + Integer.toHexString((int) crc.getValue()) + " (the adapter bytes are corrupt)");
        }
        int rows = b.getInt();
        if (rows < 0) {
            throw new IllegalArgumentException("calibrationRows = " + rows + " is out of range; allowed: ≥ 0");
        }
        double energy = b.getDouble();
        if (!(energy >= 0) || Double.isInfinite(energy)) {
            throw new IllegalArgumentException("totalEnergy = " + energy + " is out of range; allowed: a finite value ≥ 0");
        }
        float[] p = new float[(int) (columns * rank)];
        for (int i = 0; i < p.length; i++) {
            p[i] = b.getFloat();
            if (!Float.isFinite(p[i])) {
                throw new IllegalArgumentException("projection[" + i + "] = " + p[i] + "; allowed: finite values");
            }
        }
        float[] sv = new float[rank];
        for (int i = 0; i < rank; i++) {
            sv[i] = b.getFloat();
            if (!(sv[i] >= 0) || Float.isInfinite(sv[i]) || (i > 0 && sv[i] > sv[i - 1])) {
                throw new IllegalArgumentException("singularValues[" + i + "] = " + sv[i]
                        + "; allowed: finite, ≥ 0 and not above singularValues[i − 1]");
            }
        }
        return new LowRankAdapter(kvHeads, headDim, rank, rows, p, sv, energy);
    }

    @Override
    public String toString() {
        return "LowRankAdapter{kvHeads=" + kvHeads + ", headDim=" + headDim + ", rank=" + rank + ", σ="
                + compressionRatio() + ", calibrationRows=" + calibrationRows + "}";
    }

    // ---------------------------------------------------------------- calibration

    /**
     * Accumulates calibration keys into their Gram matrix {@code KᵀK}, then fits adapters of any
     * rank from it. Rows are buffered and added a block at a time; memory is
     * {@code 8 × (kvHeads·headDim)²} bytes (8 MiB for Llama-3-8B) plus one block of rows. Not
     * thread-safe.
     */
    public static final class Calibration {
        private static final int BLOCK_ROWS = 256;
        /** Gram rows updated per pass over a block: 32 rows × 1 024 doubles stay in L2. */
        private static final int TILE = 32;

        private final int kvHeads;
        private final int headDim;
        private final int columns;
        private final double[] gram; // upper triangle used, row-major
        private final float[] block;
        private int buffered;
        private long rows;

        private Calibration(int kvHeads, int headDim) {
            this.kvHeads = kvHeads;
            this.headDim = headDim;
            this.columns = kvHeads * headDim;
            this.gram = new double[columns * columns];
            this.block = new float[BLOCK_ROWS * columns];
        }

        /** Rows (tokens) added so far. */
        public long rows() {
            return rows;
        }

        /**
         * Adds {@code tokens} key rows from {@code keys[offset ..]}, each {@code kvHeads × headDim}
         * floats (token-major).
         */
        public Calibration add(float[] keys, int offset, int tokens) {
            Checks.notNull("keys", keys);
            Checks.inRange("tokens", tokens, 0, Integer.MAX_VALUE);
            Checks.slice("keys", offset, (long) tokens * columns, keys.length);
            for (int t = 0; t < tokens; t++) {
                int src = offset + t * columns;
                for (int i = 0; i < columns; i++) {
                    if (!Float.isFinite(keys[src + i])) {
                        throw new IllegalArgumentException("keys[" + (src + i) + "] = " + keys[src + i]
                                + "; allowed: finite values");
                    }
                }
                System.arraycopy(keys, src, block, buffered * columns, columns);
                push();
            }
            return this;
        }

        /**
         * Adds at most {@code maxRows} tokens of {@code layer}, drawn uniformly without replacement
         * (Knuth's selection sampling: one pass, position order) when it has more.
         */
        public Calibration addSampled(LayerKv layer, int maxRows, long seed) {
            Checks.notNull("layer", layer);
            Checks.inRange("maxRows", maxRows, 1, 1 << 30);
            if (layer.kvHeads() != kvHeads || layer.headDim() != headDim) {
                throw new IllegalArgumentException("layer has kvHeads = " + layer.kvHeads() + ", headDim = "
                        + layer.headDim() + "; this calibration expects kvHeads = " + kvHeads + ", headDim = " + headDim);
            }
            int n = layer.tokens();
            SplittableRandom rnd = new SplittableRandom(seed);
            int need = Math.min(maxRows, n);
            for (int t = 0; t < n && need > 0; t++) {
                // Keep token t with probability need / (tokens left): exactly `need` tokens, uniformly.
                if (need == n - t || rnd.nextInt(n - t) < need) {
                    int at = buffered * columns;
                    for (int h = 0; h < kvHeads; h++) {
                        layer.keys(h, t, 1, block, at + h * headDim);
                    }
                    for (int i = 0; i < columns; i++) {
                        if (!Float.isFinite(block[at + i])) {
                            throw new IllegalArgumentException("key of token " + t + " holds " + block[at + i]
                                    + "; allowed: finite values");
                        }
                    }
                    push();
                    need--;
                }
            }
            return this;
        }

        private void push() {
            buffered++;
            rows++;
            if (buffered == BLOCK_ROWS) {
                flush();
            }
        }

        /** Adds the buffered rows' outer products to the upper triangle, a tile of Gram rows at a time. */
        private void flush() {
            int n = columns;
            for (int i0 = 0; i0 < n; i0 += TILE) {
                int i1 = Math.min(n, i0 + TILE);
                for (int row = 0; row < buffered; row++) {
                    int x = row * n;
                    for (int i = i0; i < i1; i++) {
                        double xi = block[x + i];
                        if (xi != 0) {
                            int g = i * n;
                            for (int j = i; j < n; j++) {
                                gram[g + j] += xi * block[x + j];
                            }
                        }
                    }
                }
            }
            buffered = 0;
        }

        /**
         * The adapter of the given rank: the top {@code rank} right singular vectors of the rows
         * added so far. The calibration stays usable (more rows, other ranks).
         *
         * @param rank 1..kvHeads·headDim
         * @throws IllegalStateException if no row was added
         */
        public LowRankAdapter fit(int rank) {
            Checks.inRange("rank", rank, 1, columns);
            if ((long) columns * rank > MAX_ELEMENTS) {
                throw new IllegalArgumentException("kvHeads × headDim × rank = " + (long) columns * rank
                        + " is out of range; allowed: up to " + MAX_ELEMENTS);
            }
            if (buffered > 0) {
                flush();
            }
            if (rows == 0) {
                throw new IllegalStateException("no calibration rows were added; add keys before fitting");
            }
            int n = columns;
            DMatrixRMaj g = new DMatrixRMaj(n, n);
            double trace = 0;
            for (int i = 0; i < n; i++) {
                trace += gram[i * n + i];
                for (int j = i; j < n; j++) {
                    double v = gram[i * n + j];
                    g.data[i * n + j] = v;
                    g.data[j * n + i] = v;
                }
            }
            SingularValueDecomposition_F64<DMatrixRMaj> svd = DecompositionFactory_DDRM.svd(n, n, false, true, true);
            if (!svd.decompose(g)) {
                throw new IllegalStateException("EJML's SVD did not converge on the " + n + " × " + n + " Gram matrix");
            }
            double[] w = svd.getSingularValues();
            DMatrixRMaj v = svd.getV(null, false); // columns are right singular vectors
            int count = svd.numberOfSingularValues();
            Integer[] order = new Integer[count];
            for (int i = 0; i < count; i++) {
                order[i] = i;
            }
            // Descending singular value; ties by index so the result is deterministic.
            Arrays.sort(order, (a, b) -> w[a] != w[b] ? Double.compare(w[b], w[a]) : Integer.compare(a, b));
            float[] p = new float[n * rank];
            float[] sv = new float[rank];
            for (int c = 0; c < rank; c++) {
                int src = order[c];
                // The Gram matrix's singular values are the squares of the keys' (clamp rounding below 0).
                sv[c] = (float) Math.sqrt(Math.max(0, w[src]));
                for (int i = 0; i < n; i++) {
                    p[i * rank + c] = (float) v.get(i, src);
                }
            }
            for (int c = 1; c < rank; c++) {
                sv[c] = Math.min(sv[c], sv[c - 1]); // float rounding must not break the order decode checks
            }
            int calibrated = (int) Math.min(Integer.MAX_VALUE, rows);
            return new LowRankAdapter(kvHeads, headDim, rank, calibrated, p, sv, Math.max(0, trace));
        }
    }
}
