package io.kvoffload.internal.storage;

import io.kvoffload.SequenceInfo;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The store's one daemon thread for user callbacks (eviction listeners, degradation listeners):
 * they run off the store lock, since they may call back into the engine, in the order they were
 * raised. Started by the first notification that has a listener to hear it.
 */
final class ListenerThread {
    private static final Logger LOG = LoggerFactory.getLogger(ListenerThread.class);

    private final List<Consumer<SequenceInfo>> evictionListeners = new CopyOnWriteArrayList<>();
    private ExecutorService thread;

    void addEvictionListener(Consumer<SequenceInfo> listener) {
        evictionListeners.add(listener);
    }

    /** Tells every eviction listener, on the thread, that {@code info}'s sequence was evicted. */
    void evicted(SequenceInfo info) {
        if (evictionListeners.isEmpty()) {
            return;
        }
        executor().execute(() -> {
            for (Consumer<SequenceInfo> l : evictionListeners) {
                try {
                    l.accept(info);
                } catch (RuntimeException e) {
                    LOG.warn("an eviction listener failed for {}", info.id(), e);
                }
            }
        });
    }

    /** The thread, started on first use. */
    synchronized Executor executor() {
        if (thread == null) {
            thread = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "kvoffload-listeners");
                t.setDaemon(true);
                return t;
            });
        }
        return thread;
    }

    /** Stops the thread once the notifications already queued have run. */
    synchronized void shutdown() {
        if (thread != null) {
            thread.shutdown();
        }
    }
}
