package io.kvoffload.redis;

import io.kvoffload.spi.Availability;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A throwaway Redis Cluster on 127.0.0.1 for tests and benchmarks: {@code masters} {@code
 * redis-server} processes on free ports with {@code --cluster-enabled yes}, joined by {@code
 * redis-cli --cluster create}, password-protected, bound to loopback only (protected mode on), never
 * persisting ({@code --save ""}, {@code --appendonly no}) and keeping its files in a temporary
 * folder that {@link #close()} deletes with every process. Needs {@code redis-server} and {@code
 * redis-cli} on the PATH (Debian: {@code apt-get install redis-server redis-tools}).
 */
public final class LoopbackCluster implements AutoCloseable {
    private static final String HOST = "127.0.0.1";
    /** An ACL user (Redis 6+) every node knows, with the cluster's password and every permission. */
    public static final String ACL_USER = "kvoffload-acl";
    private static final int NODE_TIMEOUT_MILLIS = 1500;

    private final Path root;
    private final String password;
    private final int[] ports;
    private final Process[] processes;
    private final Thread cleanup = new Thread(this::stopAll, "loopback-cluster-cleanup");

    private LoopbackCluster(Path root, String password, int masters) {
        this.root = root;
        this.password = password;
        this.ports = new int[masters];
        this.processes = new Process[masters];
        Runtime.getRuntime().addShutdownHook(cleanup);
    }

    /** Whether {@code redis-server} and {@code redis-cli} can be run here, and their version. */
    public static Availability probe() {
        try {
            Process p = new ProcessBuilder("redis-server", "--version").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            p.waitFor(10, TimeUnit.SECONDS);
            Process c = new ProcessBuilder("redis-cli", "--version").redirectErrorStream(true).start();
            c.getInputStream().readAllBytes();
            c.waitFor(10, TimeUnit.SECONDS);
            if (p.exitValue() != 0 || c.exitValue() != 0) {
                return Availability.no("redis-server or redis-cli failed to run: " + out);
            }
            return Availability.yes(out);
        } catch (IOException e) {
            return Availability.no("redis-server/redis-cli not found on the PATH (" + e.getMessage()
                    + "); install them with 'apt-get install redis-server redis-tools'");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Availability.no("interrupted");
        }
    }

    /**
     * Starts {@code masters} nodes (3 or more, as Redis Cluster requires), creates the cluster and
     * waits until every node reports {@code cluster_state:ok}.
     *
     * @param password the nodes' {@code requirepass}, 1..64 characters of letters, digits and {@code -_}
     */
    public static LoopbackCluster start(int masters, String password) {
        if (masters < 3 || masters > 16) {
            throw new IllegalArgumentException("masters = " + masters + " is out of range; allowed: 3..16");
        }
        if (password == null || !password.matches("[A-Za-z0-9_-]{1,64}")) {
            throw new IllegalArgumentException("password is not allowed; allowed: 1..64 letters, digits, '-' or '_'");
        }
        Path root;
        try {
            root = Files.createTempDirectory("kvo-redis-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        LoopbackCluster c = new LoopbackCluster(root, password, masters);
        try {
            for (int i = 0; i < masters; i++) {
                c.ports[i] = freePortPair();
                c.launch(i);
            }
            for (int i = 0; i < masters; i++) {
                c.awaitPing(i);
            }
            List<String> create = new ArrayList<>(List.of("--cluster", "create"));
            for (int p : c.ports) {
                create.add(HOST + ":" + p);
            }
            create.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
            c.cli(c.ports[0], create.toArray(String[]::new));
            c.awaitOk();
            return c;
        } catch (RuntimeException | Error e) {
            c.close();
            throw e;
        }
    }

    /** Seed URIs of every node. */
    public List<URI> seeds() {
        List<URI> out = new ArrayList<>();
        for (int p : ports) {
            out.add(URI.create("redis://" + HOST + ":" + p));
        }
        return out;
    }

    public int masters() {
        return ports.length;
    }

    /** Kills master {@code i} at once (SIGKILL): it loses what it held, as a crashed node does. */
    public void kill(int i) {
        Process p = processes[i];
        if (p != null) {
            p.destroyForcibly();
            try {
                p.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            processes[i] = null;
        }
    }

    /** Starts killed master {@code i} again on its port (empty: nothing persists) and waits for the cluster. */
    public void restart(int i) {
        if (processes[i] != null) {
            throw new IllegalStateException("master " + i + " is running");
        }
        launch(i);
        awaitPing(i);
        awaitOk();
    }

    /** {@code CONFIG SET name value} on every master (e.g. {@code maxmemory}). */
    public void configSet(String name, String value) {
        for (int p : ports) {
            cli(p, "config", "set", name, value);
        }
    }

    /** Runs {@code redis-cli -c} against master {@code i} and returns what it printed. */
    public String command(int i, String... args) {
        List<String> a = new ArrayList<>(List.of("-c"));
        a.addAll(List.of(args));
        return cli(ports[i], a.toArray(String[]::new));
    }

    private void launch(int i) {
        Path dir = root.resolve("node-" + i);
        try {
            Files.createDirectories(dir);
            // The password goes in a private file, not on the command line where ps would show it.
            Path conf = dir.resolve("auth.conf");
            // Besides the default user, an ACL user with the same password, for clients that name one.
            Files.writeString(conf, "requirepass " + password + "\nmasterauth " + password + "\nuser " + ACL_USER
                    + " on >" + password + " ~* &* +@all\n");
            Files.setPosixFilePermissions(conf, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
            processes[i] = new ProcessBuilder("redis-server", conf.toString(), "--port", String.valueOf(ports[i]), "--bind", HOST,
                    "--protected-mode", "yes", "--cluster-enabled", "yes", "--cluster-config-file",
                    dir.resolve("nodes.conf").toString(), "--cluster-node-timeout", String.valueOf(NODE_TIMEOUT_MILLIS),
                    "--dir", dir.toString(), "--save", "", "--appendonly", "no", "--daemonize", "no",
                    "--logfile", dir.resolve("redis.log").toString())
                    .redirectErrorStream(true).redirectOutput(dir.resolve("stdout.log").toFile()).start();
        } catch (IOException e) {
            throw new UncheckedIOException("starting redis-server on port " + ports[i] + " failed", e);
        }
    }

    private void awaitPing(int i) {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (true) {
            if (processes[i] == null || !processes[i].isAlive()) {
                throw new IllegalStateException("redis-server on port " + ports[i] + " exited; see " + root);
            }
            try {
                if (cli(ports[i], "ping").contains("PONG")) {
                    return;
                }
            } catch (IllegalStateException e) {
                // not listening yet
            }
            if (System.nanoTime() > end) {
                throw new IllegalStateException("redis-server on port " + ports[i] + " did not answer within 20 s");
            }
            sleep(50);
        }
    }

    /** Waits until every running node reports {@code cluster_state:ok} and every slot assigned. */
    public void awaitOk() {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            boolean ok = true;
            for (int i = 0; i < ports.length && ok; i++) {
                try {
                    String info = cli(ports[i], "cluster", "info");
                    ok = info.contains("cluster_state:ok") && info.contains("cluster_slots_ok:16384");
                } catch (IllegalStateException e) {
                    ok = false;
                }
            }
            if (ok) {
                return;
            }
            if (System.nanoTime() > end) {
                throw new IllegalStateException("the cluster did not reach cluster_state:ok within 30 s; logs in " + root);
            }
            sleep(100);
        }
    }

    private String cli(int port, String... args) {
        List<String> cmd = new ArrayList<>(List.of("redis-cli", "-h", HOST, "-p", String.valueOf(port), "--no-auth-warning"));
        cmd.addAll(List.of(args));
        try {
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
            pb.environment().put("REDISCLI_AUTH", password); // not on the command line, where ps would show it
            Process p = pb.start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0 || out.startsWith("Could not connect")
                    || out.contains("[ERR]") || out.startsWith("ERR")) {
                p.destroyForcibly();
                throw new IllegalStateException("redis-cli " + String.join(" ", args) + " failed: " + out.trim());
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** A port {@code p} with {@code p} and its cluster bus port {@code p + 10000} both free on loopback. */
    private static int freePortPair() {
        for (int attempt = 0; attempt < 200; attempt++) {
            int p = ThreadLocalRandom.current().nextInt(20000, 45000);
            if (free(p) && free(p + 10000)) {
                return p;
            }
        }
        throw new IllegalStateException("no free port pair (p, p + 10000) found on 127.0.0.1");
    }

    private static boolean free(int port) {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(false);
            s.bind(new InetSocketAddress(InetAddress.getByName(HOST), port));
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    private void stopAll() {
        for (int i = 0; i < processes.length; i++) {
            kill(i);
        }
        try (Stream<Path> files = Files.walk(root)) {
            for (Path f : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(f);
            }
        } catch (IOException e) {
            // best effort: the folder is in the temporary directory
        }
    }

    /** Kills every node and deletes the folder. */
    @Override
    public void close() {
        stopAll();
        try {
            Runtime.getRuntime().removeShutdownHook(cleanup);
        } catch (IllegalStateException e) {
            // the JVM is shutting down: the hook runs (or ran) stopAll itself
        }
    }
}
