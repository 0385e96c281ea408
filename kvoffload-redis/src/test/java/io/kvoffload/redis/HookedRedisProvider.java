package io.kvoffload.redis;

import io.kvoffload.internal.redis.LettuceClusterTier;
import io.kvoffload.spi.Availability;
import io.kvoffload.spi.RemoteTier;
import io.kvoffload.spi.RemoteTierOptions;
import io.kvoffload.spi.RemoteTierProvider;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The real Lettuce tier ({@code remote.kind = "redis-hooked"}) with a hook run before the n-th
 * {@code put} or {@code get} batch, so a fault test can kill a master at a chosen point of a publish
 * or a fetch instead of racing it.
 */
public final class HookedRedisProvider implements RemoteTierProvider {
    static final AtomicInteger PUTS = new AtomicInteger();
    static final AtomicInteger GETS = new AtomicInteger();
    static volatile int hookAtPut = -1;
    static volatile int hookAtGet = -1;
    static volatile Runnable hook = () -> { };

    static void reset() {
        PUTS.set(0);
        GETS.set(0);
        hookAtPut = -1;
        hookAtGet = -1;
        hook = () -> { };
    }

    @Override
    public String name() {
        return "redis-hooked";
    }

    @Override
    public Availability probe() {
        return Availability.yes("test");
    }

    @Override
    public RemoteTier open(RemoteTierOptions options) {
        LettuceClusterTier t = LettuceClusterTier.connect(options);
        return new RemoteTier() {
            @Override
            public String describe() {
                return t.describe();
            }

            @Override
            public CompletableFuture<boolean[]> exists(List<String> keys) {
                return t.exists(keys);
            }

            @Override
            public CompletableFuture<boolean[]> put(List<String> keys, List<byte[]> blobs) {
                if (PUTS.getAndIncrement() == hookAtPut) {
                    hook.run();
                }
                return t.put(keys, blobs);
            }

            @Override
            public CompletableFuture<byte[][]> get(List<String> keys) {
                if (GETS.getAndIncrement() == hookAtGet) {
                    hook.run();
                }
                return t.get(keys);
            }

            @Override
            public CompletableFuture<Long> delete(List<String> keys) {
                return t.delete(keys);
            }

            @Override
            public void close() {
                t.close();
            }
        };
    }
}
