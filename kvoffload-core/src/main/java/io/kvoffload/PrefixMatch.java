package io.kvoffload;

/**
 * The longest cached prefix of a prompt: the committed sequence that holds it and how many of the
 * prompt's tokens it covers. Read those tokens' KV with {@link KvEngine#openSequence(String)}
 * instead of recomputing them.
 *
 * @param sequenceId the committed sequence holding the prefix
 * @param matchedTokens how many leading prompt tokens it covers (at least 1)
 * @param sequenceTokens how many tokens the cached sequence holds in all
 */
public record PrefixMatch(String sequenceId, int matchedTokens, int sequenceTokens) {}
