package io.kvoffload;

import io.kvoffload.internal.util.Checks;
import io.kvoffload.spi.RemoteTierOptions;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * The shared remote tier (docs/remote.md): a Redis Cluster (or Valkey) that several engines publish
 * committed prefix blocks to and pull them from. Credentials are named by reference (an environment
 * variable or a file), never given by value, so a configuration file can be shared and logged.
 * Immutable; {@link Builder#build()} validates every value.
 */
public final class RemoteConfig {
    /** The keys of a {@code remote} object in a configuration file. */
    static final Set<String> KEYS = new TreeSet<>(List.of("kind", "seeds", "usernameEnv", "passwordEnv",
            "passwordFile", "tls", "connectTimeoutMillis", "commandTimeoutMillis", "keyPrefix", "ttlSeconds",
            "budget", "publishQueue"));

    private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,127}");
    private static final Pattern KEY_PREFIX = Pattern.compile("[!-~]{0,64}"); // printable ASCII, no spaces

    private final String kind;
    private final List<URI> seeds;
    private final String usernameEnv;
    private final String passwordEnv;
    private final Path passwordFile;
    private final boolean tls;
    private final int connectTimeoutMillis;
    private final int commandTimeoutMillis;
    private final String keyPrefix;
    private final long ttlSeconds;
    private final long budgetBytes;
    private final int publishQueue;

    private RemoteConfig(Builder b) {
        this.kind = b.kind;
        this.seeds = List.copyOf(b.seeds);
        this.usernameEnv = b.usernameEnv;
        this.passwordEnv = b.passwordEnv;
        this.passwordFile = b.passwordFile;
        this.tls = b.tls;
        this.connectTimeoutMillis = b.connectTimeoutMillis;
        this.commandTimeoutMillis = b.commandTimeoutMillis;
        this.keyPrefix = b.keyPrefix;
        this.ttlSeconds = b.ttlSeconds;
        this.budgetBytes = b.budgetBytes;
        this.publishQueue = b.publishQueue;
    }

    /** A builder for a cluster reached through {@code seeds} ({@code redis://host:port}, at least one). */
    public static Builder builder(List<URI> seeds) {
        return new Builder().seeds(seeds);
    }

    /** Which {@link io.kvoffload.spi.RemoteTierProvider} serves it; {@code redis} by default. */
    public String kind() {
        return kind;
    }

    public List<URI> seeds() {
        return seeds;
    }

    /** Environment variable holding the user name, or null for the default user. */
    public String usernameEnv() {
        return usernameEnv;
    }

    /** Environment variable holding the password, or null. */
    public String passwordEnv() {
        return passwordEnv;
    }

    /** File whose first line is the password, or null. */
    public Path passwordFile() {
        return passwordFile;
    }

    public boolean tls() {
        return tls;
    }

    public int connectTimeoutMillis() {
        return connectTimeoutMillis;
    }

    public int commandTimeoutMillis() {
        return commandTimeoutMillis;
    }

    /** Prefix of every key written (default {@code kvo:}). */
    public String keyPrefix() {
        return keyPrefix;
    }

    /** Time to live of published blobs in seconds; 0 (default) for none (the cluster's maxmemory policy evicts). */
    public long ttlSeconds() {
        return ttlSeconds;
    }

    /** Most bytes this engine publishes while open; 0 (default) for no limit. */
    public long budgetBytes() {
        return budgetBytes;
    }

    /** Committed sequences that may wait to be published; a commit that finds the queue full is not published. */
    public int publishQueue() {
        return publishQueue;
    }

    /**
     * The provider's options, with the credentials read from where they are named.
     *
     * @param env the environment (System::getenv in production)
     * @throws IllegalArgumentException if a named variable is unset or the password file unreadable
     */
    public RemoteTierOptions resolve(Function<String, String> env) {
        String user = null;
        if (usernameEnv != null) {
            user = env.apply(usernameEnv);
            if (user == null) {
                throw new IllegalArgumentException("remote.usernameEnv = '" + usernameEnv
                        + "' names an environment variable that is not set; allowed: the name of a set variable");
            }
        }
        char[] password = null;
        if (passwordEnv != null) {
            String p = env.apply(passwordEnv);
            if (p == null) {
                throw new IllegalArgumentException("remote.passwordEnv = '" + passwordEnv
                        + "' names an environment variable that is not set; allowed: the name of a set variable");
            }
            password = p.toCharArray();
        } else if (passwordFile != null) {
            try {
                String s = Files.readString(passwordFile, StandardCharsets.UTF_8);
                password = s.lines().findFirst().orElse("").toCharArray();
            } catch (IOException e) {
                throw new IllegalArgumentException("remote.passwordFile = '" + passwordFile
                        + "' cannot be read (" + e + "); allowed: a readable file whose first line is the password");
            }
        }
        return new RemoteTierOptions(seeds, user, password, tls, Duration.ofMillis(connectTimeoutMillis),
                Duration.ofMillis(commandTimeoutMillis), keyPrefix, Duration.ofSeconds(ttlSeconds));
    }

    /** A {@code remote} value of a configuration file: null or {@code "none"} for none, or an object of {@link #KEYS}. */
    static RemoteConfig parse(Object v, Path base) {
        if (v == null || (v instanceof String str && str.trim().equalsIgnoreCase("none"))) {
            return null;
        }
        if (!(v instanceof Map<?, ?> map)) {
            throw new IllegalArgumentException("remote = '" + v + "' is not allowed; allowed: 'none' or an object with keys "
                    + KEYS);
        }
        for (Object key : map.keySet()) {
            if (!KEYS.contains(String.valueOf(key))) {
                throw new IllegalArgumentException("unknown configuration key 'remote." + key + "'; allowed keys: " + KEYS);
            }
        }
        Object s = map.get("seeds");
        if (!(s instanceof List<?> list)) {
            throw new IllegalArgumentException("remote.seeds = '" + s
                    + "' is not allowed; allowed: a list of 'redis://host:port' or 'rediss://host:port' strings");
        }
        List<URI> seeds = new ArrayList<>();
        for (Object o : list) {
            seeds.add(uri(String.valueOf(o)));
        }
        Builder b = builder(seeds);
        for (Map.Entry<?, ?> e : map.entrySet()) {
            String k = "remote." + e.getKey();
            Object x = e.getValue();
            switch (String.valueOf(e.getKey())) {
                case "kind" -> b.kind(String.valueOf(x));
                case "usernameEnv" -> b.usernameEnv(String.valueOf(x));
                case "passwordEnv" -> b.passwordEnv(String.valueOf(x));
                case "passwordFile" -> b.passwordFile(base.resolve(String.valueOf(x)));
                case "tls" -> b.tls(ConfigFile.parseBool(k, x));
                case "connectTimeoutMillis" -> b.connectTimeoutMillis(ConfigFile.parseInt(k, x));
                case "commandTimeoutMillis" -> b.commandTimeoutMillis(ConfigFile.parseInt(k, x));
                case "keyPrefix" -> b.keyPrefix(String.valueOf(x));
                case "ttlSeconds" -> b.ttlSeconds(ConfigFile.parseLong(k, x));
                case "budget" -> b.budgetBytes(KvConfig.parseSize(k, x));
                case "publishQueue" -> b.publishQueue(ConfigFile.parseInt(k, x));
                default -> { } // seeds, read above
            }
        }
        return b.build();
    }

    private static URI uri(String s) {
        try {
            return new URI(s.trim());
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("remote.seeds entry '" + s + "' is not a URI; allowed: 'redis://host:port'"
                    + " or 'rediss://host:port'");
        }
    }

    @Override
    public String toString() { // names where credentials come from, never their values
        return "RemoteConfig{kind=" + kind + ", seeds=" + seeds + ", usernameEnv=" + usernameEnv + ", passwordEnv="
                + passwordEnv + ", passwordFile=" + passwordFile + ", tls=" + tls + ", connectTimeoutMillis="
                + connectTimeoutMillis + ", commandTimeoutMillis=" + commandTimeoutMillis + ", keyPrefix=" + keyPrefix
                + ", ttlSeconds=" + ttlSeconds + ", budgetBytes=" + budgetBytes + ", publishQueue=" + publishQueue + "}";
    }

    /** Builder with the documented defaults. */
    public static final class Builder {
        private String kind = "redis";
        private List<URI> seeds = List.of();
        private String usernameEnv;
        private String passwordEnv;
        private Path passwordFile;
        private boolean tls;
        private int connectTimeoutMillis = 2000;
        private int commandTimeoutMillis = 2000;
        private String keyPrefix = "kvo:";
        private long ttlSeconds;
        private long budgetBytes;
        private int publishQueue = 64;

        private Builder() {}

        public Builder kind(String name) {
            this.kind = Checks.notNull("remote.kind", name);
            return this;
        }

        public Builder seeds(List<URI> uris) {
            this.seeds = List.copyOf(Checks.notNull("remote.seeds", uris));
            return this;
        }

        public Builder usernameEnv(String variable) {
            this.usernameEnv = variable;
            return this;
        }

        public Builder passwordEnv(String variable) {
            this.passwordEnv = variable;
            return this;
        }

        public Builder passwordFile(Path file) {
            this.passwordFile = file;
            return this;
        }

        public Builder tls(boolean on) {
            this.tls = on;
            return this;
        }

        public Builder connectTimeoutMillis(int millis) {
            this.connectTimeoutMillis = millis;
            return this;
        }

        public Builder commandTimeoutMillis(int millis) {
            this.commandTimeoutMillis = millis;
            return this;
        }

        public Builder keyPrefix(String prefix) {
            this.keyPrefix = Checks.notNull("remote.keyPrefix", prefix);
            return this;
        }

        public Builder ttlSeconds(long seconds) {
            this.ttlSeconds = seconds;
            return this;
        }

        public Builder budgetBytes(long bytes) {
            this.budgetBytes = bytes;
            return this;
        }

        public Builder publishQueue(int sequences) {
            this.publishQueue = sequences;
            return this;
        }

        /** Validates every value. */
        public RemoteConfig build() {
            if (kind.isBlank()) {
                throw new IllegalArgumentException("remote.kind is blank; allowed: a remote tier provider name such as 'redis'");
            }
            if (seeds.isEmpty() || seeds.size() > 64) {
                throw new IllegalArgumentException("remote.seeds has " + seeds.size()
                        + " entries; allowed: 1..64 seed URIs such as 'redis://host:6379'");
            }
            for (URI u : seeds) {
                Checks.notNull("remote.seeds[i]", u);
                String scheme = u.getScheme();
                if (!("redis".equals(scheme) || "rediss".equals(scheme)) || u.getHost() == null || u.getPort() <= 0
                        || u.getUserInfo() != null) {
                    throw new IllegalArgumentException("remote.seeds entry '" + u + "' is not allowed; allowed:"
                            + " 'redis://host:port' or 'rediss://host:port' with no credentials in it (name them with"
                            + " usernameEnv/passwordEnv/passwordFile)");
                }
                if ("rediss".equals(scheme) && !tls) {
                    throw new IllegalArgumentException("remote.seeds entry '" + u + "' asks for TLS but remote.tls = false;"
                            + " allowed: set tls to true, or use redis:// seeds");
                }
            }
            for (String[] env : new String[][] {{"remote.usernameEnv", usernameEnv}, {"remote.passwordEnv", passwordEnv}}) {
                if (env[1] != null && !ENV_NAME.matcher(env[1]).matches()) {
                    throw new IllegalArgumentException(env[0] + " = '" + env[1] + "' is not allowed; allowed: the name of"
                            + " an environment variable ([A-Za-z_][A-Za-z0-9_]*), not a credential");
                }
            }
            if (passwordEnv != null && passwordFile != null) {
                throw new IllegalArgumentException("remote.passwordEnv = '" + passwordEnv + "' and remote.passwordFile = '"
                        + passwordFile + "' are both set; allowed: at most one source for the password");
            }
            Checks.inRange("remote.connectTimeoutMillis", connectTimeoutMillis, 1, 600_000);
            Checks.inRange("remote.commandTimeoutMillis", commandTimeoutMillis, 1, 600_000);
            if (!KEY_PREFIX.matcher(keyPrefix).matches()) {
                throw new IllegalArgumentException("remote.keyPrefix = '" + keyPrefix
                        + "' is not allowed; allowed: 0..64 printable ASCII characters without spaces");
            }
            Checks.inRange("remote.ttlSeconds", ttlSeconds, 0, Integer.MAX_VALUE);
            Checks.inRange("remote.budgetBytes", budgetBytes, 0, Long.MAX_VALUE);
            Checks.inRange("remote.publishQueue", publishQueue, 1, 65536);
            return new RemoteConfig(this);
        }
    }
}
