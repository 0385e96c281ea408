package io.kvoffload.internal.obs;

import io.kvoffload.KvDegradation;
import io.kvoffload.KvDegradationListener;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reports an engine's degradations: as a JFR event at once, and to the listeners on the engine's
 * listener thread, in order. Those found while the engine opens are kept and replayed to each
 * listener added later, since no listener can be added before {@code KvEngine.open} returns.
 */
public final class Degradations {
    private static final Logger LOG = LoggerFactory.getLogger(Degradations.class);
    private final Supplier<Executor> listenerThread;
    private final List<KvDegradation> atOpen = new ArrayList<>();
    private final List<KvDegradationListener> listeners = new ArrayList<>();
    private boolean opening = true;

    public Degradations(Supplier<Executor> listenerThread) {
        this.listenerThread = listenerThread;
    }

    /** Reports {@code d} (the caller has logged it). */
    public void report(KvDegradation d) {
        Flight.degradation(d.kind().name(), d.sequenceId(), d.layer(), d.message());
        // Under the lock: the executor's queue then holds the reports in the order they were made.
        synchronized (this) {
            if (opening) {
                atOpen.add(d);
            }
            for (KvDegradationListener l : listeners) {
                deliver(l, d);
            }
        }
    }

    /** The engine has opened: later degradations are not kept for replay. */
    public synchronized void opened() {
        opening = false;
    }

    /** Adds {@code l}, which first hears the degradations found at open. */
    public synchronized void add(KvDegradationListener l) {
        for (KvDegradation d : atOpen) {
            deliver(l, d);
        }
        listeners.add(l);
    }

    private void deliver(KvDegradationListener l, KvDegradation d) {
        listenerThread.get().execute(() -> {
            try {
                l.degraded(d);
            } catch (RuntimeException ex) {
                LOG.warn("a degradation listener failed for {}", d, ex);
            }
        });
    }
}
