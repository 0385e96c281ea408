package io.kvoffload.spi;

import java.net.URI;
import java.time.Duration;
import java.util.List;

/**
 * What the configuration says about the remote tier, as a provider needs it. Credentials are
 * already resolved from where the configuration points (an environment variable or a file) and are
 * never logged.
 *
 * @param seeds cluster seed URIs ({@code redis://host:port} or {@code rediss://host:port})
 * @param username user name, or null for the default user
 * @param password password, or null for none
 * @param tls whether connections use TLS
 * @param connectTimeout how long connecting may take
 * @param commandTimeout how long one command may take before it fails
 * @param keyPrefix prefix of every key the engine writes (namespaces several deployments on one cluster)
 * @param ttl time to live of every stored blob; {@link Duration#ZERO} for none
 */
public record RemoteTierOptions(List<URI> seeds, String username, char[] password, boolean tls,
        Duration connectTimeout, Duration commandTimeout, String keyPrefix, Duration ttl) {

    public RemoteTierOptions {
        seeds = List.copyOf(seeds);
    }

    @Override
    public String toString() { // never the password
        return "RemoteTierOptions{seeds=" + seeds + ", username=" + username + ", password="
                + (password == null ? "none" : "***") + ", tls=" + tls + ", connectTimeout=" + connectTimeout
                + ", commandTimeout=" + commandTimeout + ", keyPrefix=" + keyPrefix + ", ttl=" + ttl + "}";
    }
}
